// How the worker threads share one snapshot. A builder thread (builder.ts), started by the
// pool, owns the building; it posts each finished snapshot's SharedArrayBuffer on a
// BroadcastChannel private to that pool, and every query thread adopts it: the memory is
// shared, not copied. A thread that starts later asks for the current one ('hello').
//
// A snapshot is used only while it describes the archive as it is: the same highest message id
// and the same rewrite counter (migration 3). Otherwise the planner counts with SQL, exactly as
// before, until the builder has caught up. Permission changes need nothing here: who sees which
// account is read on every query.
import { BroadcastChannel } from 'node:worker_threads';
import type { Db } from '../../db/open.js';
import { prepared } from '../../db/statements.js';
import { Snapshot } from './snapshot.js';

export type SnapshotMessage = { hello: true } | { buffer: SharedArrayBuffer };

const adopted = new WeakMap<Db, Snapshot>();

/** Makes `snapshot` the one searches on `db` count with (tests and tools may call this directly). */
export function adoptSnapshot(db: Db, snapshot: Snapshot | undefined): void {
  if (snapshot) adopted.set(db, snapshot);
  else adopted.delete(db);
}

/** Follows a pool's channel for the life of this thread. */
export function followSnapshots(db: Db, channel: string): void {
  const bc = new BroadcastChannel(channel);
  bc.onmessage = (event) => {
    const message = (event as { data: SnapshotMessage }).data;
    if ('buffer' in message) adoptSnapshot(db, new Snapshot(message.buffer));
  };
  (bc as unknown as { unref?: () => void }).unref?.();
  bc.postMessage({ hello: true } satisfies SnapshotMessage);
}

/** The adopted snapshot when it is current for `db`, else undefined. */
export function currentSnapshot(db: Db): Snapshot | undefined {
  const snap = adopted.get(db);
  if (!snap) return undefined;
  const state = prepared(
    db,
    'SELECT coalesce((SELECT max(id) FROM emails), 0) AS maxId, rewrites FROM archive_state WHERE id = 1',
  ).get() as { maxId: number; rewrites: number };
  return state.maxId === snap.maxId && state.rewrites === snap.rewrites ? snap : undefined;
}

/** What /readyz and the benchmarks report about the shared search state of a thread. */
export function snapshotInfo(
  db: Db,
): { bytes: number; terms: number; maxId: number; builtAt: string; buildMs: number; current: boolean } | null {
  const snap = adopted.get(db);
  if (!snap) return null;
  return {
    bytes: snap.bytes,
    terms: snap.terms,
    maxId: snap.maxId,
    builtAt: new Date(snap.builtAt).toISOString(),
    buildMs: Math.round(snap.buildMs),
    current: currentSnapshot(db) !== undefined,
  };
}
