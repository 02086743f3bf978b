// Connections to a PostgreSQL archive. Each worker thread keeps one small pool per server
// (primary, and each read replica); failures that mean "the database is not there right now"
// become ArchiveUnavailable, which the gateway answers as 503 and which heals by itself when
// the server is back: pg's pool drops broken clients and the next query opens a new one.
import pg from 'pg';
import { ArchiveUnavailable } from '../../shared/errors.js';

/**
 * How long a connection opened at start-up, by the CLI or by the index builder may take to be
 * ready for queries: Npgsql's default (Timeout=15), which Mail Archiver runs with. It was 5 s: on
 * a busy two-core host (the test suite, a neighbour's backup) a server that answered in six
 * seconds stopped the service's start-up with "timeout expired", though it was up. A server that
 * refuses connections still fails at once; only one that does not answer waits this long.
 */
export const CONNECT_TIMEOUT_MS = 15_000;

/**
 * The same for the pools that serve requests: shorter, because a request that meets a server not
 * answering at all should get its 503, or the next replica, while its budget lasts
 * (docs/postgres.md). Each pool keeps a connection open (`min: 1`), so requests rarely connect.
 */
const REQUEST_CONNECT_TIMEOUT_MS = 5_000;

/** int8 (count(*), bigint sizes) as a number: archive counts stay far below 2^53. */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === 20) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
};

export interface PgPoolOptions {
  /** Connections per pool; a worker thread runs one job at a time, so a few suffice. */
  max?: number;
  /** Which setting named this server, for messages: `Database:Path` or `Database:ReadReplicas`. */
  setting: string;
  /**
   * Engine:JobTimeoutSeconds: the server ends a statement running longer (statement_timeout).
   * A job past its budget is stopped by terminating its worker thread, which drops the
   * connection; PostgreSQL would otherwise run the query to its end (engine/pool/job-budget.ts).
   */
  statementTimeoutMs?: number;
  /** How long a connection beyond the one kept open may idle before it closes (default 30,000 ms). */
  idleTimeoutMs?: number;
}

export function createPgPool(url: string, options: PgPoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 2,
    application_name: 'mail-archive-gateway',
    // JIT compiles a plan for whole seconds' worth of estimated cost: searches pay tens of
    // milliseconds each and never win it back. Exact bitmaps need more than the 4 MB default
    // at a million messages (a lossy bitmap rechecks every document of a page).
    options: '-c jit=off -c work_mem=32MB',
    ...(options.statementTimeoutMs !== undefined ? { statement_timeout: options.statementTimeoutMs } : {}),
    connectionTimeoutMillis: REQUEST_CONNECT_TIMEOUT_MS,
    // One connection stays open however long the thread is idle: a new one costs the next search
    // its start-up and a server process with cold caches whose statements are not prepared yet
    // (measured at 1,000,000 messages: 46 ms for the first search after 35 s idle, 3 ms warm).
    // The others close after 30 s idle.
    min: 1,
    idleTimeoutMillis: options.idleTimeoutMs ?? 30_000,
    types,
  });
  // An idle client whose server went away emits 'error' on the pool; without a listener that
  // would crash the thread. The pool has already discarded the client.
  pool.on('error', () => {});
  // A checked-out client has no listener of the pool's: a server that ends it between two of its
  // queries (a replica shut down while a search computes in memory between its round trips)
  // made it emit an 'error' nobody heard, which failed the thread's job with a 500. Heard here,
  // it is what the client's next query rejects with ("not queryable"): unavailable, as any other.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/** SQLSTATE classes and socket errors that mean the server is unreachable or going away. */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, in recovery)
  '53300', // too_many_connections
]);

export function isUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  if (typeof e?.code === 'string' && (UNAVAILABLE_CODES.has(e.code) || e.code.startsWith('08'))) return true;
  const message = typeof e?.message === 'string' ? e.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    message,
  );
}

/**
 * One sentence for an operator about a server that cannot be used: which setting names it,
 * where it is, and why, never the password (the URL is shown without its credentials).
 */
export function describeConnectError(url: string, setting: string, err: unknown): string {
  const e = err as { code?: string; message?: string };
  const where = serverOf(url);
  const why =
    e.code === '28P01' || e.code === '28000'
      ? 'the server refused the credentials'
      : e.code === '3D000'
        ? 'the database does not exist'
        : e.code === 'ECONNREFUSED'
          ? 'nothing accepts connections there'
          : e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN'
            ? 'the host name does not resolve'
            : (e.message ?? String(err)).replace(/postgres(ql)?:\/\/[^\s]*/gi, '<url>');
  return `Cannot use the PostgreSQL database ${where} named by ${setting}: ${why}.`;
}

/** host:port/database of a server URL, for messages and reports: never the credentials. */
export function serverOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname || 'localhost'}${u.port ? `:${u.port}` : ''}${u.pathname}`;
  } catch {
    return 'a server whose URL cannot be parsed';
  }
}

/** Runs `work`, turning "the server is not there" into ArchiveUnavailable. */
export async function guarded<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (isUnavailable(err)) throw new ArchiveUnavailable();
    throw err;
  }
}

/** A connection of `pool` for several statements; ArchiveUnavailable when the server is not there. */
export async function checkout(pool: pg.Pool): Promise<pg.PoolClient> {
  try {
    return await pool.connect();
  } catch (err) {
    if (isUnavailable(err)) throw new ArchiveUnavailable();
    throw err;
  }
}
