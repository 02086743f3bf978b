// Opening the archive: pragmas first, then any pending migrations.
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { migrations } from './migrations.js';

export type Db = Database.Database;

export interface OpenOptions {
  /** Open without creating or migrating; fails if the file is missing. */
  readonly?: boolean;
}

export class ArchiveOpenError extends Error {
  override name = 'ArchiveOpenError';
}

export function openArchive(path: string, options: OpenOptions = {}): Db {
  const file = resolve(path);
  if (!options.readonly) mkdirSync(dirname(file), { recursive: true });
  let db: Db;
  try {
    db = new Database(file, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
  } catch (err) {
    throw new ArchiveOpenError(`Cannot open archive ${file}: ${(err as Error).message}`);
  }
  // Readers and one writer at a time; a busy writer is waited for, not failed.
  db.pragma('busy_timeout = 5000');
  if (!options.readonly) db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('cache_size = -32000');
  db.pragma('temp_store = MEMORY');
  db.pragma('mmap_size = 268435456');
  if (!options.readonly) migrate(db);
  else assertCurrent(db, file);
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
