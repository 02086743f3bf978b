// Builds a snapshot (snapshot.ts) from the archive, inside one read transaction so that every
// part describes the same moment. FTS5 does the reading: its vocabulary table says which words
// are common, and one MATCH per kept word lists its messages. At 1,000,000 messages this reads
// about 80 million postings. The word pairs read every message again; they are found on helper
// threads meanwhile (ADR 34). See docs/performance.md, "A full build", for the time it takes.
import { availableParallelism } from 'node:os';
import { gallop } from '../search/bitsets/lower-bound.js';
import type { Db } from './open.js';
import { DEFAULT_COLUMNS } from '../search/compile.js';
import { SORT_COLUMNS } from '../search/sort.js';
import {
  buildPairs,
  MAX_PAIR_WORDS,
  PAIR_SHARE,
  pairSets,
  pairsWithin,
  type ColumnTexts,
  type PairLists,
} from '../search/bitsets/pairs.js';
import { startHelpers } from '../threads/sync-workers.js';
import { addPrefixTails, TAIL_MIN_COST_US } from '../search/bitsets/tails.js';
import {
  ORDERS,
  pack,
  termKey,
  wordsFor,
  type Group,
  type OrderKey,
  type TermSet,
} from '../search/bitsets/snapshot.js';

export interface BuildOptions {
  /** A word is kept when at least this many messages hold it (default: 1 in 1,000, at least 256). */
  minDocs?: number;
  /** Upper bound for the kept sets, in bytes; the most common words are kept first. */
  maxBytes?: number;
  /** Keep a prefix tail when asking FTS5 for its words would cost more than this (µs); tests use 0. */
  tailMinCostUs?: number;
  /**
   * Threads that find the word pairs while this one reads FTS5 (default: one per core, at most
   * 8); 1 finds them here.
   */
  pairThreads?: number;
  /** Below this many messages the pairs are found here: a thread's start costs more (default 50,000). */
  pairThreadsFrom?: number;
  /** Told where the pairs were found, and why not on the threads when they were asked for. */
  onPairs?: (where: 'threads' | 'here', why?: string) => void;
  /** Called as the helper threads are started (tests: a write at that moment). */
  beforePairHelpers?: () => void;
}

const DEFAULT_MAX_BYTES = 768 * 1024 * 1024;

/** Which FTS5 columns each group counts over, as compile.ts writes them. */
const GROUPS: Record<'d' | 's' | 't', { filter: string; columns: string[] }> = {
  d: { filter: DEFAULT_COLUMNS, columns: ['subject', 'body', 'from_text', 'to_text', 'cc_text', 'bcc_text'] },
  s: { filter: '{subject}', columns: ['subject'] },
  t: { filter: '{tags}', columns: ['tags'] },
};

export function archiveState(db: Db): { maxId: number; rewrites: number } {
  return db
    .prepare('SELECT coalesce((SELECT max(id) FROM emails), 0) AS maxId, rewrites FROM archive_state WHERE id = 1')
    .get() as { maxId: number; rewrites: number };
}

export function buildSnapshot(db: Db, options: BuildOptions = {}): SharedArrayBuffer {
  return inReadTransaction(db, () => build(db, options));
}

function build(db: Db, options: BuildOptions): SharedArrayBuffer {
  const started = performance.now();
  const { maxId, rewrites } = archiveState(db);
  const words = wordsFor(maxId);
  const sent = new Float64Array(maxId + 1).fill(Number.NaN);
  const universe = new Uint32Array(words);
  const rows = (db.prepare('SELECT count(*) FROM emails').pluck().get() as number) || 0;
  const keys = new Float64Array(rows);
  const ids = new Int32Array(rows);
  let n = 0;
  for (const [id, key, date] of db
    .prepare('SELECT id, fts_key, sent_date FROM emails ORDER BY fts_key')
    .raw()
    .iterate() as Iterable<[number, number, number]>) {
    keys[n] = key;
    ids[n++] = id;
    sent[id] = date;
    universe[id >>> 5]! |= 1 << (id & 31);
  }

  const orders = readOrders(db);

  const minDocs = options.minDocs ?? Math.max(256, Math.ceil(rows / 1000));
  const budget = options.maxBytes ?? DEFAULT_MAX_BYTES;
  db.exec("CREATE VIRTUAL TABLE IF NOT EXISTS temp.email_fts_vocab USING fts5vocab(main, email_fts, 'col')");
  // Per term and group: an upper bound of its documents (the sum over the group's columns).
  const bound = new Map<string, number>();
  // ... and a lower bound (its commonest column), so that a word that cannot fit is not read.
  const least = new Map<string, number>();
  const vocab = new Set<string>();
  const columnGroups = new Map<string, Group[]>();
  for (const [g, { columns }] of Object.entries(GROUPS) as Array<[keyof typeof GROUPS, { columns: string[] }]>) {
    for (const c of columns) columnGroups.set(c, [...(columnGroups.get(c) ?? []), g]);
  }
  for (const [term, col, docs] of db
    .prepare('SELECT term, col, doc FROM temp.email_fts_vocab')
    .raw()
    .iterate() as Iterable<[string, string, number]>) {
    const groups = columnGroups.get(col);
    if (!groups) continue;
    if (groups.includes('d')) vocab.add(term);
    if (docs < minDocs && !groups.includes('d')) continue;
    for (const g of groups) {
      const key = termKey(g, term);
      bound.set(key, (bound.get(key) ?? 0) + docs);
      least.set(key, Math.max(least.get(key) ?? 0, docs));
    }
  }
  const candidates = [...bound].filter(([, docs]) => docs >= minDocs).sort((a, b) => b[1] - a[1]);

  const terms: Array<{ key: string; set: TermSet }> = [];
  let bytes = 0;
  // The word pairs (pairs.ts) re-read every message: most of a build's time. Their words are known
  // once every candidate common enough to be one has been read (candidates go most common first),
  // so the pairs are found on other threads from then on, while this one reads the rest.
  let pairs: (() => Array<{ key: string; set: TermSet }>) | undefined;
  let pairWordsUsed: string[] | undefined;
  const startPairsOnce = () => {
    if (pairs) return;
    pairWordsUsed = pairWordsOf(terms, rows);
    pairs = startPairs(db, { maxId, rewrites, universe, rows, words, pairWords: pairWordsUsed }, options);
  };
  const list = db.prepare('SELECT rowid FROM email_fts WHERE email_fts MATCH ?').pluck();
  for (const [key, docs] of candidates) {
    if (docs * PAIR_SHARE < rows) startPairsOnce();
    // Past the budget, the least this word's set could take is too much: FTS5 is not asked. At
    // millions of messages the budget binds, and most of the MATCHes were for words then dropped.
    if (bytes + 4 * Math.min(words, Math.max(minDocs, least.get(key)!)) > budget) continue;
    const group = key[0] as keyof typeof GROUPS;
    const token = key.slice(2);
    const found = list.all(`${GROUPS[group].filter} : "${token.replaceAll('"', '""')}"`) as number[];
    if (found.length < minDocs) continue; // the bound overcounted: the word shares messages across columns
    const set = toSet(found, keys, ids, words);
    const size = set.kind === 'bits' ? words * 4 : set.ids.length * 4;
    if (bytes + size > budget) continue;
    bytes += size;
    terms.push({ key, set });
  }
  bytes += addPrefixTails({
    vocab,
    bound,
    terms,
    budget: budget - bytes,
    fetch: (word) => {
      const found = list.all(`${DEFAULT_COLUMNS} : "${word.replaceAll('"', '""')}"`) as number[];
      return toIds(found, keys, ids);
    },
    words,
    minCostUs: options.tailMinCostUs ?? TAIL_MIN_COST_US,
  });
  // Common word pairs: those of as many pair words as fit, since a missing pair means "nowhere".
  startPairsOnce();
  terms.push(...pairsWithin(pairWordsUsed!, pairs!(), budget - bytes));
  return pack({
    maxId,
    rewrites,
    sent,
    keys,
    ids,
    orders,
    universe,
    terms,
    vocab,
    buildMs: performance.now() - started,
  });
}

/** The pair words: the kept words of the default columns in at least 1 message in PAIR_SHARE. */
function pairWordsOf(terms: ReadonlyArray<{ key: string; set: TermSet }>, rows: number): string[] {
  return terms
    .filter((t) => t.key.startsWith('d:') && t.set.docs * PAIR_SHARE >= rows)
    .sort((a, b) => b.set.docs - a.set.docs)
    .slice(0, MAX_PAIR_WORDS)
    .map((t) => t.key.slice(2));
}

/** What a helper thread of the pairs (pairs-helper.ts) is given. */
export interface PairsInput {
  dbPath: string;
  maxId: number;
  rewrites: number;
  /** Its run: ids above `after`, up to `upTo`. */
  after: number;
  upTo: number;
  pairWords: string[];
}

/** Helpers that show no progress for this long are given up (a message's pairs take microseconds). */
const PAIR_STALL_MS = 60_000;

/**
 * Starts finding the word pairs: on helper threads (pairs-helper.ts), each given an equal share of
 * the messages by id, or here when the archive is small, in memory, or there is one core. Returns
 * what gives the pair sets; on the helpers' path it blocks until they answer, and finds the pairs
 * here if one of them could not (an archive rewritten since this build began, a failed thread).
 */
function startPairs(
  db: Db,
  o: { maxId: number; rewrites: number; universe: Uint32Array; rows: number; words: number; pairWords: string[] },
  options: BuildOptions,
): () => Array<{ key: string; set: TermSet }> {
  const here = (why?: string) => {
    if (o.pairWords.length === 0) return [];
    options.onPairs?.('here', why);
    return buildPairs(o.pairWords, messageTexts(db, 0), o.words);
  };
  const threads = options.pairThreads ?? Math.min(8, availableParallelism());
  if (o.pairWords.length === 0 || threads < 2 || db.memory || o.rows < (options.pairThreadsFrom ?? 50_000))
    return () => here();
  const inputs = idRuns(o.universe, o.rows, threads).map(([after, upTo]): PairsInput => ({
    dbPath: db.name,
    maxId: o.maxId,
    rewrites: o.rewrites,
    after,
    upTo,
    pairWords: o.pairWords,
  }));
  options.beforePairHelpers?.();
  const helpers = startHelpers<PairsInput, PairLists | 'stale'>(new URL('./pairs-helper.js', import.meta.url), inputs, {
    stallMs: PAIR_STALL_MS,
  });
  return () => {
    const parts = helpers.wait();
    if (!parts) return here(helpers.failure);
    if (parts.includes('stale')) return here('the archive was rewritten while the pairs were read');
    options.onPairs?.('threads');
    return pairSets(o.pairWords, parts as PairLists[], o.words);
  };
}

/** At most `runs` consecutive id ranges (after, upTo], none empty, holding about as many messages each. */
export function idRuns(universe: Uint32Array, rows: number, runs: number): Array<[number, number]> {
  runs = Math.max(1, Math.min(runs, rows));
  const out: Array<[number, number]> = [];
  let after = 0;
  let seen = 0;
  let next = Math.ceil(rows / runs);
  for (let w = 0; w < universe.length && out.length < runs - 1; w++) {
    let bits = universe[w]!;
    while (bits !== 0 && out.length < runs - 1) {
      const low = 31 - Math.clz32(bits & -bits);
      bits &= bits - 1;
      if (++seen === next) {
        const id = w * 32 + low;
        out.push([after, id]);
        after = id;
        next = Math.ceil((rows * (out.length + 1)) / runs);
      }
    }
  }
  out.push([after, Number.MAX_SAFE_INTEGER]);
  return out;
}

/** Full-text rowids (ascending) as message ids, unsorted. */
function toIds(found: number[], keys: Float64Array, ids: Int32Array): Int32Array {
  const out = new Int32Array(found.length);
  let p = 0;
  found.forEach((key, i) => {
    p = gallop(keys, key, p);
    out[i] = ids[p]!;
  });
  return out;
}

/** Full-text rowids (ascending) as message ids: a bitset or a sorted id list, whichever is smaller. */
function toSet(found: number[], keys: Float64Array, ids: Int32Array, words: number): TermSet {
  const dense = found.length >= words;
  const bits = dense ? new Uint32Array(words) : undefined;
  const list = dense ? undefined : new Int32Array(found.length);
  // Both ascending: each key is found from the last by galloping, in steps of the log of the gap.
  let p = 0;
  let i = 0;
  for (const key of found) {
    p = gallop(keys, key, p);
    const id = ids[p]!;
    if (bits) bits[id >>> 5]! |= 1 << (id & 31);
    else list![i++] = id;
  }
  if (bits) return { kind: 'bits', bits, docs: found.length };
  return { kind: 'ids', ids: list!.sort(), docs: found.length };
}

/** Messages above `afterId` (up to `upTo`), in id order, with the default columns' texts as FTS5 indexes them. */
export function messageTexts(
  db: Db,
  afterId: number,
  upTo = Number.MAX_SAFE_INTEGER,
): Iterable<[number, ...ColumnTexts]> {
  return db
    .prepare(
      `SELECT e.id, e.subject, body_text(b.text_body), e.from_addr, e.to_addr, e.cc_addr, e.bcc_addr
         FROM emails e JOIN email_bodies b ON b.email_id = e.id WHERE e.id > ? AND e.id <= ? ORDER BY e.id`,
    )
    .raw()
    .iterate(afterId, upTo) as Iterable<[number, ...ColumnTexts]>;
}

/** Runs `work` inside one read transaction, so that everything it reads describes one moment. */
export function inReadTransaction<T>(db: Db, work: () => T): T {
  db.exec('BEGIN');
  try {
    return work();
  } finally {
    db.exec('COMMIT');
  }
}

/** Each other sort key as SQL orders it (collation included), ascending; descending is the reverse. */
export function readOrders(db: Db): Record<OrderKey, Int32Array> {
  const orders = {} as Record<OrderKey, Int32Array>;
  for (const o of ORDERS) {
    orders[o] = Int32Array.from(
      db.prepare(`SELECT id FROM emails e ORDER BY ${SORT_COLUMNS[o]}, e.id`).pluck().all() as number[],
    );
  }
  return orders;
}
