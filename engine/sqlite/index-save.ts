// An import's last step (mail-archive import): the saved search index (ADR 23) brought up to the
// archive it just wrote, so that the service's next start loads it and is current in seconds
// instead of building it (557 s at 1,000,000 messages). The same choices as the builder thread
// (index-builder.ts): the saved file caught up with the mail appended since when it still
// describes the archive and the archive has not grown by a quarter since its last full build,
// else a full build; one process of the host builds at a time (the build lock).
import { archiveState, buildSnapshot } from './index-build.js';
import { caughtUp } from './index-extend.js';
import { describesArchive, sqliteSavedIndex } from './index-verify.js';
import type { Db } from './open.js';
import type { BuilderLog } from '../search/bitsets/saved-index.js';
import { Snapshot } from '../search/bitsets/snapshot.js';
import type { IndexSaveOutcome } from '../store-contract.js';

export function saveCurrentIndex(db: Db, o: { file: string; maxBytes: number; log: BuilderLog }): IndexSaveOutcome {
  const started = performance.now();
  const saved = sqliteSavedIndex(db, o.file, o.log);
  const loaded = saved.loadIfChanged();
  let snap = loaded ? new Snapshot(loaded.snapshot) : undefined;
  if (snap && !describesArchive(db, snap).ok) snap = undefined;
  const state = archiveState(db);
  if (snap && snap.maxId === state.maxId && snap.rewrites === state.rewrites)
    return { kind: 'current', rows: snap.rows };
  // The lock first: while another process builds, it saves, and catching up here would be lost.
  if (!saved.mayBuild()) return { kind: 'busy' };
  const fullBuildRows = loaded?.meta.fullBuildRows ?? 0;
  let extended: SharedArrayBuffer | undefined;
  let buffer: SharedArrayBuffer;
  try {
    extended = caughtUp(db, snap, fullBuildRows);
    buffer = extended ?? buildSnapshot(db, { maxBytes: o.maxBytes });
  } catch (err) {
    saved.releaseLock();
    throw err;
  }
  const rows = new Snapshot(buffer).rows;
  // Saved whatever the file's age (fullBuild: true): the import waits for it to be written.
  saved.save(buffer, { fullBuild: true, fullBuildRows: extended ? fullBuildRows : rows });
  return { kind: extended ? 'caught up' : 'built', rows, seconds: (performance.now() - started) / 1000 };
}
