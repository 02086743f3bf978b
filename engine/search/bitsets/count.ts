// Exact counts from a snapshot (snapshot.ts): the query tree is evaluated as sets of message
// ids, one bit per message. Kept words are read straight from shared memory; any other term
// (a rare word, a phrase, a field other than subject) is asked of the store's own full-text
// index through a LeafSource (source.ts: FTS5 on SQLite, the side index on PostgreSQL), whose
// answers become bits. Filters are the same tags the full-text index carries (tags.ts), and the
// date range is checked against each match's sent date. The caller has checked that the
// snapshot describes the archive it reads (share.ts), so the count is the one SQL would give.
// Nothing here knows which store it counts for.
import type { Node } from '../../../shared/query-language.js';
import type { SearchQuery } from '../../../shared/jobs.js';
import { tokenize } from '../unicode61.js';
import { attachmentExpression, DEFAULT_COLUMNS, ftsExpression } from '../compile.js';
import { accountTag, ATTACHMENT_TAG, directionTag, exactAddressTag, folderTag } from '../tags.js';
import { lowerBound } from './lower-bound.js';
import { positionsInRange } from './page.js';
import { pairKey, pairWordKey } from './pairs.js';
import { DOCS_KEY, termKey, type Snapshot } from './snapshot.js';
import { StaleSnapshot, type Leaf, type LeafSource } from './source.js';

type Bits = Uint32Array;
/** The accounts a viewer may read (read per search, never from the snapshot); null: every account. */
export type VisibleAccounts = readonly number[] | null;

/** FTS5 answers that took at least LEAF_CACHE_MIN_MS, per snapshot and thread (LRU). */
const leafCaches = new WeakMap<Snapshot, Map<string, Bits>>();
const LEAF_CACHE_SIZE = 64; // 64 x 125 KiB at 1,000,000 messages
const LEAF_CACHE_MIN_MS = 2;
/** Words longer than this are never ruled out by the vocabulary alone (see Evaluator.text). */
const MAX_VOCAB_CHECK = 500;

/**
 * A word in at most this many messages has its subject hits listed by FTS5 for a relevance
 * ranking (leafSets); a more common one is matched over the window's subjects instead.
 */
const SUBJECT_FTS_MAX_DOCS = 40_000;

/** Sets the bits of these message ids in `out`, and returns it. */
function addIds(out: Bits, ids: Iterable<number>): Bits {
  for (const id of ids) out[id >>> 5]! |= 1 << (id & 31);
  return out;
}

export function countMatches(
  source: LeafSource,
  snap: Snapshot,
  visible: VisibleAccounts,
  query: SearchQuery,
  root: Node | null,
): { bits: Uint32Array; total: number } | undefined {
  const bits = matchSet(source, snap, visible, query, root);
  if (bits === undefined) return undefined;
  const total = query.from === undefined && query.to === undefined ? popcount(bits) : countInRange(bits, snap, query);
  return { bits, total };
}

/**
 * The set of visible messages matching the query and its filters (dates aside), or undefined if
 * stale. `dry`: only ask the source every leaf the evaluation needs, with no set arithmetic (every
 * set is empty): a store whose source answers later (PostgreSQL's, one round trip for all leaves)
 * learns what to fetch without evaluating the query twice over the whole archive.
 */
export function matchSet(
  source: LeafSource,
  snap: Snapshot,
  visible: VisibleAccounts,
  query: SearchQuery,
  root: Node | null,
  dry = false,
): Bits | undefined {
  try {
    const ev = new Evaluator(source, snap, dry);
    const parts: Bits[] = [];
    if (visible !== null) {
      const set = ev.empty();
      for (const a of visible) ev.orInto(set, ev.tag(accountTag(a)));
      parts.push(set);
    }
    if (query.accountId !== undefined) parts.push(ev.tag(accountTag(query.accountId)));
    if (query.folder !== undefined) parts.push(ev.tag(folderTag(query.folder)));
    if (query.direction !== undefined) parts.push(ev.tag(directionTag(query.direction === 'outgoing')));
    if (root) {
      parts.push(ev.node(root));
      // Where the snapshot says which messages have a full-text document (PostgreSQL: a
      // side-index row), a text query matches only those, as SQL's join does.
      const docs = ev.kept(DOCS_KEY);
      if (docs) parts.push(docs);
    }
    if (parts.length === 0) return dry ? ev.empty() : snap.universe;
    const out = ev.copy(parts[0]!);
    for (const p of parts.slice(1)) andInto(out, p);
    return out;
  } catch (err) {
    if (err instanceof StaleSnapshot) return undefined;
    throw err;
  }
}

/**
 * A text leaf's matches over the whole archive, how many there are, and those in the subject,
 * for ranking by relevance (engine/search/relevance.ts); undefined if stale. `subject` is null
 * when the leaf looks elsewhere, or 'unkept' when only FTS5 could list the leaf's subject
 * matches and that would cost more than the window (a prefix, a phrase, a common word the index
 * does not keep in subjects): over the whole archive that costs what the leaf's doclists cost
 * (`subject : a*`, 260 ms at 1,000,000 messages), for the 1,000 messages the ranking asks
 * about; the caller matches their subjects itself instead (engine/sqlite/search.ts). A rare word's subject hits
 * are FTS5's.
 */
export function leafSets(
  source: LeafSource,
  snap: Snapshot,
  leaf: Extract<Node, { type: 'text' }>,
  subject: Extract<Node, { type: 'text' }> | null,
  dry = false,
): { text: Bits; docs: number; subject: Bits | null | 'unkept' } | undefined {
  try {
    const ev = new Evaluator(source, snap, dry);
    const text = ev.node(leaf);
    const docs = popcount(text);
    if (subject === null || subject === leaf) return { text, docs, subject: subject && text };
    const tokens = subject.words.flatMap((w) => tokenize(w));
    if (tokens.length === 1 && !subject.prefix) {
      const kept = ev.kept(termKey('s', tokens[0]!));
      if (kept) return { text, docs, subject: kept };
      // FTS5 reads the word's whole doclist, whatever the column (about 0.05 µs a message at
      // 1,000,000: 0.2 ms for a word in 4,783 messages, 13 ms in 255,712); reading and
      // tokenizing the window's 1,000 subjects costs 2 to 5 ms. A dry run has no sets to count:
      // a kept word's count is the snapshot's, and a word it does not keep is a rare one.
      const count = dry ? (snap.term(termKey('d', tokens[0]!))?.docs ?? 0) : docs;
      if (count <= SUBJECT_FTS_MAX_DOCS) return { text, docs, subject: ev.leaf({ kind: 'text', node: subject }) };
    }
    return { text, docs, subject: 'unkept' };
  } catch (err) {
    if (err instanceof StaleSnapshot) return undefined;
    throw err;
  }
}

/** A dry run's every set: nothing to compute, nothing in shared memory to write to by mistake. */
const NONE = new Uint32Array(0);

class Evaluator {
  constructor(
    readonly source: LeafSource,
    readonly snap: Snapshot,
    /** matchSet's `dry`: every set is empty (NONE), the source is still asked for every leaf. */
    readonly dry = false,
  ) {}

  /** A new empty set. */
  empty(): Bits {
    return this.dry ? NONE : new Uint32Array(this.snap.words);
  }

  /** A copy of a set, to compute into. */
  copy(set: Bits): Bits {
    return this.dry ? NONE : set.slice();
  }

  node(node: Node): Bits {
    switch (node.type) {
      case 'has':
        return this.tag(ATTACHMENT_TAG);
      case 'text':
        return this.text(node);
      case 'thread':
        // Not cached with the snapshot: thread ids are not in it (a merge would force a rebuild).
        return this.ftsInto(this.empty(), { kind: 'thread', id: node.id });
      case 'read':
        throw new StaleSnapshot(); // never asked: searches with is: terms answer by SQL
      case 'attachment':
        // Not cached with the snapshot: attachment text arrives without the snapshot changing.
        return this.ftsInto(this.empty(), { kind: 'attachment', node });
      case 'or': {
        const out = this.empty();
        for (const c of node.children) this.orInto(out, this.node(c));
        return out;
      }
      case 'not':
        return andNot(this.copy(this.snap.universe), this.node(node.child));
      case 'and': {
        const positive = node.children.filter((c) => c.type !== 'not');
        const out = this.copy(positive.length ? this.node(positive[0]!) : this.snap.universe);
        for (const c of positive.slice(1)) andInto(out, this.node(c));
        for (const c of node.children) if (c.type === 'not') andNot(out, this.node(c.child));
        return out;
      }
    }
  }

  /** A filter tag's set: kept, or listed by the store. */
  tag(tag: string): Bits {
    return this.kept(termKey('t', tag)) ?? this.leaf({ kind: 'tag', tag });
  }

  orInto(out: Bits, set: Bits): void {
    for (let i = 0; i < out.length; i++) out[i]! |= set[i]!;
  }

  text(node: Extract<Node, { type: 'text' }>): Bits {
    const address = exactAddressTag(node);
    if (address) return this.tag(address);
    const { field } = node;
    const group = field === null ? 'd' : field === 'subject' ? 's' : null;
    const tokens = node.words.flatMap((w) => tokenize(w));
    if (group && tokens.length === 1) {
      const token = tokens[0]!;
      if (!node.prefix) {
        const kept = this.kept(termKey(group, token));
        if (kept) return kept;
        // Not a word of the default columns at all: nothing can match. (A giant word may be
        // stored cut to a store's limit, PostgreSQL's 2,047 bytes: the store is asked instead.)
        if (group === 'd' && token.length <= MAX_VOCAB_CHECK && !hasWord(this.snap.vocab, token)) return this.empty();
      } else if (group === 'd') {
        return this.prefix(token);
      }
    }
    if (group === 'd' && !node.prefix && tokens.length === 2) {
      // Two pair words: their pair set, or nothing if the pair occurs nowhere (pairs.ts).
      const [first, second] = tokens as [string, string];
      if (this.snap.term(pairWordKey(first)) && this.snap.term(pairWordKey(second)))
        return this.kept(pairKey(first, second)) ?? this.empty();
    }
    return this.leaf({ kind: 'text', node });
  }

  /**
   * `word*` over the default columns: kept words with that prefix as bits, the others one leaf
   * (the SQLite store asks FTS5 for them one by one: measured 3 to 6 times faster than FTS5's own
   * prefix query, which merges every doclist of the prefix at once, or than one OR of the words).
   */
  prefix(token: string): Bits {
    const vocab = this.snap.vocab;
    const out = this.empty();
    const rare: string[] = [];
    for (let i = lowerBound(vocab, token); i < vocab.length && vocab[i]!.startsWith(token); i++) {
      if (!this.keptInto(out, termKey('d', vocab[i]!))) rare.push(vocab[i]!);
    }
    // The words not kept, as one set when the builder made one for this prefix.
    if (rare.length && this.keptInto(out, termKey('p', token))) return out;
    // Else the store's answer for them, through the leaf cache like any word's: once the budget
    // binds (past about 2 million messages) a prefix has hundreds of words left out, one FTS5
    // query each, and prefixes were half the query threads' time in the varied stream.
    if (rare.length) this.orInto(out, this.leaf({ kind: 'words', words: rare }));
    return out;
  }

  /**
   * Adds a kept term's messages to `out`; false when the term is not kept. A prefix such as
   * `ster*` has hundreds of kept words, most of them lists of ids: setting their bits in place
   * costs their ids, where a bitset each (kept()) would cost the archive's size each (`ster*`
   * at 1,000,000 messages, 408 lists: 50 to 62 ms that way, 11 to 25 ms this way).
   */
  keptInto(out: Bits, key: string): boolean {
    const set = this.snap.term(key);
    if (!set) return false;
    if (this.dry) return true;
    if (set.kind === 'bits') this.orInto(out, set.bits);
    else addIds(out, set.ids);
    return true;
  }

  kept(key: string): Bits | undefined {
    const set = this.snap.term(key);
    if (!set) return undefined;
    if (this.dry) return NONE;
    return set.kind === 'bits' ? set.bits : addIds(new Uint32Array(this.snap.words), set.ids);
  }

  /**
   * The store's matches for a leaf, as bits. Costly ones are kept for the snapshot's life (it
   * describes an archive that has not changed, so neither has the answer): the next page of the
   * same search, or the same phrase with another filter, does not ask the store again.
   */
  leaf(leaf: Exclude<Leaf, { kind: 'thread' | 'attachment' }>): Bits {
    if (this.dry) return this.ftsInto(NONE, leaf);
    const key = leafKey(leaf);
    let cache = leafCaches.get(this.snap);
    if (!cache) leafCaches.set(this.snap, (cache = new Map()));
    const hit = cache.get(key);
    if (hit) {
      cache.delete(key); // most recently used last
      cache.set(key, hit);
      return hit;
    }
    const started = performance.now();
    const bits = this.ftsInto(new Uint32Array(this.snap.words), leaf);
    if (performance.now() - started >= LEAF_CACHE_MIN_MS && this.source.cacheable !== false) {
      cache.set(key, bits);
      if (cache.size > LEAF_CACHE_SIZE) cache.delete(cache.keys().next().value!);
    }
    return bits;
  }

  /** Adds the store's matches for a leaf to `out`. */
  ftsInto(out: Bits, leaf: Leaf): Bits {
    const ids = this.source.ids(leaf, this.snap);
    if (this.dry) return out;
    for (const id of ids) out[id >>> 5]! |= 1 << (id & 31);
    return out;
  }
}

/** One word of the default columns as an FTS5 expression. */
export const wordExpression = (word: string): string => `${DEFAULT_COLUMNS} : "${word.replaceAll('"', '""')}"`;

/** A leaf as one string: its FTS5 expression (a description of the leaf on either store). */
export function leafKey(leaf: Leaf): string {
  switch (leaf.kind) {
    case 'text':
      return ftsExpression(leaf.node);
    case 'words':
      return leaf.words.map(wordExpression).join(' OR ');
    case 'tag':
      return `{tags} : "${leaf.tag}"`;
    case 'attachment':
      return attachmentExpression(leaf.node);
    case 'thread':
      return `thread:${leaf.id}`;
  }
}

function andInto(out: Bits, set: Bits): Bits {
  for (let i = 0; i < out.length; i++) out[i]! &= set[i]!;
  return out;
}

function andNot(out: Bits, set: Bits): Bits {
  for (let i = 0; i < out.length; i++) out[i]! &= ~set[i]!;
  return out;
}

export function popcount(bits: Bits): number {
  let n = 0;
  for (let i = 0; i < bits.length; i++) {
    let v = bits[i]!;
    v -= (v >>> 1) & 0x55555555;
    v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
    n += (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
  }
  return n;
}

/** Matches sent within the query's range: a walk of that slice of the date order when it is short. */
function countInRange(bits: Bits, snap: Snapshot, query: SearchQuery): number {
  const [start, end] = positionsInRange(snap, query);
  let n = 0;
  if ((end - start) * 4 < snap.rows) {
    const { ids } = snap;
    for (let p = start; p < end; p++) {
      const id = ids[p]!;
      if ((bits[id >>> 5]! & (1 << (id & 31))) !== 0) n++;
    }
    return n;
  }
  const { sent } = snap;
  const from = query.from ?? -Infinity;
  const to = query.to ?? Infinity;
  for (let i = 0; i < bits.length; i++) {
    let v = bits[i]!;
    while (v !== 0) {
      const bit = 31 - Math.clz32(v & -v);
      v &= v - 1;
      const date = sent[i * 32 + bit]!;
      if (date >= from && date <= to) n++;
    }
  }
  return n;
}

const hasWord = (sorted: string[], word: string) => sorted[lowerBound(sorted, word)] === word;
