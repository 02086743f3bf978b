// The builder thread: one per pool (engine/pool/pool.ts starts it for a SQLite archive). It builds a
// snapshot at start, then looks at the archive once a second; when messages were added it
// extends the snapshot (extend.ts), when they were rewritten it builds anew, once the archive
// has been quiet for a moment (an import in progress would otherwise be redone over and over). It runs at low CPU priority, like the query lane:
// searches are still answered while it works, by SQL.
//
// With a saved index file (search/bitsets/persist.ts, ADR 23) it starts from the file instead: loaded if
// signed with this archive's key (ADR 31), checked against the archive (index-verify.ts), posted, then
// caught up with the mail appended since (index-extend.ts); a full build, when one is due, is done by one
// process of the host at a time (search/bitsets/saved-index.ts) and saved for the others and for the next
// start.
import { lowerThreadPriority } from '../threads/priority.js';
import { BroadcastChannel, parentPort, workerData } from 'node:worker_threads';
import { openArchive } from './open.js';
import { archiveState, buildSnapshot } from './index-build.js';
import { caughtUp } from './index-extend.js';
import { once, readyLine, type BuilderLog } from '../search/bitsets/saved-index.js';
import { Snapshot } from '../search/bitsets/snapshot.js';
import { postSnapshot, type SnapshotMessage, type SnapshotOrigin } from '../search/bitsets/share.js';
import { describesArchive, sqliteSavedIndex } from './index-verify.js';
import { ColumnPoster } from './aggregate-columns.js';

export interface BuilderData {
  dbPath: string;
  channel: string;
  /** The pool's count of posted snapshots (share.ts newPostCount). */
  posted?: Int32Array;
  maxBytes: number;
  /** Milliseconds between looks at the archive. */
  pollMs?: number;
  /** Where the index is saved and loaded from (Engine:SearchIndexFile); unset: not saved. */
  indexFile?: string;
}

const data = workerData as BuilderData;
// Low priority for the long work (a full build, the refreshes), but only once searches are
// answered from the index or a full build begins: loading a saved file and catching it up is
// what ends the slow start, and takes seconds.
const background = once(lowerThreadPriority);

const db = openArchive(data.dbPath, { readonly: true });
const bc = new BroadcastChannel(data.channel);
// Aggregates' group columns, read here once per snapshot (at low priority, after the index is
// posted) so that a query thread's first aggregate finds them ready.
const columns = new ColumnPoster(db, data.channel);
let latest: SharedArrayBuffer | undefined;
let latestSnapshot: Snapshot | undefined;
let fullBuildRows = 0;
let built: { maxId: number; rewrites: number } | undefined;
let seen: { maxId: number; rewrites: number; at: number } | undefined;
let origin: SnapshotOrigin = { kind: 'built', fromFile: false };
/** Catch a loaded snapshot up at once: the quiet wait is for imports in progress, not for a start. */
let loadedBehind = false;
const QUIET_MS = 2000;

const log: BuilderLog = (line, level) => parentPort?.postMessage({ log: line, level });
const saved = data.indexFile ? sqliteSavedIndex(db, data.indexFile, log) : undefined;

const post = () => postSnapshot(bc, data.posted, { buffer: latest!, origin });
const announce = once(() => readyLine(origin, latestSnapshot!.rows, log, saved?.keptIn));

bc.onmessage = (event) => {
  const message = (event as { data: SnapshotMessage }).data;
  if ('hello' in message && latest) post();
};

/** Adopts the saved file when it changed since the last look and describes this archive. */
function adoptSaved(): void {
  const loaded = saved?.loadIfChanged();
  if (!loaded) return;
  const snap = new Snapshot(loaded.snapshot);
  if (latestSnapshot && snap.maxId <= latestSnapshot.maxId && snap.rewrites === latestSnapshot.rewrites) return;
  const fits = describesArchive(db, snap);
  if (!fits.ok) {
    log(`search index: ${saved!.file} not used (${fits.reason}); building instead`);
    return;
  }
  latest = loaded.snapshot;
  latestSnapshot = snap;
  fullBuildRows = loaded.meta.fullBuildRows;
  built = { maxId: snap.maxId, rewrites: snap.rewrites };
  origin = { kind: 'loaded', fromFile: true };
  loadedBehind = true;
  post();
  parentPort?.postMessage({ built });
}

function tick(): void {
  const now = Date.now();
  const state = archiveState(db);
  const same = (a?: { maxId: number; rewrites: number }) => a?.maxId === state.maxId && a.rewrites === state.rewrites;
  if (!same(seen)) seen = { ...state, at: now };
  if (same(built)) return;
  // At start, and while another process of the host builds: its file, once written.
  if (saved) {
    adoptSaved();
    if (same(built)) {
      announce();
      background();
      return columns.post(latestSnapshot!);
    }
  }
  // Rebuild once the archive has been still for QUIET_MS (the first build does not wait).
  if (built && now - seen!.at < QUIET_MS && !loadedBehind) return;
  loadedBehind = false;
  // Appended mail is added to the current snapshot, unless a full build is due (caughtUp).
  const extended = caughtUp(db, latestSnapshot, fullBuildRows);
  if (extended) {
    latest = extended;
    origin = { kind: 'caught up', fromFile: origin.fromFile };
  } else {
    if (saved) {
      // Another process of the host is building: searches stay on SQL until its file is written.
      if (!saved.mayBuild()) return;
      // It may have written it just before giving the lock back: then the file, not a build.
      const before = latest;
      adoptSaved();
      if (latest !== before) {
        saved.releaseLock();
        return;
      }
    }
    try {
      background();
      latest = buildSnapshot(db, { maxBytes: data.maxBytes });
    } catch (err) {
      saved?.releaseLock();
      throw err;
    }
    origin = { kind: 'built', fromFile: false };
  }
  latestSnapshot = new Snapshot(latest);
  if (!extended) fullBuildRows = latestSnapshot.rows;
  built = state;
  post();
  parentPort?.postMessage({ built: state });
  announce();
  background();
  // Saved before the aggregates' columns are read (about 50 s at 1,000,000 messages): a process
  // stopped in that time would otherwise leave no file, and its next start would build again.
  saved?.save(latest, { fullBuild: !extended, fullBuildRows });
  columns.post(latestSnapshot);
}

function loop(): void {
  try {
    tick();
  } catch (err) {
    parentPort?.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
  setTimeout(loop, data.pollMs ?? 1000);
}
loop();
