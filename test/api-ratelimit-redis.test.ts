// SPEC.md, “Limits” across processes: with Redis:Url set, every gateway shares one budget per key;
// when Redis goes away each keeps serving with its own per-process window, and it goes back to
// the shared budget when Redis returns. Needs a Redis at REDIS_URL (default
// redis://127.0.0.1:6379; CI always runs one) and the redis-server binary.
import test from 'ava';
import { createKey } from '../engine/sqlite/keys.js';
import { bearer, capturingLogger, startApi, type ApiHarness } from './helpers/api.js';
import { createFixture, type Fixture } from './helpers/fixture.js';
import { redisCommand, redisUrl, startRedisServer, waitFor } from './helpers/redis.js';

const LIMIT = 4;

/** A key no earlier run can have spent: its prefix is random, so is its Redis counter. */
const freshKey = (api: ApiHarness, username = 'alice') =>
  createKey(api.db(), { username, name: `redis ${Math.random()}` }).key;

/**
 * Waits until `api` counts in the Redis at `url`: a request with a throwaway key must leave
 * its counter there. (Before the client is connected, requests are counted in memory.)
 */
async function waitUntilSharing(api: ApiHarness, url: string): Promise<void> {
  await waitFor(`gateway counting in ${url}`, async () => {
    const probe = freshKey(api);
    await api.request.get('/api/v1/stats').set(bearer(probe));
    try {
      return (await redisCommand(url, `EXISTS rl:Api:key:${probe.slice(0, 11)}`)) === ':1';
    } catch {
      return false;
    }
  });
}

async function twoGateways(fixture: Fixture, url: string) {
  const logA = capturingLogger();
  const logB = capturingLogger();
  const settings = { Api: { RateLimitPerMinute: LIMIT }, Redis: { Url: url } };
  const a = await startApi(settings, { useFixture: fixture, logger: logA.logger });
  const b = await startApi(settings, { useFixture: fixture, logger: logB.logger });
  return { a, b, logA: logA.lines, logB: logB.lines };
}

async function statuses(api: ApiHarness, key: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await api.request.get('/api/v1/stats').set(bearer(key))).status);
  return out;
}

/** A, B, A, B, … each spending from the budget; returns [status, RateLimit-Remaining] per request. */
async function alternate(
  a: ApiHarness,
  b: ApiHarness,
  key: string,
  n: number,
): Promise<Array<[number, string | undefined]>> {
  const out: Array<[number, string | undefined]> = [];
  for (let i = 0; i < n; i++) {
    const res = await (i % 2 === 0 ? a : b).request.get('/api/v1/accounts').set(bearer(key));
    out.push([res.status, res.headers['ratelimit-remaining']]);
  }
  return out;
}

test('two gateways with the same Redis:Url share one budget per key', async (t) => {
  const url = redisUrl();
  const fixture = createFixture();
  const { a, b } = await twoGateways(fixture, url);
  t.teardown(async () => {
    await a.close();
    await b.close();
    fixture.cleanup();
  });
  await waitUntilSharing(a, url);
  await waitUntilSharing(b, url);

  const key = freshKey(a);
  t.deepEqual(await alternate(a, b, key, LIMIT), [
    [200, '3'],
    [200, '2'],
    [200, '1'],
    [200, '0'],
  ]);
  const overA = await a.request.get('/api/v1/accounts').set(bearer(key));
  const overB = await b.request.get('/api/v1/accounts').set(bearer(key));
  t.is(overA.status, 429);
  t.is(overB.status, 429);
  t.is(overB.headers['content-type'], 'application/problem+json');
  t.truthy(overB.headers['retry-after']);
  // The counter lives in Redis, under the policy name and the key's public prefix only.
  const stored = await redisCommand(url, `GET rl:Api:key:${key.slice(0, 11)}`);
  t.true(Number(stored) >= LIMIT, `counter ${stored}`);
  t.not(await redisCommand(url, `TTL rl:Api:key:${key.slice(0, 11)}`), ':-1', 'the window expires');
  // Another key is unaffected.
  t.deepEqual(await statuses(a, freshKey(a, 'bob'), 1), [200]);
});

test.serial(
  'Redis stopped mid-test: both gateways keep serving with per-process limits, then share again when it returns',
  async (t) => {
    const server = await startRedisServer();
    let current = server;
    const fixture = createFixture();
    const { a, b, logA, logB } = await twoGateways(fixture, server.url);
    t.teardown(async () => {
      await a.close();
      await b.close();
      await current.stop();
      fixture.cleanup();
    });
    await waitUntilSharing(a, server.url);
    await waitUntilSharing(b, server.url);

    // 1. Shared budget while Redis runs.
    const k1 = freshKey(a);
    t.deepEqual(
      (await alternate(a, b, k1, LIMIT)).map(([s]) => s),
      [200, 200, 200, 200],
    );
    t.deepEqual(await statuses(a, k1, 1), [429]);

    // 2. Redis goes away: no request fails, each process enforces its own window.
    const [seenA, seenB] = [logA.length, logB.length];
    await server.stop();
    const k2 = freshKey(a);
    const onA = await statuses(a, k2, LIMIT + 1);
    const onB = await statuses(b, k2, LIMIT + 1);
    t.deepEqual(onA, [200, 200, 200, 200, 429], 'A: its own full budget, then limited');
    t.deepEqual(onB, [200, 200, 200, 200, 429], 'B: its own full budget too, not shared with A');
    // Endpoints other than the one used keep working too, none of them 500.
    const other = await b.request.get(`/api/v1/emails/${fixture.emails.budget}`).set(bearer(fixture.keys.admin));
    t.is(other.status, 200);
    const warn = (lines: Array<Record<string, unknown>>) =>
      lines.filter((l) => l.msg === 'rate limiter: Redis unreachable, using per-process limits' && l.policy === 'Api');
    t.is(warn(logA.slice(seenA)).length, 1, `A says so once: ${JSON.stringify(logA.map((l) => l.msg))}`);
    t.is(warn(logB.slice(seenB)).length, 1, 'B says so once');

    // 3. A new Redis on the same port: both go back to the shared budget.
    current = await startRedisServer(server.port);
    await waitUntilSharing(a, current.url);
    await waitUntilSharing(b, current.url);
    const k3 = freshKey(a);
    t.deepEqual(
      (await alternate(a, b, k3, LIMIT)).map(([s]) => s),
      [200, 200, 200, 200],
    );
    t.deepEqual(await statuses(b, k3, 1), [429], "shared again: A's requests spent B's budget");
    t.true(logA.slice(seenA).some((l) => l.msg === 'rate limiter: Redis is back, sharing limits again'));
  },
);

test.serial(
  'a Redis that stops answering (paused, socket still open) does not hold requests: they fall back within about a second',
  async (t) => {
    const server = await startRedisServer();
    const fixture = createFixture();
    const a = await startApi(
      { Api: { RateLimitPerMinute: LIMIT }, Redis: { Url: server.url } },
      { useFixture: fixture },
    );
    let paused = false;
    t.teardown(async () => {
      if (paused) server.process.kill('SIGCONT');
      await a.close();
      await server.stop();
      fixture.cleanup();
    });
    await waitUntilSharing(a, server.url);
    const key = freshKey(a);
    t.deepEqual(await statuses(a, key, 1), [200]);

    // SIGSTOP: the server keeps its sockets open but never replies, like a hung or cut-off host.
    server.process.kill('SIGSTOP');
    paused = true;
    const timings: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      const res = await a.request.get('/api/v1/stats').set(bearer(key)).timeout(8000);
      timings.push(Date.now() - started);
      t.is(res.status, 200);
    }
    t.log(`request times with Redis paused: ${timings.join(', ')} ms`);
    t.true(timings[0]! < 3000, `the first request waits at most about one command timeout (${timings[0]} ms)`);
    t.true(timings[1]! < 500 && timings[2]! < 500, 'later requests do not wait for Redis again at once');
    // The per-process window continues the count: 1 request went to Redis, 3 to memory.
    t.deepEqual(await statuses(a, key, 2), [200, 429]);
  },
);
