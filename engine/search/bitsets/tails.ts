// Prefix tails (`p:` terms) for `word*`, shared by the SQLite builder (engine/sqlite/index-build.ts) and the
// store-neutral snapshot rows (rows.ts), in a file of its own so neither imports the other.
import { termKey, type TermSet } from './snapshot.js';

/** Prefixes up to this many characters may have a tail set (`p:` terms). */
export const MAX_TAIL_PREFIX = 4;
/** A tail set is kept when asking FTS5 for its words one by one would cost more than this (µs). */
export const TAIL_MIN_COST_US = 5_000; // BuildOptions.tailMinCostUs

/** What asking the store for one rare word costs: per word, and per message it is in. */
export interface TailCost {
  perWordUs: number;
  perPostingUs: number;
}
/** SQLite's FTS5, one query per word in the worker (the default). */
export const FTS5_TAIL_COST: TailCost = { perWordUs: 20, perPostingUs: 0.4 };

/**
 * Prefix tails, for `word*`: under a short prefix, the union of the messages of the words that
 * are not kept themselves. Without it a prefix such as `ster*` would be thousands of FTS5 queries
 * (one per rare word under it); with it, the kept words under the prefix and this one set answer.
 * Kept only where the per-word queries would cost more than TAIL_MIN_COST_US. Returns the bytes used.
 */
export function addPrefixTails(o: {
  vocab: Set<string>;
  bound: Map<string, number>;
  terms: Array<{ key: string; set: TermSet }>;
  budget: number;
  words: number;
  minCostUs: number;
  cost?: TailCost;
  fetch: (word: string) => Int32Array;
}): number {
  const { perWordUs, perPostingUs } = o.cost ?? FTS5_TAIL_COST;
  const kept = new Set(o.terms.filter((t) => t.key.startsWith('d:')).map((t) => t.key.slice(2)));
  const tails = new Map<string, { words: string[]; cost: number; docs: number }>();
  for (const word of o.vocab) {
    if (kept.has(word)) continue;
    const docs = o.bound.get(termKey('d', word)) ?? 0;
    const chars = [...word];
    for (let l = 1; l <= Math.min(MAX_TAIL_PREFIX, chars.length); l++) {
      const prefix = chars.slice(0, l).join('');
      let tail = tails.get(prefix);
      if (!tail) tails.set(prefix, (tail = { words: [], cost: 0, docs: 0 }));
      tail.words.push(word);
      tail.cost += perWordUs + perPostingUs * docs;
      tail.docs += docs;
    }
  }
  const chosen = [...tails].filter(([, t]) => t.cost >= o.minCostUs).sort((a, b) => b[1].cost - a[1].cost);
  const cache = new Map<string, Int32Array>();
  const idsOf = (word: string) => {
    let found = cache.get(word);
    if (!found) cache.set(word, (found = o.fetch(word)));
    return found;
  };
  let bytes = 0;
  for (const [prefix, tail] of chosen) {
    const dense = tail.docs >= o.words; // an upper bound: the union may be smaller
    const bits = new Uint32Array(o.words);
    let count = 0;
    for (const word of tail.words) {
      for (const id of idsOf(word)) {
        const mask = 1 << (id & 31);
        if ((bits[id >>> 5]! & mask) === 0) {
          bits[id >>> 5]! |= mask;
          count++;
        }
      }
    }
    const set: TermSet =
      dense && count >= o.words
        ? { kind: 'bits', bits, docs: count }
        : { kind: 'ids', ids: idsOfBits(bits, count), docs: count };
    const size = set.kind === 'bits' ? o.words * 4 : count * 4;
    if (bytes + size > o.budget) continue;
    bytes += size;
    o.terms.push({ key: termKey('p', prefix), set });
  }
  return bytes;
}

function idsOfBits(bits: Uint32Array, count: number): Int32Array {
  const out = new Int32Array(count);
  let n = 0;
  for (let i = 0; i < bits.length; i++) {
    let v = bits[i]!;
    while (v !== 0) {
      out[n++] = i * 32 + (31 - Math.clz32(v & -v));
      v &= v - 1;
    }
  }
  return out;
}
