// A full build of the search index finds the word pairs on helper threads while its own thread
// reads FTS5 (engine/sqlite/index-build.ts `startPairs`, engine/threads/sync-workers.ts): the
// snapshot is the very same as one built on one thread, a write that lands as the helpers start
// sends the work back to the building thread, and helpers that fail or stall are given up.
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSnapshot, idRuns, type BuildOptions } from '../engine/sqlite/index-build.js';
import { openArchive, type Db } from '../engine/sqlite/open.js';
import { contentBytes, Snapshot } from '../engine/search/bitsets/snapshot.js';
import { startHelpers } from '../engine/threads/sync-workers.js';
import { gallop, lowerBound } from '../engine/search/bitsets/lower-bound.js';
import fc from 'fast-check';
import { archive } from './helpers/index-archive.js';

const dir = mkdtempSync(join(tmpdir(), 'mag-build-threads-'));
test.after.always(() => rmSync(dir, { recursive: true, force: true }));
const { path, db: writer } = archive(dir, 'a.db', 3000);
writer.close();

/** A build's bytes with the two header fields that tell when and how long it was built zeroed. */
function built(db: Db, options: BuildOptions): { bytes: Buffer; snap: Snapshot; where: string[] } {
  const where: string[] = [];
  const buffer = buildSnapshot(db, { ...options, onPairs: (w, why) => where.push(why ? `${w}: ${why}` : w) });
  return { bytes: contentBytes(buffer), snap: new Snapshot(buffer), where };
}

test('word pairs found on helper threads give the very same snapshot as on the building thread', (t) => {
  const db = openArchive(path, { readonly: true });
  t.teardown(() => db.close());
  const one = built(db, { pairThreads: 1 });
  t.deepEqual(one.where, ['here']);
  const pairs = one.snap.termKeys.filter((k) => k.startsWith('b:'));
  t.true(pairs.length >= 32, `the archive has word pairs to find (${pairs.length})`);
  for (const threads of [2, 3, 5]) {
    const helped = built(db, { pairThreads: threads, pairThreadsFrom: 0 });
    t.deepEqual(helped.where, ['threads'], `${threads} helpers`);
    t.true(helped.bytes.equals(one.bytes), `${threads} helpers: the same bytes`);
  }
});

test('a rewrite as the helpers start: they see it, and the pairs are found on the building thread', (t) => {
  const db = openArchive(path, { readonly: true });
  const other = openArchive(path);
  t.teardown(() => {
    db.close();
    other.close();
  });
  const before = other.prepare('SELECT rewrites FROM archive_state WHERE id = 1').pluck().get() as number;
  const bump = () => other.prepare('UPDATE archive_state SET rewrites = rewrites + 1 WHERE id = 1').run();
  const helped = built(db, { pairThreads: 2, pairThreadsFrom: 0, beforePairHelpers: bump });
  t.deepEqual(helped.where, ['here: the archive was rewritten while the pairs were read']);
  // What the build's own transaction saw, the pairs included.
  t.is(helped.snap.rewrites, before);
  other.prepare('UPDATE archive_state SET rewrites = ? WHERE id = 1').run(before);
  t.true(helped.bytes.equals(built(db, { pairThreads: 1 }).bytes));
});

test('idRuns: consecutive id ranges with about as many messages each', (t) => {
  const ids = [1, 2, 3, 5, 8, 13, 21, 34, 40, 41, 42, 63, 64, 65, 100];
  const universe = new Uint32Array(4);
  for (const id of ids) universe[id >>> 5]! |= 1 << (id & 31);
  for (const runs of [1, 2, 3, 4, 7, 15, 20]) {
    const got = idRuns(universe, ids.length, runs);
    t.is(got.length, Math.min(runs, ids.length), 'never an empty run');
    t.is(got[0]![0], 0);
    t.is(got.at(-1)![1], Number.MAX_SAFE_INTEGER);
    got.slice(1).forEach(([after], i) => t.is(after, got[i]![1], 'each run starts where the last ended'));
    const counts = got.map(([after, upTo]) => ids.filter((id) => id > after && id <= upTo).length);
    t.is(
      counts.reduce((a, b) => a + b),
      ids.length,
    );
    if (runs <= ids.length) t.true(Math.max(...counts) - Math.min(...counts) <= 1, `${runs}: ${counts.join(', ')}`);
  }
});

test('gallop finds what a binary search finds, from any start at or before it', (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: -50, max: 50 }), { maxLength: 300 }).map((a) => a.sort((x, y) => x - y)),
      fc.integer({ min: -60, max: 60 }),
      fc.nat(),
      (sorted, value, start) => {
        const from = Math.min(start % (sorted.length + 1), lowerBound(sorted, value));
        t.is(gallop(sorted, value, from), lowerBound(sorted, value, from));
      },
    ),
  );
});

const FIXTURE = new URL('./fixtures/sync-helper.js', import.meta.url);
type Act = { act: 'answer' | 'throw' | 'hang'; value: number };

/** Helpers of the fixture, one per act, and their answers or why there are none. */
function helped(acts: Array<Act['act']>, stallMs = 60_000) {
  const helpers = startHelpers<Act, number>(
    FIXTURE,
    acts.map((act, i) => ({ act, value: i + 1 })),
    { stallMs },
  );
  return { answers: helpers.wait(), failure: helpers.failure };
}

test('helpers answer in the order of their inputs', (t) => {
  t.deepEqual(helped(['answer', 'answer', 'answer']), { answers: [2, 4, 6], failure: undefined });
});

test('a helper that fails gives no answers and says why', (t) => {
  t.deepEqual(helped(['answer', 'throw']), { answers: undefined, failure: 'helper 2 failed' });
});

test('helpers that stop making progress are given up', (t) => {
  const { answers, failure } = helped(['answer', 'hang'], 300);
  t.is(answers, undefined);
  t.regex(failure ?? '', /no progress/);
});
