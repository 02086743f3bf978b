// The builder thread of a PostgreSQL archive's in-memory search index (ADR 22): one per pool,
// as for SQLite (engine/sqlite/index-builder.ts). Once a second it looks at the archive; it
// refreshes the snapshot when Mail Archiver has archived mail (a higher id), when the server's
// write counters of the tables the index reads have moved (a delete, a folder move or a
// reassignment shows in the next refresh), and at the latest after a backstop interval (the
// counters are a hint, not proof: they are flushed lazily and can be reset). A refresh reads
// every message's attributes again, seconds of work at a million messages: it is not repeated
// while nothing has written.
//
// Each refresh exports a database snapshot from a transaction of its own that reads nothing
// (so it holds no lock on Mail Archiver's tables, only the snapshot), builds in a second
// transaction that imports it and ends, and posts the buffer with the snapshot's token. The
// exporting transaction stays open while its snapshot serves, and a little after the next one
// is posted, so a search that took the old token can still import it.
//
// With a saved index file (Engine:SearchIndexFile, ADR 23; unset, a file of this database in the
// working directory's data/: pool.ts defaultPostgresIndexFile) the first refresh starts from the
// file instead of from nothing: the same refresh that follows Mail Archiver's writes reads every
// message's attributes again and adds only the side-index documents the file does not hold, so
// what changed while the service was stopped is caught up exactly as a change while it runs.
import { lowerThreadPriority } from '../threads/priority.js';
import { BroadcastChannel, parentPort, workerData } from 'node:worker_threads';
import { once, readyLine, SavedIndex, type BuilderLog } from '../search/bitsets/saved-index.js';
import { postSnapshot, type SnapshotMessage, type SnapshotOrigin } from '../search/bitsets/share.js';
import { KEY_POSITIONS, Snapshot } from '../search/bitsets/snapshot.js';
import { addWordPairs, catchUpSearchIndex } from './search-index.js';
import {
  exportSnapshot,
  PAIRS_KEY,
  SIDE_INDEX_MIN_DOCS,
  type ExportedSnapshot,
  type PgSnapshotState,
} from './search-snapshot.js';
import { T } from './columns.js';
import { fromSections, sections } from './saved-sections.js';
import { raw, sql } from './sql.js';
import { PgStore } from './store.js';

export interface PgBuilderData {
  url: string;
  /** The server whose snapshots the index is built from and read in: the first read replica, else `url`. */
  snapshotUrl?: string;
  timeZone: string;
  channel: string;
  /** The pool's count of posted snapshots (share.ts newPostCount). */
  posted?: Int32Array;
  maxBytes: number;
  /** Milliseconds between looks at the archive (default 1,000). */
  pollMs?: number;
  /** Shortest time between refreshes (default 5,000 ms; at least ten times the last refresh). */
  refreshMs?: number;
  /**
   * Longest time between refreshes while the write counters say nothing was written (default
   * 60,000 ms; `refreshMs` when the counters cannot be read or snapshots come from a replica,
   * whose counters do not see the primary's writes).
   */
  backstopMs?: number;
  /** Where the index is saved and loaded from (pool.ts savedIndexFile); unset: not saved. */
  indexFile?: string;
}

const data = workerData as PgBuilderData;
// Low priority for the long work (a full build, the refreshes), but only once searches are
// answered from the index or a full build begins: loading a saved file and catching it up is
// what ends the slow start, and takes seconds.
const background = once(lowerThreadPriority);

/** How long an exported snapshot stays importable after the next one is posted. */
const RETIRE_MS = 10_000;

const store = new PgStore({ url: data.url, timeZone: data.timeZone, connections: 1 });
const bc = new BroadcastChannel(data.channel);
let current: ExportedSnapshot | undefined;
let last: { at: number; maxId: number; ms: number; writes: number | null } = { at: 0, maxId: -1, ms: 0, writes: null };
let origin: SnapshotOrigin = { kind: 'built', fromFile: false };
const log: BuilderLog = (line, level) => parentPort?.postMessage({ log: line, level });
let saved: SavedIndex | undefined;
const announce = once(() => readyLine(origin, current!.state.snapshot.rows, log, saved?.keptIn));

/** The role may not read the key: said once, and the index is then neither saved nor loaded. */
let keyRefused = false;

/**
 * The saved file's owner: this database of this cluster (a file of another is ignored), and the
 * secret it is signed with, kept in our schema (migration 14, ADR 31). Undefined when the role
 * may not read that secret (a role granted SELECT before the table existed): without it no file
 * can be trusted, but searches are still answered from the index built in memory.
 */
async function savedIndex(file: string): Promise<SavedIndex | undefined> {
  const [id] = await store.primary<{ identity: string }>(
    sql`SELECT (SELECT system_identifier FROM pg_control_system())::text || ':' || current_database() || ':' ||
               'mail_archive_gateway.search_docs'::regclass::oid::text AS identity`,
  );
  let key: Buffer;
  try {
    const [row] = await store.primary<{ secret: Buffer }>(
      sql`SELECT secret FROM mail_archive_gateway.search_index_key WHERE id = 1`,
    );
    key = row!.secret;
  } catch (err) {
    if ((err as { code?: string }).code !== '42501') throw err; // insufficient_privilege
    keyRefused = true;
    log(
      `search index: not saved to ${file} nor loaded from it: this role may not read mail_archive_gateway.search_index_key, which signs it (grant SELECT on it: the Privileges section of docs/postgres.md)`,
      'warn',
    );
    return undefined;
  }
  return new SavedIndex({ file, store: 'postgres', identity: id!.identity, key, log });
}

/** The saved index as the state a refresh starts from, or undefined when there is none to use. */
function loadSaved(): PgSnapshotState | undefined {
  const loaded = saved?.loadIfChanged();
  if (!loaded) return undefined;
  const snapshot = new Snapshot(loaded.snapshot);
  const parts = fromSections(loaded.sections);
  if (snapshot.keyKind !== KEY_POSITIONS || !parts) return undefined;
  const keptFrom = loaded.meta.extra?.keptFrom;
  // The refresh that follows reads every message's attributes again and compares them with these.
  return {
    snapshot,
    rows: parts.rows,
    indexed: new Set(parts.indexed),
    fullBuildRows: loaded.meta.fullBuildRows,
    ...(typeof keptFrom === 'number' ? { keptFrom } : {}),
  };
}

/**
 * The snapshot serving was built by an older rule of which words to keep (a file saved by an
 * earlier release): a refresh rebuilds it whole in the background while it serves. It answers
 * exactly all the same (a word it does not keep is asked of the side index), only slower.
 */
const oldRule = (state: PgSnapshotState | undefined) => state !== undefined && state.keptFrom !== SIDE_INDEX_MIN_DOCS;

bc.onmessage = (event) => {
  const message = (event as { data: SnapshotMessage }).data;
  if ('hello' in message && current) post();
};

function post(): void {
  if (!current) return;
  postSnapshot(bc, data.posted, { buffer: current.state.snapshot.buffer, token: current.token, origin });
}

async function refresh(): Promise<boolean> {
  await catchUpSearchIndex(store);
  if (data.indexFile && !saved && !keyRefused) saved = await savedIndex(data.indexFile);
  let old = current?.state;
  if (!old && saved) {
    old = loadSaved();
    // Another process of the host is building: searches stay on SQL until its file is written.
    if (!old && !saved.mayBuild()) return false;
    // It may have written it just before giving the lock back: then the file, not a build.
    if (!old) old = loadSaved();
    if (old) saved.releaseLock();
  }
  let next: ExportedSnapshot;
  try {
    if (!old) background();
    // Whole only once the file's snapshot serves: a start is never slowed by the rebuild.
    next = await exportSnapshot(data.snapshotUrl ?? data.url, old, {
      maxBytes: data.maxBytes,
      whole: current !== undefined && oldRule(old),
    });
  } catch (err) {
    saved?.releaseLock();
    throw err;
  }
  const full = next.state !== old && next.state.full === true;
  origin = full
    ? { kind: 'built', fromFile: false }
    : current
      ? { kind: 'caught up', fromFile: origin.fromFile }
      : { kind: 'loaded', fromFile: true };
  const previous = current;
  current = next;
  post();
  announce();
  background();
  parentPort?.postMessage({ built: { maxId: next.state.snapshot.maxId, rows: next.state.snapshot.rows } });
  if (previous) setTimeout(() => void previous.release(), RETIRE_MS).unref();
  if (saved && next.state !== previous?.state) {
    saved.save(next.state.snapshot.buffer, {
      fullBuild: full,
      fullBuildRows: next.state.fullBuildRows,
      sections: sections(next.state),
      ...(next.state.keptFrom !== undefined ? { extra: { keptFrom: next.state.keptFrom } } : {}),
    });
  }
  if (oldRule(next.state))
    log(
      `search index: the saved file keeps fewer words than this release would; rebuilding it in the background while it serves`,
    );
  return true;
}

/** How long one tick gives documents their word pairs (search-index.ts addWordPairs) at most. */
const PAIRS_SLICE_MS = 5_000;
let pairsDone = false;

async function tick(): Promise<void> {
  // Once searches are served: the pairs make phrases faster, they are not needed to answer.
  if (current && !pairsDone) {
    pairsDone = await addWordPairs(store, performance.now() + PAIRS_SLICE_MS);
    // The next snapshot tells the threads to use them, unless this one does already: a start
    // with every document paired (as usual) is not worth a refresh.
    if (pairsDone && current.state.snapshot.term(PAIRS_KEY) === undefined) last.at = 0;
  }
  const [state] = await store.primary<{ max: number; writes: number | null }>(
    sql`SELECT coalesce(max("Id"), 0)::float8 AS max, ${WRITES} AS writes FROM ${T.emails}`,
  );
  const now = Date.now();
  const spacing = Math.max(data.refreshMs ?? 5_000, last.ms * 10);
  const counted = state!.writes !== null && last.writes !== null && data.snapshotUrl === undefined;
  const written = !counted || state!.writes !== last.writes || oldRule(current?.state);
  const interval = written ? spacing : Math.max(data.backstopMs ?? 60_000, spacing);
  if (current && state!.max === last.maxId && now - last.at < interval) return;
  const started = performance.now();
  if (!(await refresh())) return;
  // The counters as read before this refresh: a write they did not include yet moves them later.
  last = { at: Date.now(), maxId: state!.max, ms: performance.now() - started, writes: state!.writes };
}

/**
 * Rows inserted, updated and deleted in the tables a refresh reads (Mail Archiver's messages and
 * the side index), as the server's statistics count them; null when it does not count
 * (`track_counts` off). Counted by the writing backend and flushed when it goes idle (within
 * about a second of a commit), rolled-back writes included: a hint that a refresh may find
 * something, never a reason to skip one past the backstop.
 */
const WRITES = raw(`(SELECT CASE WHEN current_setting('track_counts')::bool
                               THEN coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::float8 END
                      FROM pg_stat_user_tables
                     WHERE relid IN ('mail_archiver."ArchivedEmails"'::regclass,
                                     'mail_archive_gateway.search_docs'::regclass))`);

async function loop(): Promise<void> {
  try {
    await tick();
  } catch (err) {
    parentPort?.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
  setTimeout(() => void loop(), data.pollMs ?? 1000);
}
void loop();
