// Search benchmark (docs/performance.md) on the 1,000,000-message corpus, through the full HTTP
// stack (the server as its own process, Engine:Threads=2, rate limit out of the way), two
// workloads, each on a fresh server:
//
// 1. The varied stream (the headline, bench/search/varied.ts): different searches, none sent
//    twice, some with restricted users' keys; exact counts, the engine's floor per kind of
//    query, single-word first calls, sorts over a common word, point reads against a bare
//    HTTP server, /accounts beside the stream, the server's memory.
// 2. The fixed mix (bench/search/fixed-mix.ts): ten queries repeated, against the engine's
//    floor and the HTTP floor.
//
// It ends with one table: each target, what was measured, met or missed.
//
//   npm run bench:search [-- --messages 1000000 --duration 10 --connections 8 --stream 30000 --exact 200 --varied-only]
import { openArchive } from '../engine/sqlite/open.js';
import { ensureCorpus } from './corpus.js';
import { arg } from './lib/args.js';
import { createCaller } from './lib/callers.js';
import { Scorecard } from './lib/scorecard.js';
import { runFixedMix } from './search/fixed-mix.js';
import { runVaried } from './search/varied.js';

/** Restricted users of the corpus (bench/corpus.ts: user0..user9 see two accounts each). */
const RESTRICTED_USERS = ['user0', 'user1'];

async function main(): Promise<void> {
  const messages = arg('--messages', 1_000_000);
  const duration = arg('--duration', 10);
  const connections = arg('--connections', 8);
  const streamSize = arg('--stream', 30_000);
  const exactSample = arg('--exact', 200);
  const dbPath = ensureCorpus({ messages });

  // Keys for this run, written through the engine as an operator would.
  const db = openArchive(dbPath);
  const admin = createCaller(db, 'admin');
  const restricted = RESTRICTED_USERS.map((u) => createCaller(db, u));
  db.close();

  console.log(
    `# Search benchmark: ${messages.toLocaleString('en')} messages (${dbPath}); ${connections} connections, ${duration} s per load run.`,
  );
  const scorecard = new Scorecard();
  await runVaried({
    dbPath,
    admin,
    restricted,
    restrictedEvery: 5, // 20% of the requests
    connections,
    duration,
    streamSize,
    exactSample,
    scorecard,
  });
  // --varied-only: the headline alone (a 10,000,000-message run has no time to spare).
  if (!process.argv.includes('--varied-only'))
    await runFixedMix({ dbPath, admin, restricted: restricted[0]!, connections, duration, scorecard });

  console.log('');
  console.log('## Targets');
  console.log('');
  scorecard.print();
}

await main();
