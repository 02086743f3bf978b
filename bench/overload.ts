// Overload benchmark (docs/performance.md, "Overload"): the real server as its own process on
// the 200,000-message corpus, two query threads. First the capacity of an expensive, varied
// search mix; then a flood of that mix at several times the capacity from many connections,
// while a separate client reads `GET /api/v1/accounts` at a steady pace. Its latency is compared
// with the same client on the idle server in the same run. Every answer of the flood is counted
// by status (only 200, 429 and 503 are acceptable), and after the flood stops the time until
// searches answer 200 at their normal latency again is measured.
//
// The same flood then runs against the same server with an unbounded queue (Engine:MaxQueue and
// Engine:MaxQueueWaitMs very large), the behaviour before queues were bounded, as the comparison.
//
//   npm run bench:overload [-- --messages 200000 --flood 10 --multiple 5 --connections 200 --unbounded 1]
import autocannon from 'autocannon';
import { openArchive } from '../engine/sqlite/open.js';
import { createKey } from '../engine/sqlite/keys.js';
import { COMMON_WORDS, ensureCorpus } from './corpus.js';
import { ms, percentile, ratio } from './lib/load.js';
import { startProbe, timedGet, type ProbeResult } from './lib/probe.js';
import { startServer } from './lib/server.js';

const TARGETS = { accountsP99: 20 };
const THREADS = 2;
const ALLOWED = new Set(['200', '429', '503']);

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const v = i === -1 ? fallback : Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} must be a non-negative number`);
  return v;
}

/** Deterministic pseudo-random numbers (mulberry32), so every run floods with the same mix. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Expensive and varied: one to three common words (each matches tens of thousands of
 * messages), sorted by relevance, sender, recipient or subject, on pages deep into the result,
 * 100 to a page. No two paths alike, so no cache of any kind makes the flood cheap.
 */
function searchMix(count: number): string[] {
  const next = random(9);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]!;
  const sorts = ['relevance', 'from', 'to', 'subject'];
  const pages = ['1', '5', '20', '100', '300'];
  const paths = new Set<string>();
  while (paths.size < count) {
    const words = Array.from({ length: 1 + Math.floor(next() * 3) }, () => pick(COMMON_WORDS));
    const params = new URLSearchParams({
      q: words.join(' '),
      sortBy: pick(sorts),
      sortOrder: next() < 0.5 ? 'asc' : 'desc',
      page: pick(pages),
      pageSize: '100',
    });
    paths.add(`/api/v1/emails?${params}`);
  }
  return [...paths];
}

interface Scenario {
  name: string;
  baseline: ProbeResult;
  capacity: number;
  flood: { offered: number; achieved: number; statuses: Record<string, number>; errors: number; timeouts: number };
  during: ProbeResult;
  searches: ProbeResult;
  recovery: { firstOk: number; normal: number };
}

async function scenario(
  name: string,
  env: Record<string, string>,
  options: {
    dbPath: string;
    auth: Record<string, string>;
    mix: string[];
    floodSeconds: number;
    multiple: number;
    connections: number;
    capacity?: number;
  },
): Promise<Scenario> {
  const { auth, mix } = options;
  const server = await startServer({
    Api__Enabled: 'true',
    Database__Path: options.dbPath,
    Engine__Threads: String(THREADS),
    // Rate limiting is not what this measures: the flood must reach the engine.
    Api__RateLimitPerMinute: '1000000000',
    ...env,
  });
  try {
    const accounts = `${server.url}/api/v1/accounts`;
    // Warm-up, and each recovery query's normal latency: median of three, one at a time.
    const recoverySet = mix.slice(0, 20);
    const normal: number[] = [];
    for (const path of recoverySet) {
      const times: number[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await timedGet(server.url + path, auth);
        if (r.status !== 200) throw new Error(`${path}: ${r.status} on an idle server`);
        times.push(r.ms);
      }
      normal.push(percentile(times, 50));
    }

    // Baseline: the steady /accounts client on the idle server.
    const idle = startProbe(accounts, auth);
    await new Promise((r) => setTimeout(r, 5_000));
    const baseline = await idle.stop();

    // Capacity: enough connections to keep every query thread busy without filling the queue.
    let capacity = options.capacity;
    if (capacity === undefined) {
      const run = await autocannon({
        url: server.url,
        connections: THREADS * 4,
        duration: 10,
        headers: auth,
        requests: mix.map((path) => ({ path })),
      });
      const ok = run.statusCodeStats?.['200' as keyof typeof run.statusCodeStats]?.count ?? 0;
      if (ok !== run.requests.total) throw new Error(`capacity run: ${ok} of ${run.requests.total} answered 200`);
      capacity = ok / 10;
    }

    // The flood, with the steady client beside it.
    const offered = Math.round(options.multiple * capacity);
    const probe = startProbe(accounts, auth);
    // And a well-behaved search user: one search at a time, what it gets and how long it waits.
    let turn = 0;
    const searcher = startProbe(() => server.url + recoverySet[turn++ % recoverySet.length]!, auth, 100);
    const flood = await autocannon({
      url: server.url,
      connections: options.connections,
      overallRate: offered,
      duration: options.floodSeconds,
      headers: auth,
      requests: mix.map((path) => ({ path })),
    });
    const floodEnded = performance.now();
    const during = await probe.stop();
    const searches = await searcher.stop();

    // Recovery: searches one at a time until one answers 200 at its normal latency.
    let firstOk = Number.NaN;
    let recovered = Number.NaN;
    for (let i = 0; performance.now() - floodEnded < 180_000; i++) {
      const k = i % recoverySet.length;
      const usual = normal[k]!;
      const r = await timedGet(server.url + recoverySet[k]!, auth);
      const since = performance.now() - floodEnded;
      if (r.status === 200 && Number.isNaN(firstOk)) firstOk = since;
      if (process.env.OVERLOAD_DEBUG) console.error('recovery', since.toFixed(0), r.status, r.ms.toFixed(0));
      if (r.status === 200 && r.ms <= Math.max(2 * usual, usual + 10)) {
        recovered = since;
        break;
      }
    }

    const statuses: Record<string, number> = {};
    for (const [code, { count }] of Object.entries(flood.statusCodeStats ?? {})) statuses[code] = count ?? 0;
    return {
      name,
      baseline,
      capacity,
      flood: {
        offered,
        achieved: flood.requests.total / options.floodSeconds,
        statuses,
        errors: flood.errors,
        timeouts: flood.timeouts,
      },
      during,
      searches,
      recovery: { firstOk, normal: recovered },
    };
  } finally {
    await server.stop();
  }
}

function report(s: Scenario, connections: number, floodSeconds: number): void {
  const base = { p50: percentile(s.baseline.latencies, 50), p99: percentile(s.baseline.latencies, 99) };
  const flood = { p50: percentile(s.during.latencies, 50), p99: percentile(s.during.latencies, 99) };
  const probeOther = [...s.during.statuses].filter(([code]) => code !== 200);
  const other = Object.entries(s.flood.statuses).filter(([code]) => !ALLOWED.has(code));
  const seconds = (v: number) => (Number.isNaN(v) ? 'not within 180 s' : `${(v / 1000).toFixed(2)} s`);
  console.log('');
  console.log(`## ${s.name}`);
  console.log(`Capacity of the search mix: ${s.capacity.toFixed(1)} searches/s (all 200).`);
  const ok = s.flood.statuses['200'] ?? 0;
  console.log(
    `Flood: ${connections} connections, ${s.flood.offered} req/s offered for ${floodSeconds} s, ${s.flood.achieved.toFixed(0)} req/s sent.`,
  );
  console.log(
    `  statuses: ${Object.entries(s.flood.statuses)
      .map(([code, n]) => `${code}: ${n}`)
      .join(
        ', ',
      )}; connection errors ${s.flood.errors} (timeouts ${s.flood.timeouts}); ${(ok / floodSeconds).toFixed(1)} searches/s answered 200.`,
  );
  if (other.length > 0) console.log(`  NOT ALLOWED: ${other.map(([code, n]) => `${code}: ${n}`).join(', ')}`);
  console.log('| GET /api/v1/accounts (steady client, every 10 ms) | answers | p50 | p99 |');
  console.log('|---|---:|---:|---:|');
  console.log(`| idle server (baseline) | ${s.baseline.latencies.length} | ${ms(base.p50)} | ${ms(base.p99)} |`);
  console.log(`| during the flood | ${s.during.latencies.length} | ${ms(flood.p50)} | ${ms(flood.p99)} |`);
  console.log(`| flood / baseline | | ${ratio(flood.p50, base.p50)} | ${ratio(flood.p99, base.p99)} |`);
  if (probeOther.length > 0)
    console.log(`  /accounts answers other than 200: ${probeOther.map(([c, n]) => `${c}: ${n}`).join(', ')}`);
  const answered = (r: ProbeResult) =>
    [...r.statuses]
      .sort(([a], [b]) => String(a).localeCompare(String(b)))
      .map(([code, n]) => `${code}: ${n}`)
      .join(', ');
  console.log(
    `A steady search client during the flood (one at a time, every 100 ms): ${answered(s.searches)}; latency of its 200s p50 ${ms(percentile(s.searches.latencies, 50))}, p99 ${ms(percentile(s.searches.latencies, 99))}.`,
  );
  console.log(
    `/accounts p99 during the flood: ${ms(flood.p99)} (target <= ${TARGETS.accountsP99} ms: ${flood.p99 <= TARGETS.accountsP99 ? 'met' : 'NOT met'}).`,
  );
  console.log(
    `After the flood: first search 200 after ${seconds(s.recovery.firstOk)}; searches at normal latency after ${seconds(s.recovery.normal)}.`,
  );
}

async function main(): Promise<void> {
  const messages = arg('--messages', 200_000);
  const floodSeconds = arg('--flood', 10);
  const multiple = arg('--multiple', 5);
  const connections = arg('--connections', 200);
  const unbounded = arg('--unbounded', 1) > 0;
  const dbPath = ensureCorpus({ messages });
  const db = openArchive(dbPath);
  const key = createKey(db, { username: 'admin', name: 'bench overload' }).key;
  db.close();
  const auth = { Authorization: `Bearer ${key}` };
  const mix = searchMix(400);
  console.log(
    `Corpus: ${messages.toLocaleString('en')} messages (${dbPath}); ${THREADS} query threads; ${mix.length} distinct searches in the mix.`,
  );

  const options = { dbPath, auth, mix, floodSeconds, multiple, connections };
  const bounded = await scenario(
    `Bounded queue (defaults: Engine:MaxQueueWaitMs = 500, Engine:MaxQueue = 64 x ${THREADS} threads = ${64 * THREADS})`,
    {},
    options,
  );
  report(bounded, connections, floodSeconds);
  if (unbounded) {
    // Same offered load as the bounded run, so the two differ only in the bound.
    const before = await scenario(
      'Unbounded queue (Engine:MaxQueue = 100000, Engine:MaxQueueWaitMs = 60000), the same flood',
      { Engine__MaxQueue: '100000', Engine__MaxQueueWaitMs: '60000' },
      { ...options, capacity: bounded.capacity },
    );
    report(before, connections, floodSeconds);
  }
}

await main();
