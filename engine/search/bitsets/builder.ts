// The builder thread: one per pool (engine/pool.ts starts it for a SQLite archive). It builds a
// snapshot at start, then looks at the archive once a second; when messages were added it
// extends the snapshot (extend.ts), when they were rewritten it builds anew, once the archive
// has been quiet for a moment (an import in progress would otherwise be redone over and over). It runs at low CPU priority, like the query lane:
// searches are still answered while it works, by SQL.
import { lowerThreadPriority } from '../../thread-priority.js';
import { BroadcastChannel, parentPort, workerData } from 'node:worker_threads';
import { openArchive } from '../../db/open.js';
import { archiveState, buildSnapshot } from './build.js';
import { extendSnapshot } from './extend.js';
import { Snapshot } from './snapshot.js';
import type { SnapshotMessage } from './share.js';
import { ColumnPoster } from '../aggregate-columns.js';

export interface BuilderData {
  dbPath: string;
  channel: string;
  maxBytes: number;
  /** Milliseconds between looks at the archive. */
  pollMs?: number;
}

const data = workerData as BuilderData;
lowerThreadPriority();

const db = openArchive(data.dbPath, { readonly: true });
const bc = new BroadcastChannel(data.channel);
const columns = new ColumnPoster(db, data.channel);
let latest: SharedArrayBuffer | undefined;
let latestSnapshot: Snapshot | undefined;
let fullBuildRows = 0;
let built: { maxId: number; rewrites: number } | undefined;
let seen: { maxId: number; rewrites: number; at: number } | undefined;
const QUIET_MS = 2000;

bc.onmessage = (event) => {
  const message = (event as { data: SnapshotMessage }).data;
  if ('hello' in message && latest) bc.postMessage({ buffer: latest } satisfies SnapshotMessage);
};

function tick(): void {
  const now = Date.now();
  const state = archiveState(db);
  const same = (a?: { maxId: number; rewrites: number }) => a?.maxId === state.maxId && a.rewrites === state.rewrites;
  if (!same(seen)) seen = { ...state, at: now };
  if (same(built)) return;
  // Rebuild once the archive has been still for QUIET_MS (the first build does not wait).
  if (built && now - seen!.at < QUIET_MS) return;
  // Appended mail is added to the current snapshot; a rewrite, or a quarter more mail than at
  // the last full build (the choice of kept words drifts), means a full build.
  const extended =
    latestSnapshot && latestSnapshot.rows < fullBuildRows * 1.25 ? extendSnapshot(db, latestSnapshot) : undefined;
  latest = extended ?? buildSnapshot(db, { maxBytes: data.maxBytes });
  latestSnapshot = new Snapshot(latest);
  if (!extended) fullBuildRows = latestSnapshot.rows;
  built = state;
  bc.postMessage({ buffer: latest } satisfies SnapshotMessage);
  columns.post(latestSnapshot); // aggregates' group columns, ready before the first aggregate
  parentPort?.postMessage({ built: state });
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
