// A builder thread's side of the saved index (persist.ts, ADR 23), the same for both stores:
// load the file at start (and again whenever another process of the host has rewritten it),
// decide who builds when a full build is due (build-lock.ts: one process at a time, the others
// serve by SQL and load the file it writes), and save what was built. The store supplies its
// identity and the secret the file is signed with (ADR 31), both kept in its archive, and checks
// that a loaded snapshot describes its archive; nothing here reads one.
import { accessSync, constants, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { alive, BuildLock } from './build-lock.js';
import { loadIndex, NOT_SIGNED, saveIndex, type Saved, type SavedMeta } from './persist.js';
import type { SnapshotOrigin } from './share.js';

/** A snapshot caught up incrementally is saved again at most this often (a write is the whole index). */
const SAVE_CAUGHT_UP_MS = 5 * 60 * 1000;

/**
 * Errors that say the file's place cannot be written at all (a read-only mount, a directory of
 * another user, a file where the directory should be): no later save would do better.
 */
const UNWRITABLE = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EEXIST', 'EISDIR', 'ENOENT']);

/** A builder's log: `warn` for a line an operator should act on. */
export type BuilderLog = (line: string, level?: 'warn') => void;

export class SavedIndex {
  readonly file: string;
  readonly #store: SavedMeta['store'];
  readonly #identity: string;
  /** The archive's secret the file is signed with (persist.ts, ADR 31). */
  readonly #key: Uint8Array;
  readonly #lock: BuildLock;
  readonly #log: BuilderLog;
  /** The file as last looked at (mtime and size), so an unchanged file is not read again. */
  #seen = '';
  #savedAt = 0;
  /** Its place proved unwritable: said once, and nothing is saved again by this process. */
  #unwritable = false;

  constructor(o: { file: string; store: SavedMeta['store']; identity: string; key: Uint8Array; log: BuilderLog }) {
    this.file = o.file;
    this.#store = o.store;
    this.#identity = o.identity;
    this.#key = o.key;
    this.#lock = new BuildLock(o.file);
    this.#log = o.log;
    // Made before the build lock is first taken in it: the PostgreSQL default's data/ may not
    // exist yet. A place known unwritable now is said before the ready line, which then names no file.
    try {
      mkdirSync(dirname(o.file), { recursive: true });
      accessSync(dirname(o.file), constants.W_OK);
    } catch (err) {
      this.#cannotWrite(err);
    }
    removeAbandonedTemps(o.file);
  }

  /** The file the index is kept in, for the ready line; undefined once it proved unwritable. */
  get keptIn(): string | undefined {
    return this.#unwritable ? undefined : this.file;
  }

  /** The saved index if the file changed since the last look and is whole and this archive's. */
  loadIfChanged(): Saved | undefined {
    const stamp = fileStamp(this.file);
    if (stamp === this.#seen) return undefined;
    this.#seen = stamp;
    if (stamp === '') return undefined;
    const started = performance.now();
    const loaded = loadIndex(this.file, this.#key);
    if (!loaded.ok) {
      // A whole file that this archive's key did not sign was written by someone else, or
      // edited: worth an operator's look (its place may be writable by others), unlike a torn
      // save or a file of an older release. Said once per such file: the build that follows
      // replaces it, and an unchanged file is not read again.
      const forged = loaded.reason === NOT_SIGNED;
      this.#log(`search index: ${this.file} ignored (${loaded.reason}); building instead`, forged ? 'warn' : undefined);
      return undefined;
    }
    const { meta } = loaded.saved;
    if (meta.store !== this.#store || meta.identity !== this.#identity) {
      this.#log(`search index: ${this.file} ignored (it belongs to another archive); building instead`);
      return undefined;
    }
    this.#savedAt = meta.savedAt;
    this.#log(
      `search index: loaded ${this.file} (${loaded.saved.snapshot.byteLength} bytes) in ${Math.round(performance.now() - started)} ms`,
    );
    return loaded.saved;
  }

  /**
   * Whether this thread may run a full build now: yes when it holds the host's build lock (taken
   * here); no while another process holds it (then it serves by SQL and loads that process's file).
   */
  mayBuild(): boolean {
    return this.#lock.tryTake();
  }

  /**
   * Saves a snapshot: always after a full build (and gives the build lock back); after an
   * incremental catch-up only when the file is older than SAVE_CAUGHT_UP_MS and no other
   * process is writing it.
   */
  save(
    snapshot: SharedArrayBuffer,
    o: { fullBuild: boolean; fullBuildRows: number; sections?: Uint8Array[]; extra?: Record<string, unknown> },
  ): void {
    // Searches go on from memory; trying again would only repeat the warning at every refresh.
    if (this.#unwritable) return this.#lock.release();
    const now = Date.now();
    if (!o.fullBuild && now - this.#savedAt < SAVE_CAUGHT_UP_MS) return;
    if (!this.#lock.tryTake()) return;
    try {
      const started = performance.now();
      const meta: SavedMeta = {
        store: this.#store,
        identity: this.#identity,
        fullBuildRows: o.fullBuildRows,
        savedAt: now,
        ...(o.extra ? { extra: o.extra } : {}),
      };
      const bytes = saveIndex(this.file, this.#key, meta, snapshot, o.sections ?? []);
      this.#savedAt = now;
      this.#seen = fileStamp(this.file); // our own file: nothing to load
      this.#log(`search index: saved ${this.file} (${bytes} bytes) in ${Math.round(performance.now() - started)} ms`);
    } catch (err) {
      if (UNWRITABLE.has((err as NodeJS.ErrnoException).code ?? '')) this.#cannotWrite(err);
      else this.#log(`search index: could not save ${this.file}: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      this.#lock.release();
    }
  }

  /** Gives the build lock back without saving (a build that failed). */
  releaseLock(): void {
    this.#lock.release();
  }

  /** One warning, never a failure: the index serves from memory, only a restart builds it again. */
  #cannotWrite(err: unknown): void {
    if (this.#unwritable) return;
    this.#unwritable = true;
    const reason = err instanceof Error ? err.message : String(err);
    this.#log(
      `search index: cannot save ${this.file} (${reason}), so every start builds it again; set Engine:SearchIndexFile to a file in a place this service can write ('' saves nothing)`,
      'warn',
    );
  }
}

/** `work` the first time only. */
export function once(work: () => void): () => void {
  let done = false;
  return () => {
    if (!done) work();
    done = true;
  };
}

/**
 * The builder's line when searches are first answered from the index (bench/cold-start.ts reads
 * it); `keptIn`: the file it is saved in (SavedIndex.keptIn), undefined when nothing is saved.
 */
export function readyLine(
  origin: SnapshotOrigin,
  rows: number,
  log: (line: string) => void,
  keptIn: string | undefined,
): void {
  const how = origin.kind === 'built' ? 'built' : origin.fromFile ? `${origin.kind} from the saved file` : origin.kind;
  // Once, where the operator reads how long it took: which file spares the next start this
  // build, or, unsaved ('' or an unwritable place), how a restart could skip it.
  const hint = keptIn
    ? `; kept in ${keptIn}`
    : '; not saved, so every start builds it again (Engine:SearchIndexFile names a file to keep it in)';
  log(
    `search index: ready, ${how}, ${rows} messages, ${Math.round(process.uptime() * 1000)} ms after the process started${hint}`,
  );
}

/** Temporary files of saves whose process died mid-write (persist.ts names them `<file>.<pid>.<hex>.tmp`). */
function removeAbandonedTemps(file: string): void {
  const prefix = `${basename(file)}.`;
  try {
    for (const name of readdirSync(dirname(file))) {
      const pid = name.startsWith(prefix) ? /^(\d+)\.[0-9a-f]+\.tmp$/.exec(name.slice(prefix.length))?.[1] : undefined;
      if (pid !== undefined && !alive(Number(pid))) rmSync(join(dirname(file), name), { force: true });
    }
  } catch {
    // no directory yet, or not readable: nothing to tidy
  }
}

function fileStamp(file: string): string {
  try {
    const s = statSync(file);
    return `${s.mtimeMs}:${s.size}:${s.ino}`;
  } catch {
    return '';
  }
}
