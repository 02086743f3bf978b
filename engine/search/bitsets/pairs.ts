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
import { Postings } from './rows.js';
import { termKey, type TermSet } from './snapshot.js';

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
 * The pair sets (and a marker per pair word) for messages given in ascending id order. `words`
 * is the number of 32-bit words of a bitset: a pair in more messages than that is a bitset.
 */
export function buildPairs(
  pairWords: readonly string[],
  messages: Iterable<[number, ...ColumnTexts]>,
  words: number,
): Array<{ key: string; set: TermSet }> {
  if (pairWords.length === 0) return [];
  const finder = new PairFinder(pairWords);
  const lists = new Postings<number>();
  for (const [id, ...texts] of messages) finder.pairs(texts, (pair) => lists.add(pair, id));
  const out: Array<{ key: string; set: TermSet }> = pairWords.map((w) => ({
    key: pairWordKey(w),
    set: { kind: 'ids', ids: new Int32Array(0), docs: 0 },
  }));
  for (const pair of lists.keys()) {
    const ids = lists.ids(pair);
    let set: TermSet;
    if (ids.length >= words) {
      const bits = new Uint32Array(words);
      for (const id of ids) bits[id >>> 5]! |= 1 << (id & 31);
      set = { kind: 'bits', bits, docs: ids.length };
    } else {
      set = { kind: 'ids', ids: ids.slice(), docs: ids.length };
    }
    out.push({ key: finder.key(pair), set });
  }
  return out;
}
