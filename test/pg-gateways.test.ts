// Two gateway processes (dist/gateway/server.js, on two ports) over one PostgreSQL database and
// one Redis behave as one service (docs/postgres.md, "Several gateways"): the same keys
// work on both, a key revoked through one is refused by the other on its next request, one
// rate-limit budget per key is spent across both, and both write into the one access log.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import pg from 'pg';
import request from 'supertest';
import { prepareArchive } from '../engine/archive.js';
import { hashMailArchiverPassword } from '../engine/rules/passwords.js';
import type { Fixture } from './helpers/fixture.js';
import { addKey, createSmallArchive, type SmallArchive } from './helpers/pg-mail-archiver.js';
import { createTestDatabase, type TestDatabase } from './helpers/postgres.js';
import { redisCommand, redisUrl, waitFor } from './helpers/redis.js';
import { startServerProcess, type ServerProcess } from './helpers/server-process.js';
import { csrfOf, sessionCookies, signIn } from './helpers/web.js';

const LIMIT = 6;
const PASSWORD = 'alice-web-pass-1';
let db: TestDatabase | undefined;
let archive: SmallArchive;
let dir: string | undefined;
const gateways: ServerProcess[] = [];

test.before(async () => {
  db = await createTestDatabase('two_gateways');
  archive = await createSmallArchive(db.url, 3);
  await withDb((c) =>
    hashMailArchiverPassword(PASSWORD).then((hash) =>
      c.query('UPDATE mail_archiver."Users" SET "PasswordHash" = $1 WHERE "Id" = $2', [hash, archive.userId]),
    ),
  );
  await prepareArchive({ path: db.url });
  dir = mkdtempSync(join(tmpdir(), 'mag-two-gateways-'));
  const env = {
    Redis__Url: redisUrl(),
    Api__RateLimitPerMinute: String(LIMIT),
    Mcp__Enabled: 'false',
    // No Web:SessionSecret: both read the one stored in the database (docs/postgres.md).
  };
  for (let i = 0; i < 2; i++) gateways.push(await startServerProcess({ dir, dbPath: db.url } as Fixture, env));
});

test.after.always(async () => {
  for (const g of gateways) {
    if (g.child.exitCode === null) g.child.kill('SIGTERM');
    await g.exit;
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
  await db?.drop();
});

async function withDb<T>(work: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: db!.url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const get = (g: ServerProcess, path: string, key: string) =>
  request(g.url).get(path).set('Authorization', `Bearer ${key}`);

/** Waits until gateway `g` counts in the shared Redis (until connected it counts in memory). */
async function waitUntilSharing(g: ServerProcess, userId: number): Promise<void> {
  await waitFor(
    `gateway on ${g.port} counting in Redis`,
    async () => {
      const probe = await addKey(db!.url, userId, 'probe');
      await get(g, '/api/v1/stats', probe.key);
      return (await redisCommand(redisUrl(), `EXISTS rl:Api:key:${probe.key.slice(0, 11)}`)) === ':1';
    },
    15_000,
    200,
  );
}

test.serial('two processes on different ports, one database: the same key works on both', async (t) => {
  const [a, b] = gateways as [ServerProcess, ServerProcess];
  t.not(a.port, b.port);
  const { key } = await addKey(db!.url, archive.userId, 'both');
  const onA = await get(a, '/api/v1/stats', key);
  const onB = await get(b, '/api/v1/stats', key);
  t.is(onA.status, 200);
  t.is(onB.status, 200);
  t.deepEqual(onA.body, onB.body);
  t.is(onA.body.emails, 3);
});

test.serial('a key revoked through one gateway (web UI) is refused by the other on its next request', async (t) => {
  const [a, b] = gateways as [ServerProcess, ServerProcess];
  const { key, keyId } = await addKey(db!.url, archive.userId, 'to revoke on A');
  t.is((await get(b, '/api/v1/accounts', key)).status, 200);

  const { agent, res } = await signIn(a.url, 'alice', PASSWORD);
  t.is(res.status, 303, res.text.slice(0, 300));
  const page = await agent.get('/keys');
  t.is(page.status, 200);
  const revoked = await agent
    .post('/keys/revoke')
    .type('form')
    .send({ _csrf: csrfOf(page.text), id: String(keyId), confirmed: 'yes' });
  t.is(revoked.status, 303, revoked.text.slice(0, 300));

  // The session A signed is valid on B: both sign with the secret stored in the database.
  const cookie = sessionCookies(res.headers['set-cookie']);
  t.truthy(cookie);
  t.is((await request(b.url).get('/keys')).status, 302, 'without the cookie B sends one to sign in');
  const onB = await request(b.url).get('/keys').set('Cookie', cookie);
  t.is(onB.status, 200, 'signed in on B too');
  t.true(onB.text.includes('to revoke on A'), 'the key list, seen on B');
  t.false(existsSync(join(dir!, 'postgres:')), 'no session-secret file is made from the URL');

  const refused = await get(b, '/api/v1/accounts', key);
  t.is(refused.status, 401);
  t.is((await get(a, '/api/v1/accounts', key)).status, 401);
  const [row] = await withDb((c) =>
    c.query<{ revoked: boolean }>(
      'SELECT "RevokedAt" IS NOT NULL AS revoked FROM mail_archiver."ApiKeys" WHERE "Id" = $1',
      [keyId],
    ),
  ).then((r) => r.rows);
  t.true(row?.revoked);
});

test.serial('one rate-limit budget per key across both gateways, and one access log', async (t) => {
  const [a, b] = gateways as [ServerProcess, ServerProcess];
  await waitUntilSharing(a, archive.userId);
  await waitUntilSharing(b, archive.userId);
  const { key } = await addKey(db!.url, archive.userId, 'budget');
  const before = await withDb((c) =>
    c.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM mail_archive_gateway.access_log_details WHERE key_prefix = $1',
      [key.slice(0, 11)],
    ),
  );
  t.is(before.rows[0]!.n, 0);

  const spent: Array<[number, string | undefined]> = [];
  for (let i = 0; i < LIMIT; i++) {
    const res = await get(i % 2 === 0 ? a : b, `/api/v1/emails/${archive.emailIds[i % 3]}`, key);
    spent.push([res.status, res.headers['ratelimit-remaining']]);
  }
  t.deepEqual(
    spent,
    Array.from({ length: LIMIT }, (_, i) => [200, String(LIMIT - 1 - i)] as [number, string]),
    'each answer counts down the one shared budget',
  );
  const overA = await get(a, '/api/v1/stats', key);
  const overB = await get(b, '/api/v1/stats', key);
  t.is(overA.status, 429);
  t.is(overB.status, 429);
  t.is(overB.headers['content-type'], 'application/problem+json');

  // One access log: the Open rows of both processes, in Mail Archiver's AccessLogs (type 3). Each
  // process buffers and writes its own entries, and each served half of the requests: all of
  // them there means both wrote into the one log.
  await waitFor(
    'both gateways to write their access-log rows',
    async () => {
      const { rows } = await withDb((c) =>
        c.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM mail_archive_gateway.access_log_details d
             JOIN mail_archiver."AccessLogs" l ON l."Id" = d.access_log_id
            WHERE d.key_prefix = $1 AND l."Type" = 3 AND l."Username" = 'alice'`,
          [key.slice(0, 11)],
        ),
      );
      return rows[0]!.n === LIMIT;
    },
    15_000,
    200,
  );
});
