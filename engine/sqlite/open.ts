// Opening the archive: pragmas first, then any pending migrations.
import Database from './driver.js';
import type BetterSqlite3 from 'better-sqlite3';
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { migrations } from './migrations.js';
import { bodyText, packedBytes } from './body-codec.js';
import { ArchiveOpenError } from '../../shared/errors.js';

export type Db = BetterSqlite3.Database;

export interface OpenOptions {
  /** Open without creating or migrating; fails if the file is missing. */
  readonly?: boolean;
  /** Fail instead of creating a new, empty archive when the file is missing. */
  mustExist?: boolean;
}

/**
 * The SQL functions the archive's triggers and readers call (body-codec.ts): body_text(), a stored
 * body as text, packed or not, which the full-text triggers index; body_bytes(), a packed body's
 * length unpacked. Any connection that writes mail needs them; openArchive adds them to its own.
 */
export function addFunctions(db: Db): void {
  db.function('body_text', { deterministic: true }, (stored: unknown) =>
    bodyText(stored as string | Uint8Array | null),
  );
  db.function('body_bytes', { deterministic: true }, (stored: unknown) =>
    stored instanceof Uint8Array ? packedBytes(stored) : null,
  );
}

export function openArchive(path: string, options: OpenOptions = {}): Db {
  const file = resolve(path);
  const mustExist = options.readonly === true || options.mustExist === true;
  if (mustExist && !existsSync(file)) {
    throw new ArchiveOpenError(`There is no archive at ${file}; check --db or Database:Path.`);
  }
  if (!options.readonly) {
    mkdirSync(dirname(file), { recursive: true });
    // A new archive is created 0600, as the secret files beside it: it holds all the mail and the
    // password hashes. SQLite gives its -wal and -shm files the database file's mode.
    if (!existsSync(file)) {
      try {
        closeSync(openSync(file, 'wx', 0o600));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
          throw new ArchiveOpenError(`Cannot create archive ${file}: ${(err as Error).message}`);
      }
    }
  }
  let db: Db;
  try {
    db = new Database(file, { readonly: options.readonly ?? false, fileMustExist: mustExist });
  } catch (err) {
    throw new ArchiveOpenError(`Cannot open archive ${file}: ${(err as Error).message}`);
  }
  try {
    // Readers and one writer at a time; a busy writer is waited for, not failed.
    db.pragma('busy_timeout = 5000');
    if (!options.readonly) db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    db.pragma('cache_size = -32000');
    db.pragma('temp_store = MEMORY');
    db.pragma('mmap_size = 268435456');
    addFunctions(db);
    if (!options.readonly) migrate(db);
    else assertCurrent(db, file);
  } catch (err) {
    db.close();
    // A file that is not SQLite (SQLITE_NOTADB), a read-only or locked one: the operator's
    // problem to fix, said in one sentence, not a crash.
    if (err instanceof Database.SqliteError) throw new ArchiveOpenError(`Cannot open archive ${file}: ${err.message}`);
    throw err;
  }
  return db;
}

export function schemaVersion(db: Db): number {
  return db.pragma('user_version', { simple: true }) as number;
}

export const LATEST_VERSION = migrations.at(-1)!.version;

/** Applies pending migrations. Safe when several processes open the same file at once. */
export function migrate(db: Db): number[] {
  const applied: number[] = [];
  for (const m of migrations) {
    // IMMEDIATE takes the write lock before reading user_version, so two processes starting
    // together cannot both apply the same migration.
    const step = db.transaction(() => {
      if (schemaVersion(db) >= m.version) return false;
      db.exec(m.sql);
      m.run?.(db);
      db.pragma(`user_version = ${m.version}`);
      return true;
    });
    if (step.immediate()) applied.push(m.version);
  }
  const version = schemaVersion(db);
  if (version > LATEST_VERSION) {
    throw new ArchiveOpenError(
      `The archive's schema version ${version} is newer than this program knows (${LATEST_VERSION}); upgrade mail-archive-gateway.`,
    );
  }
  return applied;
}

function assertCurrent(db: Db, file: string): void {
  const version = schemaVersion(db);
  if (version !== LATEST_VERSION) {
    throw new ArchiveOpenError(`Archive ${file} has schema version ${version}, expected ${LATEST_VERSION}.`);
  }
}
