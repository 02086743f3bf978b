// The fixed mix (docs/performance.md), the second workload of `npm run bench:search`: ten queries repeated
// through the full HTTP stack, against two floors measured in the same run: the same queries
// in-process straight on SQLite (the engine's floor) and a bare node:http server answering the
// same JSON body (the HTTP floor). Repeated queries find their counts cached, which is what
// the varied stream is for; this mix measures the steady state around the planner.
import { openArchive, type Db } from '../../engine/sqlite/open.js';
import { searchEmails } from '../../engine/sqlite/emails.js';
import type { SearchQuery } from '../../shared/jobs.js';
import { parseSearchInput } from '../../shared/search-input.js';
import { sampleAddress } from '../corpus.js';
import type { Caller } from '../lib/callers.js';
import { load, ms, percentile, ratio, sequential, type LoadResult } from '../lib/load.js';
import type { Scorecard } from '../lib/scorecard.js';
import { FLOOR_SERVER, startArchiveServer, startServer, type RunningServer } from '../lib/server.js';

const WORKLOAD = 'fixed mix';
const TARGETS = { p50: 15, p99: 100, isolationP99: 20, floorRatio: 1.3 };
const LIMITS = { defaultPageSize: 20, maxPageSize: 100 };

export interface FixedMixOptions {
  dbPath: string;
  admin: Caller;
  restricted: Caller;
  connections: number;
  duration: number;
  scorecard: Scorecard;
}

interface MixQuery {
  name: string;
  params: Record<string, string>;
  as: 'admin' | 'restricted';
}

function mix(address: string): MixQuery[] {
  return [
    { name: 'rare word', params: { q: 'zanzibar' }, as: 'admin' },
    { name: 'very common word', params: { q: 'meeting' }, as: 'admin' },
    { name: 'two words', params: { q: 'project budget' }, as: 'admin' },
    { name: 'phrase', params: { q: '"the project"' }, as: 'admin' },
    { name: 'from: an address', params: { q: `from:${address}` }, as: 'admin' },
    { name: 'subject: a word', params: { q: 'subject:review' }, as: 'admin' },
    { name: 'date range, no q', params: { from: '2019-01-01', to: '2019-03-31' }, as: 'admin' },
    {
      name: 'folder, by subject',
      params: { folder: 'INBOX/Projects/Apollo', sortBy: 'subject', sortOrder: 'asc' },
      as: 'admin',
    },
    { name: 'restricted key', params: { q: 'meeting' }, as: 'restricted' },
    { name: 'page 500', params: { q: 'project', page: '500' }, as: 'admin' },
  ];
}

/** Beyond the mix: the sorts and operators whose plans differ, in-process. */
const BEYOND: Array<[string, Record<string, string>]> = [
  ['common word, by subject', { q: 'meeting', sortBy: 'subject', sortOrder: 'asc' }],
  ['common word, by received date', { q: 'meeting', sortBy: 'receivedDate' }],
  ['common word, by relevance', { q: 'meeting', sortBy: 'relevance' }],
  ['rare word, by subject', { q: 'zanzibar', sortBy: 'subject' }],
  ['no q, by from', { sortBy: 'from', sortOrder: 'asc' }],
  ['-word alone', { q: '-meeting' }],
  ['has:attachment', { q: 'has:attachment' }],
  ['a OR b', { q: 'meeting OR project' }],
  ['prefix', { q: 'meet*' }],
];

const path = (q: MixQuery) => `/api/v1/emails?${new URLSearchParams(q.params)}`;

interface EngineFloor {
  cold: number;
  p50: number;
  total: number;
}

/** Each query in-process on SQLite, one thread: first call cold, then 30 warm calls. */
function engineFloor(db: Db, queries: MixQuery[], callers: Record<'admin' | 'restricted', Caller>) {
  const floor = new Map<string, EngineFloor>();
  for (const q of queries) {
    const query: SearchQuery = parseSearchInput(q.params, LIMITS);
    const times: number[] = [];
    let total = 0;
    let cold = 0;
    for (let i = 0; i <= 30; i++) {
      const t = performance.now();
      total = searchEmails(db, callers[q.as].principal, query).totalItems;
      const elapsed = performance.now() - t;
      if (i === 0) cold = elapsed;
      else times.push(elapsed);
    }
    floor.set(q.name, { cold, p50: percentile(times, 50), total });
  }
  return floor;
}

/** The BEYOND queries in-process, as admin: first call, then p50 of 10. */
function beyondMix(db: Db, admin: Caller): string[] {
  return BEYOND.map(([name, params]) => {
    const query = parseSearchInput(params, LIMITS);
    let t = performance.now();
    const total = searchEmails(db, admin.principal, query).totalItems;
    const first = performance.now() - t;
    const times: number[] = [];
    for (let i = 0; i < 10; i++) {
      t = performance.now();
      searchEmails(db, admin.principal, query);
      times.push(performance.now() - t);
    }
    return `| ${name} | ${total} | ${ms(first)} | ${ms(percentile(times, 50))} |`;
  });
}

/** Exact counts: every query's totalItems through HTTP equals the floor's; returns the first-call times and one body. */
async function firstCalls(
  server: RunningServer,
  queries: MixQuery[],
  auth: (q: MixQuery) => Record<string, string>,
  floor: Map<string, EngineFloor>,
) {
  const cold = new Map<string, number>();
  let firstBody = '';
  for (const q of queries) {
    const t = performance.now();
    const res = await fetch(server.url + path(q), { headers: auth(q) });
    const body = (await res.json()) as { totalItems: number };
    cold.set(q.name, performance.now() - t);
    firstBody ||= JSON.stringify(body);
    const expected = floor.get(q.name)!.total;
    if (res.status !== 200 || body.totalItems !== expected) {
      throw new Error(`${q.name}: status ${res.status}, totalItems ${body.totalItems}, expected ${expected}`);
    }
  }
  return { cold, firstBody };
}

export async function runFixedMix(o: FixedMixOptions): Promise<void> {
  const callers = { admin: o.admin, restricted: o.restricted };
  const auth = (q: MixQuery) => callers[q.as].headers;
  const { connections, duration } = o;

  const db = openArchive(o.dbPath, { readonly: true });
  const queries = mix(sampleAddress(db));
  const floor = engineFloor(db, queries, callers);
  const beyondRows = beyondMix(db, o.admin);
  db.close();

  const server = await startArchiveServer(o.dbPath);
  try {
    const { cold: httpCold, firstBody } = await firstCalls(server, queries, auth, floor);

    // Latency without queueing: one request at a time, against both floors.
    const floorServer = await startServer({ FLOOR_BODY: firstBody }, FLOOR_SERVER);
    const httpFloorSeq = percentile(await sequential(`${floorServer.url}/`, {}, 200), 50);
    const seq = new Map<string, number>();
    for (const q of queries) seq.set(q.name, percentile(await sequential(server.url + path(q), auth(q), 50), 50));

    // Under load: autocannon, `connections` at once, each query alone and then the mix.
    const rows: Array<{ q: MixQuery; r: LoadResult }> = [];
    for (const q of queries) {
      rows.push({ q, r: await load({ url: server.url, connections, duration, headers: auth(q), paths: [path(q)] }) });
    }
    const adminPaths = queries.filter((q) => q.as === 'admin').map(path);
    const adminHeaders = o.admin.headers;
    const mixed = await load({ url: server.url, connections, duration, headers: adminHeaders, paths: adminPaths });
    // Event-loop isolation: /accounts while the mix saturates the pool.
    const [, isolation] = await Promise.all([
      load({ url: server.url, connections, duration, headers: adminHeaders, paths: adminPaths }),
      load({ url: server.url, connections: 1, duration, headers: adminHeaders, paths: ['/api/v1/accounts'] }),
    ]);
    const httpFloor = await load({ url: floorServer.url, connections, duration, paths: ['/'] });
    await floorServer.stop();

    console.log('');
    console.log('## Fixed mix (10 queries, repeated)');
    console.log('');
    console.log(
      'One request at a time (p50 of 50; engine floor = the same query in-process on SQLite, first call cold then 30 warm):',
    );
    console.log(
      '| query | totalItems | first call (HTTP) | first call (engine) | API p50 | engine floor p50 | API / floor | API - HTTP floor |',
    );
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const q of queries) {
      const f = floor.get(q.name)!;
      const api = seq.get(q.name)!;
      console.log(
        `| ${q.name} | ${f.total} | ${ms(httpCold.get(q.name) ?? Number.NaN)} | ${ms(f.cold)} | ${ms(api)} | ${ms(f.p50)} | ${ratio(api, f.p50)} | ${ms(api - httpFloorSeq)} |`,
      );
    }
    console.log(`HTTP floor (bare node:http, same body), one at a time: p50 ${ms(httpFloorSeq)}.`);
    console.log('');
    console.log(`Under load (${connections} connections, ${duration} s each; autocannon reports whole milliseconds):`);
    console.log('| query | p50 | p99 | req/s |');
    console.log('|---|---:|---:|---:|');
    for (const { q, r } of rows) {
      const bad = r.non2xx + r.errors > 0 ? ` (${r.non2xx} non-2xx, ${r.errors} errors)` : '';
      console.log(`| ${q.name} | ${ms(r.p50)} | ${ms(r.p99)} | ${r.rps.toFixed(0)}${bad} |`);
    }
    const seqAll = queries.map((q) => seq.get(q.name)!);
    const floorAll = queries.map((q) => floor.get(q.name)!.p50);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const apiOverFloor = sum(seqAll) / sum(floorAll);
    const fixedCost = percentile(
      seqAll.map((v, i) => v - floorAll[i]!),
      50,
    );
    console.log('');
    console.log(
      `Mix (admin queries cycled): p50 ${ms(mixed.p50)} (target <= ${TARGETS.p50}), p99 ${ms(mixed.p99)} (target <= ${TARGETS.p99}), ${mixed.rps.toFixed(0)} req/s, ${mixed.non2xx} non-2xx.`,
    );
    console.log(
      `HTTP floor under the same load: p50 ${ms(httpFloor.p50)}, p99 ${ms(httpFloor.p99)}, ${httpFloor.rps.toFixed(0)} req/s.`,
    );
    console.log(
      `API / engine floor over the whole mix, one at a time: ${apiOverFloor.toFixed(2)}x (target <= ${TARGETS.floorRatio}x); the fixed HTTP + pool cost per request is ${ms(fixedCost)}.`,
    );
    console.log(
      `Isolation: GET /api/v1/accounts p99 ${ms(isolation.p99)} while the mix runs (target <= ${TARGETS.isolationP99}); p50 ${ms(isolation.p50)}.`,
    );
    console.log('');
    console.log('Beyond the mix, in-process (first call computes the count; then p50 of 10):');
    console.log('| query | totalItems | first call | repeated |');
    console.log('|---|---:|---:|---:|');
    for (const row of beyondRows) console.log(row);

    const s = o.scorecard;
    s.atMost(WORKLOAD, 'p50, 8 connections', mixed.p50, TARGETS.p50, ms);
    s.atMost(WORKLOAD, 'p99, 8 connections', mixed.p99, TARGETS.p99, ms);
    s.add(WORKLOAD, 'exact totalItems (every query)', 'all equal', true);
    s.atMost(WORKLOAD, '/accounts p99 while the mix saturates the pool', isolation.p99, TARGETS.isolationP99, ms);
    s.atMost(
      WORKLOAD,
      'API / engine floor, one at a time',
      apiOverFloor,
      TARGETS.floorRatio,
      (n) => `${n.toFixed(2)}x`,
    );
  } finally {
    await server.stop();
  }
}
