// Cold start with and without the saved search index (ADR 23; docs/performance.md, "Cold start").
// The real server is started twice on the same corpus, in the same run: first with no
// `<archive>.index` (it builds the index, as every start did before, and saves it), then again
// (it loads the file). Each time: from spawning the process to listening, and to /readyz
// reporting the index current; and the varied stream (bench/lib/query-stream.ts) sent from the
// moment the server listens, for `--seconds`, as clients would after a PM2 restart. Prints the
// snapshot-load start against the rebuild start as ratios, and the server's own log lines.
//
//   npm run bench:cold-start [-- --messages 300000 --seconds 20 --connections 8]
//   npm run bench:cold-start -- --postgres --messages 100000   (a copy of bench/pg-corpus.ts's
//     database; the file goes to Engine:SearchIndexFile in bench/.cache/)
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { openAdmin } from '../engine/archive.js';
import { openArchive } from '../engine/sqlite/open.js';
import type { SearchIndexInfo } from '../shared/jobs.js';
import { CACHE_DIR, corpusArgs, ensureCorpus, sampleAddresses } from './corpus.js';
import { arg } from './lib/args.js';
import { createCaller } from './lib/callers.js';
import { loadStream, ms, ratio, type StreamLoadResult } from './lib/load.js';
import { queryStream } from './lib/query-stream.js';
import { searchIndexOf, startServer } from './lib/server.js';
import { ensurePgCorpus, pgCorpusUrl } from './pg-corpus.js';

const { messages, seed } = corpusArgs();
const seconds = arg('--seconds', 20);
const connections = arg('--connections', 8);
const postgres = process.argv.includes('--postgres');

/** The archive to start on, the saved file's path, the admin's key, and what to drop afterwards. */
async function archive() {
  if (!postgres) {
    const path = ensureCorpus({ messages, seed });
    const db = openArchive(path);
    const admin = createCaller(db, 'admin');
    const addresses = sampleAddresses(db, 200);
    db.close();
    return {
      path,
      file: `${path}.index`,
      env: {} as Record<string, string>,
      headers: admin.headers,
      addresses,
      drop: async () => {},
    };
  }
  // A private copy of the cached corpus database: the bench adds a key and the side index's rows.
  const template = new URL(await ensurePgCorpus({ messages, seed })).pathname.slice(1);
  const name = `mag_bench_cold_start_${process.pid}`;
  const client = new pg.Client({ connectionString: pgCorpusUrl('postgres') });
  await client.connect();
  await client.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
  const path = pgCorpusUrl(name);
  const store = await openAdmin(path);
  const key = (await store.createKey({ username: 'admin', name: 'bench:cold-start' })).key;
  await store.close();
  const file = join(CACHE_DIR, `${name}.index`);
  return {
    path,
    file,
    env: { Engine__SearchIndexFile: file },
    headers: { Authorization: `Bearer ${key}` },
    addresses: [] as string[],
    drop: async () => {
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await client.end();
      rmSync(file, { force: true });
    },
  };
}

const served = await archive();
const path = served.path;
const requests = queryStream(20_000, { corpusSeed: seed, addresses: served.addresses }).map((q) => ({
  path: `/api/v1/emails?${new URLSearchParams(q.params).toString()}`,
  headers: served.headers,
}));

interface Start {
  listeningMs: number;
  /** Until the builder says searches are answered from the index (its 'ready' line). */
  readyMs: number;
  /** Until /readyz says so (its ping waits behind the stream on the query lane). */
  readyzMs: number;
  index: SearchIndexInfo | undefined;
  stream: StreamLoadResult;
  log: string[];
}

async function coldStart(): Promise<Start> {
  const t0 = performance.now();
  const log: string[] = [];
  let readyMs = Number.NaN;
  const onLine = (line: string) => {
    try {
      const msg = (JSON.parse(line) as { msg?: string }).msg ?? '';
      if (msg.startsWith('search index: ready')) readyMs = performance.now() - t0;
      if (msg.startsWith('search index:')) log.push(`${((performance.now() - t0) / 1000).toFixed(1)} s: ${msg}`);
    } catch {
      // not a log line
    }
  };
  const server = await startServer(
    {
      Api__Enabled: 'true',
      Database__Path: path,
      Engine__Threads: '2',
      Api__RateLimitPerMinute: '1000000000',
      ...served.env,
    },
    undefined,
    [],
    onLine,
  );
  const listeningMs = performance.now() - t0;
  try {
    let readyzMs = Number.NaN;
    // However long the build takes (a quarter of an hour at 10,000,000 messages): its time is the measure.
    const ready = searchIndexOf(server, (i) => i?.status === 'current', 4 * 3600_000).then((index) => {
      readyzMs = performance.now() - t0;
      return index;
    });
    const stream = await loadStream({ url: server.url, connections, duration: seconds, requests });
    const index = await ready;
    // The first start saves the file right after its build: wait for the line that says so.
    for (const deadline = Date.now() + 600_000; Date.now() < deadline && !log.some((l) => /saved|loaded/.test(l));)
      await new Promise((r) => setTimeout(r, 200));
    return { listeningMs, readyMs, readyzMs, index, stream, log };
  } finally {
    await server.stop();
  }
}

rmSync(served.file, { force: true });
console.log(
  `Cold start at ${messages.toLocaleString('en')} messages (${path}); the stream: ${seconds} s, ${connections} connections from listening.`,
);
const rebuild = await coldStart();
const loaded = await coldStart();
await served.drop();

const s = (n: number) => `${(n / 1000).toFixed(1)} s`;
const rows: Array<[string, string, string, string]> = [
  ['', 'rebuild (no file)', 'saved file', 'file / rebuild'],
  ['index origin', `${rebuild.index?.origin}`, `${loaded.index?.origin}`, ''],
  [
    'process start -> listening',
    s(rebuild.listeningMs),
    s(loaded.listeningMs),
    ratio(loaded.listeningMs, rebuild.listeningMs),
  ],
  ['process start -> index ready', s(rebuild.readyMs), s(loaded.readyMs), ratio(loaded.readyMs, rebuild.readyMs)],
  [
    'process start -> /readyz current',
    s(rebuild.readyzMs),
    s(loaded.readyzMs),
    ratio(loaded.readyzMs, rebuild.readyzMs),
  ],
  ['stream p50', ms(rebuild.stream.p50), ms(loaded.stream.p50), ratio(loaded.stream.p50, rebuild.stream.p50)],
  ['stream p99', ms(rebuild.stream.p99), ms(loaded.stream.p99), ratio(loaded.stream.p99, rebuild.stream.p99)],
  [
    'stream req/s',
    rebuild.stream.rps.toFixed(0),
    loaded.stream.rps.toFixed(0),
    ratio(loaded.stream.rps, rebuild.stream.rps),
  ],
  ['stream non-2xx', String(rebuild.stream.non2xx), String(loaded.stream.non2xx), ''],
];
const width = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
for (const r of rows) console.log(r.map((cell, c) => cell.padEnd(width[c]!)).join('  '));
console.log(`\nIndex: ${((loaded.index?.bytes ?? 0) / 1024 / 1024).toFixed(0)} MiB, ${loaded.index?.terms} terms.`);
console.log(`Rebuild start:\n  ${rebuild.log.join('\n  ')}\nSaved-file start:\n  ${loaded.log.join('\n  ')}`);
console.log(
  `\nRatio (saved-file start / rebuild start, time to index ready): ${ratio(loaded.readyMs, rebuild.readyMs)}`,
);
