// PostgreSQL for the tests: the local server (127.0.0.1:5432, trust auth, user postgres, or
// PGHOST/PGPORT/PGUSER when set). Each test file gets a database of its own, created with a unique
// name and dropped at teardown, so files can run side by side and no other database is touched.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import pg from 'pg';

export interface TestDatabase {
  /** The database's name, unique to this test run. */
  readonly name: string;
  /** A postgres:// URL for it (no password: the test server trusts local connections). */
  readonly url: string;
  /** Drops the database, ending any session still connected to it. Safe to call twice. */
  drop(): Promise<void>;
}

function server(): { host: string; port: number; user: string } {
  return {
    host: process.env.PGHOST || '127.0.0.1',
    port: Number(process.env.PGPORT || 5432),
    user: process.env.PGUSER || 'postgres',
  };
}

/** A client on the maintenance database, where CREATE/DROP DATABASE are issued. */
async function withAdmin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ ...server(), database: 'postgres' });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

function urlFor(name: string): string {
  const { host, port, user } = server();
  // A host that is a socket directory stays a query parameter, as libpq and pg read it.
  const url = new URL(`postgres://${encodeURIComponent(user)}@localhost:${port}/${name}`);
  if (host.startsWith('/')) url.searchParams.set('host', host);
  else url.hostname = host;
  return url.toString();
}

/** Creates an empty, uniquely named database. `label` makes leftovers easy to attribute. */
export async function createTestDatabase(label: string): Promise<TestDatabase> {
  // Only lower-case letters, digits and underscores: the name needs no quoting rules beyond "".
  const safeLabel = label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .slice(0, 24);
  const name = `mag_test_${safeLabel}_${process.pid}_${randomBytes(4).toString('hex')}`;
  await withAdmin((client) => client.query(`CREATE DATABASE "${name}"`));
  let dropped = false;
  return {
    name,
    url: urlFor(name),
    async drop() {
      if (dropped) return;
      dropped = true;
      // FORCE (PostgreSQL 13+) ends pools a failed test may have left open on this database.
      await withAdmin((client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    },
  };
}

/** Runs a whole SQL file (several statements, no parameters) against the database at `url`. */
export async function loadSqlFile(url: string, file: URL | string): Promise<void> {
  await runSql(url, await readFile(file, 'utf8'));
}

/** Runs a script (several statements, no parameters) against the database at `url`. */
export async function runSql(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // The simple query protocol accepts a multi-statement script in one round trip.
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * Puts `hook` in front of every query any pg client sends, until the returned function is called.
 * The hook gets the query's first argument (its text, or a config with `text` and maybe `name`),
 * the call's arguments, and `send`, which sends it as the driver would; it returns what query()
 * returns (send()'s value, or an answer of its own).
 */
export function interceptQueries(hook: (first: unknown, send: () => unknown, args: unknown[]) => unknown): () => void {
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    return hook(args[0], () => (original as (...a: unknown[]) => unknown).apply(this, args), args);
  } as typeof original;
  return () => {
    pg.Client.prototype.query = original;
  };
}

/** A query's SQL text, whether it was sent as a string or as a config. */
export const queryText = (first: unknown): string =>
  typeof first === 'string' ? first : String((first as { text?: unknown } | null)?.text);
