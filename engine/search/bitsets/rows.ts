// Building and growing a snapshot from rows a store hands over, for a store that has no FTS5
// vocabulary to ask (PostgreSQL: engine/postgres/search-snapshot.ts). The store gives, per message,
// the words of its document by group (`d:` default columns, `s:` subject, `t:` tags); this
// keeps the sets that are common enough (as engine/sqlite/index-build.ts does from FTS5's vocabulary), the prefix
// tails, and the sorted vocabulary, and grows them with later messages (as engine/sqlite/index-extend.ts does).
import { addPrefixTails, TAIL_MIN_COST_US, type TailCost } from './tails.js';
import { setBytes, termKey, type Snapshot, type TermSet } from './snapshot.js';

/** Id lists by term, as keptTerms reads them. */
export interface PostingLists {
  /** The terms, in the order they were first added (keptTerms breaks ties by it). */
  keys(): Iterable<string>;
  docs(key: string): number;
  ids(key: string): Int32Array;
}

/** Growable id lists, one per term (or per pair, pairs.ts). */
export class Postings<K = string> {
  readonly #lists = new Map<K, { ids: Int32Array; n: number }>();

  add(key: K, id: number): void {
    let list = this.#lists.get(key);
    if (!list) this.#lists.set(key, (list = { ids: new Int32Array(4), n: 0 }));
    if (list.n === list.ids.length) {
      const grown = new Int32Array(list.ids.length * 2);
      grown.set(list.ids);
      list.ids = grown;
    }
    list.ids[list.n++] = id;
  }

  docs(key: K): number {
    return this.#lists.get(key)?.n ?? 0;
  }

  ids(key: K): Int32Array {
    const list = this.#lists.get(key);
    return list ? list.ids.subarray(0, list.n) : new Int32Array(0);
  }

  keys(): IterableIterator<K> {
    return this.#lists.keys();
  }
}

/** An id list as a bitset when the term is in more than 1 message in 32, else as a sorted list. */
export function toTermSet(ids: ArrayLike<number>, words: number): TermSet {
  if (ids.length >= words) {
    const bits = new Uint32Array(words);
    for (let i = 0; i < ids.length; i++) bits[ids[i]! >>> 5]! |= 1 << (ids[i]! & 31);
    return { kind: 'bits', bits, docs: ids.length };
  }
  return { kind: 'ids', ids: Int32Array.from(ids).sort(), docs: ids.length };
}

/**
 * The kept sets of a full build: every term in at least `minDocs` messages, most common first,
 * within `budget` bytes; then the prefix tails (engine/sqlite/index-build.ts) of the words left out. `always` keeps
 * a term whatever its size (filter tags a store can only answer by reading every message).
 */
export function keptTerms(o: {
  postings: PostingLists;
  vocab: Set<string>;
  words: number;
  minDocs: number;
  budget: number;
  always?: (key: string) => boolean;
  tailMinCostUs?: number;
  /** What the store's answer for a rare word costs (FTS5's when not given). */
  tailCost?: TailCost;
}): Array<{ key: string; set: TermSet }> {
  const bound = new Map<string, number>();
  for (const key of o.postings.keys()) bound.set(key, o.postings.docs(key));
  const candidates = [...bound]
    .filter(([key, docs]) => docs >= o.minDocs || o.always?.(key))
    .sort((a, b) => b[1] - a[1]);
  const terms: Array<{ key: string; set: TermSet }> = [];
  let bytes = 0;
  for (const [key] of candidates) {
    const set = toTermSet(o.postings.ids(key), o.words);
    const size = setBytes(set);
    if (bytes + size > o.budget && !o.always?.(key)) continue;
    bytes += size;
    terms.push({ key, set });
  }
  addPrefixTails({
    vocab: o.vocab,
    bound,
    terms,
    budget: o.budget - bytes,
    words: o.words,
    minCostUs: o.tailMinCostUs ?? TAIL_MIN_COST_US,
    ...(o.tailCost ? { cost: o.tailCost } : {}),
    fetch: (word) => o.postings.ids(termKey('d', word)),
  });
  return terms;
}

/**
 * The old snapshot's kept sets with more members, resized to `words`: `additions` by key (ids
 * above the old highest id, ascending). Terms for which `drop` says so are left out (a store
 * that recomputes them whole).
 */
export function grownTerms(
  old: Snapshot,
  additions: Map<string, number[]>,
  words: number,
  drop: (key: string) => boolean = () => false,
): Array<{ key: string; set: TermSet }> {
  return old.termKeys
    .filter((key) => !drop(key))
    .map((key) => ({ key, set: grownSet(old.term(key)!, additions.get(key) ?? [], words) }));
}

/** A kept set with more members (ascending), resized to `words`. */
export function grownSet(set: TermSet, more: readonly number[], words: number): TermSet {
  if (set.kind === 'bits') {
    const bits = new Uint32Array(words);
    bits.set(set.bits.subarray(0, Math.min(set.bits.length, words)));
    for (const id of more) bits[id >>> 5]! |= 1 << (id & 31);
    return { kind: 'bits', bits, docs: set.docs + more.length };
  }
  const list = new Int32Array(set.ids.length + more.length);
  list.set(set.ids);
  list.set(more, set.ids.length);
  // Appended ids are above the old ones, except for a store whose messages can commit late.
  const late = more.length > 0 && set.ids.length > 0 && more[0]! < set.ids[set.ids.length - 1]!;
  return { kind: 'ids', ids: late ? list.sort() : list, docs: set.docs + more.length };
}
