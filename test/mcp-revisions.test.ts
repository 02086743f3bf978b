// One /mcp for two protocol revisions (docs/decisions.md, ADR 15): the v1 SDK client, the v2
// client (@modelcontextprotocol/client) on 2025-11-25 and on 2026-07-28, and raw HTTP on
// 2026-07-28 see the same tools and results, and meet the same key check, Origin check, rate
// limit, no-store and access log, against the real gateway and worker pool.
import anyTest, { type TestFn } from 'ava';
import type { Client as V2Client } from '@modelcontextprotocol/client';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { mcpTools } from '../gateway/mcp/tools.js';
import { capturingLogger } from './helpers/api.js';
import {
  accessLogRows,
  call,
  connectClient,
  connectV2Client,
  LEGACY_REVISION,
  MODERN_REVISION,
  modernRequest,
  postMcp,
  startMcpGateway,
  toolsCall,
  type McpHarness,
} from './helpers/mcp.js';

type AnyClient = Client | V2Client;
const test = anyTest as TestFn<{ h: McpHarness; clients: Record<string, AnyClient> }>;
const ALLOWED_ORIGIN = 'https://agent.example.com';

test.before(async (t) => {
  const h = await startMcpGateway({ Mcp: { AllowedOrigins: [ALLOWED_ORIGIN] } });
  const key = h.fixture.keys.admin;
  const [v1, v2Legacy, v2Modern] = await Promise.all([
    connectClient(h.url, key),
    connectV2Client(h.url, key, LEGACY_REVISION),
    connectV2Client(h.url, key, MODERN_REVISION),
  ]);
  t.context = {
    h,
    clients: { 'v1 client (2025-11-25)': v1, 'v2 client on 2025-11-25': v2Legacy, 'v2 client on 2026-07-28': v2Modern },
  };
});

test.after.always(async (t) => {
  await Promise.all(Object.values(t.context.clients ?? {}).map((c) => c.close()));
  await t.context.h?.close();
});

const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

/** The same call on every client, and the results it got, by client. */
async function callEverywhere(clients: Record<string, AnyClient>, name: string, args: Record<string, unknown> = {}) {
  const results: Record<string, CallToolResult> = {};
  for (const [label, client] of Object.entries(clients)) results[label] = await call(client, name, args);
  return results;
}

/** The part of a result both eras share (a 2026-07-28 result also carries _meta with serverInfo). */
const shared = (r: CallToolResult) => ({
  content: r.content,
  structuredContent: r.structuredContent,
  isError: r.isError,
});

test('each client gets the revision it asked for, and the same server name, version and instructions', (t) => {
  const { clients } = t.context;
  const v1Transport = (clients['v1 client (2025-11-25)'] as Client).transport as StreamableHTTPClientTransport;
  t.is(v1Transport.protocolVersion, LEGACY_REVISION, 'v1: the initialize handshake settled on 2025-11-25');
  const legacy = clients['v2 client on 2025-11-25'] as V2Client;
  const modern = clients['v2 client on 2026-07-28'] as V2Client;
  t.is(legacy.getNegotiatedProtocolVersion(), LEGACY_REVISION);
  t.is(modern.getNegotiatedProtocolVersion(), MODERN_REVISION);
  for (const [label, client] of Object.entries(clients)) {
    t.like(client.getServerVersion(), { name: 'mail-archive-gateway' }, label);
    t.regex(client.getInstructions() ?? '', /page \+ 1/, label);
  }
  t.deepEqual(modern.getServerVersion(), legacy.getServerVersion());
  t.is(modern.getInstructions(), legacy.getInstructions());
});

test('tools/list offers the same tools, schemas and annotations on every revision', async (t) => {
  const { clients, h } = t.context;
  const expected = mcpTools(h.settings.Mcp)
    .map((tool) => tool.name)
    .sort();
  const lists: Record<string, unknown> = {};
  for (const [label, client] of Object.entries(clients)) {
    const { tools } = await client.listTools();
    t.deepEqual(tools.map((tool) => tool.name).sort(), expected, label);
    lists[label] = tools.map(({ name, title, description, inputSchema, outputSchema, annotations }) => ({
      name,
      title,
      description,
      inputSchema,
      outputSchema,
      annotations,
    }));
  }
  const [first, ...rest] = Object.values(lists);
  for (const other of rest) t.deepEqual(other, first);
});

test('search_emails and get_email answer the same on every revision', async (t) => {
  const { clients, h } = t.context;
  const checks: Array<[string, Record<string, unknown>]> = [
    ['search_emails', { q: 'lunch' }],
    ['search_emails', { pageSize: 3, page: 2, sortBy: 'subject', sortOrder: 'asc' }],
    ['get_email', { id: h.fixture.emails.lunch }],
    ['get_email', { id: 999_999 }],
    ['search_emails', { direction: 'sideways' }],
    ['search_emails', { from: 'yesterday' }],
  ];
  for (const [name, args] of checks) {
    const label = `${name} ${JSON.stringify(args)}`;
    const results = Object.values(await callEverywhere(clients, name, args)).map(shared);
    for (const other of results.slice(1)) t.deepEqual(other, results[0], label);
  }
  const found = await call(clients['v2 client on 2026-07-28']!, 'search_emails', { q: 'lunch' });
  t.deepEqual(
    (found.structuredContent as { items: Array<{ id: number; subject: string }> }).items.map((e) => e.subject),
    ['Lunch on Friday?'],
  );
  const opened = await call(clients['v2 client on 2026-07-28']!, 'get_email', { id: h.fixture.emails.lunch });
  t.like(opened.structuredContent, { email: { id: h.fixture.emails.lunch, subject: 'Lunch on Friday?' } });
  const invalid = await call(clients['v2 client on 2026-07-28']!, 'search_emails', { direction: 'sideways' });
  t.true(invalid.isError);
  t.regex(JSON.stringify(invalid.content), /direction must be one of incoming, outgoing, not \\"sideways\\"/);
});

// Serial: the other tests open the same email concurrently.
test.serial('a 2026-07-28 call is access-logged like any other MCP call', async (t) => {
  const { clients, h } = t.context;
  const before = (await accessLogRows(h)).length;
  await call(clients['v2 client on 2026-07-28']!, 'get_email', { id: h.fixture.emails.lunch });
  const rows = (await accessLogRows(h)).slice(before);
  t.deepEqual(
    rows.map((r) => ({ type: r.type, email: r.email_id, source: r.source, user: r.user_id })),
    [{ type: 'Open', email: h.fixture.emails.lunch, source: 'mcp', user: h.fixture.users.admin }],
  );
});

test('raw HTTP on 2026-07-28: one POST, no handshake, a plain JSON answer that is never cached', async (t) => {
  const { h } = t.context;
  const { body, headers } = modernRequest(5, 'tools/call', {
    name: 'get_email',
    arguments: { id: h.fixture.emails.lunch },
  });
  const res = await postMcp(h.url, body, { ...headers, ...bearer(h.fixture.keys.admin) });
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^application\/json/);
  t.is(res.headers.get('cache-control'), 'no-store');
  t.is(res.headers.get('mcp-session-id'), null, 'stateless: no session');
  const answer = (await res.json()) as { id: number; result: CallToolResult & { _meta?: Record<string, unknown> } };
  t.is(answer.id, 5);
  t.like(JSON.parse((answer.result.content[0] as { text: string }).text), { subject: 'Lunch on Friday?' });

  // server/discover tells a client which revisions take the per-request envelope.
  const discover = modernRequest(6, 'server/discover');
  const found = await postMcp(h.url, discover.body, { ...discover.headers, ...bearer(h.fixture.keys.admin) });
  t.is(found.status, 200);
  t.is(found.headers.get('cache-control'), 'no-store');
  const discovered = (await found.json()) as { result: { supportedVersions: string[]; instructions?: string } };
  t.deepEqual(discovered.result.supportedVersions, [MODERN_REVISION]);
  t.regex(discovered.result.instructions ?? '', /read-only/i);

  // A 2025-era request naming its revision in the header only is still served, the old way.
  const legacy = await postMcp(h.url, toolsCall(7, 'list_accounts'), {
    'MCP-Protocol-Version': LEGACY_REVISION,
    ...bearer(h.fixture.keys.admin),
  });
  t.is(legacy.status, 200);
  t.is(legacy.headers.get('cache-control'), 'no-store');
  t.like(await legacy.json(), { id: 7, result: { isError: undefined } });
});

test('2026-07-28: no key is 401, a foreign Origin 403, both problem+json and no-store; an allowed Origin gets CORS', async (t) => {
  const { h } = t.context;
  const { body, headers } = modernRequest(1, 'tools/call', { name: 'list_accounts', arguments: {} });
  const refusals: Array<[string, Record<string, string>, number]> = [
    ['no key', {}, 401],
    ['revoked key', bearer(h.fixture.keys.revoked), 401],
    ['foreign origin', { ...bearer(h.fixture.keys.admin), Origin: 'https://evil.example' }, 403],
  ];
  for (const [label, extra, status] of refusals) {
    const res = await postMcp(h.url, body, { ...headers, ...extra });
    t.is(res.status, status, label);
    t.is(res.headers.get('content-type'), 'application/problem+json', label);
    t.is(res.headers.get('cache-control'), 'no-store', label);
  }
  const allowed = await postMcp(h.url, body, { ...headers, ...bearer(h.fixture.keys.admin), Origin: ALLOWED_ORIGIN });
  t.is(allowed.status, 200);
  t.is(allowed.headers.get('access-control-allow-origin'), ALLOWED_ORIGIN);

  // The preflight lets a page send the headers the revision requires.
  const preflight = await fetch(h.url, {
    method: 'OPTIONS',
    headers: {
      Origin: ALLOWED_ORIGIN,
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'authorization, content-type, mcp-protocol-version, mcp-method, mcp-name',
    },
  });
  t.is(preflight.status, 204);
  t.regex(preflight.headers.get('access-control-allow-headers') ?? '', /Mcp-Protocol-Version.*Mcp-Method.*Mcp-Name/);
});

test('the v2 client on either revision cannot connect without a key or from a foreign Origin', async (t) => {
  const { h } = t.context;
  for (const revision of [MODERN_REVISION, LEGACY_REVISION] as const) {
    const noKey = await t.throwsAsync(connectV2Client(h.url, undefined, revision));
    t.regex(String(noKey?.message), /401|Unauthorized/i, `${revision}: no key`);
    const foreign = await t.throwsAsync(
      connectV2Client(h.url, h.fixture.keys.admin, revision, { Origin: 'https://evil.example' }),
    );
    t.regex(String(foreign?.message), /403|Forbidden|origin/i, `${revision}: foreign origin`);
  }
});

test('2026-07-28 requests that break the revision get its JSON-RPC errors with HTTP 400, never 500', async (t) => {
  const { h } = t.context;
  const auth = bearer(h.fixture.keys.admin);
  const call = modernRequest(1, 'tools/call', { name: 'list_accounts', arguments: {} });

  const { 'Mcp-Method': _method, ...withoutMethod } = call.headers;
  const cases: Array<[label: string, body: unknown, headers: Record<string, string>, code: number]> = [
    ['Mcp-Method header missing', call.body, withoutMethod, -32020],
    ['Mcp-Name disagrees with the body', call.body, { ...call.headers, 'Mcp-Name': 'get_email' }, -32020],
    [
      'header and envelope name different revisions',
      call.body,
      { ...call.headers, 'MCP-Protocol-Version': '2026-08-01' },
      -32020,
    ],
    [
      'a revision this server does not serve',
      modernRequest(2, 'tools/list', {}, '2099-01-01').body,
      modernRequest(2, 'tools/list', {}, '2099-01-01').headers,
      -32022,
    ],
    [
      'initialize with the 2026-07-28 header',
      {
        jsonrpc: '2.0',
        id: 3,
        method: 'initialize',
        params: { protocolVersion: LEGACY_REVISION, capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      },
      { 'MCP-Protocol-Version': MODERN_REVISION },
      -32020,
    ],
  ];
  for (const [label, body, headers, code] of cases) {
    const res = await postMcp(h.url, body, { ...headers, ...auth });
    t.is(res.status, 400, label);
    t.is(res.headers.get('cache-control'), 'no-store', label);
    const answer = (await res.json()) as { error: { code: number; data?: { supported?: string[] } } };
    t.is(answer.error.code, code, label);
    if (code === -32022) t.deepEqual(answer.error.data?.supported, [MODERN_REVISION], label);
  }
});

test('2026-07-28 requests spend the same Mcp budget: 429 problem+json with Retry-After', async (t) => {
  const g = await startMcpGateway({ Mcp: { RateLimitPerMinute: 2 } });
  t.teardown(() => g.close());
  const auth = bearer(g.fixture.keys.admin);
  const { body, headers } = modernRequest(1, 'tools/call', { name: 'list_accounts', arguments: {} });
  t.is((await postMcp(g.url, toolsCall(1, 'list_accounts'), auth)).status, 200, 'a 2025-era call');
  const second = await postMcp(g.url, body, { ...headers, ...auth });
  t.is(second.status, 200, 'a 2026-07-28 call');
  t.is(second.headers.get('ratelimit-remaining'), '0');
  const limited = await postMcp(g.url, body, { ...headers, ...auth });
  t.is(limited.status, 429);
  t.is(limited.headers.get('content-type'), 'application/problem+json');
  t.is(limited.headers.get('cache-control'), 'no-store');
  t.truthy(limited.headers.get('retry-after'));
});

test("refused 2026-07-28 requests are the client's mistake: logged at debug, never as errors", async (t) => {
  const { logger, lines } = capturingLogger();
  const g = await startMcpGateway({}, { logger });
  t.teardown(() => g.close());
  const auth = bearer(g.fixture.keys.admin);
  const call = modernRequest(1, 'tools/call', { name: 'list_accounts', arguments: {} });
  const unsupported = modernRequest(2, 'tools/list', {}, '2099-01-01');
  const statuses = [
    (await postMcp(g.url, call.body, { ...call.headers, ...auth, 'Mcp-Name': 'get_email' })).status,
    (await postMcp(g.url, unsupported.body, { ...unsupported.headers, ...auth })).status,
    (await postMcp(g.url, call.body, { ...call.headers, ...auth, 'Content-Type': 'text/plain' })).status,
  ];
  t.deepEqual(statuses, [400, 400, 415]);
  t.true(lines.some((l) => l.msg === 'MCP request refused' && l.level === 20));
  t.false(
    lines.some((l) => (l.level as number) >= 50),
    JSON.stringify(lines.filter((l) => (l.level as number) >= 50)),
  );
});

test('a 2026-07-28 subscriptions/listen is acknowledged and ended at once, and its event stream is not cached either', async (t) => {
  const { h } = t.context;
  const listen = modernRequest(9, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
  const res = await postMcp(h.url, listen.body, { ...listen.headers, ...bearer(h.fixture.keys.admin) });
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  t.is(res.headers.get('cache-control'), 'no-store, no-transform');
  // The tool list never changes (listChanged: false), so nothing is honoured and the stream ends.
  const events = await res.text();
  t.regex(events, /notifications\/subscriptions\/acknowledged.*"notifications":\{\}/);
  t.regex(events, /"id":9,"result":\{"resultType":"complete"/);
});
