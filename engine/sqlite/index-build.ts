// Builds a snapshot (snapshot.ts) from the archive, inside one read transaction so that every
// part describes the same moment. FTS5 does the reading: its vocabulary table says which words
// are common, and one MATCH per kept word lists its messages. At 1,000,000 messages this reads
// about 80 million postings; see docs/performance.md for the time it takes.
import { lowerBound } from '../search/bitsets/lower-bound.js';
import type { Db } from './open.js';
import { DEFAULT_COLUMNS } from '../search/compile.js';
import { SORT_COLUMNS } from '../search/sort.js';
import { buildPairs, MAX_PAIR_WORDS, PAIR_SHARE, type ColumnTexts } from '../search/bitsets/pairs.js';
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
    }
  }
  const candidates = [...bound].filter(([, docs]) => docs >= minDocs).sort((a, b) => b[1] - a[1]);

  const terms: Array<{ key: string; set: TermSet }> = [];
  let bytes = 0;
  const list = db.prepare('SELECT rowid FROM email_fts WHERE email_fts MATCH ?').pluck();
  for (const [key] of candidates) {
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
  // Common word pairs (pairs.ts): all of them or none, since a missing pair means "nowhere".
  const pairWords = terms
    .filter((t) => t.key.startsWith('d:') && t.set.docs * PAIR_SHARE >= rows)
    .sort((a, b) => b.set.docs - a.set.docs)
    .slice(0, MAX_PAIR_WORDS)
    .map((t) => t.key.slice(2));
  const pairs = pairWords.length ? buildPairs(pairWords, messageTexts(db, 0), words) : [];
  const pairBytes = pairs.reduce((sum, p) => sum + 4 * (p.set.kind === 'bits' ? words : p.set.ids.length), 0);
  if (bytes + pairBytes <= budget) terms.push(...pairs);
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

/** Full-text rowids (ascending) as message ids, unsorted. */
function toIds(found: number[], keys: Float64Array, ids: Int32Array): Int32Array {
  const out = new Int32Array(found.length);
  let p = 0;
  found.forEach((key, i) => {
    p = lowerBound(keys, key, p);
    out[i] = ids[p]!;
  });
  return out;
}

/** Full-text rowids (ascending) as message ids: a bitset or a sorted id list, whichever is smaller. */
function toSet(found: number[], keys: Float64Array, ids: Int32Array, words: number): TermSet {
  const dense = found.length >= words;
  const bits = dense ? new Uint32Array(words) : undefined;
  const list = dense ? undefined : new Int32Array(found.length);
  // Both ascending: a common word walks the keys once, a rarer one jumps by binary search.
  const jump = found.length * 20 < keys.length;
  let p = 0;
  let i = 0;
  for (const key of found) {
    if (jump) p = lowerBound(keys, key, p);
    else while (keys[p]! < key) p++;
    const id = ids[p]!;
    if (bits) bits[id >>> 5]! |= 1 << (id & 31);
    else list![i++] = id;
  }
  if (bits) return { kind: 'bits', bits, docs: found.length };
  return { kind: 'ids', ids: list!.sort(), docs: found.length };
}

/** Messages above `afterId`, in id order, with the default columns' texts as FTS5 indexes them. */
export function messageTexts(db: Db, afterId: number): Iterable<[number, ...ColumnTexts]> {
  return db
    .prepare(
      `SELECT e.id, e.subject, body_text(b.text_body), e.from_addr, e.to_addr, e.cc_addr, e.bcc_addr
         FROM emails e JOIN email_bodies b ON b.email_id = e.id WHERE e.id > ? ORDER BY e.id`,
    )
    .raw()
    .iterate(afterId) as Iterable<[number, ...ColumnTexts]>;
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
