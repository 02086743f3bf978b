// A query thread's connections to PostgreSQL (engine/postgres/connect.ts): one stays open however
// long the thread idles, so the first search after a quiet spell does not pay for a new server
// process whose caches are cold and whose statements are not prepared yet.
import test from 'ava';
import { createPgPool } from '../engine/postgres/connect.js';
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
