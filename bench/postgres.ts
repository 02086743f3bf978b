// The PostgreSQL engine beside the SQLite engine on the same corpus (docs/performance.md,
// "PostgreSQL"): the 1,000,000-message benchmark corpus in a SQLite file and in a Mail Archiver
// PostgreSQL database, both written through their store's own write path; two real servers,
// the same requests, figures side by side with the ratio, all measured in this one run.
//
// Workloads: a stream of 20,000 different searches (bench/lib/query-stream.ts, the headline: no
// cache sees a query twice), then the fixed mix of bench/search.ts. Before loading, every query
// of a sample is sent to both servers: totalItems must be equal, and so must the first page's ids
// wherever the order is defined the same way on both (every sort but relevance).
//
//   npm run bench:postgres [-- --messages 1000000 --duration 10 --connections 8 --stream 20000]
import { openAdmin } from '../engine/admin.js';
import { ensureCorpus, sampleAddress } from './corpus.js';
import { openArchive } from '../engine/db/open.js';
import {
  load,
  loadStream,
  ms,
  percentile,
  ratio,
  sequential,
  type LoadResult,
  type StreamLoadResult,
} from './lib/load.js';
import { queryStream } from './lib/query-stream.js';
import { startArchiveServer, type RunningServer } from './lib/server.js';
import { ensurePgCorpus } from './pg-corpus.js';

const TARGETS = { p50: 2, p99: 3 };
/** Stream queries sent to both servers one at a time to compare counts, before (and apart from) the load. */
const EXACT_SAMPLE = 200;

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const v = i === -1 ? fallback : Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return v;
}

function mix(address: string): Array<{ name: string; params: Record<string, string> }> {
  return [
    { name: 'rare word', params: { q: 'zanzibar' } },
    { name: 'very common word', params: { q: 'meeting' } },
    { name: 'two words', params: { q: 'project budget' } },
    { name: 'phrase', params: { q: '"the project"' } },
    { name: 'from: an address', params: { q: `from:${address}` } },
    { name: 'subject: a word', params: { q: 'subject:review' } },
    { name: 'date range, no q', params: { from: '2019-01-01', to: '2019-03-31' } },
    { name: 'folder, by subject', params: { folder: 'INBOX/Projects/Apollo', sortBy: 'subject', sortOrder: 'asc' } },
    { name: 'page 500', params: { q: 'project', page: '500' } },
    { name: 'very common word, oldest first', params: { q: 'meeting', sortOrder: 'asc' } },
  ];
}

const path = (params: Record<string, string>) => `/api/v1/emails?${new URLSearchParams(params)}`;

interface Side {
  name: 'SQLite' | 'PostgreSQL';
  server: RunningServer;
  key: string;
}

async function get(side: Side, params: Record<string, string>) {
  const res = await fetch(side.server.url + path(params), { headers: { Authorization: `Bearer ${side.key}` } });
  const body = (await res.json()) as { totalItems: number; items: Array<{ id: number }> };
  if (res.status !== 200) throw new Error(`${side.name} ${path(params)}: status ${res.status} ${JSON.stringify(body)}`);
  return body;
}

async function main(): Promise<void> {
  const messages = arg('--messages', 1_000_000);
  const duration = arg('--duration', 10);
  const connections = arg('--connections', 8);
  const streamSize = arg('--stream', 20_000);

  const sqlitePath = ensureCorpus({ messages });
  const pgUrl = await ensurePgCorpus({ messages });
  const db = openArchive(sqlitePath, { readonly: true });
  const address = sampleAddress(db);
  db.close();
  const keyFor = async (location: string) => {
    const admin = await openAdmin(location);
    try {
      return (await admin.createKey({ username: 'admin', name: 'bench:postgres' })).key;
    } finally {
      await admin.close();
    }
  };
  console.log(
    `Corpus: ${messages.toLocaleString('en')} messages, SQLite ${sqlitePath}, PostgreSQL ${pgUrl.replace(/\/\/[^@]*@/, '//')}.`,
  );
  console.log(`${connections} connections, ${duration} s per run, Engine:Threads=2 on both servers.`);

  const sides: Side[] = [
    { name: 'SQLite', server: await startArchiveServer(sqlitePath), key: await keyFor(sqlitePath) },
    { name: 'PostgreSQL', server: await startArchiveServer(pgUrl), key: await keyFor(pgUrl) },
  ];
  try {
    const stream = queryStream(EXACT_SAMPLE + streamSize, { addresses: [address] });
    const fixed = mix(address);

    // Exactness on a sample, and the first (cold) request of each store.
    const sample = [...fixed.map((f) => f.params), ...stream.slice(0, EXACT_SAMPLE).map((s) => s.params)];
    let countsDiffer = 0;
    let pagesDiffer = 0;
    for (const params of sample) {
      const [a, b] = [await get(sides[0]!, params), await get(sides[1]!, params)];
      if (a.totalItems !== b.totalItems) {
        countsDiffer++;
        console.log(`  totalItems differ for ${path(params)}: SQLite ${a.totalItems}, PostgreSQL ${b.totalItems}`);
      } else if (params.sortBy !== 'relevance' && a.items.map((i) => i.id).join() !== b.items.map((i) => i.id).join()) {
        pagesDiffer++;
        console.log(`  first page differs for ${path(params)}`);
      }
    }
    console.log(
      `Exactness over ${sample.length} queries: totalItems differ ${countsDiffer}, first-page ids differ ${pagesDiffer} (relevance order not compared).`,
    );

    // One at a time, each fixed query: p50 of 20 on each store.
    const seq = new Map<string, number[]>();
    for (const f of fixed) {
      const row: number[] = [];
      for (const side of sides)
        row.push(
          percentile(
            await sequential(side.server.url + path(f.params), { Authorization: `Bearer ${side.key}` }, 20),
            50,
          ),
        );
      seq.set(f.name, row);
    }

    // Under load: the stream (headline; past the sample, whose counts are now cached, and every
    // request once: both servers take it from its start), then the fixed mix cycled.
    const streamPaths = stream.slice(EXACT_SAMPLE).map((s) => path(s.params));
    const fixedPaths = fixed.map((f) => path(f.params));
    const results: { stream: StreamLoadResult[]; mix: LoadResult[] } = { stream: [], mix: [] };
    for (const side of sides) {
      const headers = { Authorization: `Bearer ${side.key}` };
      const requests = streamPaths.map((p) => ({ path: p, headers }));
      results.stream.push(await loadStream({ url: side.server.url, connections, duration, requests }));
      results.mix.push(await load({ url: side.server.url, connections, duration, headers, paths: fixedPaths }));
    }

    console.log('');
    console.log('One request at a time (p50 of 20):');
    console.log('| query | SQLite | PostgreSQL | PostgreSQL / SQLite |');
    console.log('|---|---:|---:|---:|');
    for (const f of fixed) {
      const [a, b] = seq.get(f.name)!;
      console.log(`| ${f.name} | ${ms(a!)} | ${ms(b!)} | ${ratio(b!, a!)} |`);
    }
    console.log('');
    console.log(`Under load (${connections} connections, ${duration} s; autocannon reports whole milliseconds):`);
    console.log('| workload | store | p50 | p99 | req/s | non-2xx | PG/SQLite p50 | PG/SQLite p99 |');
    console.log('|---|---|---:|---:|---:|---:|---:|---:|');
    for (const [workload, label] of [
      ['stream', `stream of ${streamPaths.length} different queries`],
      ['mix', 'fixed mix'],
    ] as const) {
      const [a, b] = results[workload]!;
      console.log(
        `| ${label} | SQLite | ${ms(a!.p50)} | ${ms(a!.p99)} | ${a!.rps.toFixed(0)} | ${a!.non2xx + a!.errors} | | |`,
      );
      console.log(
        `| ${label} | PostgreSQL | ${ms(b!.p50)} | ${ms(b!.p99)} | ${b!.rps.toFixed(0)} | ${b!.non2xx + b!.errors} | ${ratio(b!.p50, a!.p50)} | ${ratio(b!.p99, a!.p99)} |`,
      );
    }
    for (const [i, side] of sides.entries()) {
      const r = results.stream[i]!;
      console.log(
        `Stream use, ${side.name}: ${r.taken} requests taken of ${streamPaths.length}, ${r.repeats} sent twice.`,
      );
    }
    const [sa, pa] = results.stream;
    const okP50 = pa!.p50 <= TARGETS.p50 * Math.max(sa!.p50, 1);
    const okP99 = pa!.p99 <= TARGETS.p99 * Math.max(sa!.p99, 1);
    console.log('');
    console.log(
      `Targets on the stream: p50 within ${TARGETS.p50}x (${ratio(pa!.p50, sa!.p50)}: ${okP50 ? 'met' : 'missed'}), p99 within ${TARGETS.p99}x (${ratio(pa!.p99, sa!.p99)}: ${okP99 ? 'met' : 'missed'}).`,
    );
  } finally {
    await Promise.all(sides.map((s) => s.server.stop()));
  }
}

await main();
