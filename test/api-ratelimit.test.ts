// SPEC.md, “Limits”, REST rate limit with the in-memory store: a fixed window of
// Api:RateLimitPerMinute requests per genuine key's prefix (client IP without a key), with
// RateLimit-* headers on every answer and 429 problem+json past the budget. Keys that fail
// authentication are charged to the client IP's own budget (gateway/admission.ts).
import anyTest, { type TestFn } from 'ava';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createKey } from '../engine/sqlite/keys.js';
import { RateLimiter } from '../gateway/rate-limit.js';
import { bearer, INVALID_TOKEN_CHALLENGE, silentLogger, startApi, unknownKey, type ApiHarness } from './helpers/api.js';

const LIMIT = 3;
const test = anyTest as TestFn<{ api: ApiHarness }>;

test.before(async (t) => {
  // TrustProxy lets each test be its own client IP through X-Forwarded-For.
  t.context = { api: await startApi({ Api: { RateLimitPerMinute: LIMIT }, Server: { TrustProxy: true } }) };
});
test.after.always(async (t) => {
  await t.context.api?.close();
});

let ipCounter = 0;
/** A client IP no other test uses. */
const freshIp = () => `198.51.100.${++ipCounter}`;
/** A key of its own, so that no other test spends its budget. */
const freshKey = (api: ApiHarness, username = 'admin') =>
  createKey(api.db(), { username, name: `rl ${Math.random()}` }).key;

function assertRateHeaders(
  t: import('ava').ExecutionContext,
  headers: Record<string, string>,
  remaining: number,
  label: string,
) {
  t.is(headers['ratelimit-limit'], String(LIMIT), label);
  t.is(headers['ratelimit-remaining'], String(remaining), label);
  const reset = Number(headers['ratelimit-reset']);
  t.true(
    Number.isInteger(reset) && reset >= 0 && reset <= 60,
    `${label}: RateLimit-Reset ${headers['ratelimit-reset']}`,
  );
}

test('a key gets RateLimitPerMinute requests, then 429 problem+json with Retry-After and RateLimit headers', async (t) => {
  const { api } = t.context;
  const key = api.fixture.keys.alice;
  for (let i = 0; i < LIMIT; i++) {
    const res = await api.request.get('/api/v1/accounts').set(bearer(key)).set('X-Forwarded-For', freshIp());
    t.is(res.status, 200);
    assertRateHeaders(t, res.headers, LIMIT - 1 - i, `request ${i + 1}`);
  }
  // The budget belongs to the key, not to a path or an IP.
  const res = await api.request.get('/api/v1/stats').set(bearer(key)).set('X-Forwarded-For', freshIp());
  t.is(res.status, 429);
  t.is(res.headers['content-type'], 'application/problem+json');
  t.like(res.body, { status: 429, title: 'Too Many Requests', instance: '/api/v1/stats' });
  t.regex(res.body.detail, /Rate limit/);
  t.is(typeof res.body.type, 'string');
  assertRateHeaders(t, res.headers, 0, '429');
  const retryAfter = Number(res.headers['retry-after']);
  t.true(
    Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60,
    `Retry-After ${res.headers['retry-after']}`,
  );
  t.is(res.headers['www-authenticate'], undefined, 'a 429 is not an authentication failure');
});

test('two keys have separate budgets', async (t) => {
  const { api } = t.context;
  const { bob, carol } = api.fixture.keys;
  for (let i = 0; i < LIMIT; i++) t.is((await api.request.get('/api/v1/stats').set(bearer(bob))).status, 200);
  t.is((await api.request.get('/api/v1/stats').set(bearer(bob))).status, 429);
  const other = await api.request.get('/api/v1/stats').set(bearer(carol));
  t.is(other.status, 200);
  assertRateHeaders(t, other.headers, LIMIT - 1, 'carol');
});

test('without a key the budget is per client IP, separate from any key budget', async (t) => {
  const { api } = t.context;
  const ip = freshIp();
  for (let i = 0; i < LIMIT; i++) {
    const res = await api.request.get('/api/v1/accounts').set('X-Forwarded-For', ip);
    t.is(res.status, 401);
    assertRateHeaders(t, res.headers, LIMIT - 1 - i, `anonymous ${i + 1}`);
  }
  const limited = await api.request.get('/api/v1/accounts').set('X-Forwarded-For', ip);
  t.is(limited.status, 429);
  t.truthy(limited.headers['retry-after']);
  // Another IP has its own budget.
  t.is((await api.request.get('/api/v1/accounts').set('X-Forwarded-For', freshIp())).status, 401);
  // A key from the spent IP is counted by its prefix, not by the IP.
  const admin = await api.request
    .get('/api/v1/accounts')
    .set('X-Forwarded-For', ip)
    .set(bearer(api.fixture.keys.admin));
  t.is(admin.status, 200);
});

test('a key that fails authentication is charged to the client IP, never to a key budget; past the IP limit, 429 before any key lookup', async (t) => {
  const api = await startApi(
    { Api: { RateLimitPerMinute: 100 }, Server: { TrustProxy: true, AuthFailuresPerIpPerMinute: LIMIT } },
    { useFixture: t.context.api.fixture },
  );
  t.teardown(() => api.close());
  const ip = freshIp();
  const bad = unknownKey();
  for (let i = 0; i < LIMIT; i++) {
    const res = await api.request.get('/api/v1/stats').set(bearer(bad)).set('X-Forwarded-For', ip);
    t.is(res.status, 401);
    t.regex(res.headers['www-authenticate'] ?? '', INVALID_TOKEN_CHALLENGE);
    // The headers describe the budget this answer was charged to: the IP's failed authentications.
    assertRateHeaders(t, res.headers, LIMIT - 1 - i, `failure ${i + 1}`);
  }
  // Spent: further guesses from that IP, well-formed or not, are refused without a key lookup.
  const garbage = `garbage-${Math.random().toString(36).slice(2)}`;
  for (const token of [unknownKey(), garbage]) {
    const res = await api.request.get('/api/v1/stats').set(bearer(token)).set('X-Forwarded-For', ip);
    t.is(res.status, 429);
    t.is(res.headers['content-type'], 'application/problem+json');
    t.is(res.headers['www-authenticate'], undefined, 'a 429 is not an authentication failure');
    t.truthy(res.headers['retry-after']);
  }
  const engineChecks = api.gateway.limiters.api.memoryPartitions;
  // Another IP has its own failure budget, and malformed tokens count as failures too.
  const other = freshIp();
  for (let i = 0; i < LIMIT; i++)
    t.is((await api.request.get('/api/v1/stats').set(bearer(garbage)).set('X-Forwarded-For', other)).status, 401);
  t.is((await api.request.get('/api/v1/stats').set(bearer(garbage)).set('X-Forwarded-For', other)).status, 429);
  // None of it created a partition in the Api policy's store.
  t.is(api.gateway.limiters.api.memoryPartitions, engineChecks);
  // A genuine key from a third address is untouched by all of it.
  const fine = await api.request
    .get('/api/v1/stats')
    .set(bearer(freshKey(api)))
    .set('X-Forwarded-For', freshIp());
  t.is(fine.status, 200);
  t.is(fine.headers['ratelimit-remaining'], '99');
});

test('a genuine key from an address whose failed-key budget is spent is served on REST and MCP; junk from it is still 429', async (t) => {
  const api = await startApi(
    {
      Api: { RateLimitPerMinute: 100 },
      Mcp: { Enabled: true, RateLimitPerMinute: 100 },
      Server: { TrustProxy: true, AuthFailuresPerIpPerMinute: LIMIT },
    },
    { useFixture: t.context.api.fixture },
  );
  t.teardown(() => api.close());
  const ip = freshIp(); // everyone behind one NAT
  for (let i = 0; i < LIMIT; i++)
    t.is((await api.request.get('/api/v1/stats').set(bearer(unknownKey())).set('X-Forwarded-For', ip)).status, 401);
  // Spent: junk, well-formed or not, is refused; a genuine key is not.
  for (const token of [unknownKey(), 'garbage-token'])
    t.is((await api.request.get('/api/v1/stats').set(bearer(token)).set('X-Forwarded-For', ip)).status, 429);
  const key = freshKey(api);
  const rest = await api.request.get('/api/v1/stats').set(bearer(key)).set('X-Forwarded-For', ip);
  t.is(rest.status, 200);
  t.is(rest.headers['ratelimit-remaining'], '99', "charged to the key's own budget");
  const mcp = await api.request
    .post('/mcp')
    .set(bearer(key))
    .set('X-Forwarded-For', ip)
    .set('Accept', 'application/json, text/event-stream')
    .send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_accounts', arguments: {} } });
  t.not(mcp.status, 429, mcp.text);
  t.is(mcp.status, 200, mcp.text);
  t.is((await api.request.get('/api/v1/stats').set(bearer(unknownKey())).set('X-Forwarded-For', ip)).status, 429);
});

test("made-up keys carrying a real key's prefix do not spend that key's budget (REST)", async (t) => {
  const { api } = t.context;
  // The prefix is public (UI, logs): someone who has seen it must not be able to lock the owner out.
  const real = freshKey(api, 'carol');
  const forged = `${real.slice(0, 11)}${'A'.repeat(real.length - 11)}`;
  for (let i = 0; i < 2 * LIMIT; i++) {
    const res = await api.request.get('/api/v1/stats').set(bearer(forged)).set('X-Forwarded-For', freshIp());
    t.is(res.status, 401);
  }
  for (let i = 0; i < LIMIT; i++) {
    const res = await api.request.get('/api/v1/stats').set(bearer(real)).set('X-Forwarded-For', freshIp());
    t.is(res.status, 200, `the owner's request ${i + 1}`);
    assertRateHeaders(t, res.headers, LIMIT - 1 - i, `owner ${i + 1}`);
  }
  // The owner's own requests still spend the key's budget, per SPEC.md, “Limits”.
  t.is((await api.request.get('/api/v1/stats').set(bearer(real)).set('X-Forwarded-For', freshIp())).status, 429);
});

test('a flood of distinct junk tokens from one address adds no partitions to the policy store', async (t) => {
  const api = await startApi(
    { Server: { TrustProxy: true, AuthFailuresPerIpPerMinute: 50 } },
    { useFixture: t.context.api.fixture },
  );
  t.teardown(() => api.close());
  const before = api.gateway.limiters.api.memoryPartitions;
  const ip = freshIp();
  const statuses = new Set<number>();
  for (let i = 0; i < 200; i++) {
    const junk = `ma_${i.toString(36).padStart(43, 'x')}`;
    statuses.add((await api.request.get('/api/v1/accounts').set(bearer(junk)).set('X-Forwarded-For', ip)).status);
  }
  t.deepEqual([...statuses].sort(), [401, 429]);
  t.is(api.gateway.limiters.api.memoryPartitions, before);
  // And a key never seen before is admitted.
  t.is(
    (
      await api.request
        .get('/api/v1/accounts')
        .set(bearer(freshKey(api)))
        .set('X-Forwarded-For', freshIp())
    ).status,
    200,
  );
});

test('RateLimit headers are on every answer: 200, 400, 401, 404, 405 alike', async (t) => {
  const api = await startApi(
    { Api: { RateLimitPerMinute: 100 }, Server: { TrustProxy: true } },
    { useFixture: t.context.api.fixture },
  );
  t.teardown(() => api.close());
  const admin = freshKey(api);
  const ip = freshIp();
  const answers = [
    await api.request.get('/api/v1/stats').set(bearer(admin)),
    await api.request.get('/api/v1/emails?sortBy=nope').set(bearer(admin)),
    await api.request.get('/api/v1/emails/999999').set(bearer(admin)),
    await api.request.post('/api/v1/emails').set(bearer(admin)),
    await api.request.get('/api/v1/nope').set('X-Forwarded-For', ip),
    await api.request.get('/api/v1/stats').set('X-Forwarded-For', ip),
  ];
  t.deepEqual(
    answers.map((r) => r.status),
    [200, 400, 404, 405, 404, 401],
  );
  for (const r of answers) {
    t.is(r.headers['ratelimit-limit'], '100');
    t.regex(r.headers['ratelimit-remaining'] ?? '', /^\d+$/);
    t.regex(r.headers['ratelimit-reset'] ?? '', /^\d+$/);
  }
});

test('the in-memory partitions are capped: many distinct clients cannot grow the store without bound', async (t) => {
  const limiter = new RateLimiter({ name: 'Api', pointsPerMinute: 2 }, silentLogger(), undefined, 10);
  // Five clients spend their budgets; five are seen once.
  for (let i = 0; i < 5; i++) {
    await limiter.consume(`ip:10.0.0.${i}`);
    await limiter.consume(`ip:10.0.0.${i}`);
  }
  for (let i = 5; i < 10; i++) await limiter.consume(`ip:10.0.0.${i}`);
  t.is(limiter.memoryPartitions, 10);
  // Past the cap, every new client is admitted with a budget of its own (docs/security.md, item 1: a
  // full store used to send them all to one shared, soon spent, bucket), and the store does not grow.
  const outcomes: string[] = [];
  for (let i = 0; i < 1000; i++) {
    try {
      await limiter.consume(`ip:10.1.${i >> 8}.${i & 255}`);
      outcomes.push('ok');
    } catch {
      outcomes.push('limited');
    }
  }
  t.is(limiter.memoryPartitions, 10);
  t.is(outcomes.filter((o) => o === 'ok').length, 1000);
  // The clients that came back keep their spent budgets.
  for (let i = 0; i < 5; i++) await t.throwsAsync(limiter.consume(`ip:10.0.0.${i}`));
});

test('the cap bounds real memory: heap growth with 100k distinct clients is small when capped', async (t) => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const growth = async (cap: number) => {
    const limiter = new RateLimiter({ name: 'Api', pointsPerMinute: 5 }, silentLogger(), undefined, cap);
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 100_000; i++) await limiter.consume(`ip:client-${i}`).catch(() => undefined);
    gc();
    const after = process.memoryUsage().heapUsed;
    t.true(limiter.memoryPartitions <= cap);
    return { limiter, bytes: after - before };
  };
  const uncapped = await growth(1_000_000);
  const capped = await growth(1_000);
  t.log(
    `heap growth for 100k clients: uncapped ${(uncapped.bytes / 1048576).toFixed(1)} MB, cap 1000 ${(capped.bytes / 1048576).toFixed(1)} MB`,
  );
  t.true(uncapped.bytes > 10 * 1048576, 'the measurement can see an unbounded store');
  t.true(capped.bytes < 4 * 1048576, 'a capped store stays small');
  t.true(uncapped.limiter.memoryPartitions === 100_000);
});

test.serial("the app's limiter counts one partition per distinct client", async (t) => {
  const { api } = t.context;
  const before = api.gateway.limiters.api.memoryPartitions;
  for (let i = 0; i < 20; i++) await api.request.get('/api/v1/nope').set('X-Forwarded-For', `203.0.113.${i}`);
  t.is(api.gateway.limiters.api.memoryPartitions, before + 20);
});

test('without Server:TrustProxy, X-Forwarded-For cannot buy an anonymous client a fresh budget', async (t) => {
  const api = await startApi({ Api: { RateLimitPerMinute: LIMIT } });
  t.teardown(() => api.close());
  const statuses: number[] = [];
  for (let i = 0; i <= LIMIT; i++) {
    statuses.push((await api.request.get('/api/v1/stats').set('X-Forwarded-For', `192.0.2.${i}`)).status);
  }
  t.deepEqual(statuses, [...Array<number>(LIMIT).fill(401), 429]);
});
