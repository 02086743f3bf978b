// Search load benchmark (docs/performance.md): the fixed query mix through the full HTTP stack
// on the 1,000,000-message corpus, with 8 concurrent connections, against two floors measured
// in the same run: the same queries in-process straight on SQLite (the engine's floor) and a
// bare node:http server answering a fixed JSON body (the HTTP floor).
//
//   npm run bench:search [-- --messages 1000000 --duration 10 --connections 8]
import { openArchive } from '../engine/db/open.js';
import { searchEmails } from '../engine/store/emails.js';
import { createKey, authenticate, hashKey } from '../engine/store/keys.js';
import type { Principal, SearchQuery } from '../shared/jobs.js';
import { parseSearchInput } from '../shared/search-input.js';
import { ensureCorpus, sampleAddress } from './corpus.js';
import { load, ms, percentile, ratio, sequential, type LoadResult } from './lib/load.js';
import { FLOOR_SERVER, startArchiveServer, startServer } from './lib/server.js';

const TARGETS = { p50: 15, p99: 100, isolationP99: 20, floorRatio: 1.3 };

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const v = i === -1 ? fallback : Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return v;
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

const path = (q: MixQuery) => `/api/v1/emails?${new URLSearchParams(q.params)}`;

async function main(): Promise<void> {
  const messages = arg('--messages', 1_000_000);
  const duration = arg('--duration', 10);
  const connections = arg('--connections', 8);
  const dbPath = ensureCorpus({ messages });

  // Keys for this run, and the in-process floor on the same file.
  const db = openArchive(dbPath);
  const keys = {
    admin: createKey(db, { username: 'admin', name: 'bench' }).key,
    restricted: createKey(db, { username: 'user0', name: 'bench' }).key,
  };
  const principals = Object.fromEntries(
    Object.entries(keys).map(([k, key]) => {
      const auth = authenticate(db, hashKey(key), Date.now());
      if (!auth.ok) throw new Error('bench key refused');
      return [k, auth.principal];
    }),
  ) as Record<'admin' | 'restricted', Principal>;
  const address = sampleAddress(db);
  const queries = mix(address);
  const limits = { defaultPageSize: 20, maxPageSize: 100 };

  console.log(
    `Corpus: ${messages.toLocaleString('en')} messages (${dbPath}); ${connections} connections, ${duration} s per run.`,
  );
  console.log('Engine floor: each query in-process on SQLite, one thread; first call cold, then 30 warm calls.');
  const floor = new Map<string, { cold: number; p50: number; total: number }>();
  const httpCold = new Map<string, number>();
  for (const q of queries) {
    const query: SearchQuery = parseSearchInput(q.params, limits);
    const times: number[] = [];
    let total = 0;
    let cold = 0;
    for (let i = 0; i <= 30; i++) {
      const t = performance.now();
      total = searchEmails(db, principals[q.as], query).totalItems;
      const elapsed = performance.now() - t;
      if (i === 0) cold = elapsed;
      else times.push(elapsed);
    }
    floor.set(q.name, { cold, p50: percentile(times, 50), total });
  }
  // Beyond the mix: the sorts and operators whose plans differ, in-process.
  const beyond: Array<[string, Record<string, string>]> = [
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
  const beyondRows: string[] = [];
  for (const [name, params] of beyond) {
    const query = parseSearchInput(params, limits);
    let t = performance.now();
    const total = searchEmails(db, principals.admin, query).totalItems;
    const first = performance.now() - t;
    const times: number[] = [];
    for (let i = 0; i < 10; i++) {
      t = performance.now();
      searchEmails(db, principals.admin, query);
      times.push(performance.now() - t);
    }
    beyondRows.push(`| ${name} | ${total} | ${ms(first)} | ${ms(percentile(times, 50))} |`);
  }
  db.close();

  const server = await startArchiveServer(dbPath);
  try {
    const auth = (q: MixQuery) => ({ Authorization: `Bearer ${keys[q.as]}` });
    // Exact counts: every query's totalItems through HTTP equals the floor's (uncached there).
    let firstBody = '';
    for (const q of queries) {
      const t = performance.now();
      const res = await fetch(server.url + path(q), { headers: auth(q) });
      const body = (await res.json()) as { totalItems: number };
      const cold = performance.now() - t;
      firstBody ||= JSON.stringify(body);
      const expected = floor.get(q.name)!.total;
      if (res.status !== 200 || body.totalItems !== expected) {
        throw new Error(`${q.name}: status ${res.status}, totalItems ${body.totalItems}, expected ${expected}`);
      }
      httpCold.set(q.name, cold);
    }

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
    const mixed = await load({ url: server.url, connections, duration, headers: auth(queries[0]!), paths: adminPaths });
    // Event-loop isolation: /accounts while the mix saturates the pool.
    const [, isolation] = await Promise.all([
      load({ url: server.url, connections, duration, headers: auth(queries[0]!), paths: adminPaths }),
      load({ url: server.url, connections: 1, duration, headers: auth(queries[0]!), paths: ['/api/v1/accounts'] }),
    ]);
    const httpFloor = await load({ url: floorServer.url, connections, duration, paths: ['/'] });
    await floorServer.stop();

    console.log('');
    console.log('One request at a time (p50 of 50; engine floor = the same query in-process on SQLite):');
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
    console.log('');
    console.log(
      `Mix (admin queries cycled): p50 ${ms(mixed.p50)} (target <= ${TARGETS.p50}), p99 ${ms(mixed.p99)} (target <= ${TARGETS.p99}), ${mixed.rps.toFixed(0)} req/s, ${mixed.non2xx} non-2xx.`,
    );
    console.log(
      `HTTP floor under the same load: p50 ${ms(httpFloor.p50)}, p99 ${ms(httpFloor.p99)}, ${httpFloor.rps.toFixed(0)} req/s.`,
    );
    console.log(
      `API / engine floor over the whole mix, one at a time: ${ratio(sum(seqAll), sum(floorAll))} (target <= ${TARGETS.floorRatio}x); the fixed HTTP + pool cost per request is ${ms(
        percentile(
          seqAll.map((v, i) => v - floorAll[i]!),
          50,
        ),
      )}.`,
    );
    console.log(
      `Isolation: GET /api/v1/accounts p99 ${ms(isolation.p99)} while the mix runs (target <= ${TARGETS.isolationP99}); p50 ${ms(isolation.p50)}.`,
    );
    console.log('');
    console.log('Beyond the mix, in-process (first call computes the count; then p50 of 10):');
    console.log('| query | totalItems | first call | repeated |');
    console.log('|---|---:|---:|---:|');
    for (const row of beyondRows) console.log(row);
  } finally {
    await server.stop();
  }
}

await main();
