// The factory that picks a store. Both stores implement engine/store-contract.ts (ArchiveStore for
// jobs, ArchiveAdmin for the operator); which one serves is chosen once, here, from Database:Path:
// a file path is the embedded SQLite archive (engine/sqlite/), a postgres:// URL a Mail Archiver
// PostgreSQL database (engine/postgres/). Nothing above this file knows which one it talks to, and
// neither store imports the other.
import { isPostgresUrl } from '../shared/config.js';
import type { ArchiveAdmin, ArchiveStore } from './store-contract.js';
import { SqliteAdmin } from './sqlite/admin.js';
import { openArchive } from './sqlite/open.js';
import { ArchiveOpenError } from '../shared/errors.js';
import { runJob } from './sqlite/handlers.js';
import { followSnapshots } from './sqlite/index-share.js';
import { followColumns } from './sqlite/aggregate-columns.js';
import { describeConnectError, serverOf } from './postgres/connect.js';

export { isPostgresUrl };

export interface ArchiveConfig {
  /** Database:Path: a SQLite file or a postgres:// URL. */
  path: string;
  /** Database:TimeZone (PostgreSQL only). */
  timeZone?: string;
  /** Where the path came from, for messages: `Database:Path` (default) or the CLI's `--db`. */
  setting?: string;
  /** Database:ReadReplicas (PostgreSQL only). */
  readReplicas?: readonly string[];
  /** Engine:JobTimeoutSeconds in milliseconds: PostgreSQL's statement_timeout (engine workers only). */
  statementTimeoutMs?: number;
  /** The pool's channel for the shared search index (engine/search/bitsets; engine/postgres/search-snapshot.ts). */
  searchChannel?: string;
  /** The pool's count of snapshots posted on that channel (bitsets/share.ts newPostCount). */
  searchPosted?: Int32Array;
}

export const storeKind = (path: string): ArchiveStore['kind'] => (isPostgresUrl(path) ? 'postgres' : 'sqlite');

/** Opens the store a worker thread keeps for its lifetime. */
export async function openStore(config: ArchiveConfig): Promise<ArchiveStore> {
  if (storeKind(config.path) === 'postgres') {
    const { PgStore } = await import('./postgres/store.js');
    const store = new PgStore({
      url: config.path,
      timeZone: config.timeZone ?? 'UTC',
      readReplicas: config.readReplicas ?? [],
      ...(config.statementTimeoutMs !== undefined ? { statementTimeoutMs: config.statementTimeoutMs } : {}),
      ...(config.searchChannel !== undefined ? { searchChannel: config.searchChannel } : {}),
      ...(config.searchPosted !== undefined ? { searchPosted: config.searchPosted } : {}),
    });
    await store.snapshotSettled();
    return store;
  }
  const db = openArchive(config.path);
  if (config.searchChannel) {
    followColumns(db, config.searchChannel);
    await followSnapshots(db, config.searchChannel, config.searchPosted);
  }
  return {
    kind: 'sqlite',
    run: (job) => runJob(db, job),
    close: async () => {
      db.close();
    },
  };
}

/**
 * Run once per process before any worker opens the store: creates or migrates a SQLite file;
 * on PostgreSQL, checks that the server answers and that Mail Archiver's schema has every table
 * and column the service uses (engine/postgres/shape.ts), and migrates the service's own schema (with
 * `createIfEmpty`, an empty database first gets Mail Archiver's whole schema). Failures are
 * ArchiveOpenError: one sentence naming the setting, never a password. `onNotice` hears the one
 * line said about a Mail Archiver schema newer than this release was tested with.
 */
export async function prepareArchive(
  config: ArchiveConfig,
  options: { createIfEmpty?: boolean; onNotice?: (line: string) => void } = {},
): Promise<void> {
  if (storeKind(config.path) === 'sqlite') {
    openArchive(config.path).close();
    return;
  }
  const pg = (await import('pg')).default;
  const { prepareSchema } = await import('./postgres/schema.js');
  const { CONNECT_TIMEOUT_MS } = await import('./postgres/connect.js');
  const client = new pg.Client({ connectionString: config.path, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    throw new ArchiveOpenError(describeConnectError(config.path, config.setting ?? 'Database:Path', err));
  }
  try {
    await prepareSchema(client, describeWhere(config.path), options);
  } catch (err) {
    if (err instanceof ArchiveOpenError) throw err;
    throw new ArchiveOpenError(describeConnectError(config.path, config.setting ?? 'Database:Path', err));
  } finally {
    await client.end().catch(() => {});
  }
}

/** host:port/database of a URL, without credentials. */
export const describeWhere = serverOf;

/**
 * The web-session signing secret every gateway on this PostgreSQL database shares (stored in our
 * own schema; run after prepareArchive). A SQLite archive has none: its secret is a file beside
 * the archive (gateway/web/session-secret.ts). Failures are ArchiveOpenError, as above.
 */
export async function sharedSessionSecret(config: ArchiveConfig): Promise<string | undefined> {
  if (storeKind(config.path) === 'sqlite') return undefined;
  const { sharedSessionSecret: read } = await import('./postgres/shared-settings.js');
  try {
    return await read(config.path);
  } catch (err) {
    throw new ArchiveOpenError(describeConnectError(config.path, config.setting ?? 'Database:Path', err));
  }
}

export interface OpenAdminOptions {
  /** May create the archive: a missing SQLite file, or Mail Archiver's schema in an empty database. */
  create?: boolean;
  /** Database:TimeZone (PostgreSQL only): the zone SentDate is written in. */
  timeZone?: string;
  /** Where the path came from, for messages: `Database:Path` (default) or `--db`. */
  setting?: string;
  /** Sync:SecretKey: encrypts stored IMAP passwords (engine/rules/secrets.ts). */
  secretKey?: string | undefined;
  /** Hears the line said about a Mail Archiver schema newer than this release was tested with. */
  onNotice?: (line: string) => void;
}

/**
 * Opens the archive at `path` for administration. On PostgreSQL it first checks (and with
 * `create`, creates) the schema; every failure to connect or a schema it cannot use is one
 * sentence (ArchiveOpenError), never a password.
 */
export async function openAdmin(path: string, options: OpenAdminOptions = {}): Promise<ArchiveAdmin> {
  if (storeKind(path) === 'sqlite')
    return new SqliteAdmin(openArchive(path, { mustExist: !options.create }), true, { secretKey: options.secretKey });
  await prepareArchive(
    { path, ...(options.setting ? { setting: options.setting } : {}) },
    { createIfEmpty: options.create ?? false, ...(options.onNotice ? { onNotice: options.onNotice } : {}) },
  );
  const { PgAdmin } = await import('./postgres/admin.js');
  return PgAdmin.open(path, options.timeZone ?? 'UTC', describeWhere(path), options.secretKey);
}
