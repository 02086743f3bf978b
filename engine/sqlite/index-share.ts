// The SQLite side of the shared search index: which snapshot each connection counts with, taken
// from the pool's channel (engine/search/bitsets/share.ts) and current only while the archive has
// not changed since it was built.
import type { SearchIndexInfo } from '../../shared/jobs.js';
import { SnapshotFollower } from '../search/bitsets/share.js';
import type { Snapshot } from '../search/bitsets/snapshot.js';
import type { Db } from './open.js';
import { prepared } from './statements.js';

const adopted = new WeakMap<Db, Snapshot>();
const channels = new WeakMap<Db, SnapshotFollower>();

/** Makes `snapshot` the one searches on `db` count with (tests and tools may call this directly). */
export function adoptSnapshot(db: Db, snapshot: Snapshot | undefined): void {
  if (snapshot) adopted.set(db, snapshot);
  else adopted.delete(db);
}

/**
 * Follows a pool's channel for the life of this thread; resolves once the thread holds the
 * snapshot already posted there, if any (SnapshotFollower.settled).
 */
export function followSnapshots(db: Db, channel: string, posted?: Int32Array): Promise<void> {
  const follower = new SnapshotFollower(channel, posted);
  channels.set(db, follower);
  return follower.settled();
}

/** The snapshot each connection last took from its channel: a newer one is adopted. */
const followed = new WeakMap<Db, Snapshot>();

function receive(db: Db): void {
  const latest = channels.get(db)?.latest();
  if (!latest || followed.get(db) === latest.snapshot) return;
  followed.set(db, latest.snapshot);
  adoptSnapshot(db, latest.snapshot);
}

/** The adopted snapshot when it is current for `db`, else undefined. */
export function currentSnapshot(db: Db): Snapshot | undefined {
  receive(db);
  const snap = adopted.get(db);
  if (!snap) return undefined;
  const state = prepared(
    db,
    'SELECT coalesce((SELECT max(id) FROM emails), 0) AS maxId, rewrites FROM archive_state WHERE id = 1',
  ).get() as { maxId: number; rewrites: number };
  return state.maxId === snap.maxId && state.rewrites === snap.rewrites ? snap : undefined;
}

/** What /readyz reports about the shared search index of this thread; undefined when it is off. */
export function snapshotInfo(db: Db): SearchIndexInfo | undefined {
  if (!channels.has(db)) return undefined;
  receive(db);
  const snap = adopted.get(db);
  if (!snap) return { status: 'building' };
  const origin = channels.get(db)?.latest()?.origin;
  return {
    status: currentSnapshot(db) ? 'current' : 'catching up',
    ...(origin ? { origin: origin.kind, fromFile: origin.fromFile } : {}),
    maxId: snap.maxId,
    bytes: snap.bytes,
    terms: snap.terms,
    builtAt: new Date(snap.builtAt).toISOString(),
    buildMs: Math.round(snap.buildMs),
  };
}
