// Point reads (docs/performance.md): GET /api/v1/emails/{id} over distinct ids through the real server,
// against a bare node:http server answering one such body, in the same run. The search bench
// measures the same thing at 1M messages beside everything else; this one takes a minute, so a
// change to the request path can be measured on its own.
//
//   npm run bench:point-reads [-- --messages 100000 --duration 10 --connections 8 --rounds 2]
//
// Rounds alternate floors and server, so a machine that speeds up or slows down during the run
// moves all of them. Besides the bare floor, two floors show what the design's shape costs by
// itself (bench/lib/floor-server.ts): Koa alone, and Koa with one round trip to a worker thread
// that does nothing. The second is the ceiling for any request that reads the archive off the
// gateway thread, however cheap the read. With PROFILE_DIR set, the server runs with --cpu-prof
// into that directory (each thread writes its own .cpuprofile).
import { openArchive } from '../engine/sqlite/open.js';
import { arg } from './lib/args.js';
import { createCaller } from './lib/callers.js';
import { load, loadStream, ratio, wholeMs, type LoadResult } from './lib/load.js';
import { FLOOR_SERVER, startArchiveServer, startServer } from './lib/server.js';
import { ensureCorpus } from './corpus.js';

const messages = arg('--messages', 100_000);
const duration = arg('--duration', 10);
const connections = arg('--connections', 8);
const rounds = arg('--rounds', 2);

const dbPath = ensureCorpus({ messages });
const db = openArchive(dbPath);
const admin = createCaller(db, 'admin');
db.close();

const profile = process.env.PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PROFILE_DIR}`] : [];
const server = await startArchiveServer(dbPath, { searchIndex: false, nodeOptions: profile });
// 7919 is prime and does not divide the archive's size: any `messages` ids in a row are distinct,
// far more than a run takes (loadStream reports repeats).
let next = 0;
const ids = (n: number) => Array.from({ length: n }, () => ((next++ * 7919) % messages) + 1);
const body = await (await fetch(`${server.url}/api/v1/emails/1`, { headers: admin.headers })).text();
// bench/lib/floor-server.ts's modes; the first is the floor of the target's ratio, the last the ceiling.
const floors = await Promise.all(
  [
    { mode: 'bare', name: 'floor: node:http' },
    { mode: 'koa', name: 'floor: Koa' },
    { mode: 'crossing', name: 'floor: Koa + one worker round trip' },
  ].map(async (f) => ({ ...f, server: await startServer({ FLOOR_BODY: body, FLOOR_MODE: f.mode }, FLOOR_SERVER) })),
);

const line = (name: string, r: LoadResult) =>
  `| ${name} | ${r.requests.toLocaleString('en')} | ${Math.round(r.rps).toLocaleString('en')} | ${wholeMs(r.p50)} | ${wholeMs(r.p99)} | ${r.non2xx + r.errors} |`;
console.log(
  `# Point reads: ${messages.toLocaleString('en')} messages, ${connections} connections, ${duration} s per run, ${rounds} rounds`,
);
console.log('| run | requests | req/s | p50 | p99 | non-2xx + errors |\n|---|---:|---:|---:|---:|---:|');
const ratios: number[] = [];
const ceilings: number[] = [];
try {
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
    floors.forEach((f, i) => console.log(line(`${f.name}, round ${round}`, measured[i]!)));
    console.log(line(`GET /api/v1/emails/{id}, round ${round}`, api));
    if (api.repeats > 0) console.log(`  (${api.repeats} ids came round a second time)`);
    ratios.push(api.rps / measured[0]!.rps);
    ceilings.push(measured.at(-1)!.rps / measured[0]!.rps);
  }
} finally {
  for (const { server: floor } of floors) await floor.stop();
  await server.stop();
}
const best = Math.max(...ratios);
console.log(
  `Koa + one worker round trip / floor req/s: ${ceilings.map((r) => ratio(r, 1)).join(', ')} (the most this design can reach)`,
);
console.log(
  `GET /api/v1/emails/{id} / floor req/s: ${ratios.map((r) => ratio(r, 1)).join(', ')}; best ${ratio(best, 1)} (target >= 0.25x: ${best >= 0.25 ? 'met' : 'missed'})`,
);
