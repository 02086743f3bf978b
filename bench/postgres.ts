// The PostgreSQL store beside the SQLite store on the same corpus (docs/performance.md,
// "PostgreSQL"), and beside Mail Archiver's own search SQL on the same PostgreSQL database: the
// benchmark corpus in a SQLite file and in a Mail Archiver database, each written through its
// store's own write path; two real servers, the same requests, all measured in this one run.
//
// 1. Exactness: 200 queries of the varied stream (40 with a restricted key) go to both servers;
//    totalItems must equal plain SQL's count (exactCount on the SQLite file, no cache, no index)
//    on both, and the first page's ids must be equal wherever the order is defined alike.
// 2. First call of a common word sorted by date, on each store.
// 3. The varied stream (bench/lib/query-stream.ts, every 5th request with a restricted key) under
//    load on each store, after a warm-up of other queries (--warmup seconds): p50, p99, req/s and their ratios, against the targets of docs/performance.md, "PostgreSQL with
//    the in-memory index" (ADR 22).
// 4. Mail Archiver's own search (Services/Core/EmailCoreService.cs, SearchEmailsOptimizedAsync:
//    the exact COUNT(*) and the MATERIALIZED CTE for date sorts, bench/mail-archiver-search.ts)
//    on the PostgreSQL database, per query kind, against our PostgreSQL server for the same query.
//
//   npm run bench:postgres [-- --messages 100000 --duration 10 --warmup 5 --connections 8 --stream 20000 --runs 3]
//   npm run bench:postgres -- --sql-path   the PostgreSQL server without the in-memory index: every
//                                          search by SQL and the side index, against the SQL path's targets
import pg from 'pg';
import { openAdmin } from '../engine/archive.js';
import { openArchive } from '../engine/sqlite/open.js';
import { exactCount } from '../engine/sqlite/search.js';
import { parseSearchInput } from '../shared/search-input.js';
import type { SearchIndexInfo } from '../shared/jobs.js';
import { ensureCorpus, sampleAddresses } from './corpus.js';
import { postgresCpuMs, processCpuMs } from './lib/cpu.js';
import { loadStream, ms, percentile, ratio, type StreamLoadResult } from './lib/load.js';
import { corpusWords, queryStream } from './lib/query-stream.js';
import { searchIndexOf, startArchiveServer, type RunningServer } from './lib/server.js';
import { mailArchiverSearch } from './mail-archiver-search.js';
import { ensurePgCorpus, pgIndexFile } from './pg-corpus.js';

/** The targets (docs/performance.md, "PostgreSQL with the in-memory index"): PostgreSQL against SQLite on the stream, and against Mail Archiver's own SQL. */
const TARGETS = { p50: 1.5, p99: 2, rps: 0.6, firstCallMs: 15, mailArchiver: 20 };
/** The SQL path's targets (docs/performance.md, "PostgreSQL before the index is ready"). */
const SQL_TARGETS = { kindMs: 50, rareMs: 20, rps: 100 };
/** --sql-path: the PostgreSQL server searches without the in-memory index (Engine:SearchMemoryMB=0). */
const SQL_PATH = process.argv.includes('--sql-path');
const EXACT_SAMPLE = 200;
const RESTRICTED_EVERY = 5;
const LIMITS = { defaultPageSize: 20, maxPageSize: 100 };

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const v = i === -1 ? fallback : Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return v;
}

interface Caller {
  username: string;
  /** Account ids (as both stores number them: 1..20 in plan order). */
  accounts: number[];
}

interface Side {
  name: 'SQLite' | 'PostgreSQL';
  server: RunningServer;
  keys: Map<string, string>;
}

const path = (params: Record<string, string>) => `/api/v1/emails?${new URLSearchParams(params)}`;

async function get(side: Side, username: string, params: Record<string, string>) {
  const started = performance.now();
  const res = await fetch(side.server.url + path(params), {
    headers: { Authorization: `Bearer ${side.keys.get(username)}` },
  });
  const body = (await res.json()) as { totalItems: number; items: Array<{ id: number }> };
  const took = performance.now() - started;
  if (res.status !== 200) throw new Error(`${side.name} ${path(params)}: status ${res.status} ${JSON.stringify(body)}`);
  return { ...body, ms: took };
}

/** A restricted caller filters on its own accounts: the drawn account maps onto one of them. */
function withinReach(params: Record<string, string>, caller: Caller | undefined): Record<string, string> {
  if (!caller || params.accountId === undefined) return params;
  return { ...params, accountId: String(caller.accounts[Number(params.accountId) % caller.accounts.length]) };
}

async function main(): Promise<void> {
  const messages = arg('--messages', 100_000);
  const duration = arg('--duration', 10);
  const connections = arg('--connections', 8);
  const streamSize = arg('--stream', 20_000);
  const runs = arg('--runs', 3);
  const warmup = arg('--warmup', 5);

  const sqlitePath = ensureCorpus({ messages });
  const pgUrl = await ensurePgCorpus({ messages });
  const db = openArchive(sqlitePath, { readonly: true });
  const addresses = sampleAddresses(db, 200);
  const restricted: Caller[] = ['user0', 'user1'].map((username) => ({
    username,
    accounts: db
      .prepare(
        'SELECT ua.account_id FROM user_accounts ua JOIN users u ON u.id = ua.user_id WHERE u.username = ? ORDER BY 1',
      )
      .pluck()
      .all(username) as number[],
  }));
  const userIds = new Map(
    (db.prepare('SELECT username, id FROM users').all() as Array<{ username: string; id: number }>).map((u) => [
      u.username,
      u.id,
    ]),
  );
  const keysFor = async (location: string) => {
    const admin = await openAdmin(location);
    try {
      const keys = new Map<string, string>();
      for (const username of ['admin', ...restricted.map((r) => r.username)])
        keys.set(username, (await admin.createKey({ username, name: 'bench:postgres' })).key);
      return keys;
    } finally {
      await admin.close();
    }
  };
  console.log(
    `Corpus: ${messages.toLocaleString('en')} messages, SQLite ${sqlitePath}, PostgreSQL ${pgUrl.replace(/\/\/[^@]*@/, '//')}.`,
  );
  console.log(`${connections} connections, ${duration} s per run, Engine:Threads=2 on both servers.`);

  const sides: Side[] = [];
  try {
    for (const [name, location] of [
      ['SQLite', sqlitePath],
      ['PostgreSQL', pgUrl],
    ] as const) {
      const started = performance.now();
      if (name === 'PostgreSQL' && SQL_PATH) {
        // Every search by SQL and the side index: what a search meets during a first build or a
        // rebuild, or for words left out when memory binds.
        const server = await startArchiveServer(location, { searchIndex: false });
        console.log(`${name}: server ready without the in-memory index (Engine:SearchMemoryMB=0).`);
        sides.push({ name, server, keys: await keysFor(location) });
        continue;
      }
      // The benchmark keeps PostgreSQL's index beside its cached corpus (ADR 23).
      const server = await startArchiveServer(location, {
        ...(name === 'PostgreSQL' ? { env: { Engine__SearchIndexFile: pgIndexFile(location) } } : {}),
      });
      // A full build at 1,000,000 messages takes minutes: waited for up to an hour.
      const index = await searchIndexOf(server, (i) => i?.status === 'current', 3_600_000);
      if (index?.status !== 'current')
        throw new Error(`${name}: the search index is not current: ${JSON.stringify(index)}`);
      console.log(
        `${name}: server ready with its search index ${describeIndex(index)} ${((performance.now() - started) / 1000).toFixed(1)} s after start.`,
      );
      sides.push({ name, server, keys: await keysFor(location) });
    }

    // The stream: every 5th request as user0 or user1 in turn, the others as admin.
    const seen = new Set<string>();
    const draw = (size: number, seed?: number) => {
      const out: Array<{ username: string; params: Record<string, string> }> = [];
      queryStream(2 * size, { addresses, ...(seed !== undefined ? { seed } : {}) }).forEach((s, i) => {
        const caller =
          i % RESTRICTED_EVERY === RESTRICTED_EVERY - 1 ? restricted[Math.floor(i / RESTRICTED_EVERY) % 2] : undefined;
        const params = withinReach(s.params, caller);
        const username = caller?.username ?? 'admin';
        const id = `${username} ${path(params)}`;
        if (seen.has(id) || out.length >= size) return;
        seen.add(id);
        out.push({ username, params });
      });
      return out;
    };
    const stream = draw(EXACT_SAMPLE + streamSize);
    // Before each store's measured run, a warm-up of other queries of the same kinds (another
    // seed, none of the measured ones): both servers run their code hot, and no answer is asked twice.
    const warmStream = draw(Math.ceil(warmup * 2_000), 8);

    // 1. Exactness against plain SQL.
    let wrong = 0;
    let pagesDiffer = 0;
    const sample = stream.slice(0, EXACT_SAMPLE);
    for (const { username, params } of sample) {
      const query = parseSearchInput(params, LIMITS);
      const exact = exactCount(db, { isAdmin: username === 'admin', userId: userIds.get(username)! }, query);
      const [a, b] = [await get(sides[0]!, username, params), await get(sides[1]!, username, params)];
      if (a.totalItems !== exact || b.totalItems !== exact) {
        wrong++;
        console.log(`  ${username} ${path(params)}: SQL ${exact}, SQLite ${a.totalItems}, PostgreSQL ${b.totalItems}`);
      } else if (params.sortBy !== 'relevance' && a.items.map((i) => i.id).join() !== b.items.map((i) => i.id).join()) {
        pagesDiffer++;
        console.log(`  first page differs for ${username} ${path(params)}`);
      }
    }
    const restrictedInSample = sample.filter((s) => s.username !== 'admin').length;
    console.log(
      `Exact totalItems over ${sample.length} queries of the stream (${restrictedInSample} with a restricted key): ${wrong} differ from plain SQL on either store; first-page ids differ between the stores for ${pagesDiffer} (relevance order not compared).`,
    );

    // 2. Common words sorted by date, first call (no count of them asked before).
    const common = corpusWords().slice(0, 5);
    const firstCalls: Array<{ word: string; total: number; ms: number[] }> = [];
    for (const word of common) {
      const row = { word, total: 0, ms: [] as number[] };
      for (const side of sides) {
        const r = await get(side, 'admin', { q: word });
        row.total = r.totalItems;
        row.ms.push(r.ms);
      }
      firstCalls.push(row);
    }

    // 3. The stream under load, each store from its start (past the sample).
    const results: { stream: StreamLoadResult[]; cpu: Array<{ server?: number; database?: number }> } = {
      stream: [],
      cpu: [],
    };
    const database = new URL(pgUrl).pathname.slice(1);
    for (const side of sides) {
      const requestsOf = (list: typeof stream) =>
        list.map((s) => ({ path: path(s.params), headers: { Authorization: `Bearer ${side.keys.get(s.username)}` } }));
      await loadStream({ url: side.server.url, connections, duration: warmup, requests: requestsOf(warmStream) });
      const requests = requestsOf(stream.slice(EXACT_SAMPLE));
      const pid = side.server.process.pid;
      const before = { server: processCpuMs(pid), database: postgresCpuMs(database) };
      const run = await loadStream({ url: side.server.url, connections, duration, requests });
      const after = { server: processCpuMs(pid), database: postgresCpuMs(database) };
      results.stream.push(run);
      // CPU per search, which a busy machine changes far less than latency: the gateway's process
      // (event loop, query threads, the index's builder) and the PostgreSQL server's processes.
      const per = (a?: number, b?: number) => (a !== undefined && b !== undefined ? (b - a) / run.requests : undefined);
      results.cpu.push({ server: per(before.server, after.server), database: per(before.database, after.database) });
    }

    // 4. Mail Archiver's own search SQL on the same PostgreSQL database, per query kind.
    const words = corpusWords();
    const kinds: Array<{ name: string; params: Record<string, string>; share?: boolean }> = [
      { name: `common word "${words[10]}"`, params: { q: words[10]! }, share: true },
      { name: `common word "${words[40]}"`, params: { q: words[40]! }, share: true },
      { name: `common word "${words[150]}"`, params: { q: words[150]! }, share: true },
      { name: `common word "${words[40]}", page 50`, params: { q: words[40]!, page: '50' }, share: true },
      { name: `rare word "${words[8000]}"`, params: { q: words[8000]! } },
      { name: `rare word "${words[30000]}"`, params: { q: words[30000]! } },
      { name: 'two words', params: { q: `${words[12]} ${words[60]}` } },
      { name: 'phrase', params: { q: `"${words[3]} ${words[25]}"` } },
      { name: 'subject: a word', params: { q: `subject:${words[30]}` } },
      { name: 'from: an address', params: { q: `from:${addresses[0]}` } },
      { name: 'folder, no q', params: { folder: 'INBOX' } },
      { name: 'restricted key, common word', params: { q: words[20]! } },
    ];
    const client = new pg.Client({ connectionString: pgUrl }); // Mail Archiver's connections: server defaults
    await client.connect();
    const comparison: Array<{
      name: string;
      share: number | undefined;
      theirs: number;
      ours: number;
      oursFirst: number;
    }> = [];
    try {
      for (const kind of kinds) {
        const username = kind.name.startsWith('restricted') ? 'user0' : 'admin';
        const allowed = username === 'admin' ? undefined : restricted[0]!.accounts;
        const query = parseSearchInput(kind.params, LIMITS);
        const theirs: number[] = [];
        for (let i = 0; i < runs; i++) {
          const statements = mailArchiverSearch({
            term: query.q,
            folder: query.folder,
            allowedAccountIds: allowed,
            skip: (query.page - 1) * query.pageSize,
            take: query.pageSize,
          });
          const started = performance.now();
          for (const s of statements) await client.query(s);
          theirs.push(performance.now() - started);
        }
        const ours: number[] = [];
        let total = 0;
        for (let i = 0; i < runs; i++) {
          const r = await get(sides[1]!, username, kind.params);
          ours.push(r.ms);
          total = r.totalItems;
        }
        comparison.push({
          name: kind.name,
          share: kind.share ? total / messages : undefined,
          theirs: percentile(theirs, 50),
          ours: percentile(ours, 50),
          oursFirst: ours[0]!,
        });
      }
    } finally {
      await client.end();
    }

    // Report.
    console.log('');
    console.log('Common words sorted by date, first call (HTTP, one at a time):');
    console.log('| word | matches | SQLite | PostgreSQL |');
    console.log('|---|---:|---:|---:|');
    for (const r of firstCalls)
      console.log(`| ${r.word} | ${r.total.toLocaleString('en')} | ${ms(r.ms[0]!)} | ${ms(r.ms[1]!)} |`);
    console.log('');
    console.log(
      `The varied stream under load (${connections} connections, ${duration} s, after ${warmup} s of other queries on the same server; autocannon reports whole milliseconds):`,
    );
    console.log('| store | p50 | p99 | req/s | non-2xx | taken | sent twice |');
    console.log('|---|---:|---:|---:|---:|---:|---:|');
    results.stream.forEach((r, i) =>
      console.log(
        `| ${sides[i]!.name} | ${ms(r.p50)} | ${ms(r.p99)} | ${r.rps.toFixed(0)} | ${r.non2xx + r.errors} | ${r.taken} | ${r.repeats} |`,
      ),
    );
    const [sa, pa] = results.stream as [StreamLoadResult, StreamLoadResult];
    console.log(
      `| PostgreSQL / SQLite | ${ratio(pa.p50, sa.p50)} | ${ratio(pa.p99, sa.p99)} | ${(pa.rps / sa.rps).toFixed(2)}x | | | |`,
    );
    const cpu = (n: number | undefined) => (n === undefined ? 'n/a' : `${n.toFixed(2)} ms`);
    const total = (c: { server?: number; database?: number }) =>
      c.server === undefined ? undefined : c.server + (c.database ?? 0);
    console.log('');
    console.log(
      "CPU per search in the stream (the gateway's process, the PostgreSQL server's processes for this database):",
    );
    console.log('| store | gateway | PostgreSQL server | total |');
    console.log('|---|---:|---:|---:|');
    results.cpu.forEach((c, i) =>
      console.log(
        `| ${sides[i]!.name} | ${cpu(c.server)} | ${i === 0 ? '' : cpu(c.database)} | ${cpu(total(i === 0 ? { server: c.server } : c))} |`,
      ),
    );
    const [sc, pc] = [total({ server: results.cpu[0]!.server }), total(results.cpu[1]!)];
    if (sc !== undefined && pc !== undefined) console.log(`| PostgreSQL / SQLite | | | ${ratio(pc, sc)} |`);
    console.log('');
    console.log(`Mail Archiver's search SQL against ours, same PostgreSQL database (p50 of ${runs}; ours over HTTP):`);
    console.log(
      '| query | share of archive | Mail Archiver (count + page) | ours, first call | ours p50 | Mail Archiver / ours |',
    );
    console.log('|---|---:|---:|---:|---:|---:|');
    for (const c of comparison)
      console.log(
        `| ${c.name} | ${c.share === undefined ? '' : `${(c.share * 100).toFixed(1)}%`} | ${ms(c.theirs)} | ${ms(c.oursFirst)} | ${ms(c.ours)} | ${(c.theirs / c.ours).toFixed(0)}x |`,
      );

    const worstFirst = Math.max(...firstCalls.flatMap((r) => r.ms));
    const commonKinds = comparison.filter((c) => c.share !== undefined && c.share > 0.01);
    const worstFactor = Math.min(...commonKinds.map((c) => c.theirs / c.ours));
    const verdict = (ok: boolean) => (ok ? 'met' : 'missed');
    console.log('');
    console.log('| target | measured | |');
    console.log('|---|---:|---|');
    if (SQL_PATH) {
      const slowest = Math.max(...comparison.map((c) => c.ours));
      const rare = comparison.filter((c) => c.name.startsWith('rare'));
      const rareMs = Math.max(...rare.map((c) => c.ours));
      const behind = comparison.filter((c) => c.ours > c.theirs);
      console.log(
        `| SQL path: every kind p50 ≤ ${SQL_TARGETS.kindMs} ms one at a time | ${ms(slowest)} (slowest) | ${verdict(slowest <= SQL_TARGETS.kindMs)} |`,
      );
      console.log(
        `| SQL path: rare words ≤ ${SQL_TARGETS.rareMs} ms | ${ms(rareMs)} | ${verdict(rareMs <= SQL_TARGETS.rareMs)} |`,
      );
      console.log(
        `| SQL path: stream ≥ ${SQL_TARGETS.rps} req/s, ${connections} connections | ${pa.rps.toFixed(0)} | ${verdict(pa.rps >= SQL_TARGETS.rps)} |`,
      );
      console.log(
        `| SQL path: never slower than Mail Archiver's SQL | ${behind.length === 0 ? 'faster on every kind' : `slower on ${behind.map((c) => c.name).join(', ')}`} | ${verdict(behind.length === 0)} |`,
      );
      console.log(
        `| exact totalItems on ${sample.length} sampled queries (${restrictedInSample} restricted) | ${wrong} wrong | ${verdict(wrong === 0)} |`,
      );
      return;
    }
    console.log(
      `| stream p50 ≤ ${TARGETS.p50}x SQLite's | ${ratio(pa.p50, sa.p50)} | ${verdict(pa.p50 <= TARGETS.p50 * Math.max(1, sa.p50))} |`,
    );
    console.log(
      `| stream p99 ≤ ${TARGETS.p99}x SQLite's | ${ratio(pa.p99, sa.p99)} | ${verdict(pa.p99 <= TARGETS.p99 * Math.max(1, sa.p99))} |`,
    );
    console.log(
      `| stream req/s ≥ ${TARGETS.rps}x SQLite's | ${(pa.rps / sa.rps).toFixed(2)}x | ${verdict(pa.rps >= TARGETS.rps * sa.rps)} |`,
    );
    console.log(
      `| common word by date, first call ≤ ${TARGETS.firstCallMs} ms, both stores | ${ms(worstFirst)} (worst) | ${verdict(worstFirst <= TARGETS.firstCallMs)} |`,
    );
    console.log(
      `| ≥ ${TARGETS.mailArchiver}x faster than Mail Archiver's SQL at p50, words in > 1% | ${worstFactor.toFixed(0)}x (least) | ${verdict(worstFactor >= TARGETS.mailArchiver)} |`,
    );
    console.log(
      `| exact totalItems on ${sample.length} sampled queries (${restrictedInSample} restricted) | ${wrong} wrong | ${verdict(wrong === 0)} |`,
    );
  } finally {
    db.close();
    await Promise.all(sides.map((s) => s.server.stop()));
  }
}

function describeIndex(index: SearchIndexInfo | undefined): string {
  if (!index?.bytes) return '(none)';
  return `(${(index.bytes / 1024 / 1024).toFixed(0)} MiB, ${index.terms} terms, built in ${((index.buildMs ?? 0) / 1000).toFixed(1)} s)`;
}

await main();
