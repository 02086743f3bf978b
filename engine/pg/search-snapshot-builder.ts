// The builder thread of a PostgreSQL archive's in-memory search index (ADR 22): one per pool,
// as for SQLite (engine/search/bitsets/builder.ts). Once a second it looks at the archive; it
// refreshes the snapshot when Mail Archiver has archived mail (a higher id) or when the refresh
// interval has passed (a delete, a folder move or a reassignment shows in the next refresh).
//
// Each refresh exports a database snapshot from a transaction of its own that reads nothing
// (so it holds no lock on Mail Archiver's tables, only the snapshot), builds in a second
// transaction that imports it and ends, and posts the buffer with the snapshot's token. The
// exporting transaction stays open while its snapshot serves, and a little after the next one
// is posted, so a search that took the old token can still import it.
import { lowerThreadPriority } from '../thread-priority.js';
import { BroadcastChannel, parentPort, workerData } from 'node:worker_threads';
import type { SnapshotMessage } from '../search/bitsets/share.js';
import { catchUpSearchIndex } from './search-index.js';
import { exportSnapshot, type ExportedSnapshot } from './search-snapshot.js';
import { T } from './columns.js';
import { sql } from './sql.js';
import { PgStore } from './store.js';

export interface PgBuilderData {
  url: string;
  /** The server whose snapshots the index is built from and read in: the first read replica, else `url`. */
  snapshotUrl?: string;
  timeZone: string;
  channel: string;
  maxBytes: number;
  /** Milliseconds between looks at the archive (default 1,000). */
  pollMs?: number;
  /** Longest time between refreshes (default 5,000 ms; at least ten times the last refresh). */
  refreshMs?: number;
}

const data = workerData as PgBuilderData;
lowerThreadPriority();

/** How long an exported snapshot stays importable after the next one is posted. */
const RETIRE_MS = 10_000;

const store = new PgStore({ url: data.url, timeZone: data.timeZone, connections: 1 });
const bc = new BroadcastChannel(data.channel);
let current: ExportedSnapshot | undefined;
let last = { at: 0, maxId: -1, ms: 0 };

bc.onmessage = (event) => {
  const message = (event as { data: SnapshotMessage }).data;
  if ('hello' in message && current) post();
};

function post(): void {
  if (!current) return;
  bc.postMessage({ buffer: current.state.snapshot.buffer, token: current.token } satisfies SnapshotMessage);
}

async function refresh(): Promise<void> {
  await catchUpSearchIndex(store);
  const next = await exportSnapshot(data.snapshotUrl ?? data.url, current?.state, { maxBytes: data.maxBytes });
  const previous = current;
  current = next;
  post();
  parentPort?.postMessage({ built: { maxId: next.state.snapshot.maxId, rows: next.state.snapshot.rows } });
  if (previous) setTimeout(() => void previous.release(), RETIRE_MS).unref();
}

async function tick(): Promise<void> {
  const [state] = await store.primary<{ max: number }>(
    sql`SELECT coalesce(max("Id"), 0)::float8 AS max FROM ${T.emails}`,
  );
  const now = Date.now();
  const interval = Math.max(data.refreshMs ?? 5_000, last.ms * 10);
  if (current && state!.max === last.maxId && now - last.at < interval) return;
  const started = performance.now();
  await refresh();
  last = { at: Date.now(), maxId: state!.max, ms: performance.now() - started };
}

async function loop(): Promise<void> {
  try {
    await tick();
  } catch (err) {
    parentPort?.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
  setTimeout(() => void loop(), data.pollMs ?? 1000);
}
void loop();
