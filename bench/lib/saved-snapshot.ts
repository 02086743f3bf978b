// The in-memory index a benchmark needs in its own process (the engine's floor, aggregates): the
// service's saved file (<archive>.index, ADR 23) when it is this archive's and covers it as it is,
// as a restart loads it; else built here. A build in process is a quarter of an hour at
// 10,000,000 messages, and gives the same snapshot (bench:build checks the bytes).
import type { Db } from '../../engine/sqlite/open.js';
import { buildSnapshot } from '../../engine/sqlite/index-build.js';
import { searchIndexKey } from '../../engine/sqlite/index-verify.js';
import { SavedIndex } from '../../engine/search/bitsets/saved-index.js';
import { Snapshot } from '../../engine/search/bitsets/snapshot.js';

export function benchSnapshot(db: Db, dbPath: string): { snapshot: Snapshot; how: string } {
  const started = performance.now();
  const file = `${dbPath}.index`;
  const saved = new SavedIndex({
    file,
    store: 'sqlite',
    identity: 'sqlite-archive',
    key: searchIndexKey(db),
    log: () => {},
  }).loadIfChanged();
  const seconds = () => `${((performance.now() - started) / 1000).toFixed(1)} s`;
  if (saved) {
    const snapshot = new Snapshot(saved.snapshot);
    const maxId = db.prepare('SELECT coalesce(max(id), 0) FROM emails').pluck().get() as number;
    if (snapshot.maxId === maxId) return { snapshot, how: `loaded from ${file} in ${seconds()}` };
  }
  const snapshot = new Snapshot(buildSnapshot(db));
  return { snapshot, how: `built in ${seconds()}` };
}
