// The HTTP side of /mcp (SPEC.md, “MCP server”, “Authentication”, “Errors” and “Limits”): the master switch, API keys, methods,
// caching, origins, body limits, malformed JSON-RPC, and the Mcp rate-limit policy.
import anyTest, { type TestFn } from 'ava';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { call, connectClient, jsonOf, postMcp, startMcpGateway, toolsCall, type McpHarness } from './helpers/mcp.js';
import { INVALID_TOKEN_CHALLENGE, NO_TOKEN_CHALLENGE } from './helpers/api.js';

const test = anyTest as TestFn<{ h: McpHarness; originsGateway: McpHarness; clients: Client[] }>;
const ALLOWED_ORIGIN = 'https://agent.example.com';

test.before(async (t) => {
  const [h, originsGateway] = await Promise.all([
    startMcpGateway(),
    startMcpGateway({ Mcp: { AllowedOrigins: [`${ALLOWED_ORIGIN}/`] } }),
  ]);
  t.context = { h, originsGateway, clients: [] };
});

test.after.always(async (t) => {
  await Promise.all(t.context.clients.map((c) => c.close()));
  await Promise.all([t.context.h?.close(), t.context.originsGateway?.close()]);
});

const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

async function expectProblem(
  t: { is: (a: unknown, b: unknown, m?: string) => void },
  res: Response,
  status: number,
  label: string,
  instance = '/mcp',
) {
  t.is(res.status, status, label);
  t.is(res.headers.get('content-type'), 'application/problem+json', label);
  t.is(res.headers.get('cache-control'), 'no-store', label);
  const body = (await res.json()) as { status: number; instance: string; detail: string; title: string; type: string };
  t.is(body.status, status, label);
  t.is(body.instance, instance, label);
  return body;
}

test('a disabled MCP server is 404 while the REST API answers', async (t) => {
  const off = await startMcpGateway({ Mcp: { Enabled: false } });
  t.teardown(() => off.close());
  const res = await postMcp(off.url, toolsCall(1, 'list_accounts'), bearer(off.fixture.keys.admin));
  t.is(res.status, 404);
  t.is(res.headers.get('content-type'), 'application/problem+json');
  t.is(res.headers.get('cache-control'), 'no-store', 'even the disabled endpoint must not be cached');
  t.is((await fetch(`${off.base}/api/v1/accounts`, { headers: bearer(off.fixture.keys.admin) })).status, 200);
});

test('a missing or invalid key is 401 with WWW-Authenticate and problem+json, never a redirect', async (t) => {
  const { h } = t.context;
  const { keys } = h.fixture;
  const cases: Array<[label: string, headers: Record<string, string>, challenge: RegExp]> = [
    ['no header', {}, NO_TOKEN_CHALLENGE],
    ['not bearer', { Authorization: 'Basic YWRtaW46YWRtaW4=' }, NO_TOKEN_CHALLENGE],
    ['malformed', bearer('ma_short'), INVALID_TOKEN_CHALLENGE],
    ['unknown', bearer(`ma_${'A'.repeat(43)}`), INVALID_TOKEN_CHALLENGE],
    ['expired', bearer(keys.expired), INVALID_TOKEN_CHALLENGE],
    ['revoked', bearer(keys.revoked), INVALID_TOKEN_CHALLENGE],
    ['owner inactive', bearer(keys.inactive), INVALID_TOKEN_CHALLENGE],
  ];
  for (const [label, headers, challenge] of cases) {
    const res = await postMcp(h.url, toolsCall(1, 'list_accounts'), headers);
    await expectProblem(t, res, 401, label);
    t.regex(res.headers.get('www-authenticate') ?? '', challenge, label);
  }
  // A browser-style request with a cookie and no key is no different.
  const cookie = await fetch(h.url, {
    method: 'POST',
    redirect: 'manual',
    headers: { Cookie: 'session=abc', 'Content-Type': 'application/json' },
    body: '{}',
  });
  t.is(cookie.status, 401);
});

test("the SDK client cannot connect with an inactive owner's key or without a key", async (t) => {
  const { h } = t.context;
  for (const key of [h.fixture.keys.inactive, undefined]) {
    const err = await t.throwsAsync(connectClient(h.url, key));
    t.regex(String(err?.message), /401|Unauthorized/i);
  }
});

test('the same key serves /api and /mcp', async (t) => {
  const { h } = t.context;
  const client = await connectClient(h.url, h.fixture.keys.bob);
  t.context.clients.push(client);
  const viaMcp = jsonOf<Array<{ id: number }>>(await call(client, 'list_accounts'));
  const viaRest = (await (
    await fetch(`${h.base}/api/v1/accounts`, { headers: bearer(h.fixture.keys.bob) })
  ).json()) as Array<{ id: number }>;
  t.deepEqual(viaMcp, viaRest);
  t.deepEqual(
    viaMcp.map((a) => a.id),
    [h.fixture.accounts.personal],
  );
});

test('GET and DELETE are 405 with Allow: POST; every answer carries Cache-Control: no-store', async (t) => {
  const { h } = t.context;
  for (const method of ['GET', 'DELETE', 'PUT']) {
    const res = await fetch(h.url, {
      method,
      headers: { ...bearer(h.fixture.keys.admin), Accept: 'text/event-stream' },
    });
    await expectProblem(t, res, 405, method);
    t.is(res.headers.get('allow'), 'POST', method);
  }
  const ok = await postMcp(h.url, toolsCall(1, 'list_accounts'), bearer(h.fixture.keys.admin));
  t.is(ok.status, 200);
  t.is(ok.headers.get('cache-control'), 'no-store');
  t.is(ok.headers.get('mcp-session-id'), null, 'stateless: no session');
  const sub = await postMcp(`${h.url}/anything`, toolsCall(1, 'list_accounts'), bearer(h.fixture.keys.admin));
  await expectProblem(t, sub, 404, 'sub-path', '/mcp/anything');
});

test('a tools/call answers in plain JSON (no event stream) with the JSON-RPC result', async (t) => {
  const { h } = t.context;
  const res = await postMcp(
    h.url,
    toolsCall(7, 'get_email', { id: h.fixture.emails.lunch }),
    bearer(h.fixture.keys.admin),
  );
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^application\/json/);
  const body = (await res.json()) as { id: number; result: { content: Array<{ text: string }> } };
  t.is(body.id, 7);
  t.like(JSON.parse(body.result.content[0]!.text), { subject: 'Lunch on Friday?' });
});

test('an Origin outside Mcp:AllowedOrigins is 403; none is allowed by default', async (t) => {
  const { h, originsGateway } = t.context;
  for (const [gateway, origin] of [
    [h, ALLOWED_ORIGIN],
    [originsGateway, 'https://evil.example'],
    [originsGateway, 'http://agent.example.com'],
  ] as const) {
    const res = await postMcp(gateway.url, toolsCall(1, 'list_accounts'), {
      ...bearer(gateway.fixture.keys.admin),
      Origin: origin,
    });
    const body = await expectProblem(t, res, 403, origin);
    t.regex(body.detail, /Mcp:AllowedOrigins/);
    t.is(res.headers.get('access-control-allow-origin'), null);
  }
});

test('an allowed Origin is served with CORS headers, and its preflight is answered', async (t) => {
  const { originsGateway: g } = t.context;
  const origin = 'https://Agent.Example.com';
  const res = await postMcp(g.url, toolsCall(1, 'list_accounts'), { ...bearer(g.fixture.keys.admin), Origin: origin });
  t.is(res.status, 200);
  t.is(res.headers.get('access-control-allow-origin'), origin);
  t.regex(res.headers.get('access-control-expose-headers') ?? '', /WWW-Authenticate.*Retry-After/);

  const preflight = await fetch(g.url, {
    method: 'OPTIONS',
    headers: {
      Origin: origin,
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'authorization, content-type',
    },
  });
  t.is(preflight.status, 204);
  t.is(preflight.headers.get('access-control-allow-origin'), origin);
  t.is(preflight.headers.get('access-control-allow-methods'), 'POST');
  t.regex(
    preflight.headers.get('access-control-allow-headers') ?? '',
    /Authorization.*Content-Type.*Mcp-Protocol-Version/,
  );

  // Through the SDK client as well: the Origin header rides on every request.
  const client = await connectClient(g.url, g.fixture.keys.alice, { Origin: origin });
  t.context.clients.push(client);
  t.is(jsonOf<unknown[]>(await call(client, 'list_accounts')).length, 2);
});

test('a body above 1 MB is 413 problem+json', async (t) => {
  const { h } = t.context;
  const big = JSON.stringify(toolsCall(1, 'search_emails', { q: 'x'.repeat(1024 * 1024 + 10) }));
  const res = await postMcp(h.url, big, bearer(h.fixture.keys.admin));
  await expectProblem(t, res, 413, '413');
  // Just under the limit is read (and the over-long query refused as a tool error, not an HTTP one).
  const fits = await postMcp(
    h.url,
    toolsCall(1, 'search_emails', { q: 'x'.repeat(1000 * 1000) }),
    bearer(h.fixture.keys.admin),
  );
  t.is(fits.status, 200);
  const body = (await fits.json()) as { result: { isError: boolean; content: Array<{ text: string }> } };
  t.true(body.result.isError);
  t.regex(body.result.content[0]!.text, /q is 1000000 characters long/);
});

test('malformed JSON, a non-JSON-RPC body and a batch get JSON-RPC errors with 4xx, never 500', async (t) => {
  const { h } = t.context;
  const auth = bearer(h.fixture.keys.admin);
  const cases: Array<[label: string, body: string, status: number, code: number]> = [
    ['not JSON', '{"jsonrpc": "2.0", "id": 1, "method": ', 400, -32700],
    ['a JSON string', '"tools/list"', 400, -32700],
    // JSON that is no JSON-RPC message is an Invalid Request (JSON-RPC 2.0 section 5.1), as the
    // SDK's classifier answers it for both protocol eras.
    ['not JSON-RPC', '{"hello": "world"}', 400, -32600],
    ['a batch', JSON.stringify([toolsCall(1, 'list_accounts'), toolsCall(2, 'list_accounts')]), 400, -32600],
  ];
  for (const [label, body, status, code] of cases) {
    const res = await postMcp(h.url, body, auth);
    t.is(res.status, status, label);
    t.is(res.headers.get('cache-control'), 'no-store', label);
    t.like(await res.json(), { jsonrpc: '2.0', error: { code }, id: null }, label);
  }
  const unknownMethod = await postMcp(h.url, { jsonrpc: '2.0', id: 3, method: 'tools/explode' }, auth);
  t.is(unknownMethod.status, 200);
  t.like(await unknownMethod.json(), { id: 3, error: { code: -32601 } });
  // An unknown tool is a protocol error (-32602), as the MCP tools spec gives it since 2025-06-18.
  const unknownTool = await postMcp(h.url, toolsCall(4, 'delete_everything'), auth);
  t.is(unknownTool.status, 200);
  t.like(await unknownTool.json(), {
    id: 4,
    error: { code: -32602, message: 'Tool delete_everything not found' },
  });
  const wrongType = await fetch(h.url, {
    method: 'POST',
    headers: { ...auth, 'Content-Type': 'text/plain', Accept: 'application/json, text/event-stream' },
    body: 'hi',
  });
  t.is(wrongType.status, 415);
});

test('the Mcp budget is its own: 429 with Retry-After when spent, while REST and other keys go on', async (t) => {
  const g = await startMcpGateway({ Mcp: { RateLimitPerMinute: 3 }, Api: { RateLimitPerMinute: 3 } });
  t.teardown(() => g.close());
  const admin = bearer(g.fixture.keys.admin);
  for (let i = 0; i < 3; i++) {
    const res = await postMcp(g.url, toolsCall(i, 'list_accounts'), admin);
    t.is(res.status, 200);
    t.is(res.headers.get('ratelimit-remaining'), String(2 - i));
  }
  const limited = await postMcp(g.url, toolsCall(9, 'list_accounts'), admin);
  const body = await expectProblem(t, limited, 429, '429');
  t.regex(body.detail, /3 requests per minute/);
  const retryAfter = Number(limited.headers.get('retry-after'));
  t.true(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);

  // Same key on REST: a separate budget, still full; and spending it leaves MCP as it was.
  for (let i = 0; i < 3; i++) t.is((await fetch(`${g.base}/api/v1/accounts`, { headers: admin })).status, 200);
  t.is((await fetch(`${g.base}/api/v1/accounts`, { headers: admin })).status, 429);
  // Another key has its own MCP budget.
  t.is((await postMcp(g.url, toolsCall(1, 'list_accounts'), bearer(g.fixture.keys.alice))).status, 200);
  t.is((await postMcp(g.url, toolsCall(1, 'list_accounts'), admin)).status, 429);
});

test('spending the REST budget leaves the MCP budget untouched', async (t) => {
  const g = await startMcpGateway({ Mcp: { RateLimitPerMinute: 100 }, Api: { RateLimitPerMinute: 2 } });
  t.teardown(() => g.close());
  const auth = bearer(g.fixture.keys.bob);
  for (let i = 0; i < 2; i++) t.is((await fetch(`${g.base}/api/v1/accounts`, { headers: auth })).status, 200);
  t.is((await fetch(`${g.base}/api/v1/accounts`, { headers: auth })).status, 429);
  const mcp = await postMcp(g.url, toolsCall(1, 'list_accounts'), auth);
  t.is(mcp.status, 200);
  t.is(mcp.headers.get('ratelimit-remaining'), '99');
});

test('without a key the MCP budget is per client IP, and Origin refusals come before it', async (t) => {
  const g = await startMcpGateway({ Mcp: { RateLimitPerMinute: 2 } });
  t.teardown(() => g.close());
  // Refused origins do not spend anything.
  for (let i = 0; i < 3; i++)
    t.is((await postMcp(g.url, toolsCall(1, 'list_accounts'), { Origin: 'https://evil.example' })).status, 403);
  t.is((await postMcp(g.url, toolsCall(1, 'list_accounts'))).status, 401);
  t.is((await postMcp(g.url, toolsCall(1, 'list_accounts'))).status, 401);
  const third = await postMcp(g.url, toolsCall(1, 'list_accounts'));
  t.is(third.status, 429, 'without a key, the IP budget is spent before the 401');
  t.truthy(third.headers.get('retry-after'));
  // A key is its own partition, apart from the anonymous IP budget.
  t.is((await postMcp(g.url, toolsCall(1, 'list_accounts'), bearer(g.fixture.keys.admin))).status, 200);
});

test("made-up keys carrying a real key's prefix do not spend that key's Mcp budget; failures share the IP's budget with REST", async (t) => {
  const g = await startMcpGateway({ Mcp: { RateLimitPerMinute: 3 }, Server: { AuthFailuresPerIpPerMinute: 4 } });
  t.teardown(() => g.close());
  const real = g.fixture.keys.carol;
  const forged = bearer(`${real.slice(0, 11)}${'A'.repeat(real.length - 11)}`);
  // Four failures from this address: three on /mcp, one on /api; each a 401 naming the problem.
  for (let i = 0; i < 3; i++) {
    const res = await postMcp(g.url, toolsCall(i, 'list_accounts'), forged);
    await expectProblem(t, res, 401, `forged ${i + 1}`);
    t.regex(res.headers.get('www-authenticate') ?? '', INVALID_TOKEN_CHALLENGE);
  }
  t.is((await fetch(`${g.base}/api/v1/accounts`, { headers: forged })).status, 401);
  // The IP's failed-authentication budget is spent for both front ends…
  t.is((await postMcp(g.url, toolsCall(5, 'list_accounts'), forged)).status, 429);
  t.is((await fetch(`${g.base}/api/v1/stats`, { headers: forged })).status, 429);
  // …while the key whose prefix was used has its whole Mcp budget (from another address it
  // would not even share the IP budget; here the genuine key is admitted after the key check).
  const b = await startMcpGateway({ Mcp: { RateLimitPerMinute: 3 } });
  t.teardown(() => b.close());
  const victim = bearer(b.fixture.keys.carol);
  const forgedB = bearer(`${b.fixture.keys.carol.slice(0, 11)}${'B'.repeat(b.fixture.keys.carol.length - 11)}`);
  for (let i = 0; i < 6; i++) t.is((await postMcp(b.url, toolsCall(i, 'list_accounts'), forgedB)).status, 401);
  for (let i = 0; i < 3; i++) {
    const res = await postMcp(b.url, toolsCall(i, 'list_accounts'), victim);
    t.is(res.status, 200, `the owner's call ${i + 1}`);
    t.is(res.headers.get('ratelimit-remaining'), String(2 - i));
  }
  t.is((await postMcp(b.url, toolsCall(9, 'list_accounts'), victim)).status, 429);
});
