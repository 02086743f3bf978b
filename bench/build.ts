// A full build of the SQLite search index (docs/performance.md, "A full build"), as the builder
// thread and the import's last step run it: the word pairs on helper threads, one per core
// (engine/sqlite/index-build.ts, `startPairs`), against the baseline of the same build with every
// part on one thread, in the same run, alternately. Both snapshots must be the very same bytes
// (apart from when and how long they were built); the benchmark fails otherwise.
//
//   npm run bench:build [-- --messages 1000000 --runs 2]
import { openArchive } from '../engine/sqlite/open.js';
import { buildSnapshot, type BuildOptions } from '../engine/sqlite/index-build.js';
import { contentBytes } from '../engine/search/bitsets/snapshot.js';
import { ensureCorpus, corpusArgs } from './corpus.js';
import { arg } from './lib/args.js';
import { ratio } from './lib/load.js';

const { messages, seed } = corpusArgs();
const runs = arg('--runs', 2);
const path = ensureCorpus({ messages, seed });
const db = openArchive(path, { readonly: true });

function run(label: string, options: BuildOptions) {
  const where: string[] = [];
  const started = performance.now();
  const cpu = process.cpuUsage();
  const buffer = buildSnapshot(db, {
    ...options,
    onPairs: (w, why) =>
      where.push((w === 'threads' ? 'on helper threads' : 'on this thread') + (why ? ` (${why})` : '')),
  });
  const used = process.cpuUsage(cpu);
  const seconds = (performance.now() - started) / 1000;
  const bytes = contentBytes(buffer);
  console.log(
    `${label}: ${seconds.toFixed(1)} s, ${((used.user + used.system) / 1e6).toFixed(1)} s of CPU, ` +
      `${(buffer.byteLength / 2 ** 20).toFixed(0)} MiB, pairs found ${where.join(', ') || 'nowhere (none kept)'}`,
  );
  return { seconds, bytes };
}

console.log(`Full build of the search index, ${messages} messages (${path}), ${runs} runs each, alternating.`);
const one: number[] = [];
const helped: number[] = [];
let reference: Buffer | undefined;
for (let r = 0; r < runs; r++) {
  for (const [label, options, into] of [
    ['one thread (baseline)', { pairThreads: 1 }, one],
    ['pairs on helper threads', {}, helped],
  ] as const) {
    const { seconds, bytes } = run(label, options);
    into.push(seconds);
    reference ??= bytes;
    if (!bytes.equals(reference)) throw new Error(`${label}: the snapshot differs from the first build's`);
  }
}
const best = (xs: number[]) => Math.min(...xs);
console.log(
  `Best of each: one thread ${best(one).toFixed(1)} s, helpers ${best(helped).toFixed(1)} s: ` +
    `${ratio(best(one), best(helped))} faster; every snapshot the same bytes.`,
);
db.close();
