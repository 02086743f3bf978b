// GET /metrics (docs/metrics.md): off unless Metrics:Enabled, only from Metrics:AllowFrom (the
// socket's peer, never X-Forwarded-For), Prometheus text format, and no secret in any label.
import test from 'ava';
import { mcpTools } from '../gateway/mcp/tools.js';
import { TOOL_NAMES } from '../gateway/ops/requests.js';
import { defaultSettings } from '../shared/config.js';
import { bearer, startApi, unknownKey, type ApiHarness, type SettingsOverrides } from './helpers/api.js';
import { postMcp, startMcpGateway, toolsCall } from './helpers/mcp.js';
import { parsePrometheus, sampleValue, type Sample } from './helpers/prometheus.js';
import { redisUrl, waitFor } from './helpers/redis.js';

const withMetrics = async (overrides: SettingsOverrides = {}) =>
  await startApi({ ...overrides, Metrics: { Enabled: true, ...overrides.Metrics } });

async function scrape(
  t: import('ava').ExecutionContext,
  api: ApiHarness,
): Promise<{ text: string; samples: Sample[] }> {
  const res = await api.request.get('/metrics');
  t.is(res.status, 200);
  t.regex(res.headers['content-type'] ?? '', /^text\/plain; version=0\.0\.4/);
  t.is(res.headers['cache-control'], 'no-store');
  const text = res.text;
  return { text, samples: parsePrometheus(text) };
}

const requests = (samples: Sample[], labels: Record<string, string>) =>
  sampleValue(samples, 'mail_archive_http_request_duration_seconds_count', labels) ?? 0;

test('metrics are off by default: /metrics is the same 404 as any unknown path', async (t) => {
  const api = await startApi();
  t.teardown(() => api.close());
  const res = await api.request.get('/metrics');
  t.is(res.status, 404);
  t.is(res.headers['content-type'], 'application/problem+json');
  t.is(res.body.detail, 'No resource at /metrics.');
  t.is(api.gateway.metrics, undefined);
});

test('a scrape parses and holds process, pool, access-log and rate-limit series', async (t) => {
  const api = await withMetrics({ Engine: { Threads: 2 } });
  t.teardown(() => api.close());
  const { samples } = await scrape(t, api);
  for (const name of [
    'process_resident_memory_bytes',
    'nodejs_heap_size_used_bytes',
    'nodejs_eventloop_lag_seconds',
    'mail_archive_access_log_pending_entries',
    'mail_archive_access_log_write_failures_total',
  ])
    t.not(sampleValue(samples, name), undefined, name);
  t.is(sampleValue(samples, 'mail_archive_pool_threads', { lane: 'interactive' }), 1);
  t.is(sampleValue(samples, 'mail_archive_pool_threads', { lane: 'query' }), 2);
  for (const lane of ['interactive', 'query']) {
    for (const name of [
      'mail_archive_pool_queue_size',
      'mail_archive_pool_busy_threads',
      'mail_archive_pool_utilization',
      'mail_archive_pool_jobs_completed_total',
      'mail_archive_pool_busy_seconds_total',
    ])
      t.not(sampleValue(samples, name, { lane }), undefined, `${name} ${lane}`);
  }
  for (const policy of ['Api', 'Mcp', 'LoginUser', 'LoginIp'])
    t.is(sampleValue(samples, 'mail_archive_rate_limit_rejections_total', { policy }), 0, policy);
  for (const reason of ['missing', 'malformed', 'unknown', 'expired', 'revoked', 'inactive'])
    t.is(sampleValue(samples, 'mail_archive_auth_failures_total', { reason }), 0, reason);
  t.is(sampleValue(samples, 'mail_archive_redis_connected'), undefined, 'no Redis configured');
});

test('requests are counted by method, route template and status; pool counters move', async (t) => {
  const api = await withMetrics();
  t.teardown(() => api.close());
  const before = (await scrape(t, api)).samples;
  const key = api.fixture.keys.alice;
  t.is((await api.request.get('/api/v1/accounts').set(bearer(key))).status, 200);
  t.is((await api.request.get('/api/v1/accounts').set(bearer(key))).status, 200);
  t.is((await api.request.get(`/api/v1/emails/${api.fixture.emails.budget}`).set(bearer(key))).status, 200);
  t.is((await api.request.get('/api/v1/emails/999999').set(bearer(key))).status, 404);
  t.is((await api.request.get('/no/such/path')).status, 404);
  t.is((await api.request.get('/healthz')).status, 200);
  const { samples } = await scrape(t, api);
  t.is(requests(samples, { method: 'GET', route: '/api/v1/accounts', status: '200' }), 2);
  t.is(requests(samples, { method: 'GET', route: '/api/v1/emails/:id', status: '200' }), 1);
  t.is(requests(samples, { method: 'GET', route: '/api/v1/emails/:id', status: '404' }), 1);
  t.is(requests(samples, { method: 'GET', route: 'other', status: '404' }), 1);
  t.is(requests(samples, { method: 'GET', route: '/healthz', status: '200' }), 1);
  t.is(requests(samples, { method: 'GET', route: '/metrics', status: '200' }), 1, 'the first scrape');
  t.true(
    (sampleValue(samples, 'mail_archive_http_request_duration_seconds_sum', {
      method: 'GET',
      route: '/api/v1/accounts',
      status: '200',
    }) ?? 0) > 0,
  );
  const completed = (s: Sample[]) => sampleValue(s, 'mail_archive_pool_jobs_completed_total', { lane: 'interactive' })!;
  t.true(completed(samples) >= completed(before) + 4, 'each request ran at least its key check');
  t.not(
    sampleValue(samples, 'mail_archive_pool_job_run_seconds', { lane: 'interactive', quantile: '0.99' }),
    undefined,
  );
  t.not(
    sampleValue(samples, 'mail_archive_pool_job_wait_seconds', { lane: 'interactive', quantile: '0.5' }),
    undefined,
  );
});

test('authentication failures are counted by reason', async (t) => {
  const api = await withMetrics();
  t.teardown(() => api.close());
  const { keys } = api.fixture;
  const get = (headers: Record<string, string>) => api.request.get('/api/v1/accounts').set(headers);
  t.is((await get({})).status, 401);
  t.is((await get({ Authorization: 'Basic dXNlcjpwYXNz' })).status, 401);
  t.is((await get(bearer('ma_short'))).status, 401);
  t.is((await get(bearer(unknownKey()))).status, 401);
  t.is((await get(bearer(keys.expired))).status, 401);
  t.is((await get(bearer(keys.revoked))).status, 401);
  t.is((await get(bearer(keys.inactive))).status, 401);
  const { samples } = await scrape(t, api);
  const failures = (reason: string) => sampleValue(samples, 'mail_archive_auth_failures_total', { reason });
  t.is(failures('missing'), 1);
  t.is(failures('malformed'), 2);
  t.is(failures('unknown'), 1);
  t.is(failures('expired'), 1);
  t.is(failures('revoked'), 1);
  t.is(failures('inactive'), 1);
  t.is(requests(samples, { method: 'GET', route: '/api/v1/accounts', status: '401' }), 7);
});

test('429s are counted by policy', async (t) => {
  const api = await withMetrics({ Api: { RateLimitPerMinute: 1 } });
  t.teardown(() => api.close());
  const key = api.fixture.keys.bob;
  t.is((await api.request.get('/api/v1/accounts').set(bearer(key))).status, 200);
  t.is((await api.request.get('/api/v1/accounts').set(bearer(key))).status, 429);
  t.is((await api.request.get('/api/v1/stats').set(bearer(key))).status, 429);
  const { samples } = await scrape(t, api);
  t.is(sampleValue(samples, 'mail_archive_rate_limit_rejections_total', { policy: 'Api' }), 2);
  t.is(sampleValue(samples, 'mail_archive_rate_limit_rejections_total', { policy: 'Mcp' }), 0);
  // Admission refuses before the router runs; the request is still labelled by its route.
  t.is(requests(samples, { method: 'GET', route: '/api/v1/accounts', status: '429' }), 1);
  t.is(requests(samples, { method: 'GET', route: '/api/v1/stats', status: '429' }), 1);
  t.is(requests(samples, { method: 'GET', route: 'other', status: '429' }), 0);
});

test('the access-log backlog is visible while entries wait to be written', async (t) => {
  const api = await startApi(
    { Metrics: { Enabled: true } },
    { gateway: { accessLog: { intervalMs: 60_000, maxBatch: 1000 } } },
  );
  t.teardown(() => api.close());
  const key = api.fixture.keys.admin;
  t.is((await api.request.get('/api/v1/emails?q=budget').set(bearer(key))).status, 200);
  t.is((await api.request.get(`/api/v1/emails/${api.fixture.emails.budget}`).set(bearer(key))).status, 200);
  const { samples } = await scrape(t, api);
  t.is(sampleValue(samples, 'mail_archive_access_log_pending_entries'), 2);
  await api.gateway.accessLog.flush();
  t.is(sampleValue((await scrape(t, api)).samples, 'mail_archive_access_log_pending_entries'), 0);
  t.is(sampleValue(samples, 'mail_archive_access_log_write_failures_total'), 0);
});

test('a failed access-log write is counted, and its entries stay in the backlog', async (t) => {
  const api = await startApi({ Metrics: { Enabled: true } }, { gateway: { accessLog: { intervalMs: 60_000 } } });
  t.teardown(() => api.close());
  t.is((await api.request.get('/api/v1/emails?q=budget').set(bearer(api.fixture.keys.admin))).status, 200);
  // The table the writer inserts into is gone, so the batch fails and is kept for a retry.
  api.db().exec('ALTER TABLE access_log RENAME TO access_log_elsewhere');
  await api.gateway.accessLog.flush();
  let { samples } = await scrape(t, api);
  t.is(sampleValue(samples, 'mail_archive_access_log_write_failures_total'), 1);
  t.is(sampleValue(samples, 'mail_archive_access_log_pending_entries'), 1);
  api.db().exec('ALTER TABLE access_log_elsewhere RENAME TO access_log');
  await api.gateway.accessLog.flush();
  ({ samples } = await scrape(t, api));
  t.is(sampleValue(samples, 'mail_archive_access_log_write_failures_total'), 1);
  t.is(sampleValue(samples, 'mail_archive_access_log_pending_entries'), 0);
});

test('Metrics:AllowFrom refuses other peers with a 404, whatever X-Forwarded-For says', async (t) => {
  const refused = await withMetrics({
    Metrics: { AllowFrom: ['10.0.0.0/8', '2001:db8::/32'] },
    Server: { TrustProxy: true },
  });
  t.teardown(() => refused.close());
  for (const forwarded of [undefined, '10.1.2.3']) {
    const req = refused.request.get('/metrics');
    const res = await (forwarded ? req.set('X-Forwarded-For', forwarded) : req);
    t.is(res.status, 404, `X-Forwarded-For: ${forwarded}`);
    t.is(res.headers['content-type'], 'application/problem+json');
    t.is(res.body.detail, 'No resource at /metrics.', 'the same answer as when metrics are off');
  }

  // The default (loopback) admits the test's own connection even when the header names another client.
  const allowed = await withMetrics({ Server: { TrustProxy: true } });
  t.teardown(() => allowed.close());
  t.is((await allowed.request.get('/metrics').set('X-Forwarded-For', '203.0.113.9')).status, 200);
  const post = await allowed.request.post('/metrics');
  t.is(post.status, 405);
  t.is(post.headers.allow, 'GET, HEAD');
});

test('MCP tool calls are counted by tool name; unknown names are "other"', async (t) => {
  const mcp = await startMcpGateway({ Metrics: { Enabled: true } });
  t.teardown(() => mcp.close());
  const auth = bearer(mcp.fixture.keys.admin);
  t.is((await postMcp(mcp.url, toolsCall(1, 'search_emails', { q: 'budget' }), auth)).status, 200);
  t.is((await postMcp(mcp.url, toolsCall(2, 'list_accounts'), auth)).status, 200);
  t.is((await postMcp(mcp.url, toolsCall(3, 'made_up_tool_x9'), auth)).status, 200);
  t.is((await postMcp(mcp.url, toolsCall(4, 'list_accounts'))).status, 401);
  const text = await (await fetch(`${mcp.base}/metrics`)).text();
  const samples = parsePrometheus(text);
  const calls = (tool: string) =>
    sampleValue(samples, 'mail_archive_mcp_tool_call_duration_seconds_count', { tool, status: '200' });
  t.is(calls('search_emails'), 1);
  t.is(calls('list_accounts'), 1);
  t.is(calls('other'), 1);
  t.false(text.includes('made_up_tool_x9'));
  t.is(requests(samples, { method: 'POST', route: '/mcp', status: '200' }), 3);
  t.is(requests(samples, { method: 'POST', route: '/mcp', status: '401' }), 1);
  t.is(sampleValue(samples, 'mail_archive_auth_failures_total', { reason: 'missing' }), 1);
});

test('the known tool names are exactly the tools the MCP server offers', (t) => {
  t.deepEqual(
    [...TOOL_NAMES].sort(),
    mcpTools(defaultSettings().Mcp)
      .map((tool) => tool.name)
      .sort(),
  );
});

test('no label holds a key, a key prefix, a user name, a query or a raw path', async (t) => {
  const api = await withMetrics({ Mcp: { Enabled: true } });
  t.teardown(() => api.close());
  const { keys } = api.fixture;
  const secretWord = 'zebracornquery';
  await api.request.get(`/api/v1/emails?q=${secretWord}&from=2024-01-01`).set(bearer(keys.alice));
  await api.request.get('/api/v1/accounts').set(bearer(keys.admin));
  await api.request.get(`/api/v1/emails/1/attachments/77123xyz`).set(bearer(keys.bob));
  await api.request.get('/api/v1/accounts').set(bearer(keys.revoked));
  await api.request.get('/raw-path-segment-q7').set(bearer(keys.carol));
  await api.request.post('/login').type('form').send({ username: 'mallory-login-name', password: 'x' });
  await api.request
    .post('/mcp')
    .set(bearer(keys.alice))
    .send(toolsCall(1, 'search_emails', { q: secretWord }));
  const { text, samples } = await scrape(t, api);
  const forbidden = [
    ...Object.values(keys),
    ...Object.values(keys).map((k) => k.slice(0, 11)),
    ...Object.values(keys).map((k) => k.slice(3, 11)),
    'alice',
    'admin',
    'bob',
    'carol',
    'mallory-login-name',
    secretWord,
    '77123xyz',
    'raw-path-segment-q7',
  ];
  for (const word of forbidden) t.false(text.includes(word), `scrape mentions ${word}`);
  // And every label value is from a fixed vocabulary.
  const routes = new Set(samples.map((s) => s.labels.route).filter(Boolean));
  for (const route of routes) t.regex(route!, /^(\/[a-z0-9/:_-]*|other)$/i);
  t.true(routes.has('/api/v1/emails/:id/attachments/:attachmentId'));
  t.true(routes.has('/login'));
});

test('each gateway counts only its own requests', async (t) => {
  const a = await withMetrics();
  const b = await withMetrics();
  t.teardown(() => Promise.all([a.close(), b.close()]));
  await a.request.get('/healthz');
  await a.request.get('/healthz');
  t.is(requests((await scrape(t, a)).samples, { method: 'GET', route: '/healthz', status: '200' }), 2);
  t.is(requests((await scrape(t, b)).samples, { method: 'GET', route: '/healthz', status: '200' }), 0);
});

test('the Redis connection of the shared rate limits is a gauge', async (t) => {
  const api = await withMetrics({ Redis: { Url: redisUrl() } });
  t.teardown(() => api.close());
  // The bound only ends a hang: on a busy 2-core machine the first connection took past 10 s.
  await waitFor(
    'Redis connected',
    async () => {
      const text = (await api.request.get('/metrics')).text;
      return sampleValue(parsePrometheus(text), 'mail_archive_redis_connected') === 1;
    },
    60_000,
  );
  t.is(sampleValue((await scrape(t, api)).samples, 'mail_archive_redis_connected'), 1);
});
