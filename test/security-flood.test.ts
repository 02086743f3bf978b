// Hardening (docs/security.md, item 1): filling the in-memory rate limiter with more
// distinct clients than it holds (50,000 partitions) must not lock out clients not yet seen, and
// must not hand a client that has spent its budget a fresh one.
//
// The flood is the one the review found, sent over a real socket to 127.0.0.1: distinct bearer
// tokens that are not keys, and distinct anonymous clients, each from its own address (behind a
// trusted proxy, so X-Forwarded-For names the address). Both stores of the limiter are filled
// past their cap: the per-address budget of failed key checks and the API's per-address budget.
import test from 'ava';
import { Agent, request as httpRequest } from 'node:http';
import { MEMORY_PARTITION_CAP, RateLimiter } from '../gateway/rate-limit.js';
import { bearer, listen, silentLogger, startApi } from './helpers/api.js';

const FLOOD = MEMORY_PARTITION_CAP + 5_000;
const LIMIT = 5;

/** The i-th flood address: 10.0.0.0 onwards, one per request. */
const address = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

/** Sends `count` GETs over keep-alive sockets, `parallel` at a time; resolves to status counts. */
async function flood(
  url: string,
  count: number,
  headers: (i: number) => Record<string, string>,
  parallel = 32,
): Promise<Map<number, number>> {
  const agent = new Agent({ keepAlive: true, maxSockets: parallel });
  const statuses = new Map<number, number>();
  let next = 0;
  const one = (i: number) =>
    new Promise<void>((resolve, reject) => {
      const req = httpRequest(`${url}/api/v1/accounts`, { agent, headers: headers(i) }, (res) => {
        statuses.set(res.statusCode!, (statuses.get(res.statusCode!) ?? 0) + 1);
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end();
    });
  const worker = async () => {
    while (next < count) await one(next++);
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  agent.destroy();
  return statuses;
}

test('a flood of distinct clients past the cap locks out no one new and refunds no one spent', async (t) => {
  t.timeout(180_000);
  const api = await startApi({
    Api: { RateLimitPerMinute: LIMIT },
    Server: { TrustProxy: true, TrustedProxyHops: 1, AuthFailuresPerIpPerMinute: LIMIT },
  });
  t.teardown(() => api.close());
  const server = await listen(api.gateway);
  t.teardown(() => server.close());
  const { keys } = api.fixture;
  const from = (ip: string) => ({ 'X-Forwarded-For': ip });

  // Before the flood: one address spends its whole budget, one key is in use, one address has
  // spent its failed-key-check budget. Their one-minute windows begin now.
  const windowsBegan = Date.now();
  const spent: number[] = [];
  for (let i = 0; i <= LIMIT; i++)
    spent.push((await api.request.get('/api/v1/stats').set(from('198.51.100.1'))).status);
  t.deepEqual(spent, [401, 401, 401, 401, 401, 429]);
  for (let i = 0; i < 2; i++) t.is((await api.request.get('/api/v1/accounts').set(bearer(keys.admin))).status, 200);
  const guessing: number[] = [];
  for (let i = 0; i <= LIMIT; i++)
    guessing.push(
      (
        await api.request
          .get('/api/v1/accounts')
          .set(from('198.51.100.2'))
          .set(bearer(`junk-${i}`))
      ).status,
    );
  t.deepEqual(guessing, [401, 401, 401, 401, 401, 429]);

  // The flood: tokens that are not keys, then anonymous requests, each from a new address.
  const started = Date.now();
  const junk = await flood(server.url, FLOOD, (i) => ({ ...from(address(i)), Authorization: `Bearer junk-${i}` }));
  const anonymous = await flood(server.url, FLOOD, (i) => from(address(FLOOD + i)));
  t.log(`${2 * FLOOD} flood requests in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  // Every flood request was a new client with a budget of its own: none was refused for want of
  // room, which is what locked everyone new out before.
  t.deepEqual([...junk], [[401, FLOOD]]);
  t.deepEqual([...anonymous], [[401, FLOOD]]);
  t.true(api.gateway.limiters.authFailures.memoryPartitions <= MEMORY_PARTITION_CAP);
  t.true(api.gateway.limiters.api.memoryPartitions <= MEMORY_PARTITION_CAP);

  // After it: clients never seen are served as any new client is.
  t.is((await api.request.get('/api/v1/accounts').set(bearer(keys.alice))).status, 200, 'a new key');
  t.is((await api.request.get('/api/v1/stats').set(from('192.0.2.200'))).status, 401, 'a new address');
  t.is(
    (await api.request.get('/api/v1/accounts').set(from('192.0.2.201')).set(bearer('junk-new'))).status,
    401,
    'a new address with a wrong token is told so, not throttled',
  );
  // A key in use before keeps its budget's count (2 spent before, this is the 3rd), and the
  // clients that had spent their budgets are still refused: the flood evicted none of them. That
  // holds within their windows; on a machine slow enough for the flood to outlast a minute (seen
  // once), the windows have ended and every budget is whole again, as for anyone.
  const elapsed = Date.now() - windowsBegan; // the windows began within a second or two of this
  const admin = await api.request.get('/api/v1/accounts').set(bearer(keys.admin));
  const stats = await api.request.get('/api/v1/stats').set(from('198.51.100.1'));
  const guess = await api.request.get('/api/v1/accounts').set(from('198.51.100.2')).set(bearer('junk-x'));
  t.is(admin.status, 200);
  if (elapsed >= 50_000 && elapsed < 70_000) {
    t.log(`the flood took about as long as the windows (${elapsed} ms): which budgets began again is a race`);
  } else if (elapsed < 50_000) {
    t.is(admin.headers['ratelimit-remaining'], String(LIMIT - 3));
    t.is(stats.status, 429);
    t.is(guess.status, 429);
  } else {
    t.log('the flood outlasted the one-minute windows: the budgets begin again');
    t.is(admin.headers['ratelimit-remaining'], String(LIMIT - 1));
    t.is(stats.status, 401);
    t.is(guess.status, 401);
  }
});

test('the store evicts a client seen once before one that came back', async (t) => {
  const limiter = new RateLimiter({ name: 'Api', pointsPerMinute: 2 }, silentLogger(), undefined, 4);
  for (const ip of ['a', 'b']) {
    await limiter.consume(`ip:${ip}`);
    await limiter.consume(`ip:${ip}`);
  }
  await limiter.consume('ip:once');
  // Two more new clients than there is room for: both admitted, `once` is forgotten.
  await t.notThrowsAsync(limiter.consume('ip:new1'));
  await t.notThrowsAsync(limiter.consume('ip:new2'));
  t.is(limiter.memoryPartitions, 4);
  // `a` and `b` spent their budgets and stay refused; `once` starts again with a whole budget.
  await t.throwsAsync(limiter.consume('ip:a'), { message: /Rate limit of 2/ });
  await t.throwsAsync(limiter.consume('ip:b'), { message: /Rate limit of 2/ });
  await t.notThrowsAsync(limiter.consume('ip:once'));
  await t.notThrowsAsync(limiter.consume('ip:once'));
});
