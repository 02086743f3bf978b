// Whether a snapshot loaded from a file (persist.ts) describes this SQLite archive. The archive
// state (highest id, rewrite counter) must allow it: the same rewrite count and no fewer
// messages, so that what changed since is only appended mail (extend.ts adds it). A copy of
// another archive, or an archive restored from a backup and filled again, can reach the same two
// numbers with other mail: so every message the snapshot knows is compared too, by id, full-text
// rowid and date (one read of three integer columns, about a second at a million messages).
import type { Db } from '../../db/open.js';
import { archiveState, inReadTransaction } from './build.js';
import type { Snapshot } from './snapshot.js';

export function describesArchive(db: Db, snap: Snapshot): { ok: true } | { ok: false; reason: string } {
  return inReadTransaction(db, () => {
    const state = archiveState(db);
    if (state.rewrites !== snap.rewrites || state.maxId < snap.maxId)
      return { ok: false, reason: 'mail was changed or deleted since it was saved' };
    let n = 0;
    for (const [id, key, date] of db
      .prepare('SELECT id, fts_key, sent_date FROM emails WHERE id <= ? ORDER BY fts_key')
      .raw()
      .iterate(snap.maxId) as Iterable<[number, number, number]>) {
      if (n >= snap.rows || snap.keys[n] !== key || snap.ids[n] !== id || snap.sent[id] !== date)
        return { ok: false, reason: 'it describes other mail' };
      n++;
    }
    return n === snap.rows ? { ok: true } : { ok: false, reason: 'it describes other mail' };
  });
}
