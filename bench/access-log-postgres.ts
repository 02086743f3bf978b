// What chaining the access log costs on Mail Archiver's PostgreSQL (docs/evidence.md, "An access
// log nobody can quietly edit"): entries written through the store's own job (AccessLogs, our
// details row, the chain: one transaction per batch), then the chain's part alone, timed by
// running it again on the same batches (it is idempotent: the same head gives the same hashes).
// The chain's share is its time over the whole write's; per entry, against the same 2 ms search
// that bench:access-log measures SQLite's chain against. On the benchmark corpus's database (a
// small one, cached; bench/pg-corpus.ts), whose access log the run leaves as it found it.
//
//   npm run bench:access-log-postgres [-- --entries 20000 --batch 50]
import { prepareArchive } from '../engine/archive.js';
import { PgStore } from '../engine/postgres/store.js';
import { chainEntries, lockChain } from '../engine/postgres/access-chain.js';
import { sql } from '../engine/postgres/sql.js';
import { arg } from './lib/args.js';
import { searchEntry } from './lib/access-entries.js';
import { ensurePgCorpus } from './pg-corpus.js';

const SEARCH_CPU_MS = 2;

const entries = arg('--entries', 20_000);
const batch = arg('--batch', 50);
const url = await ensurePgCorpus({ messages: 2000 });
// What the service's start does first: our own schema (migrations 11 and 12) in place.
await prepareArchive({ path: url });
const store = new PgStore({ url, timeZone: 'UTC' });
const details = sql`mail_archive_gateway.access_log_details`;
const table = sql`mail_archiver."AccessLogs"`;
try {
  const [user] = await store.transaction((q) =>
    q<{ id: number }>(sql`SELECT "Id" AS id FROM mail_archiver."Users" LIMIT 1`),
  );
  const make = (n: number) => searchEntry(user!.id, n);
  const [before] = await store.transaction((q) =>
    q<{ id: number | null }>(sql`SELECT max(access_log_id) AS id FROM ${details}`),
  );
  const since = before?.id ?? 0;

  let t = performance.now();
  for (let i = 0; i < entries; i += batch)
    await store.run({ kind: 'accessLog', entries: Array.from({ length: batch }, (_, j) => make(i + j)) });
  const writeMs = (performance.now() - t) / entries;

  const ids = (
    await store.transaction((q) =>
      q<{ id: number }>(sql`SELECT access_log_id AS id FROM ${details} WHERE access_log_id > ${since} ORDER BY 1`),
    )
  ).map((r) => r.id);
  t = performance.now();
  for (let i = 0; i < ids.length; i += batch) {
    const slice = ids.slice(i, i + batch);
    await store.transaction(async (q) => {
      await lockChain(q);
      await chainEntries(q, table, slice);
    });
  }
  const chainMs = (performance.now() - t) / ids.length;

  // Left as found: the rows this run wrote go (the chain's head is whatever it was before).
  await store.transaction(async (q) => {
    await q(sql`DELETE FROM ${table} WHERE "Id" = ANY(${ids}::int[])`);
    await q(sql`DELETE FROM ${details} WHERE access_log_id = ANY(${ids}::int[])`);
  });

  console.log(`${ids.length} entries in batches of ${batch} on PostgreSQL, wall time per entry (one writer):`);
  console.log(`  written through the store's accessLog job, chain included: ${(writeMs * 1000).toFixed(1)} µs`);
  console.log(
    `  the chain's part (lock, head, fields, hashes, update): ${(chainMs * 1000).toFixed(1)} µs: ` +
      `${((chainMs / writeMs) * 100).toFixed(0)} % of the write`,
  );
  console.log(
    `  share of a ${SEARCH_CPU_MS} ms search: ${((chainMs / SEARCH_CPU_MS) * 100).toFixed(2)} % (target: at most 2 % of throughput)`,
  );
} finally {
  await store.close();
}
