// The in-memory index a benchmark needs in its own process (the engine's floor, aggregates): the
// service's saved file (<archive>.index, ADR 23) when it is this archive's and covers it as it is,
// as a restart loads it; else built here. A build in process is a quarter of an hour at
// 10,000,000 messages, and gives the same snapshot (bench:build checks the bytes).
import type { Db } from '../../engine/sqlite/open.js';
import { archiveState, buildSnapshot } from '../../engine/sqlite/index-build.js';
import { describesArchive, sqliteSavedIndex } from '../../engine/sqlite/index-verify.js';
import { Snapshot } from '../../engine/search/bitsets/snapshot.js';

export function benchSnapshot(db: Db, dbPath: string): { snapshot: Snapshot; how: string } {
  const started = performance.now();
  const file = `${dbPath}.index`;
  const saved = sqliteSavedIndex(db, file, () => {}).loadIfChanged();
  const seconds = () => `${((performance.now() - started) / 1000).toFixed(1)} s`;
  if (saved) {
    // As the import's last step decides (index-save.ts): this archive's, and nothing since.
    const snapshot = new Snapshot(saved.snapshot);
    const state = archiveState(db);
    if (describesArchive(db, snapshot).ok && snapshot.maxId === state.maxId && snapshot.rewrites === state.rewrites)
      return { snapshot, how: `loaded from ${file} in ${seconds()}` };
  }
  const snapshot = new Snapshot(buildSnapshot(db));
  return { snapshot, how: `built in ${seconds()}` };
}
