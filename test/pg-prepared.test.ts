// Statements sent on nearly every request (reused() in engine/postgres/sql.ts) are prepared once
// per connection: on a pool (store.ts) by the driver's named statements. The key lookup that
// every request makes is one of them. A pooler that loses prepared names (PgBouncer in
// transaction mode) turns it back to text for good (engine/postgres/prepared.ts).
import test from 'ava';
import { PgStore } from '../engine/postgres/store.js';
import { reused, sql } from '../engine/postgres/sql.js';
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
