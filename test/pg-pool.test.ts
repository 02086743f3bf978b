// A query thread's connections to PostgreSQL (engine/postgres/connect.ts): one stays open however
// long the thread idles, so the first search after a quiet spell does not pay for a new server
// process whose caches are cold and whose statements are not prepared yet.
import test from 'ava';
import pg from 'pg';
import { checkout, createPgPool, isUnavailable } from '../engine/postgres/connect.js';
import { createTestDatabase, type TestDatabase } from './helpers/postgres.js';

let db: TestDatabase;

test.before(async () => {
  db = await createTestDatabase('pg_pool');
});

test.after.always(async () => {
  await db?.drop();
});

test('a pool keeps one connection open past the idle timeout and closes the others', async (t) => {
  const pool = createPgPool(db.url, { setting: 'Database:Path', max: 2, idleTimeoutMs: 50 });
  let removed = 0;
  pool.on('remove', () => removed++);
  try {
    const pids = await Promise.all(
      [0, 1].map(
        async () => (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(0.05)')).rows[0]!.pid,
      ),
    );
    t.is(new Set(pids).size, 2, 'two connections at once');
    for (const deadline = Date.now() + 30_000; removed === 0 && Date.now() < deadline;)
      await new Promise((r) => setTimeout(r, 10));
    t.is(removed, 1, 'the second closed once idle');
    // Ten idle timeouts more: a timer fires late on a busy machine, never early, so a pool that
    // closed its last connection would have done so by now.
    await new Promise((r) => setTimeout(r, 500));
    t.is(removed, 1);
    t.is(pool.totalCount, 1);
    const [{ pid }] = (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows as [{ pid: number }];
    t.true(pids.includes(pid), 'the next query runs on the connection kept');
  } finally {
    await pool.end();
  }
});

test('a checked-out connection the server ends between two queries fails the next one as unavailable, and nothing crashes', async (t) => {
  const pool = createPgPool(db.url, { setting: 'Database:Path', max: 1 });
  const admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
  try {
    const client = await checkout(pool);
    const [{ pid }] = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows as [{ pid: number }];
    // Ended while no query of its own runs: the server's FATAL message arrives on an idle socket,
    // as when a replica shuts down while a search computes between its round trips.
    // Not events.once(): it listens for 'error' itself, which would hide what this test is about.
    const ended = new Promise((resolve) => client.once('end', resolve));
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    await ended;
    const err = await t.throwsAsync(client.query('SELECT 1'));
    t.true(isUnavailable(err), String(err?.message));
    client.release(true);
    t.is((await pool.query<{ n: number }>('SELECT 1 AS n')).rows[0]!.n, 1, 'the pool serves on a new connection');
  } finally {
    await admin.end();
    await pool.end();
  }
});
