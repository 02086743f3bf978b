// What the words left out of the in-memory index cost: the varied stream (bench/lib/query-stream.ts)
// on one corpus, served with the default Engine:SearchMemoryMB (the baseline) and with smaller
// budgets, each from a saved file of its own, printing each budget's rate against the baseline's.
//
// Why smaller budgets on a small corpus: the budget bounds bytes, and a word's bitset grows with
// the archive, so a budget of B at 1,000,000 messages keeps about the words that 8.6 B keeps at
// 8,575,000. `--budgets 90` at 1M is the cut the default 768 MiB makes at 8,575,000 (929 terms
// against 919), without writing that corpus (an hour and a half) or waiting for its build.
//
//   npm run bench:budget [-- --messages 1000000 --budgets 90,180,300 --seconds 20 --runs 2 --settle 60]
//
// Each server is given --settle seconds after its index is current before the stream: after a
// start, the builder thread reads the aggregates' group columns (about 25 s of a core at 1M).
import { rmSync } from 'node:fs';
import { arg } from './lib/args.js';
import { corpusArgs, ensureCorpus, sampleAddresses } from './corpus.js';
import { openArchive } from '../engine/sqlite/open.js';
import { createCaller } from './lib/callers.js';
import { loadStream, ratio, wholeMs, type StreamLoadResult } from './lib/load.js';
import { mib, rssBytes } from './lib/memory.js';
import { queryStream } from './lib/query-stream.js';
import { searchIndexOf, startArchiveServer } from './lib/server.js';

const { messages, seed } = corpusArgs();
const seconds = arg('--seconds', 20);
const runs = arg('--runs', 2);
const settle = arg('--settle', 60, { zero: true });
const listed = process.argv[process.argv.indexOf('--budgets') + 1];
const budgets = (process.argv.includes('--budgets') ? listed! : '90,180,300').split(',').map(Number);
if (budgets.some((b) => !Number.isInteger(b) || b <= 0)) throw new Error('--budgets takes whole MiB, e.g. 90,180,300');

const path = ensureCorpus({ messages, seed });
const db = openArchive(path);
const admin = createCaller(db, 'admin');
const addresses = sampleAddresses(db, 200);
db.close();
const PER_RUN = 20_000;
// Every run of every budget takes the same slices of one stream: the budgets answer the same queries.
const stream = queryStream(PER_RUN * runs, { corpusSeed: seed, addresses }).map((q) => ({
  path: `/api/v1/emails?${new URLSearchParams(q.params).toString()}`,
  headers: admin.headers,
}));

interface Row {
  budget: string;
  terms: number;
  indexMiB: number;
  runs: StreamLoadResult[];
  rssMiB: number;
}

async function measure(budgetMiB: number | undefined): Promise<Row> {
  // The default budget uses the service's own saved file; the others a file each, removed after.
  const file = budgetMiB === undefined ? `${path}.index` : `${path}.budget-${budgetMiB}.index`;
  const env: Record<string, string> = { Engine__SearchIndexFile: file };
  if (budgetMiB !== undefined) env.Engine__SearchMemoryMB = String(budgetMiB);
  const server = await startArchiveServer(path, { env });
  try {
    const index = await searchIndexOf(server, (i) => i?.status === 'current', 4 * 3600_000);
    await new Promise((r) => setTimeout(r, settle * 1000));
    const results: StreamLoadResult[] = [];
    let rss = 0;
    for (let r = 0; r < runs; r++) {
      const requests = stream.slice(r * PER_RUN, (r + 1) * PER_RUN);
      results.push(await loadStream({ url: server.url, connections: 8, duration: seconds, requests }));
      rss = Math.max(rss, rssBytes(server.process.pid) ?? 0);
    }
    return {
      budget: budgetMiB === undefined ? 'default' : `${budgetMiB} MiB`,
      terms: index?.terms ?? 0,
      indexMiB: (index?.bytes ?? 0) / 2 ** 20,
      runs: results,
      rssMiB: rss / 2 ** 20,
    };
  } finally {
    await server.stop();
    if (budgetMiB !== undefined) rmSync(file, { force: true });
  }
}

const baseline = await measure(undefined);
const rows = [baseline];
for (const b of budgets) rows.push(await measure(b));
const best = (row: Row) => Math.max(...row.runs.map((r) => r.rps));
console.log(`\nThe varied stream at ${messages} messages, 8 connections, ${runs} x ${seconds} s per budget:`);
console.log('| budget | terms kept | index | req/s (each run) | p50 | p99 | peak RSS | req/s against the default |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const row of rows)
  console.log(
    `| ${row.budget} | ${row.terms} | ${row.indexMiB.toFixed(0)} MiB | ${row.runs.map((r) => r.rps.toFixed(0)).join(', ')} | ` +
      `${row.runs.map((r) => wholeMs(r.p50)).join(', ')} | ${row.runs.map((r) => wholeMs(r.p99)).join(', ')} | ` +
      `${mib(row.rssMiB * 2 ** 20)} | ${ratio(best(row), best(baseline))} |`,
  );
