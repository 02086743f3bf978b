// The varied stream (docs/performance.md), the headline workload of `npm run bench:search`: tens of
// thousands of different searches (bench/lib/query-stream.ts), none sent twice, a share of them
// with restricted users' keys, through the full HTTP stack. Around it, on the same server and
// in the same run: exact counts checked against the engine's reference count, the physical
// floor per kind of query (the engine in-process), first calls of single words across the
// frequency range, sorts over a word in 43% of the archive, point reads against a bare HTTP
// server, /accounts while the stream saturates the pool, and the server's memory.
import { openArchive, type Db } from '../../engine/sqlite/open.js';
import { exactCount, searchEmails } from '../../engine/sqlite/search.js';
import { benchSnapshot } from '../lib/saved-snapshot.js';
import { adoptSnapshot } from '../../engine/sqlite/index-share.js';
import type { SearchQuery } from '../../shared/jobs.js';
import { parseSearchInput } from '../../shared/search-input.js';
import { sampleAddresses } from '../corpus.js';
import type { Caller } from '../lib/callers.js';
import {
  load,
  loadStream,
  ms,
  percentile,
  ratio,
  wholeMs,
  type LoadResult,
  type StreamLoadResult,
} from '../lib/load.js';
import { startProbe } from '../lib/probe.js';
import { mib, rssBytes, searchStateBytes } from '../lib/memory.js';
import { corpusWords, QUERY_KINDS, queryStream, type QueryKind } from '../lib/query-stream.js';
import type { Scorecard } from '../lib/scorecard.js';
import { SerialClient } from '../lib/serial-client.js';
import { FLOOR_SERVER, startArchiveServer, startServer, type RunningServer } from '../lib/server.js';

const WORKLOAD = 'varied stream';
const TARGETS = {
  p50: 10,
  p99: 60,
  rps: 600,
  singleWord: 15,
  sortedCommon: 60,
  byIdRatio: 0.25,
  isolationP99: 20,
  /** docs/performance.md, "Snippets": the stream with snippets=true costs at most this factor of it without. */
  snippetsFactor: 1.5,
};
/** The server's page limits (Api:DefaultPageSize, Api:MaxPageSize defaults). */
const LIMITS = { defaultPageSize: 20, maxPageSize: 100 };
/** The steady /accounts client beside the stream sends one request this often (or as soon as answered, if later). */
const ACCOUNTS_EVERY_MS = 10;
/** Queries per row of the per-kind floor. */
const PER_KIND = 30;
/** Stream queries set aside ahead of the rest: warm-up candidates, then the per-kind pool. */
const WARM_POOL = 200;
const WARM_UP = 40;
const FLOOR_POOL = 4000;
/** Zipf ranks of the single words asked once each: the most common ones, then across the range to the rarest. */
const WORD_RANKS = [
  0, 1, 2, 3, 4, 5, 6, 7, 10, 13, 17, 25, 35, 50, 80, 120, 200, 300, 500, 800, 1200, 2000, 3000, 5000, 8000, 12_000,
  20_000, 30_000, 45_000, 49_999,
];
/** A word found in about 40% of the archive (43%), for the sorts that cannot stop early. */
const COMMON_WORD = 'meeting';

const summary = (xs: number[]) => ({ p50: percentile(xs, 50), p99: percentile(xs, 99), max: Math.max(...xs) });
const count = (n: number) => n.toLocaleString('en');
const bad = (r: LoadResult) => r.non2xx + r.errors;

export interface VariedOptions {
  dbPath: string;
  admin: Caller;
  /** Non-admin callers; every `restrictedEvery`-th request uses one of them in turn. */
  restricted: Caller[];
  restrictedEvery: number;
  connections: number;
  duration: number;
  /** Requests generated for each load run: more than a run can send, so none repeats. */
  streamSize: number;
  /** Queries whose totalItems are checked against exactCount before the load. */
  exactSample: number;
  scorecard: Scorecard;
}

/** One search of the stream, as sent: by whom, its parameters, the parsed query and the URL path. */
interface Req {
  kind: QueryKind;
  caller: Caller;
  params: Record<string, string>;
  query: SearchQuery;
  path: string;
  /** Headers beyond the caller's key (the compressed twin's Accept-Encoding). */
  headers?: Record<string, string>;
}

/** What HTTP clients that decompress send (curl --compressed, browsers, fetch). */
const ACCEPT_COMPRESSED = { 'Accept-Encoding': 'gzip, deflate, br' };

/** One query's time and totalItems. */
interface Timed {
  ms: number;
  total: number;
}

type Row = QueryKind | 'sortBy=relevance' | 'sortBy=subject';
const ROWS: readonly Row[] = [...QUERY_KINDS, 'sortBy=relevance', 'sortBy=subject'];

/** The per-kind row of a query: the two sorts that cannot stop early get rows of their own. */
const rowOf = (r: Req): Row =>
  r.query.sortBy === 'relevance' ? 'sortBy=relevance' : r.query.sortBy === 'subject' ? 'sortBy=subject' : r.kind;

/** What the engine's count cache is keyed by, near enough: caller, q and filters (not sort or page). */
const countKey = (r: Req) =>
  JSON.stringify([r.caller.username, r.query.q, r.query.accountId, r.query.folder, r.query.from, r.query.to]);

function request(kind: QueryKind, caller: Caller, params: Record<string, string>): Req {
  return {
    kind,
    caller,
    params,
    query: parseSearchInput(params, LIMITS),
    path: `/api/v1/emails?${new URLSearchParams(params)}`,
  };
}

/** A restricted caller filters on its own accounts, as a person would: the drawn account maps onto one of them. */
function withinReach(params: Record<string, string>, caller: Caller): Record<string, string> {
  if (caller.principal.isAdmin || params.accountId === undefined) return params;
  return { ...params, accountId: String(caller.accounts[Number(params.accountId) % caller.accounts.length]) };
}

interface Plan {
  warmUp: Req[];
  floorPool: Req[];
  exact: Req[];
  headline: Req[];
  /** As many other searches, each with snippets=true: the headline's twin, none sent before. */
  snippets: Req[];
  /**
   * As many others again, asking for a compressed answer: what gzip and br cost
   * (docs/performance.md, "Compression").
   */
  compressed: Req[];
  isolation: Req[];
}

/** The whole stream, every request distinct (caller and path), cut into the run's phases. */
function planStream(db: Db, o: VariedOptions): Plan {
  const total = WARM_POOL + FLOOR_POOL + o.exactSample + 4 * o.streamSize;
  const seen = new Set<string>();
  const all: Req[] = [];
  queryStream(total, { addresses: sampleAddresses(db, 200) }).forEach((s, i) => {
    const restricted = i % o.restrictedEvery === o.restrictedEvery - 1;
    const caller = restricted ? o.restricted[Math.floor(i / o.restrictedEvery) % o.restricted.length]! : o.admin;
    const req = request(s.kind, caller, withinReach(s.params, caller));
    const id = `${caller.username} ${req.path}`;
    if (seen.has(id)) return; // a restricted caller's account mapping made it equal to an earlier one
    seen.add(id);
    all.push(req);
  });
  const cut = (n: number) => all.splice(0, n);
  const filtered = (r: Req) =>
    r.query.accountId !== undefined || r.query.folder !== undefined || r.query.from !== undefined;
  return {
    warmUp: cut(WARM_POOL).filter(filtered).slice(0, WARM_UP),
    floorPool: cut(FLOOR_POOL),
    exact: cut(o.exactSample),
    headline: cut(o.streamSize),
    snippets: cut(o.streamSize).map((r) => request(r.kind, r.caller, { ...r.params, snippets: 'true' })),
    compressed: cut(o.streamSize).map((r) => ({ ...r, headers: ACCEPT_COMPRESSED })),
    isolation: all,
  };
}

/** Up to PER_KIND queries per row whose counts nothing before them has computed. */
function floorSample(pool: Req[], used: Set<string>): Req[] {
  const taken = new Map<Row, number>();
  const sample: Req[] = [];
  for (const r of pool) {
    const row = rowOf(r);
    if ((taken.get(row) ?? 0) >= PER_KIND || used.has(countKey(r))) continue;
    used.add(countKey(r));
    taken.set(row, (taken.get(row) ?? 0) + 1);
    sample.push(r);
  }
  return sample;
}

/**
 * Each query once, in-process on one thread: its time and totalItems. Run first on a second
 * connection whose results are dropped, so that the pages each query reads are in memory for
 * the measured run and for the server alike, while the measured connection still computes
 * every count for the first time (counts are cached per connection).
 */
function engineFloor(dbPath: string, db: Db, reqs: Req[]): Timed[] {
  const warm = openArchive(dbPath, { readonly: true });
  try {
    engineRun(warm, reqs);
  } finally {
    warm.close();
  }
  return engineRun(db, reqs);
}

/** Each query once, in-process on one thread: its time and totalItems. */
function engineRun(db: Db, reqs: Req[]): Timed[] {
  return reqs.map((r) => {
    const t = performance.now();
    const total = searchEmails(db, r.caller.principal, r.query).totalItems;
    return { ms: performance.now() - t, total };
  });
}

/** Each query once through HTTP, one at a time; its totalItems must be `expected[i]` when given. */
async function httpRun(client: SerialClient, reqs: Req[], expected?: number[]): Promise<Timed[]> {
  const out: Timed[] = [];
  for (const [i, r] of reqs.entries()) {
    const { ms: t, body } = await client.json<{ totalItems: number }>(r.path, r.caller.headers);
    if (expected && body.totalItems !== expected[i]) {
      throw new Error(
        `${r.caller.username} ${r.path}: totalItems ${body.totalItems} over HTTP, ${expected[i]} in-process`,
      );
    }
    out.push({ ms: t, total: body.totalItems });
  }
  return out;
}

/** The warm-up, a few at a time so that every worker opens the archive and prepares its statements. */
async function warmServer(server: RunningServer, reqs: Req[]): Promise<void> {
  for (let i = 0; i < reqs.length; i += 4) {
    await Promise.all(
      reqs.slice(i, i + 4).map(async (r) => {
        const res = await fetch(server.url + r.path, { headers: r.caller.headers });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`warm-up ${r.path}: status ${res.status}`);
      }),
    );
  }
}

/** Before the load: HTTP totalItems against the uncached plain-SQL count, for every sampled query. */
async function checkExact(db: Db, client: SerialClient, reqs: Req[]): Promise<{ seconds: number }> {
  const http = await httpRun(client, reqs);
  const t = performance.now();
  const mismatches: string[] = [];
  reqs.forEach((r, i) => {
    const exact = exactCount(db, r.caller.principal, r.query);
    if (http[i]!.total !== exact)
      mismatches.push(`${r.caller.username} ${r.path}: HTTP totalItems ${http[i]!.total}, exactCount ${exact}`);
  });
  if (mismatches.length > 0) {
    throw new Error(
      `totalItems differs from exactCount for ${mismatches.length} of ${reqs.length} queries:\n  ${mismatches.join('\n  ')}`,
    );
  }
  return { seconds: (performance.now() - t) / 1000 };
}

const toStream = (reqs: Req[]) => reqs.map((r) => ({ path: r.path, headers: { ...r.caller.headers, ...r.headers } }));

/** How many of the requests a load run took share their count key with a request sent before. */
function countKeyRepeats(sentBefore: Req[], run: Req[], taken: number): number {
  const seen = new Set(sentBefore.map(countKey));
  let repeats = 0;
  for (const r of run.slice(0, taken)) {
    if (seen.has(countKey(r))) repeats++;
    else seen.add(countKey(r));
  }
  return repeats;
}

/** GET /api/v1/emails/{id} over distinct ids, and a bare node:http server answering one such body. */
async function pointReads(server: RunningServer, o: VariedOptions, archiveSize: number) {
  const ids = Array.from({ length: 200_000 }, (_, i) => ((i * 7919) % archiveSize) + 1); // 7919 is prime: no id twice
  const api = await loadStream({
    url: server.url,
    connections: o.connections,
    duration: o.duration,
    requests: ids.map((id) => ({ path: `/api/v1/emails/${id}`, headers: o.admin.headers })),
  });
  const body = await (await fetch(`${server.url}/api/v1/emails/${ids[1]}`, { headers: o.admin.headers })).text();
  const floorServer = await startServer({ FLOOR_BODY: body }, FLOOR_SERVER);
  try {
    const floor = await load({ url: floorServer.url, connections: o.connections, duration: o.duration, paths: ['/'] });
    return { api, floor };
  } finally {
    await floorServer.stop();
  }
}

/** First calls of the single words and of the two sorts over the common word, then 10 more of each sort. */
async function probes(client: SerialClient, words: Req[], sorts: Req[], engineWords: Timed[]) {
  const httpWords = await httpRun(
    client,
    words,
    engineWords.map((e) => e.total),
  );
  const httpSorts = await httpRun(client, sorts);
  const sortRepeats: number[][] = [];
  for (const r of sorts) {
    const times: number[] = [];
    for (let k = 0; k < 10; k++) times.push((await client.json(r.path, r.caller.headers)).ms);
    sortRepeats.push(times);
  }
  return { httpWords, httpSorts, sortRepeats };
}

/** The queries asked one at a time, apart from the stream: single words and the two sorts over the common word. */
function probeQueries(admin: Caller) {
  const vocabulary = corpusWords();
  const ranks = WORD_RANKS.filter((rank) => vocabulary[rank] !== COMMON_WORD);
  const words = ranks.map((rank) => request('single word', admin, { q: vocabulary[rank]! }));
  const sorts = (['relevance', 'subject'] as const).map((sortBy) =>
    request('single word', admin, { q: COMMON_WORD, sortBy }),
  );
  return { ranks, words, sorts };
}

/** Everything before the load: the engine in-process, then the same queries one at a time over HTTP, then exact counts. */
async function oneAtATime(db: Db, server: RunningServer, plan: Plan, o: VariedOptions) {
  const { ranks, words, sorts } = probeQueries(o.admin);
  const sample = floorSample(plan.floorPool, new Set([...plan.warmUp, ...words, ...sorts].map(countKey)));

  // The engine, in-process: warm, then each query once (its first call: the count is computed).
  engineRun(db, plan.warmUp);
  const engine = {
    words: engineFloor(o.dbPath, db, words),
    sorts: engineFloor(o.dbPath, db, sorts),
    sample: engineFloor(o.dbPath, db, sample),
  };

  // The same queries through the server, one at a time, in the same order; then the exact counts.
  const client = new SerialClient(server.url);
  try {
    await warmServer(server, plan.warmUp);
    const { httpWords, httpSorts, sortRepeats } = await probes(client, words, sorts, engine.words);
    const httpSample = await httpRun(
      client,
      sample,
      engine.sample.map((e) => e.total),
    );
    const exact = await checkExact(db, client, plan.exact);
    return {
      ranks,
      words,
      sorts,
      sample,
      engine,
      http: { words: httpWords, sorts: httpSorts, sortRepeats, sample: httpSample },
      exactSeconds: exact.seconds,
      sent: [...plan.warmUp, ...words, ...sorts, ...sample, ...plan.exact],
    };
  } finally {
    client.close();
  }
}

/** The load runs: the stream alone (the headline), then beside a steady /accounts client, then point reads. */
async function underLoad(server: RunningServer, plan: Plan, o: VariedOptions, archiveSize: number) {
  const run = (reqs: Req[]) =>
    loadStream({ url: server.url, connections: o.connections, duration: o.duration, requests: toStream(reqs) });
  const rssBefore = rssBytes(server.process.pid);
  const headline = await run(plan.headline);
  const rssAfter = rssBytes(server.process.pid);
  const searchState = await searchStateBytes(server);
  const snippets = await run(plan.snippets);
  const compressed = await run(plan.compressed);
  const probe = startProbe(`${server.url}/api/v1/accounts`, o.admin.headers, ACCOUNTS_EVERY_MS);
  const beside = await run(plan.isolation);
  const accounts = await probe.stop();
  const byId = await pointReads(server, o, archiveSize);
  return { headline, snippets, compressed, beside, accounts, byId, rssBefore, rssAfter, searchState };
}

export async function runVaried(o: VariedOptions): Promise<void> {
  const db = openArchive(o.dbPath, { readonly: true });
  const server = await startArchiveServer(o.dbPath);
  try {
    // The in-process floor is the engine as served: with its own copy of the search index.
    const { snapshot, how } = benchSnapshot(db, o.dbPath);
    adoptSnapshot(db, snapshot);
    console.log(`In-process search index for the engine floor ${how}.`);
    const plan = planStream(db, o);
    const archiveSize = searchEmails(db, o.admin.principal, parseSearchInput({}, LIMITS)).totalItems;
    const before = await oneAtATime(db, server, plan, o);
    const load = await underLoad(server, plan, o, archiveSize);

    console.log('');
    console.log('## Varied stream (headline)');
    console.log('');
    const restrictedNames = o.restricted.map((c) => `${c.username} (accounts ${c.accounts.join(', ')})`).join(', ');
    console.log(
      `${count(plan.headline.length)} different searches per load run (bench/lib/query-stream.ts, seed 7), every ${o.restrictedEvery}th with a restricted key in turn: ${restrictedNames}; the rest admin. Archive: ${count(archiveSize)} messages.`,
    );
    const restrictedExact = plan.exact.filter((r) => !r.caller.principal.isAdmin).length;
    console.log(
      `Exact totalItems: ${plan.exact.length} queries of the stream (${restrictedExact} with a restricted key): HTTP equals exactCount (engine/sqlite/search.ts: plain SQL, no cache) for every one (reference counts took ${before.exactSeconds.toFixed(1)} s).`,
    );
    printWords(before.words, before.ranks, before.http.words, before.engine.words, archiveSize, o.scorecard);
    printSorts(before.sorts, before.http.sorts, before.http.sortRepeats, before.engine.sorts, archiveSize, o.scorecard);
    printFloor(before.sample, before.engine.sample, before.http.sample);
    printLoad(load, plan, before.sent, o);
    scoreLoad(load, plan, o.scorecard);
  } finally {
    await server.stop();
    db.close();
  }
}

type LoadFigures = Awaited<ReturnType<typeof underLoad>>;

function printLoad(r: LoadFigures, plan: Plan, sentBefore: Req[], o: VariedOptions): void {
  const row = (name: string, n: number, rps: number, p: number[], bad: number, show: (n: number) => string) =>
    console.log(`| ${name} | ${count(n)} | ${count(Math.round(rps))} | ${p.map(show).join(' | ')} | ${bad} |`);
  const autocannonRow = (name: string, x: LoadResult) =>
    row(name, x.requests, x.rps, [x.p50, x.p90, x.p99, x.max], bad(x), wholeMs);
  console.log('');
  console.log(
    `Under load (${o.connections} connections, ${o.duration} s each; autocannon reports whole milliseconds, the /accounts client measures to the microsecond):`,
  );
  console.log('| workload | requests | req/s | p50 | p90 | p99 | max | non-2xx + errors |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  autocannonRow('**varied stream (headline)**', r.headline);
  autocannonRow('varied stream, snippets=true', r.snippets);
  autocannonRow('varied stream, Accept-Encoding: gzip, deflate, br', r.compressed);
  autocannonRow('varied stream, beside /accounts', r.beside);
  const a = r.accounts.latencies;
  const aBad = [...r.accounts.statuses].filter(([status]) => status !== 200).reduce((n, [, c]) => n + c, 0);
  row(
    `GET /api/v1/accounts beside it (one client, every ${ACCOUNTS_EVERY_MS} ms)`,
    a.length + aBad,
    (a.length + aBad) / o.duration,
    [50, 90, 99].map((p) => percentile(a, p)).concat(Math.max(...a)),
    aBad,
    ms,
  );
  autocannonRow('GET /api/v1/emails/{id}, distinct ids', r.byId.api);
  autocannonRow('HTTP floor: bare node:http, one email body', r.byId.floor);
  printStreamUse(
    'headline',
    r.headline,
    plan.headline.length,
    countKeyRepeats(sentBefore, plan.headline, r.headline.taken),
  );
  printStreamUse(
    'snippets=true',
    r.snippets,
    plan.snippets.length,
    countKeyRepeats([...sentBefore, ...plan.headline.slice(0, r.headline.taken)], plan.snippets, r.snippets.taken),
  );
  console.log(
    `Snippets on / off (other queries of the same stream): req/s ${ratio(r.headline.rps, r.snippets.rps)} fewer, p50 ${ratio(r.snippets.p50, r.headline.p50)}, p99 ${ratio(r.snippets.p99, r.headline.p99)} (target ≤ ${TARGETS.snippetsFactor}x each).`,
  );
  const sentBeforeCompressed = [
    ...sentBefore,
    ...plan.headline.slice(0, r.headline.taken),
    ...plan.snippets.slice(0, r.snippets.taken),
  ];
  printStreamUse(
    'compressed',
    r.compressed,
    plan.compressed.length,
    countKeyRepeats(sentBeforeCompressed, plan.compressed, r.compressed.taken),
  );
  console.log(
    `Compression on / off (other queries of the same stream; br for these clients, answers over 1 KB): req/s ${ratio(r.headline.rps, r.compressed.rps)} fewer, p50 ${ratio(r.compressed.p50, r.headline.p50)}, p99 ${ratio(r.compressed.p99, r.headline.p99)} (measured, no target).`,
  );
  const sentBeforeIsolation = [...sentBeforeCompressed, ...plan.compressed.slice(0, r.compressed.taken)];
  printStreamUse(
    'beside /accounts',
    r.beside,
    plan.isolation.length,
    countKeyRepeats(sentBeforeIsolation, plan.isolation, r.beside.taken),
  );
  console.log(
    `GET /api/v1/emails/{id}: ${ratio(r.byId.api.rps, r.byId.floor.rps)} of the HTTP floor's req/s (target ≥ ${TARGETS.byIdRatio}x); ${count(r.byId.api.taken)} ids taken, ${r.byId.api.repeats} of them twice.`,
  );
  const state = r.searchState === undefined ? 'n/a (the engine does not report it yet)' : mib(r.searchState);
  console.log(
    `Memory of the server process: RSS ${mib(r.rssBefore)} before the load, ${mib(r.rssAfter)} after the varied run; search state ${state}.`,
  );
}

function scoreLoad(r: LoadFigures, plan: Plan, s: Scorecard): void {
  const { headline } = r;
  s.atMost(WORKLOAD, 'p50, 8 connections', headline.p50, TARGETS.p50, wholeMs);
  s.atMost(WORKLOAD, 'p99, 8 connections', headline.p99, TARGETS.p99, wholeMs);
  s.atLeast(WORKLOAD, 'throughput, 8 connections', headline.rps, TARGETS.rps, (n) => `${Math.round(n)} req/s`);
  s.add(WORKLOAD, 'no failed requests (non-2xx, errors)', String(bad(headline)), bad(headline) === 0);
  s.add(WORKLOAD, 'no query sent twice', `${headline.repeats} repeats`, headline.repeats === 0);
  s.add(WORKLOAD, `exact totalItems (${plan.exact.length} sampled)`, 'all equal', true);
  const accountsP99 = percentile(r.accounts.latencies, 99);
  s.atMost(WORKLOAD, '/accounts p99 while the stream saturates the pool', accountsP99, TARGETS.isolationP99, ms);
  const factor = (n: number) => `${n.toFixed(2)}x`;
  const { snippets } = r;
  s.atMost(WORKLOAD, 'snippets=true: req/s off / on', headline.rps / snippets.rps, TARGETS.snippetsFactor, factor);
  s.atMost(WORKLOAD, 'snippets=true: p50 on / off', snippets.p50 / headline.p50, TARGETS.snippetsFactor, factor);
  s.atMost(WORKLOAD, 'snippets=true: p99 on / off', snippets.p99 / headline.p99, TARGETS.snippetsFactor, factor);
  s.add(WORKLOAD, 'snippets=true: no failed requests', String(bad(snippets)), bad(snippets) === 0);
  const byIdRatio = r.byId.api.rps / r.byId.floor.rps;
  s.atLeast(WORKLOAD, 'GET /emails/{id} req/s / HTTP floor', byIdRatio, TARGETS.byIdRatio, (n) => `${n.toFixed(2)}x`);
}

function printWords(words: Req[], ranks: number[], http: Timed[], engine: Timed[], archiveSize: number, s: Scorecard) {
  console.log('');
  console.log('Single words, each asked once (its first call), date order, one request at a time:');
  console.log('| Zipf rank | word | totalItems | share | HTTP first call | engine first call |');
  console.log('|---:|---|---:|---:|---:|---:|');
  words.forEach((w, i) => {
    const pct = (100 * http[i]!.total) / archiveSize;
    const share = `${pct.toFixed(pct < 1 ? 2 : 1)}%`;
    console.log(
      `| ${ranks[i]} | ${w.params.q} | ${count(http[i]!.total)} | ${share} | ${ms(http[i]!.ms)} | ${ms(engine[i]!.ms)} |`,
    );
  });
  const h = summary(http.map((x) => x.ms));
  const e = summary(engine.map((x) => x.ms));
  console.log(
    `HTTP first calls: max ${ms(h.max)}, p50 ${ms(h.p50)} (target: every one ≤ ${TARGETS.singleWord} ms); engine: max ${ms(e.max)}, p50 ${ms(e.p50)}.`,
  );
  s.atMost(WORKLOAD, `any single word, first call, date order (max of ${words.length})`, h.max, TARGETS.singleWord, ms);
}

function printSorts(
  sorts: Req[],
  http: Timed[],
  repeats: number[][],
  engine: Timed[],
  archiveSize: number,
  s: Scorecard,
) {
  const total = http[0]!.total;
  console.log('');
  console.log(
    `Sorted over a word found in ${((100 * total) / archiveSize).toFixed(0)}% of the archive (${COMMON_WORD}, ${count(total)} messages), one request at a time:`,
  );
  console.log('| sortBy | HTTP first call | HTTP p50 of 10 more | engine first call |');
  console.log('|---|---:|---:|---:|');
  sorts.forEach((r, i) => {
    const p50 = percentile(repeats[i]!, 50);
    console.log(`| ${r.params.sortBy} | ${ms(http[i]!.ms)} | ${ms(p50)} | ${ms(engine[i]!.ms)} |`);
    const target = `sortBy=${r.params.sortBy} over a ${((100 * total) / archiveSize).toFixed(0)}% word (worse of first call, p50)`;
    s.atMost(WORKLOAD, target, Math.max(http[i]!.ms, p50), TARGETS.sortedCommon, ms);
  });
  console.log('(The second sort finds the count computed by the first: the two differ only in their order.)');
}

function printFloor(sample: Req[], engine: Timed[], http: Timed[]) {
  console.log('');
  console.log(
    `Physical floor per kind: up to ${PER_KIND} queries of the stream per row, each asked once (a count nothing had computed).`,
  );
  console.log(
    `Engine = searchEmails in-process on one thread, archive open and its pages warm; HTTP = the same queries through the server, one at a time. With ${PER_KIND} queries a row, p99 is the slowest of them.`,
  );
  console.log('| kind | n | engine p50 | engine p99 | HTTP p50 | HTTP p99 | HTTP/engine p50 | HTTP/engine p99 |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  const line = (name: string, idx: number[]) => {
    if (idx.length === 0) return console.log(`| ${name} | 0 | | | | | | |`);
    const e = summary(idx.map((i) => engine[i]!.ms));
    const h = summary(idx.map((i) => http[i]!.ms));
    console.log(
      `| ${name} | ${idx.length} | ${ms(e.p50)} | ${ms(e.p99)} | ${ms(h.p50)} | ${ms(h.p99)} | ${ratio(h.p50, e.p50)} | ${ratio(h.p99, e.p99)} |`,
    );
  };
  const indexes = sample.map((_, i) => i);
  for (const row of ROWS)
    line(
      row,
      indexes.filter((i) => rowOf(sample[i]!) === row),
    );
  line('all of the above', indexes);
}

function printStreamUse(name: string, r: StreamLoadResult, generated: number, sharedCounts: number) {
  console.log(
    `Stream use, ${name}: ${count(r.taken)} requests taken of ${count(generated)} generated, ${r.repeats} sent twice; ${count(sharedCounts)} of them share q, filters and caller with an earlier request (another page or sort of the same search, whose count the engine may have cached).`,
  );
}
