// The builder thread: one per pool (engine/pool.ts starts it for a SQLite archive). It builds a
// snapshot at start, then looks at the archive once a second and rebuilds when messages were
// added or rewritten, once the archive has been quiet for a moment (an import in progress
// would otherwise be rebuilt over and over). It runs at low CPU priority, like the query lane:
// searches are still answered while it works, by SQL.
import { setPriority } from 'node:os';
import { BroadcastChannel, parentPort, workerData } from 'node:worker_threads';
import { openArchive } from '../../db/open.js';
import { archiveState, buildSnapshot } from './build.js';
import type { SnapshotMessage } from './share.js';

export interface BuilderData {
  dbPath: string;
  channel: string;
  maxBytes: number;
  /** Milliseconds between looks at the archive. */
  pollMs?: number;
}

const data = workerData as BuilderData;
if (process.platform === 'linux') {
  try {
    setPriority(10);
  } catch {
    // not permitted here: normal priority
  }
}

const db = openArchive(data.dbPath, { readonly: true });
const bc = new BroadcastChannel(data.channel);
let latest: SharedArrayBuffer | undefined;
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
  latest = buildSnapshot(db, { maxBytes: data.maxBytes });
  built = state;
  bc.postMessage({ buffer: latest } satisfies SnapshotMessage);
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
