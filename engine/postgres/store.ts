// The PostgreSQL store: one per worker thread. It owns a pool on the primary and one per read
// replica, and hands each job handler (handlers.ts) a PgContext that says where a query may run:
// `read` for what may lag a little (searches, details, folders, stats, attachment bytes),
// `primary` for key checks and writes, so a revoked key is refused on the very next request.
import type { SnapshotOrigin } from '../search/bitsets/share.js';
import type pg from 'pg';
import { performance } from 'node:perf_hooks';
import type { Job, JobKind, JobResult, PostgresHealth } from '../../shared/jobs.js';
import { ArchiveUnavailable } from '../../shared/errors.js';
import { checkout, createPgPool, isUnavailable, serverOf } from './connect.js';
import { pgHandlers } from './handlers.js';
import { checkShape, type SchemaShape, type SourcesShape } from './shape.js';
import type { Sql } from './sql.js';
import { missingPrepared, preparedName, preparing, stopPreparing } from './prepared.js';
import { snapshotSession } from './snapshot-session.js';
import { inline } from './sql-inline.js';
import type { PgContext, Query, Row, SnapshotSend } from './context.js';
import { SnapshotFollower } from '../search/bitsets/share.js';
import type { Snapshot } from '../search/bitsets/snapshot.js';

export interface PgStoreOptions {
  url: string;
  timeZone: string;
  readReplicas?: readonly string[];
  /** Connections per pool (per thread). */
  connections?: number;
  /** Engine:JobTimeoutSeconds for the server's statement_timeout (engine/postgres/connect.ts). */
  statementTimeoutMs?: number;
  /** The pool's channel for the in-memory search index (engine/postgres/search-snapshot.ts). */
  searchChannel?: string;
  /** The pool's count of snapshots posted on that channel (search/bitsets/share.ts newPostCount). */
  searchPosted?: Int32Array;
}

export type { PgContext, Query, Row } from './context.js';

/** A replica that failed is skipped; it is probed again this often, and back in rotation once it answers. */
export const REPLICA_RETRY_MS = 5_000;

/**
 * Errors a hot standby gives to a query that the primary would answer: the query was cancelled
 * because replaying the primary's changes conflicts with it (rows it still needed were vacuumed
 * away on the primary; SQLSTATE 40001, or 40P01 for a buffer-pin deadlock). The replica itself is
 * healthy, so it stays in rotation, but the read is answered elsewhere instead of failing.
 */
const RECOVERY_CONFLICT = new Set(['40001', '40P01']);
const isRecoveryConflict = (err: unknown) =>
  RECOVERY_CONFLICT.has(String((err as { code?: unknown } | null)?.code)) &&
  /conflict with recovery/i.test(String((err as { message?: unknown }).message));

interface Replica {
  pool: pg.Pool;
  /** Out of rotation since this time (0: in rotation); a background probe brings it back. */
  downSince: number;
  probe: NodeJS.Timeout | undefined;
}

/** A WAL position `X/Y` (two hex halves) as a byte offset; exact below 2^53 bytes (8 PiB of WAL). */
const lsnBytes = (lsn: string): number => {
  const [hi = '0', lo = '0'] = lsn.split('/');
  return parseInt(hi, 16) * 2 ** 32 + parseInt(lo, 16);
};

/**
 * One statement on a pool. With planner settings (sql.ts planned()), it runs in a read-only
 * transaction of its own, with SET LOCAL, so the settings never leak to the connection's
 * next user. The transaction is one message of the simple query protocol, the statement's values
 * written as literals (sql-inline.ts): sent as three, BEGIN and COMMIT were two more round trips
 * on a search's count, a third of a rare word's time on a busy machine (docs/performance.md,
 * "PostgreSQL before the index is ready").
 */
async function execute(pool: pg.Pool, q: Sql): Promise<unknown[]> {
  if (!q.settings) {
    const query = q.toQuery();
    if (!q.reuse || !preparing()) return (await pool.query(query)).rows;
    try {
      return (await pool.query({ ...query, name: preparedName(query.text, 'magq') })).rows;
    } catch (err) {
      if (!missingPrepared(err)) throw err;
      stopPreparing();
      return (await pool.query(query)).rows;
    }
  }
  const client = await pool.connect();
  let broken = false;
  try {
    const set = Object.entries(q.settings).map(
      ([name, value]) => `SET LOCAL ${name} = '${value.replaceAll("'", "''")}'`,
    );
    const results = (await client.query(
      `BEGIN READ ONLY; ${set.join('; ')}; ${inline(q)}; COMMIT`,
    )) as unknown as pg.QueryResult[];
    return results[results.length - 2]!.rows;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => (broken = true));
    if (isUnavailable(err)) broken = true;
    throw err;
  } finally {
    client.release(broken);
  }
}

/** Whether ArchivedEmails has Mail Archiver's read flag as a boolean (engine/postgres/shape.ts). */
/** A health probe waits this long for a server before calling it down. */
const HEALTH_TIMEOUT_MS = 1_500;

export class PgStore implements PgContext {
  readonly kind = 'postgres' as const;
  readonly zone: string;
  readonly #primary: pg.Pool;
  readonly #replicas: Replica[];
  #next = 0;

  constructor(options: PgStoreOptions) {
    this.zone = options.timeZone;
    const max = options.connections ?? 2;
    const timeout = options.statementTimeoutMs !== undefined ? { statementTimeoutMs: options.statementTimeoutMs } : {};
    this.#primary = createPgPool(options.url, { max, setting: 'Database:Path', ...timeout });
    this.#replicaUrls = options.readReplicas ?? [];
    if (options.searchChannel) this.#follower = new SnapshotFollower(options.searchChannel, options.searchPosted);
    this.#replicas = this.#replicaUrls.map((url) => ({
      pool: createPgPool(url, { max, setting: 'Database:ReadReplicas', ...timeout }),
      downSince: 0,
      probe: undefined,
    }));
  }

  /** Resolves once this thread holds the snapshot already posted, if any (SnapshotFollower.settled). */
  async snapshotSettled(): Promise<void> {
    await this.#follower?.settled();
  }

  readonly #replicaUrls: readonly string[];
  #closed = false;
  #shape: SchemaShape | undefined;

  get isRead(): boolean {
    return this.#shape?.isRead ?? false;
  }

  get accessLogSchema(): SchemaShape['accessLogSchema'] {
    return this.#shape?.accessLogSchema ?? 'mail_archiver';
  }

  get sources(): SourcesShape | null {
    return this.#shape?.sources ?? null;
  }

  /**
   * Looks up the schema's optional parts once (shape.ts: the read flag, the fork's access log
   * and kept originals); a part added later shows after a restart. Where reads go: a replica
   * has the primary's schema. The start has refused a shape it cannot serve; one changed since
   * is served without the optional parts.
   */
  async detectShape(): Promise<SchemaShape> {
    if (this.#shape) return this.#shape;
    const checked = await checkShape(this.read);
    return (this.#shape ??=
      'shape' in checked ? checked.shape : { isRead: false, accessLogSchema: 'mail_archiver', sources: null });
  }

  #follower: SnapshotFollower | undefined;
  /** A snapshot adopted directly (tests, tools), used when no channel is followed. */
  #adopted: { snapshot: Snapshot; token: string | undefined } | undefined;

  /** Makes `snapshot` the one this store's searches use (tests and tools). */
  adoptSearchSnapshot(snapshot: Snapshot | undefined, token?: string): void {
    this.#adopted = snapshot ? { snapshot, token } : undefined;
  }

  get searchIndexOn(): boolean {
    return this.#follower !== undefined;
  }

  searchSnapshot(): { snapshot: Snapshot; token: string | undefined; origin?: SnapshotOrigin } | undefined {
    return this.#follower?.latest() ?? this.#adopted;
  }

  /**
   * With read replicas, the index's snapshots come from the first one (engine/pool.ts), and are
   * read there. That replica unreachable: the search is answered by SQL, on the others.
   */
  async snapshotSession<T>(token: string, work: (send: SnapshotSend) => Promise<T>): Promise<T | undefined> {
    const replica = this.#replicas[0];
    if (!replica) return snapshotSession(this.#primary, token, work);
    if (replica.downSince !== 0) return undefined;
    try {
      return await snapshotSession(replica.pool, token, work);
    } catch (err) {
      if (!(err instanceof ArchiveUnavailable) && !isRecoveryConflict(err)) throw err;
      if (err instanceof ArchiveUnavailable) this.#takeOut(replica);
      return undefined;
    }
  }

  readonly primary: Query = async <R extends Row>(q: Sql) => {
    try {
      return (await execute(this.#primary, q)) as R[];
    } catch (err) {
      if (isUnavailable(err)) throw new ArchiveUnavailable();
      throw err;
    }
  };

  /**
   * Round robin over the replicas in rotation. A query that fails on a replica because the
   * server is unreachable or going away (also mid-flight: a replica shut down cancels its
   * queries) is run again on the next one, finally on the primary, so a replica going down costs
   * no request; that replica leaves the rotation and a background probe puts it back once it
   * answers, so no request waits on a connection attempt to a server known to be down. A query
   * cancelled by a recovery conflict is answered elsewhere too, without taking the replica out.
   * Reads are plain SELECTs, so running one twice is harmless.
   */
  readonly read: Query = async <R extends Row>(q: Sql) => {
    const count = this.#replicas.length;
    for (let tried = 0; tried < count; tried++) {
      const replica = this.#replicas[this.#next++ % count]!;
      if (replica.downSince !== 0) continue;
      try {
        return (await execute(replica.pool, q)) as R[];
      } catch (err) {
        if (isRecoveryConflict(err)) continue;
        if (!isUnavailable(err)) throw err;
        this.#takeOut(replica);
      }
    }
    return this.primary<R>(q);
  };

  #takeOut(replica: Replica): void {
    if (replica.downSince !== 0 || this.#closed) return;
    replica.downSince = Date.now();
    const probe = () => {
      replica.probe = setTimeout(() => {
        replica.pool.query('SELECT 1').then(
          () => {
            replica.downSince = 0;
            replica.probe = undefined;
          },
          () => {
            if (!this.#closed) probe();
          },
        );
      }, REPLICA_RETRY_MS);
      replica.probe.unref();
    };
    probe();
  }

  /** Primary reachable? Each replica answering, in rotation, and how far behind? For /readyz. */
  async health(): Promise<PostgresHealth> {
    const probe = async (pool: pg.Pool, fn: string) => {
      const started = performance.now();
      let timer: NodeJS.Timeout | undefined;
      try {
        const result = await Promise.race([
          pool.query<{ lsn: string | null }>(`SELECT ${fn}()::text AS lsn`),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error('timeout')), HEALTH_TIMEOUT_MS);
          }),
        ]);
        const ms = Math.round((performance.now() - started) * 10) / 10;
        return { status: 'ok' as const, ms, lsn: result.rows[0]?.lsn ?? null };
      } catch {
        return { status: 'down' as const, lsn: null };
      } finally {
        clearTimeout(timer);
      }
    };
    const [primary, ...replicas] = await Promise.all([
      probe(this.#primary, 'pg_current_wal_lsn'),
      ...this.#replicas.map((r) => probe(r.pool, 'pg_last_wal_replay_lsn')),
    ]);
    return {
      primary: primary!.status === 'ok' ? { status: 'ok', ms: primary!.ms! } : { status: 'down' },
      replicas: replicas.map((r, i) => ({
        server: serverOf(this.#replicaUrls[i]!),
        status: r.status,
        ...(r.status === 'ok' ? { ms: r.ms! } : {}),
        inRotation: this.#replicas[i]!.downSince === 0,
        ...(primary!.lsn && r.lsn ? { lagBytes: Math.max(0, lsnBytes(primary!.lsn) - lsnBytes(r.lsn)) } : {}),
      })),
    };
  }

  /** `work` in one transaction on a primary connection. */
  async transaction<T>(work: (query: Query) => Promise<T>): Promise<T> {
    const client = await checkout(this.#primary);
    let broken = false;
    try {
      await client.query('BEGIN');
      const query: Query = async <R extends Row>(q: Sql) => (await client.query(q.toQuery())).rows as R[];
      const result = await work(query);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      broken = isUnavailable(err);
      if (!broken) await client.query('ROLLBACK').catch(() => (broken = true));
      if (broken) throw new ArchiveUnavailable();
      throw err;
    } finally {
      client.release(broken);
    }
  }

  async run<K extends JobKind>(job: Job<K>): Promise<JobResult<K>> {
    const handler = pgHandlers[job.kind] as ((ctx: PgContext, job: Job<K>) => Promise<JobResult<K>>) | undefined;
    if (!handler) throw new Error(`Unknown job kind ${String(job.kind)}`);
    if (!this.#shape) await this.detectShape();
    return handler(this, job);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#follower?.close();
    for (const r of this.#replicas) clearTimeout(r.probe);
    await Promise.all([this.#primary.end(), ...this.#replicas.map((r) => r.pool.end())]);
  }
}
