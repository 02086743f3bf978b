// Whether a snapshot loaded from a file (persist.ts, ADR 23) describes this SQLite archive. The
// archive state (highest id, rewrite counter) must allow it: the same rewrite count and no fewer
// messages, so that what changed since is only appended mail (extend.ts adds it). A copy of
// another archive, or an archive restored from a backup and filled again, can reach the same two
// numbers with other mail: so the messages the snapshot knows are compared too, by a checksum of
// each one's id, full-text rowid and date that SQLite sums in one pass of the table (a read of
// every row from JavaScript took seconds at 300,000 messages under load; this takes a scan).
// None of this proves who wrote the file: its MAC does (persist.ts, searchIndexKey below, ADR 31).
import type { Db } from './open.js';
import { archiveState, inReadTransaction } from './index-build.js';
import type { Snapshot } from '../search/bitsets/snapshot.js';
import { SavedIndex, type BuilderLog } from '../search/bitsets/saved-index.js';

// Every intermediate stays below 2^53, so SQLite's 64-bit integers and JavaScript's doubles
// compute the same value (rowids are below 2^53 by fts-key.ts; both truncate % toward zero), and
// the total is taken modulo P on both sides (JavaScript adds modulo P as it goes).
const P = 2_147_483_647;
const rowSum = (id: number, key: number, sent: number) => ((id * 7919 + (key % 1_000_003)) * 31 + (sent % 999_983)) % P;
/** Dates before 1970 make negative terms: compare the non-negative representatives. */
const mod = (n: number) => ((n % P) + P) % P;
const ROW_SUM_SQL = `((id * 7919 + fts_key % 1000003) * 31 + sent_date % 999983) % ${P}`;

/** The secret this archive's saved index is signed with (migration 11; ADR 31). */
export function searchIndexKey(db: Db): Buffer {
  return db.prepare('SELECT secret FROM search_index_key WHERE id = 1').pluck().get() as Buffer;
}

export function describesArchive(db: Db, snap: Snapshot): { ok: true } | { ok: false; reason: string } {
  return inReadTransaction(db, () => {
    const state = archiveState(db);
    if (state.rewrites !== snap.rewrites || state.maxId < snap.maxId)
      return { ok: false, reason: 'mail was changed or deleted since it was saved' };
    const found = db
      .prepare(`SELECT count(*) AS n, coalesce(sum(${ROW_SUM_SQL}), 0) % ${P} AS sum FROM emails WHERE id <= ?`)
      .get(snap.maxId) as { n: number; sum: number };
    let sum = 0;
    for (let i = 0; i < snap.rows; i++) {
      const id = snap.ids[i]!;
      sum = (sum + rowSum(id, snap.keys[i]!, snap.sent[id]!)) % P;
    }
    return found.n === snap.rows && mod(found.sum) === mod(sum)
      ? { ok: true }
      : { ok: false, reason: 'it describes other mail' };
  });
}

/** The saved index file of a SQLite archive, signed with its key (the builder, the import, benchmarks). */
export const sqliteSavedIndex = (db: Db, file: string, log: BuilderLog): SavedIndex =>
  new SavedIndex({ file, store: 'sqlite', identity: 'sqlite-archive', key: searchIndexKey(db), log });
