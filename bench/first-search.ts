// The server's first searches after a start (docs/performance.md, "The first search after a
// start"; ADR 23's warm-up): the real server, started from its saved search index, is asked for
// common words sorted by date, one at a time over HTTP, the moment /readyz says the index is
// current: the request a first user makes after a PM2 reload. The baseline, in the same run, is
// the same words asked again right after (each start's second calls); each start prints both and
// their ratio, and the worst first call against the 15 ms target.
//
// The key is created before each start, so its first request is also the key's first: what a user
// whose key has not been used for five minutes gets (its last use is then written, engine/rules/keys.ts).
// With `--reused-key`, one key serves every start and the untimed start uses it first: a user whose
// key was in use before the restart.
//
//   npm run bench:first-search [-- --messages 1000000 --starts 3 --postgres --wait 0 --reused-key]
// `--postgres` uses bench/pg-corpus.ts's cached database and saves its index beside it, as
// bench:postgres does; `--wait S` waits S seconds after /readyz before the first search (the
// start's own work, such as the aggregates' columns, then done).
import { openAdmin } from '../engine/archive.js';
import { corpusArgs, ensureCorpus } from './corpus.js';
import { arg } from './lib/args.js';
import { ms, percentile, ratio } from './lib/load.js';
import { searchIndexOf, startServer } from './lib/server.js';
import { ensurePgCorpus, pgIndexFile } from './pg-corpus.js';

const TARGET_MS = 15;
const WORDS = ['the', 'and', 'to', 'of', 'a'];

const { messages, seed } = corpusArgs();
const starts = arg('--starts', 3);
const waitS = arg('--wait', 0, { zero: true });
const postgres = process.argv.includes('--postgres');
const reusedKey = process.argv.includes('--reused-key');
const location = postgres ? await ensurePgCorpus({ messages, seed }) : ensureCorpus({ messages, seed });
const env: Record<string, string> = postgres ? { Engine__SearchIndexFile: pgIndexFile(location) } : {};

let shared: string | undefined;
async function newKey(): Promise<string> {
  if (reusedKey && shared) return shared;
  const admin = await openAdmin(location);
  try {
    return (shared = (await admin.createKey({ username: 'admin', name: 'bench:first-search' })).key);
  } finally {
    await admin.close();
  }
}

/** One start: each word once (first calls), then each word again (the baseline). */
async function oneStart(): Promise<{ readyS: number; first: number[]; again: number[]; warmUps: number }> {
  const key = await newKey();
  let warmUps = 0;
  const t0 = performance.now();
  const server = await startServer(
    {
      Api__Enabled: 'true',
      Database__Path: location,
      Engine__Threads: '2',
      Api__RateLimitPerMinute: '1000000000',
      ...env,
    },
    undefined,
    [],
    (line) => {
      if (line.includes('search index: warm-up search')) warmUps++;
    },
  );
  try {
    // A full build at 1,000,000 messages takes minutes (the first start without a saved file).
    const index = await searchIndexOf(server, (i) => i?.status === 'current', 3_600_000);
    if (index?.status !== 'current') throw new Error(`the search index is not current: ${JSON.stringify(index)}`);
    const readyS = (performance.now() - t0) / 1000;
    if (waitS > 0) await new Promise((r) => setTimeout(r, waitS * 1000));
    const ask = async (q: string) => {
      const started = performance.now();
      const res = await fetch(`${server.url}/api/v1/emails?q=${q}`, { headers: { Authorization: `Bearer ${key}` } });
      await res.json();
      if (res.status !== 200) throw new Error(`${q}: status ${res.status}`);
      return performance.now() - started;
    };
    const first: number[] = [];
    for (const q of WORDS) first.push(await ask(q));
    const again: number[] = [];
    for (const q of WORDS) again.push(await ask(q));
    return { readyS, first, again, warmUps };
  } finally {
    await server.stop();
  }
}

console.log(
  `${postgres ? 'PostgreSQL' : 'SQLite'}, ${messages.toLocaleString('en')} messages, ${starts} starts, Engine:Threads=2, ` +
    `first search ${waitS > 0 ? `${waitS} s after` : 'the moment'} /readyz says current, ` +
    `${reusedKey ? 'with a key used before the restart' : "with a new key (also the key's first request)"}.`,
);
// The first start may build (and save) the index: it is run, and not counted.
const untimed = await oneStart();
console.log(
  `(an untimed start first, ready after ${untimed.readyS.toFixed(1)} s, so that each timed one loads the file)`,
);
console.log(
  `| start | ready | warm-ups | ${WORDS.map((w) => `\`${w}\``).join(' | ')} | again, p50 | first \`the\` / again |`,
);
console.log(`|---|---:|---:|${WORDS.map(() => '---:').join('|')}|---:|---:|`);
const worst: number[] = [];
for (let i = 1; i <= starts; i++) {
  const s = await oneStart();
  const again = percentile(s.again, 50);
  worst.push(s.first[0]!);
  console.log(
    `| ${i} | ${s.readyS.toFixed(1)} s | ${s.warmUps} | ${s.first.map(ms).join(' | ')} | ${ms(again)} | ${ratio(s.first[0]!, again)} |`,
  );
}
const max = Math.max(...worst);
console.log(
  `\nFirst call of a common word by date <= ${TARGET_MS} ms: the server's first search took at most ${ms(max)}: ${max <= TARGET_MS ? 'met' : 'missed'}.`,
);
