// The engine's one store contract. A job goes in, its typed result comes out; behind it sits one
// implementation per store, chosen once, here, from Database:Path: a file path is the embedded
// SQLite archive (engine/store/, engine/handlers.ts), a postgres:// URL a Mail Archiver
// PostgreSQL database (engine/pg/). Nothing above this file knows which one it talks to.
import { isPostgresUrl } from '../shared/config.js';
import type { Job, JobKind, JobResult } from '../shared/jobs.js';
import { openArchive, ArchiveOpenError } from './db/open.js';
import { runJob } from './handlers.js';
import { followSnapshots } from './search/bitsets/share.js';
import { followColumns } from './search/aggregate-columns.js';
import { describeConnectError, serverOf } from './pg/connect.js';

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
  /** The pool's channel for the shared search index (engine/search/bitsets; engine/pg/search-snapshot.ts). */
  searchChannel?: string;
}

export interface ArchiveStore {
  readonly kind: 'sqlite' | 'postgres';
  run<K extends JobKind>(job: Job<K>): JobResult<K> | Promise<JobResult<K>>;
  close(): Promise<void>;
}

export const storeKind = (path: string): ArchiveStore['kind'] => (isPostgresUrl(path) ? 'postgres' : 'sqlite');

/** Opens the store a worker thread keeps for its lifetime. */
export async function openStore(config: ArchiveConfig): Promise<ArchiveStore> {
  if (storeKind(config.path) === 'postgres') {
    const { PgStore } = await import('./pg/store.js');
    return new PgStore({
      url: config.path,
      timeZone: config.timeZone ?? 'UTC',
      readReplicas: config.readReplicas ?? [],
      ...(config.statementTimeoutMs !== undefined ? { statementTimeoutMs: config.statementTimeoutMs } : {}),
      ...(config.searchChannel !== undefined ? { searchChannel: config.searchChannel } : {}),
    });
  }
  const db = openArchive(config.path);
  if (config.searchChannel) {
    followSnapshots(db, config.searchChannel);
    followColumns(db, config.searchChannel);
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
 * and column the service uses (engine/pg/shape.ts), and migrates the service's own schema (with
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
  const { prepareSchema } = await import('./pg/schema.js');
  const client = new pg.Client({ connectionString: config.path, connectionTimeoutMillis: 5_000 });
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
  const { sharedSessionSecret: read } = await import('./pg/shared-settings.js');
  try {
    return await read(config.path);
  } catch (err) {
    throw new ArchiveOpenError(describeConnectError(config.path, config.setting ?? 'Database:Path', err));
  }
}
