// What a PostgreSQL job handler is given (engine/pg/store.ts PgStore implements it): where a query
// may run, the display zone, transactions and health. Types only, so the handlers and the store
// that dispatches to them do not import each other (docs/architecture.md, "Boundaries").
import type { PostgresHealth } from '../../shared/jobs.js';
import type { Sql } from './sql.js';

export type Row = object;
export type Query = <R extends Row = Record<string, unknown>>(q: Sql) => Promise<R[]>;

export interface PgContext {
  /** Mail Archiver's display zone: SentDate is wall-clock time there. */
  readonly zone: string;
  /**
   * ArchivedEmails has Mail Archiver's read flag, "IsRead" boolean (open upstream PR 501):
   * summaries and details carry `isRead`, and q may use is:read / is:unread. Looked up before a
   * store's first job; a column added later shows after a restart.
   */
  readonly isRead: boolean;
  readonly read: Query;
  readonly primary: Query;
  /** Runs `work` in one transaction on the primary. */
  transaction<T>(work: (query: Query) => Promise<T>): Promise<T>;
  /** The primary's and the replicas' state, for readiness; never throws. */
  health(): Promise<PostgresHealth>;
}
