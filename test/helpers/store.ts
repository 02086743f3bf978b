// Which store the gateway tests run on. `npm test` runs the suite on SQLite (the default), then
// the REST, MCP and search suites again with TEST_STORE=postgres: the same test files, each
// fixture built as usual, then copied into a fresh PostgreSQL database in Mail Archiver's schema
// (test/helpers/pg-copy.ts) which the gateway serves. Nothing is copied between test bodies. The
// schema is Mail Archiver's newest shape (2609.4 with IsRead and the trigram index;
// TEST_MAIL_ARCHIVER_SHAPE picks another, test/helpers/pg-mail-archiver.ts).
import pg from 'pg';
import Database from '../../engine/sqlite/driver.js';
import { addFunctions } from '../../engine/sqlite/open.js';
import { type ArchiveAdmin } from '../../engine/store-contract.js';
import { openAdmin, prepareArchive } from '../../engine/archive.js';
import { accessTypeOf } from '../../engine/postgres/handlers.js';
import { copySqliteToPostgres } from './pg-copy.js';
import { DEFAULT_SHAPE, loadMailArchiverSchema } from './pg-mail-archiver.js';
import { createTestDatabase } from './postgres.js';

export type TestStore = 'sqlite' | 'postgres';

export const TEST_STORE: TestStore = process.env.TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

/**
 * Whether the served archive has Mail Archiver's read flag (a PostgreSQL database in the newest
 * shape, with ArchivedEmails."IsRead"): its summaries and details then carry `isRead`.
 */
export const HAS_READ_FLAG = TEST_STORE === 'postgres' && DEFAULT_SHAPE === 'newest';

/** A summary or detail as the served store answers it: with `isRead` where it has the flag. */
export const asServed = <T extends object>(item: T, isRead = false): T => (HAS_READ_FLAG ? { ...item, isRead } : item);

/** A sorted key list as the served store's items have it: with `isRead` where it has the flag. */
export const servedKeys = (keys: readonly string[]): string[] =>
  (HAS_READ_FLAG ? [...keys, 'isRead'] : [...keys]).sort();

export interface ServedArchive {
  /** Database:Path for the gateway. */
  path: string;
  store: TestStore;
  /** Drops the PostgreSQL database; nothing for SQLite (the fixture owns its file). */
  drop(): Promise<void>;
}

/** The archive in `sqlitePath`, on the store this run tests. */
export async function serveArchive(sqlitePath: string, store: TestStore = TEST_STORE): Promise<ServedArchive> {
  if (store === 'sqlite') return { path: sqlitePath, store, drop: async () => {} };
  const database = await createTestDatabase('gw');
  try {
    // Mail Archiver's newest shape (test/helpers/pg-mail-archiver.ts), then the service's own schema.
    await loadMailArchiverSchema(database.url);
    await prepareArchive({ path: database.url });
    await copySqliteToPostgres(sqlitePath, database.url);
  } catch (err) {
    await database.drop();
    throw err;
  }
  return { path: database.url, store, drop: () => database.drop() };
}

export interface AccessLogRow {
  user_id: number;
  type: string;
  email_id: number | null;
  account_id: number | null;
  source: string;
  key_prefix: string | null;
  client_ip: string | null;
  search_params: Record<string, unknown> | null;
}

/** The access log of either store, oldest first, in the SQLite table's shape. */
export async function readAccessLog(path: string): Promise<AccessLogRow[]> {
  if (!/^postgres(ql)?:/.test(path)) {
    const db = new Database(path, { readonly: true });
    try {
      return (db.prepare('SELECT * FROM access_log ORDER BY id').all() as Array<Record<string, unknown>>).map((r) => ({
        ...(r as unknown as AccessLogRow),
        search_params: r.search_params ? (JSON.parse(r.search_params as string) as Record<string, unknown>) : null,
      }));
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: path });
  await client.connect();
  try {
    const { rows } = await client.query<Record<string, unknown>>(
      `SELECT l."Type" AS code, l."EmailId" AS email_id, d.user_id, d.account_id, d.source, d.key_prefix,
              d.client_ip, d.search_params
         FROM mail_archiver."AccessLogs" l JOIN mail_archive_gateway.access_log_details d ON d.access_log_id = l."Id"
        ORDER BY l."Id"`,
    );
    return rows.map((r) => ({
      user_id: r.user_id as number,
      type: accessTypeOf(r.code as number) ?? String(r.code),
      email_id: (r.email_id as number | null) ?? null,
      account_id: (r.account_id as number | null) ?? null,
      source: r.source as string,
      key_prefix: r.key_prefix as string | null,
      client_ip: r.client_ip as string | null,
      search_params: (r.search_params as Record<string, unknown> | null) ?? null,
    }));
  } finally {
    await client.end();
  }
}

/**
 * Changes the served archive behind the gateway's back, as another program would: `sqlite`
 * runs on a connection to the file, `postgres` on a client of the database (Mail Archiver's tables).
 */
export async function changeArchive(
  path: string,
  change: { sqlite: (db: InstanceType<typeof Database>) => void; postgres: (client: pg.Client) => Promise<unknown> },
): Promise<void> {
  if (!/^postgres(ql)?:/.test(path)) {
    const db = new Database(path);
    try {
      db.pragma('busy_timeout = 5000');
      addFunctions(db); // its writes fire the archive's triggers
      change.sqlite(db);
    } finally {
      db.close();
    }
    return;
  }
  const client = new pg.Client({ connectionString: path });
  await client.connect();
  try {
    await change.postgres(client);
  } finally {
    await client.end();
  }
}

/** Runs `work` with the operator's interface (engine/sqlite/admin.ts) to the served archive. */
export async function withAdmin<T>(path: string, work: (admin: ArchiveAdmin) => Promise<T>): Promise<T> {
  const admin = await openAdmin(path);
  try {
    return await work(admin);
  } finally {
    await admin.close();
  }
}

/** One statement per store, with positional parameters (`?` for SQLite, `$n` for PostgreSQL). */
export async function queryArchive<R = Record<string, unknown>>(
  path: string,
  statement: { sqlite: string; postgres: string },
  params: unknown[] = [],
): Promise<R[]> {
  let rows: R[] = [];
  await changeArchive(path, {
    sqlite: (db) => {
      const s = db.prepare(statement.sqlite);
      rows = (s.reader ? s.all(...params) : (s.run(...params), [])) as R[];
    },
    postgres: async (client) => {
      rows = (await client.query(statement.postgres, params)).rows as R[];
    },
  });
  return rows;
}
