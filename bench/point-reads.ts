// Point reads (issue 12): GET /api/v1/emails/{id} over distinct ids through the real server,
// against a bare node:http server answering one such body, in the same run. The search bench
// measures the same thing at 1M messages beside everything else; this one takes a minute, so a
// change to the request path can be measured on its own.
//
//   npm run bench:point-reads [-- --messages 100000 --duration 10 --connections 8 --rounds 2]
//
// Rounds alternate floor and server, so a machine that speeds up or slows down during the run
// moves both. With PROFILE_DIR set, the server runs with --cpu-prof into that directory (each
// thread writes its own .cpuprofile).
import { openArchive } from '../engine/db/open.js';
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
const floorServer = await startServer({ FLOOR_BODY: body }, FLOOR_SERVER);

const line = (name: string, r: LoadResult) =>
  `| ${name} | ${r.requests.toLocaleString('en')} | ${Math.round(r.rps).toLocaleString('en')} | ${wholeMs(r.p50)} | ${wholeMs(r.p99)} | ${r.non2xx + r.errors} |`;
console.log(
  `# Point reads: ${messages.toLocaleString('en')} messages, ${connections} connections, ${duration} s per run, ${rounds} rounds`,
);
console.log('| run | requests | req/s | p50 | p99 | non-2xx + errors |\n|---|---:|---:|---:|---:|---:|');
const ratios: number[] = [];
try {
  // Warm both (JIT, SQLite's page cache for a part of the archive), unmeasured.
  await load({ url: floorServer.url, connections, duration: 2, paths: ['/'] });
  await loadStream({
    url: server.url,
    connections,
    duration: 2,
    requests: ids(50_000).map((id) => ({ path: `/api/v1/emails/${id}`, headers: admin.headers })),
  });
  for (let round = 1; round <= rounds; round++) {
    const floor = await load({ url: floorServer.url, connections, duration, paths: ['/'] });
    const api = await loadStream({
      url: server.url,
      connections,
      duration,
      requests: ids(300_000).map((id) => ({ path: `/api/v1/emails/${id}`, headers: admin.headers })),
    });
    console.log(line(`floor, round ${round}`, floor));
    console.log(line(`GET /api/v1/emails/{id}, round ${round}`, api));
    if (api.repeats > 0) console.log(`  (${api.repeats} ids came round a second time)`);
    ratios.push(api.rps / floor.rps);
  }
} finally {
  await floorServer.stop();
  await server.stop();
}
const best = Math.max(...ratios);
console.log(
  `GET /api/v1/emails/{id} / floor req/s: ${ratios.map((r) => ratio(r, 1)).join(', ')}; best ${ratio(best, 1)} (target >= 0.25x: ${best >= 0.25 ? 'met' : 'missed'})`,
);
