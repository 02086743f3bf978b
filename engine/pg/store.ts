// The PostgreSQL store: one per worker thread. It owns a pool on the primary and one per read
// replica, and hands each job handler (handlers.ts) a PgContext that says where a query may run:
// `read` for what may lag a little (searches, details, folders, stats, attachment bytes),
// `primary` for key checks and writes, so a revoked key is refused on the very next request.
import type pg from 'pg';
import type { Job, JobKind, JobResult } from '../../shared/jobs.js';
import { ArchiveUnavailable } from '../unavailable.js';
import { createPgPool, isUnavailable } from './connect.js';
import { pgHandlers } from './handlers.js';
import type { Sql } from './sql.js';

export interface PgStoreOptions {
  url: string;
  timeZone: string;
  readReplicas?: readonly string[];
  /** Connections per pool (per thread). */
  connections?: number;
}

export type Row = object;
export type Query = <R extends Row = Record<string, unknown>>(q: Sql) => Promise<R[]>;

export interface PgContext {
  /** Mail Archiver's display zone: SentDate is wall-clock time there. */
  readonly zone: string;
  readonly read: Query;
  readonly primary: Query;
  /** Runs `work` in one transaction on the primary. */
  transaction<T>(work: (query: Query) => Promise<T>): Promise<T>;
}

/** A replica that failed is skipped for this long before it is tried again. */
const REPLICA_RETRY_MS = 5_000;

interface Replica {
  pool: pg.Pool;
  downUntil: number;
}

export class PgStore implements PgContext {
  readonly kind = 'postgres' as const;
  readonly zone: string;
  readonly #primary: pg.Pool;
  readonly #replicas: Replica[];
  #next = 0;

  constructor(options: PgStoreOptions) {
    this.zone = options.timeZone;
    const max = options.connections ?? 2;
    this.#primary = createPgPool(options.url, { max, setting: 'Database:Path' });
    this.#replicas = (options.readReplicas ?? []).map((url) => ({
      pool: createPgPool(url, { max, setting: 'Database:ReadReplicas' }),
      downUntil: 0,
    }));
  }

  readonly primary: Query = async <R extends Row>(q: Sql) => {
    try {
      return (await this.#primary.query(q.toQuery())).rows as R[];
    } catch (err) {
      if (isUnavailable(err)) throw new ArchiveUnavailable();
      throw err;
    }
  };

  /**
   * Round robin over the replicas that are up; a replica that cannot answer is skipped for
   * REPLICA_RETRY_MS and the query goes to the next one, finally to the primary: a replica
   * going down costs no request.
   */
  readonly read: Query = async <R extends Row>(q: Sql) => {
    const now = Date.now();
    for (let tried = 0; tried < this.#replicas.length; tried++) {
      const replica = this.#replicas[this.#next++ % this.#replicas.length]!;
      if (replica.downUntil > now) continue;
      try {
        return (await replica.pool.query(q.toQuery())).rows as R[];
      } catch (err) {
        if (!isUnavailable(err)) throw err;
        replica.downUntil = Date.now() + REPLICA_RETRY_MS;
      }
    }
    return this.primary<R>(q);
  };

  async transaction<T>(work: (query: Query) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.#primary.connect();
    } catch (err) {
      if (isUnavailable(err)) throw new ArchiveUnavailable();
      throw err;
    }
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

  run<K extends JobKind>(job: Job<K>): Promise<JobResult<K>> {
    const handler = pgHandlers[job.kind] as ((ctx: PgContext, job: Job<K>) => Promise<JobResult<K>>) | undefined;
    if (!handler) throw new Error(`Unknown job kind ${String(job.kind)}`);
    return handler(this, job);
  }

  async close(): Promise<void> {
    await Promise.all([this.#primary.end(), ...this.#replicas.map((r) => r.pool.end())]);
  }
}
