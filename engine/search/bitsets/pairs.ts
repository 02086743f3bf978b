// Common word pairs, for phrases. A phrase of two common words ("the project", "thank you") is
// the costliest search FTS5 answers: to count it exactly it reads the positions of every message
// holding both words, hundreds of thousands at 1,000,000 messages. So the snapshot keeps, for the
// words found in at least 1 message in PAIR_SHARE (the "pair words"), the set of messages in
// which one follows the other directly in the same column: every such pair that occurs at all,
// so that a pair not kept occurs nowhere. This is Lucene's "common grams" idea, held as sets.
// Phrases with a rarer word stay with FTS5, which answers those quickly (the intersection is small).
//
// Positions are found with the FTS5-equivalent tokenizer (unicode61.ts): a token's position is
// its index in its column, and a phrase never spans two columns, as in FTS5.
import { tokenize } from '../unicode61.js';
import { Postings, toTermSet } from './rows.js';
import { setBytes, termKey, type TermSet } from './snapshot.js';

/** Pair words are kept words of the default columns found in at least 1 message in this many. */
export const PAIR_SHARE = 16;
/** At most this many pair words (the most common first): at most 256 x 256 pairs. */
export const MAX_PAIR_WORDS = 256;

export const pairWordKey = (word: string) => termKey('w', word);
export const pairKey = (first: string, second: string) => termKey('b', `${first} ${second}`);

/** The default columns' texts of a message, as FTS5 indexes them. */
export type ColumnTexts = Array<string | null>;

/** Calls `visit` once per distinct pair of pair words adjacent in `texts`, as `first * K + second`. */
export class PairFinder {
  readonly #index: Map<string, number>;
  readonly #seen: Int32Array;
  #stamp = 0;

  constructor(readonly words: readonly string[]) {
    this.#index = new Map(words.map((w, i) => [w, i]));
    this.#seen = new Int32Array(words.length * words.length);
  }

  pairs(texts: ColumnTexts, visit: (pair: number) => void): void {
    const k = this.words.length;
    const stamp = ++this.#stamp;
    for (const text of texts) {
      if (!text) continue;
      let previous = -1;
      for (const token of tokenize(text)) {
        const i = this.#index.get(token) ?? -1;
        if (previous >= 0 && i >= 0) {
          const pair = previous * k + i;
          if (this.#seen[pair] !== stamp) {
            this.#seen[pair] = stamp;
            visit(pair);
          }
        }
        previous = i;
      }
    }
  }

  key(pair: number): string {
    const k = this.words.length;
    return pairKey(this.words[Math.floor(pair / k)]!, this.words[pair % k]!);
  }
}

/**
 * The pairs found in a run of messages given in ascending id order: each pair's ids, ascending,
 * pairs in the order first met. Flat typed arrays, so that a builder's helper thread hands them
 * over without copying (engine/sqlite/pairs-helper.ts).
 */
export interface PairLists {
  /** Pair numbers (`first * K + second`, K the number of pair words), in the order first met. */
  pairs: Int32Array;
  /** Where each pair's ids start in `ids`, one more than `pairs` (the last is the end). */
  starts: Int32Array;
  ids: Int32Array;
}

/** Every adjacent pair of pair words in `messages`; `beat` is called once a message (progress). */
export function findPairs(
  pairWords: readonly string[],
  messages: Iterable<[number, ...ColumnTexts]>,
  beat?: () => void,
): PairLists {
  const finder = new PairFinder(pairWords);
  const lists = new Postings<number>();
  for (const [id, ...texts] of messages) {
    finder.pairs(texts, (pair) => lists.add(pair, id));
    beat?.();
  }
  const pairs = Int32Array.from(lists.keys());
  const starts = new Int32Array(pairs.length + 1);
  pairs.forEach((pair, i) => (starts[i + 1] = starts[i]! + lists.docs(pair)));
  const ids = new Int32Array(starts[pairs.length]!);
  pairs.forEach((pair, i) => ids.set(lists.ids(pair), starts[i]));
  return { pairs, starts, ids };
}

/**
 * The pair sets (and a marker per pair word) from the pair lists of consecutive runs of messages,
 * in id order: the same sets, in the same order, as one run over all of them. `words` is the
 * number of 32-bit words of a bitset: a pair in more messages than that is a bitset.
 */
export function pairSets(
  pairWords: readonly string[],
  parts: readonly PairLists[],
  words: number,
): Array<{ key: string; set: TermSet }> {
  if (pairWords.length === 0) return [];
  const finder = new PairFinder(pairWords);
  const out: Array<{ key: string; set: TermSet }> = pairWords.map((w) => ({
    key: pairWordKey(w),
    set: { kind: 'ids', ids: new Int32Array(0), docs: 0 },
  }));
  // Each pair's runs of ids, part after part, pairs in the order first met.
  const runs = new Map<number, Int32Array[]>();
  for (const part of parts)
    part.pairs.forEach((pair, i) => {
      const run = part.ids.subarray(part.starts[i], part.starts[i + 1]);
      const known = runs.get(pair);
      if (known) known.push(run);
      else runs.set(pair, [run]);
    });
  for (const [pair, lists] of runs) {
    const ids = new Int32Array(lists.reduce((n, run) => n + run.length, 0));
    let at = 0;
    for (const run of lists) {
      ids.set(run, at);
      at += run.length;
    }
    // Already ascending: a list as it is, a bitset as toTermSet makes one.
    const set: TermSet = ids.length >= words ? toTermSet(ids, words) : { kind: 'ids', ids, docs: ids.length };
    out.push({ key: finder.key(pair), set });
  }
  return out;
}

/**
 * The pair sets that fit in `budget` bytes: the markers and pairs of the first k pair words (most
 * common first) for the largest k whose pairs fit. A pair of two kept pair words that is not kept
 * still occurs nowhere, so the rule holds with fewer words. Before, the pairs were kept all or
 * none: at 1,000,000 messages with 300 MiB the single words all fit and the 118 MiB of pairs did
 * not, and the varied stream ran at half the rate of the whole index, every phrase of common
 * words going to the store. `sets` are pairSets' (markers and pairs of `pairWords`).
 */
export function pairsWithin(
  pairWords: readonly string[],
  sets: ReadonlyArray<{ key: string; set: TermSet }>,
  budget: number,
): Array<{ key: string; set: TermSet }> {
  const rank = new Map(pairWords.map((w, i) => [w, i]));
  // A pair belongs to the later (rarer) of its two words: it is kept once both are.
  const rankOf = (key: string): number => {
    const [first, second] = key.slice(2).split(' ') as [string, string];
    return Math.max(rank.get(first)!, rank.get(second)!);
  };
  const bytesAt = new Float64Array(pairWords.length);
  for (const { key, set } of sets) if (key.startsWith('b:')) bytesAt[rankOf(key)]! += setBytes(set);
  let kept = 0;
  for (let spent = 0; kept < pairWords.length && spent + bytesAt[kept]! <= budget; kept++) spent += bytesAt[kept]!;
  if (kept === pairWords.length) return [...sets];
  return sets.filter(({ key }) => (key.startsWith('b:') ? rankOf(key) : rank.get(key.slice(2))!) < kept);
}

/** The pair sets of `messages`, on this thread (pairSets of one run). */
export function buildPairs(
  pairWords: readonly string[],
  messages: Iterable<[number, ...ColumnTexts]>,
  words: number,
): Array<{ key: string; set: TermSet }> {
  if (pairWords.length === 0) return [];
  return pairSets(pairWords, [findPairs(pairWords, messages)], words);
}
