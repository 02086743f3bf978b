// Point reads (docs/performance.md): GET /api/v1/emails/{id} over distinct ids through the real server,
// against a bare node:http server answering one such body, in the same run. The search bench
// measures the same thing at 1M messages beside everything else; this one takes a minute, so a
// change to the request path can be measured on its own.
//
//   npm run bench:point-reads [-- --messages 100000 --duration 10 --connections 8 --rounds 2 --store both --serial 0]
//
// `--store postgres` (or `both`, the default) runs the same distinct-id load against a server on
// the same corpus in a Mail Archiver PostgreSQL database (bench/pg-corpus.ts, cached), in the same
// rounds, and prints PostgreSQL's p99 over SQLite's (docs/performance.md, "Reading one message on
// PostgreSQL": target <= 2x); `postgres` leaves the floors out (SQLite stays, as the baseline),
// `--store sqlite` is the run as it was. `--serial S` adds, in the first round, S seconds of one
// connection on each store (latency without queueing).
//
// Rounds alternate floors and server, so a machine that speeds up or slows down during the run
// moves all of them. Besides the bare floor, two floors show what the design's shape costs by
// itself (bench/lib/floor-server.ts): Koa alone, and Koa with one round trip to a worker thread
// that does nothing. The second is the ceiling for any request that reads the archive off the
// gateway thread, however cheap the read. With PROFILE_DIR set, the server runs with --cpu-prof
// into that directory (each thread writes its own .cpuprofile).
import { openAdmin } from '../engine/archive.js';
import { openArchive } from '../engine/sqlite/open.js';
import { arg } from './lib/args.js';
import { createCaller } from './lib/callers.js';
import { load, loadStream, ratio, wholeMs, type LoadResult } from './lib/load.js';
import { FLOOR_SERVER, startArchiveServer, startServer, type RunningServer } from './lib/server.js';
import { ensureCorpus } from './corpus.js';
import { ensurePgCorpus } from './pg-corpus.js';

const messages = arg('--messages', 100_000);
const duration = arg('--duration', 10);
const connections = arg('--connections', 8);
const rounds = arg('--rounds', 2);
const serial = arg('--serial', 0, { zero: true });
const storeArg = process.argv.includes('--store') ? process.argv[process.argv.indexOf('--store') + 1] : 'both';
if (storeArg !== 'sqlite' && storeArg !== 'postgres' && storeArg !== 'both')
  throw new Error('--store must be sqlite, postgres or both');
/** PostgreSQL's p99 over SQLite's, both with `connections` connections (docs/performance.md). */
const PG_P99_TARGET = 2;

const dbPath = ensureCorpus({ messages });
const db = openArchive(dbPath);
const admin = createCaller(db, 'admin');
db.close();

const profile = process.env.PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PROFILE_DIR}`] : [];
const server = await startArchiveServer(dbPath, { searchIndex: false, nodeOptions: profile });
// The same corpus in Mail Archiver's schema, written through the PostgreSQL store (ids 1..messages
// alike), and a key of the same user.
let pgSide: { server: RunningServer; headers: Record<string, string> } | undefined;
if (storeArg !== 'sqlite') {
  const pgUrl = await ensurePgCorpus({ messages });
  const pgAdmin = await openAdmin(pgUrl);
  let key: string;
  try {
    key = (await pgAdmin.createKey({ username: 'admin', name: 'bench:point-reads' })).key;
  } finally {
    await pgAdmin.close();
  }
  pgSide = {
    server: await startArchiveServer(pgUrl, { searchIndex: false, nodeOptions: profile }),
    headers: { Authorization: `Bearer ${key}` },
  };
}
// 7919 is prime and does not divide the archive's size: any `messages` ids in a row are distinct,
// far more than a run takes (loadStream reports repeats).
let next = 0;
const ids = (n: number) => Array.from({ length: n }, () => ((next++ * 7919) % messages) + 1);
const body = await (await fetch(`${server.url}/api/v1/emails/1`, { headers: admin.headers })).text();
// bench/lib/floor-server.ts's modes; the first is the floor of the target's ratio, the last the ceiling.
const floors = await Promise.all(
  (storeArg === 'postgres'
    ? []
    : [
        { mode: 'bare', name: 'floor: node:http' },
        { mode: 'koa', name: 'floor: Koa' },
        { mode: 'crossing', name: 'floor: Koa + one worker round trip' },
      ]
  ).map(async (f) => ({ ...f, server: await startServer({ FLOOR_BODY: body, FLOOR_MODE: f.mode }, FLOOR_SERVER) })),
);

const line = (name: string, r: LoadResult) =>
  `| ${name} | ${r.requests.toLocaleString('en')} | ${Math.round(r.rps).toLocaleString('en')} | ${wholeMs(r.p50)} | ${wholeMs(r.p99)} | ${r.non2xx + r.errors} |`;
console.log(
  `# Point reads: ${messages.toLocaleString('en')} messages, ${connections} connections, ${duration} s per run, ${rounds} rounds`,
);
console.log('| run | requests | req/s | p50 | p99 | non-2xx + errors |\n|---|---:|---:|---:|---:|---:|');
const ratios: number[] = [];
const ceilings: number[] = [];
const pgRatios: number[] = [];
const detailLoad = (url: string, headers: Record<string, string>, conns: number, seconds: number) =>
  loadStream({
    url,
    connections: conns,
    duration: seconds,
    requests: ids(300_000).map((id) => ({ path: `/api/v1/emails/${id}`, headers })),
  });
try {
  if (pgSide) {
    const pgBody = await (await fetch(`${pgSide.server.url}/api/v1/emails/1`, { headers: pgSide.headers })).text();
    if (JSON.parse(pgBody).id !== 1) throw new Error(`PostgreSQL: /api/v1/emails/1 answered ${pgBody.slice(0, 200)}`);
    await loadStream({
      url: pgSide.server.url,
      connections,
      duration: 2,
      requests: ids(50_000).map((id) => ({ path: `/api/v1/emails/${id}`, headers: pgSide!.headers })),
    });
  }
  // Warm all (JIT, SQLite's page cache for a part of the archive), unmeasured.
  for (const { server: floor } of floors) await load({ url: floor.url, connections, duration: 2, paths: ['/'] });
  await loadStream({
    url: server.url,
    connections,
    duration: 2,
    requests: ids(50_000).map((id) => ({ path: `/api/v1/emails/${id}`, headers: admin.headers })),
  });
  for (let round = 1; round <= rounds; round++) {
    const measured: LoadResult[] = [];
    for (const { server: floor } of floors)
      measured.push(await load({ url: floor.url, connections, duration, paths: ['/'] }));
    const api = await loadStream({
      url: server.url,
      connections,
      duration,
      requests: ids(300_000).map((id) => ({ path: `/api/v1/emails/${id}`, headers: admin.headers })),
    });
    const pg = pgSide ? await detailLoad(pgSide.server.url, pgSide.headers, connections, duration) : undefined;
    const single =
      serial > 0 && round === 1
        ? {
            sqlite: await detailLoad(server.url, admin.headers, 1, serial),
            pg: pgSide ? await detailLoad(pgSide.server.url, pgSide.headers, 1, serial) : undefined,
          }
        : undefined;
    floors.forEach((f, i) => console.log(line(`${f.name}, round ${round}`, measured[i]!)));
    console.log(line(`GET /api/v1/emails/{id}, SQLite, round ${round}`, api));
    if (api.repeats > 0) console.log(`  (${api.repeats} ids came round a second time)`);
    if (pg) console.log(line(`GET /api/v1/emails/{id}, PostgreSQL, round ${round}`, pg));
    if (single) console.log(line(`GET /api/v1/emails/{id}, SQLite, 1 connection, round ${round}`, single.sqlite));
    if (single?.pg) console.log(line(`GET /api/v1/emails/{id}, PostgreSQL, 1 connection, round ${round}`, single.pg));
    if (floors.length > 0) {
      ratios.push(api.rps / measured[0]!.rps);
      ceilings.push(measured.at(-1)!.rps / measured[0]!.rps);
    }
    if (pg) pgRatios.push(pg.p99 / api.p99);
  }
} finally {
  for (const { server: floor } of floors) await floor.stop();
  await server.stop();
  await pgSide?.server.stop();
}
const best = Math.max(...ratios);
if (floors.length > 0) {
  console.log(
    `Koa + one worker round trip / floor req/s: ${ceilings.map((r) => ratio(r, 1)).join(', ')} (the most this design can reach)`,
  );
  console.log(
    `GET /api/v1/emails/{id} / floor req/s: ${ratios.map((r) => ratio(r, 1)).join(', ')}; best ${ratio(best, 1)} (target >= 0.25x: ${best >= 0.25 ? 'met' : 'missed'})`,
  );
}
if (pgRatios.length > 0) {
  // The upper median: of two rounds, the worse.
  const median = [...pgRatios].sort((a, b) => a - b)[Math.floor(pgRatios.length / 2)]!;
  console.log(
    `PostgreSQL / SQLite p99, ${connections} connections: ${pgRatios.map((r) => ratio(r, 1)).join(', ')}; median ${ratio(median, 1)} (target <= ${PG_P99_TARGET}x: ${median <= PG_P99_TARGET ? 'met' : 'missed'})`,
  );
}
