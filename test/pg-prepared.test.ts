// Statements sent on nearly every request (reused() in engine/postgres/sql.ts) are prepared once
// per connection: on a pool (store.ts) by the driver's named statements. The key lookup that
// every request makes is one of them. A pooler that loses prepared names (PgBouncer in
// transaction mode) turns it back to text for good (engine/postgres/prepared.ts). A message's
// detail is one too: one prepared statement reads its size, its row and its attachments.
import test from 'ava';
import { PgStore } from '../engine/postgres/store.js';
import { planned, reused, sql } from '../engine/postgres/sql.js';
import { hashKey } from '../engine/rules/keys.js';
import { INTERACTIVE_DETAIL_MAX_BYTES, isMovedToQueryLane } from '../engine/rules/large-detail.js';
import type { Principal } from '../shared/jobs.js';
import { createFixture } from './helpers/fixture.js';
import { serveArchive } from './helpers/store.js';
import { createTestDatabase, interceptQueries, type TestDatabase } from './helpers/postgres.js';

let db: TestDatabase;

test.before(async () => {
  db = await createTestDatabase('pg_prepared');
});

test.after.always(async () => {
  await db?.drop();
});

/** Records the name (or none) of every statement the driver is asked to run, while `work` runs. */
async function recording<T>(work: () => Promise<T>, refuseNamed = false): Promise<{ result: T; names: unknown[] }> {
  const names: unknown[] = [];
  const stop = interceptQueries((first, send, args) => {
    const name = typeof first === 'object' ? (first as { name?: unknown } | null)?.name : undefined;
    names.push(name);
    if (!refuseNamed || name === undefined) return send();
    const err = Object.assign(new Error(`prepared statement "${String(name)}" does not exist`), { code: '26000' });
    const callback = args.find((a) => typeof a === 'function') as ((e: Error) => void) | undefined;
    if (callback) return void process.nextTick(() => callback(err));
    return Promise.reject(err);
  });
  try {
    return { result: await work(), names };
  } finally {
    stop();
  }
}

const probe = (n: number) =>
  reused(sql`SELECT ${n}::int AS n, pg_backend_pid() AS pid,
                    (SELECT array_agg(name::text) FROM pg_prepared_statements WHERE NOT from_sql) AS prepared`);

test.serial('a reused statement on a pool is prepared once per connection, then only executed', async (t) => {
  const store = new PgStore({ url: db.url, timeZone: 'UTC', connections: 1 });
  try {
    type Row = { n: number; pid: number; prepared: string[] | null };
    const { result, names } = await recording(async () => {
      const rows: Row[] = [];
      for (const n of [1, 2, 3]) rows.push(...(await store.primary<Row>(probe(n))));
      return rows;
    });
    t.deepEqual(
      result.map((r) => r.n),
      [1, 2, 3],
      'each answered with its own value',
    );
    t.is(new Set(names).size, 1, 'one name for the three');
    t.regex(String(names[0]), /^magq_[0-9a-f]{20}$/);
    t.is(new Set(result.map((r) => r.pid)).size, 1, 'one connection');
    t.deepEqual(result[2]!.prepared, [names[0]], 'the server holds it, prepared once');
    // Plain statements stay unnamed (the driver would otherwise keep every text it saw).
    const plain = await recording(() => store.primary(sql`SELECT ${1}::int AS n`));
    t.deepEqual(plain.names, [undefined]);
  } finally {
    await store.close();
  }
});

test.serial("a message's detail is one prepared statement: its size, its row and its attachments", async (t) => {
  // Three statements as text (size, row, attachments), each parsed and planned, were three round
  // trips of the interactive lane's one thread (docs/performance.md, "Reading one message on PostgreSQL").
  const fixture = createFixture();
  const served = await serveArchive(fixture.dbPath, 'postgres');
  const store = new PgStore({ url: served.path, timeZone: 'UTC', connections: 1 });
  t.teardown(async () => {
    await store.close();
    await served.drop();
    fixture.cleanup();
  });
  const principal = async (key: string): Promise<Principal> => {
    const auth = await store.run({ kind: 'authenticate', keyHash: hashKey(key), now: Date.now() });
    if (!auth.ok) throw new Error(`key refused: ${auth.reason}`);
    return auth.principal;
  };
  const [alice, bob] = [await principal(fixture.keys.alice), await principal(fixture.keys.bob)];
  const id = fixture.emails.budget!;
  const whole = await store.run({ kind: 'detail', id, principal: alice });
  t.is(whole?.attachments.length, 2);

  const sized = await recording(() =>
    store.run({ kind: 'detail', id, principal: alice, interactiveMaxBytes: INTERACTIVE_DETAIL_MAX_BYTES }),
  );
  t.deepEqual(sized.result, whole, 'the same detail');
  t.is(sized.names.length, 1, 'one statement');
  t.regex(String(sized.names[0]), /^magq_[0-9a-f]{20}$/, 'prepared');

  const large = await recording(() => store.run({ kind: 'detail', id, principal: alice, interactiveMaxBytes: 10 }));
  t.true(isMovedToQueryLane(large.result), 'larger than the limit: moved, its bodies unread');
  t.is(large.names.length, 1, 'sized in the same one statement');

  t.is(await store.run({ kind: 'detail', id, principal: bob, interactiveMaxBytes: 10 }), null, 'hidden: none');
  t.is(await store.run({ kind: 'detail', id: 999_999, principal: alice, interactiveMaxBytes: 10 }), null);
});

test.serial('a statement with planner settings is one round trip, and its settings end with it', async (t) => {
  // BEGIN, the statement and COMMIT as three messages were two more round trips on every SQL-path
  // count (docs/performance.md, "PostgreSQL before the index is ready").
  const store = new PgStore({ url: db.url, timeZone: 'UTC', connections: 1 });
  try {
    const tricky = "it's; a 'value'";
    const { result, names } = await recording(() =>
      store.read<{ seq: string; v: string; n: number; ids: number[] }>(
        planned(
          sql`SELECT current_setting('enable_seqscan') AS seq, ${tricky}::text AS v, ${-3}::int AS n,
                     ${[1, 2]}::int[] AS ids`,
          { enable_seqscan: 'off' },
        ),
      ),
    );
    t.is(names.length, 1, 'one message to the server');
    t.deepEqual(result, [{ seq: 'off', v: tricky, n: -3, ids: [1, 2] }], 'the setting applied, the values as given');
    const [after] = await store.read<{ seq: string }>(sql`SELECT current_setting('enable_seqscan') AS seq`);
    t.is(after!.seq, 'on', 'SET LOCAL ended with its transaction');
    // A failing statement leaves the connection usable.
    await t.throwsAsync(store.read(planned(sql`SELECT 1 / ${0}::int`, { enable_seqscan: 'off' })));
    t.deepEqual(await store.read(sql`SELECT ${2}::int AS n`), [{ n: 2 }]);
  } finally {
    await store.close();
  }
});

// Last: it turns preparing off for the rest of this file's thread.
test.serial('a prepared name the server does not know sends the statement as text, from then on', async (t) => {
  const store = new PgStore({ url: db.url, timeZone: 'UTC', connections: 1 });
  try {
    const refused = await recording(() => store.primary<{ n: number }>(probe(4)), true);
    t.is(refused.result[0]?.n, 4, 'answered all the same');
    t.is(refused.names.length, 2, 'named once, refused, then sent as text');
    t.is(refused.names[1], undefined);
    const after = await recording(() => store.primary<{ n: number }>(probe(5)));
    t.is(after.result[0]?.n, 5);
    t.deepEqual(after.names, [undefined], 'not named again');
  } finally {
    await store.close();
  }
});
