// The varied stream by query kind, on both stores (docs/performance.md, "By query kind, one at a
// time"): the same queries of bench/lib/query-stream.ts sent one after another to the real server
// on SQLite and then on PostgreSQL, each started from its saved index, and per kind the p50, the
// p90 and the time all of that kind took. Where bench:postgres says how far apart the stores are,
// this says which queries make the difference. One at a time, so no query waits for another.
//
//   npm run bench:by-kind [-- --messages 1000000 --queries 600 --stream-seed 11]
// The same queries run again find their pages in PostgreSQL's buffers and the kernel's cache: a
// second run with one seed measures those caches, not the stream. Give each run its own seed.
// The corpora are bench/corpus.ts's and bench/pg-corpus.ts's, written when missing; the
// PostgreSQL index is saved beside its corpus, as bench:postgres saves it.
import { openAdmin } from '../engine/archive.js';
import { corpusArgs, ensureCorpus } from './corpus.js';
import { arg } from './lib/args.js';
import { percentile } from './lib/load.js';
import { queryStream, QUERY_KINDS, type QueryKind } from './lib/query-stream.js';
import { searchIndexOf, startArchiveServer } from './lib/server.js';
import { ensurePgCorpus, pgIndexFile } from './pg-corpus.js';

const { messages, seed } = corpusArgs();
const queries = arg('--queries', 600);
/** The stream's own seed: a new one gives queries whose pages no cache (PostgreSQL's, the kernel's) holds yet. */
const streamSeed = arg('--stream-seed', 11);
/** Once the index is current, before the first query: the start's own work (the aggregates' columns) under way. */
const SETTLE_MS = 3_000;
const stream = queryStream(queries, { seed: streamSeed });

async function timesByKind(postgres: boolean): Promise<Map<QueryKind, number[]>> {
  const location = postgres ? await ensurePgCorpus({ messages, seed }) : ensureCorpus({ messages, seed });
  const admin = await openAdmin(location);
  const key = await admin.createKey({ username: 'admin', name: 'bench:by-kind' }).finally(() => admin.close());
  const server = await startArchiveServer(location, {
    ...(postgres ? { env: { Engine__SearchIndexFile: pgIndexFile(location) } } : {}),
  });
  try {
    const index = await searchIndexOf(server, (i) => i?.status === 'current', 3_600_000);
    if (index?.status !== 'current') throw new Error(`the search index is not current: ${JSON.stringify(index)}`);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const times = new Map<QueryKind, number[]>();
    for (const { params, kind } of stream) {
      const started = performance.now();
      const res = await fetch(`${server.url}/api/v1/emails?${new URLSearchParams(params)}`, {
        headers: { Authorization: `Bearer ${key.key}` },
      });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${JSON.stringify(params)}: status ${res.status}`);
      const ofKind = times.get(kind) ?? [];
      ofKind.push(performance.now() - started);
      times.set(kind, ofKind);
    }
    return times;
  } finally {
    await server.stop();
  }
}

const sqlite = await timesByKind(false);
const pg = await timesByKind(true);
const total = (xs: number[] = []) => xs.reduce((a, b) => a + b, 0);
const f = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : 'n/a');
console.log(
  `${messages.toLocaleString('en')} messages, ${queries} queries of the varied stream (seed ${streamSeed}), one at a time. Milliseconds:`,
);
console.log(
  '| kind | queries | SQLite p50 | PostgreSQL p50 | SQLite p90 | PostgreSQL p90 | SQLite, all | PostgreSQL, all |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const kind of QUERY_KINDS) {
  const a = sqlite.get(kind) ?? [];
  const b = pg.get(kind) ?? [];
  if (a.length === 0) continue;
  console.log(
    `| ${kind} | ${a.length} | ${f(percentile(a, 50))} | ${f(percentile(b, 50))} | ${f(percentile(a, 90))} | ${f(percentile(b, 90))} | ${total(a).toFixed(0)} | ${total(b).toFixed(0)} |`,
  );
}
const all = (m: Map<QueryKind, number[]>) => total([...m.values()].flat());
console.log(
  `All: SQLite ${all(sqlite).toFixed(0)} ms, PostgreSQL ${all(pg).toFixed(0)} ms (${(all(pg) / all(sqlite)).toFixed(2)}x).`,
);
