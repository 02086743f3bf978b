// GET /healthz and /readyz (docs/metrics.md): no authentication, no archive data, never cached,
// JSON, 200 or 503, served whether or not the API and MCP are enabled, never rate limited.
import test from 'ava';
import { PING_REUSE_MS } from '../gateway/ops/health.js';
import { startApi, type ApiHarness } from './helpers/api.js';
import { freePort, redisUrl, waitFor } from './helpers/redis.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function assertHealthHeaders(t: import('ava').ExecutionContext, res: { headers: Record<string, string> }) {
  t.is(res.headers['cache-control'], 'no-store');
  t.regex(res.headers['content-type'] ?? '', /^application\/json/);
  t.is(res.headers['ratelimit-limit'], undefined, 'probes never spend a rate-limit budget');
}

/**
 * Waits until both lanes have started their threads. Readiness is rightly 503 until they have,
 * and on a machine busy with the rest of the suite a thread's start can outlast the ping timeout;
 * the tests below are about what comes after.
 */
async function poolUp(api: ApiHarness): Promise<void> {
  await waitFor('the pool answers readyz', async () => {
    const res = await api.request.get('/readyz');
    return res.body.checks.pool.status === 'ok';
  });
}

/** Readiness once the pool's threads are up (poolUp): 200, ok, every check in its place. */
async function readyOk(t: import('ava').ExecutionContext, api: ApiHarness, redis: string) {
  await poolUp(api);
  const res = await api.request.get('/readyz');
  t.is(res.status, 200);
  assertHealthHeaders(t, res);
  t.deepEqual(Object.keys(res.body).sort(), ['checkedAt', 'checks', 'status']);
  t.is(res.body.status, 'ok');
  t.regex(res.body.checkedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  // A SQLite archive also reports its shared search index (informational: never a failure).
  t.deepEqual(Object.keys(res.body.checks).sort(), ['accessLog', 'pool', 'redis', 'searchIndex']);
  // Entries written as they come: no backlog (docs/security.md, "Mail shaped by an attacker", item 10).
  t.like(res.body.checks.accessLog, { status: 'ok', max: 10_000 });
  t.true(['building', 'catching up', 'current'].includes(res.body.checks.searchIndex.status));
  t.is(res.body.checks.pool.status, 'ok');
  for (const lane of ['interactive', 'query']) {
    t.is(res.body.checks.pool.lanes[lane].status, 'ok', lane);
    t.true(typeof res.body.checks.pool.lanes[lane].ms === 'number', lane);
  }
  t.deepEqual(res.body.checks.redis, { status: redis });
}

for (const enabled of [false, true]) {
  test(`healthz and readyz answer with the API and MCP ${enabled ? 'enabled' : 'disabled'}`, async (t) => {
    const api = await startApi({ Api: { Enabled: enabled, RateLimitPerMinute: 1 }, Mcp: { Enabled: enabled } });
    t.teardown(() => api.close());
    const health = await api.request.get('/healthz');
    t.is(health.status, 200);
    assertHealthHeaders(t, health);
    t.deepEqual(health.body, { status: 'ok' });
    await readyOk(t, api, 'not configured');
    // With a budget of one request a minute, probes still answer: they are not rate limited.
    for (let i = 0; i < 3; i++) t.is((await api.request.get('/healthz')).status, 200);
    t.is((await api.request.head('/readyz')).status, 200);
    // The front ends themselves stay as configured.
    t.is((await api.request.get('/api/v1/accounts')).status, enabled ? 401 : 404);
  });
}

test('healthz and readyz accept only GET and HEAD', async (t) => {
  const api = await startApi();
  t.teardown(() => api.close());
  for (const path of ['/healthz', '/readyz']) {
    const res = await api.request.post(path);
    t.is(res.status, 405, path);
    t.is(res.headers['content-type'], 'application/problem+json');
    t.is(res.headers.allow, 'GET, HEAD');
    t.is(res.headers['cache-control'], 'no-store');
  }
});

test('readyz reports Redis as ok when it answers, and as down (degraded, still 200) when it does not', async (t) => {
  const up = await startApi({ Redis: { Url: redisUrl() } });
  t.teardown(() => up.close());
  // Until the connection is up the answer is "down"; it turns to "ok" once Redis answers.
  await waitFor('Redis reported ok', async () => (await up.request.get('/readyz')).body.checks.redis.status === 'ok');
  await readyOk(t, up, 'ok');

  const down = await startApi({ Redis: { Url: `redis://127.0.0.1:${await freePort()}` } });
  t.teardown(() => down.close());
  await poolUp(down);
  const res = await down.request.get('/readyz');
  t.is(res.status, 200, 'rate limits fall back to per-process counters, so the process still serves');
  t.is(res.body.status, 'degraded');
  t.deepEqual(res.body.checks.redis, { status: 'down' });
  t.is(res.body.checks.pool.status, 'ok');
});

test('readyz is 503 once the pool is closed', async (t) => {
  const api = await startApi();
  t.teardown(() => api.close());
  await poolUp(api);
  t.is((await api.request.get('/readyz')).status, 200);
  await api.gateway.engine.close();
  const res = await api.request.get('/readyz');
  t.is(res.status, 503);
  assertHealthHeaders(t, res);
  t.is(res.body.status, 'unavailable');
  t.deepEqual(res.body.checks.pool, {
    status: 'unavailable',
    lanes: { interactive: { status: 'closed' }, query: { status: 'closed' } },
  });
  t.is((await api.request.get('/healthz')).status, 200, 'the process itself is still alive');
});

test('readyz is 503 while a lane does not answer, and 200 again once it does', async (t) => {
  const api = await startApi({}, { gateway: { faultInjection: true } });
  t.teardown(() => api.close());
  await poolUp(api);
  await sleep(PING_REUSE_MS + 50); // the next readyz pings afresh
  // The only query thread is blocked for longer than the ping timeout.
  const blocked = api.gateway.engine.run({ kind: 'fault', mode: 'hold', ms: 3000 }).catch(() => undefined);
  const res = await api.request.get('/readyz');
  t.is(res.status, 503);
  t.is(res.body.status, 'unavailable');
  t.is(res.body.checks.pool.lanes.query.status, 'timeout');
  t.is(res.body.checks.pool.lanes.interactive.status, 'ok', 'the interactive lane has threads of its own');
  await blocked;
  await sleep(PING_REUSE_MS + 50);
  const again = await api.request.get('/readyz');
  t.is(again.status, 200);
  t.is(again.body.checks.pool.lanes.query.status, 'ok');
});

test('readyz stays 200 (degraded, lane busy) while a lane is saturated but finishing jobs', async (t) => {
  const api = await startApi({}, { gateway: { faultInjection: true } });
  t.teardown(() => api.close());
  // The query thread is up first: on a busy machine its start alone can outlast the ping
  // timeout, and a lane that has finished nothing yet is rightly not called busy.
  await api.gateway.engine.run({ kind: 'fault', mode: 'hold', ms: 1 });
  // Ten 300 ms jobs ahead of the ping on the only query thread: it waits about 3 s, past the
  // ping timeout, while the lane completes a job every 300 ms. Saturated, not wedged.
  const queued = Array.from({ length: 10 }, () =>
    api.gateway.engine.run({ kind: 'fault', mode: 'hold', ms: 300 }).catch(() => undefined),
  );
  const res = await api.request.get('/readyz');
  t.is(res.status, 200);
  t.is(res.body.status, 'degraded');
  t.is(res.body.checks.pool.status, 'busy');
  t.is(res.body.checks.pool.lanes.query.status, 'busy');
  t.is(res.body.checks.pool.lanes.interactive.status, 'ok');
  await Promise.all(queued);
});
