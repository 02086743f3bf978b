// Catching a snapshot up with appended mail, without rebuilding it. Our writers only append
// (emails.id grows; anything else bumps archive_state.rewrites and forces a full build), so the
// new messages are those above the snapshot's highest id. Their words are found with the same
// tokenizer FTS5 uses (unicode61.ts, checked against SQLite code point by code point) and added
// to the kept sets they belong to; the rest of the snapshot is copied. Which words are kept is
// not revisited here: a word that becomes common later is still found by FTS5, exactly, and the
// builder does a full build once the archive has grown by a quarter.
import type { Db } from './open.js';
import { tokenize } from '../search/unicode61.js';
import { archiveState, inReadTransaction, readOrders } from './index-build.js';
import { MAX_TAIL_PREFIX } from '../search/bitsets/tails.js';
import { PairFinder } from '../search/bitsets/pairs.js';
import { grownTerms } from '../search/bitsets/rows.js';
import { pack, Snapshot, termKey, wordsFor } from '../search/bitsets/snapshot.js';

/**
 * `snapshot` caught up with the mail appended since, or undefined when a full build is due: a
 * rewrite, or a quarter more mail than at the last full build (`fullBuildRows`: the choice of
 * kept words drifts). The one rule of the builder thread (index-builder.ts) and of an import's
 * last step (index-save.ts).
 */
export function caughtUp(db: Db, snapshot: Snapshot | undefined, fullBuildRows: number): SharedArrayBuffer | undefined {
  return snapshot && snapshot.rows < fullBuildRows * 1.25 ? extendSnapshot(db, snapshot) : undefined;
}

/** A new snapshot with the messages added since `old`, or undefined when only a full build will do. */
export function extendSnapshot(db: Db, old: Snapshot): SharedArrayBuffer | undefined {
  return inReadTransaction(db, () => extend(db, old));
}

function extend(db: Db, old: Snapshot): SharedArrayBuffer | undefined {
  const started = performance.now();
  const { maxId, rewrites } = archiveState(db);
  if (rewrites !== old.rewrites || maxId < old.maxId) return undefined;
  if (maxId === old.maxId) return old.buffer;
  const added = db
    .prepare(
      `SELECT e.id, e.fts_key, e.sent_date, e.subject, e.from_addr, e.to_addr, e.cc_addr, e.bcc_addr,
              body_text(b.text_body) AS text_body, b.fts_tags, b.email_id IS NOT NULL AS indexed
         FROM emails e LEFT JOIN email_bodies b ON b.email_id = e.id
        WHERE e.id > ? ORDER BY e.fts_key`,
    )
    .all(old.maxId) as Array<{
    id: number;
    fts_key: number;
    sent_date: number;
    subject: string;
    from_addr: string;
    to_addr: string;
    cc_addr: string;
    bcc_addr: string;
    text_body: string | null;
    fts_tags: string | null;
    indexed: number;
  }>;
  if (added.length > Math.max(1000, old.rows / 4)) return undefined; // a full build is cheaper

  const words = wordsFor(maxId);
  const sent = new Float64Array(maxId + 1).fill(Number.NaN);
  sent.set(old.sent);
  const universe = new Uint32Array(words);
  universe.set(old.universe);
  // Full-text rowids stay sorted: merge the new ones (already in order) into the old.
  const rows = old.rows + added.length;
  const keys = new Float64Array(rows);
  const ids = new Int32Array(rows);
  for (let i = 0, j = 0, n = 0; n < rows; n++) {
    if (j >= added.length || (i < old.rows && old.keys[i]! < added[j]!.fts_key)) {
      keys[n] = old.keys[i]!;
      ids[n] = old.ids[i++]!;
    } else {
      keys[n] = added[j]!.fts_key;
      ids[n] = added[j++]!.id;
    }
  }

  // New members of each kept set, and new words for prefix search.
  const additions = new Map<string, number[]>();
  const add = (key: string, id: number) => {
    if (old.term(key) === undefined) return;
    const list = additions.get(key);
    if (list) list.push(id);
    else additions.set(key, [id]);
  };
  const vocab = new Set(old.vocab);
  const pairs = new PairFinder(old.termKeys.filter((k) => k.startsWith('w:')).map((k) => k.slice(2)));
  // A pair of pair words seen for the first time occurred nowhere before: its set is new.
  const newPairs = new Map<string, number[]>();
  for (const r of added) {
    sent[r.id] = r.sent_date;
    universe[r.id >>> 5]! |= 1 << (r.id & 31);
    if (!r.indexed) continue; // no body row, so no full-text row either
    pairs.pairs([r.subject, r.text_body, r.from_addr, r.to_addr, r.cc_addr, r.bcc_addr], (pair) => {
      const key = pairs.key(pair);
      if (old.term(key)) add(key, r.id);
      else newPairs.set(key, [...(newPairs.get(key) ?? []), r.id]);
    });
    const subject = new Set(tokenize(r.subject));
    const all = new Set([
      ...subject,
      ...[r.text_body ?? '', r.from_addr, r.to_addr, r.cc_addr, r.bcc_addr].flatMap((t) => tokenize(t)),
    ]);
    for (const w of subject) add(termKey('s', w), r.id);
    for (const w of new Set(tokenize(r.fts_tags ?? ''))) add(termKey('t', w), r.id);
    for (const w of all) {
      vocab.add(w);
      if (old.term(termKey('d', w))) {
        add(termKey('d', w), r.id);
        continue;
      }
      // A word not kept itself belongs to the tails of its prefixes.
      const chars = [...w];
      for (let l = 1; l <= Math.min(MAX_TAIL_PREFIX, chars.length); l++)
        add(termKey('p', chars.slice(0, l).join('')), r.id);
    }
  }
  // ids ascend with emails.id above the old maximum, so appending keeps every id list sorted.
  for (const list of additions.values()) list.sort((a, b) => a - b);

  const terms = grownTerms(old, additions, words);
  for (const [key, list] of newPairs) {
    const ids = Int32Array.from(list).sort();
    terms.push({ key, set: { kind: 'ids', ids, docs: ids.length } });
  }

  // The other sort orders are SQL's to give (collations included): read them again.
  const orders = readOrders(db);
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
