// What a PostgreSQL job handler is given (engine/postgres/store.ts PgStore implements it): where a query
// may run, the display zone, transactions and health. Types only, so the handlers and the store
// that dispatches to them do not import each other (docs/architecture.md, "Boundaries").
import type { PostgresHealth } from '../../shared/jobs.js';
import type { SnapshotOrigin } from '../search/bitsets/share.js';
import type { Snapshot } from '../search/bitsets/snapshot.js';
import type { AccessLogSchema, SourcesShape } from './shape.js';
import type { Sql } from './sql.js';

export type Row = object;
/** One round trip: statements in the snapshot, then (if `end`) COMMIT, then statements on the present. */
export interface SnapshotStep {
  inSnapshot: readonly Sql[];
  /** Ends the snapshot's transaction in this round trip (nothing may follow in it). */
  end: boolean;
  /** Read on the present state, after the COMMIT; only with `end`. */
  present?: readonly Sql[];
}

/** engine/postgres/snapshot-session.ts sends these. */
export type SnapshotSend = (step: SnapshotStep) => Promise<{ inSnapshot: Row[][]; present: Row[][] }>;

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
  /**
   * The schema whose "AccessLogs" entries go to: Mail Archiver's, or the GoBD fork's
   * archive_worm, where it moves the table behind a hash chain (docs/compat.md, "The GoBD fork's
   * archive_worm"). Looked up with isRead.
   */
  readonly accessLogSchema: AccessLogSchema;
  /** The fork's kept originals, archive_worm."ArchivedEmailSources", when it is there; looked up with isRead. */
  readonly sources: SourcesShape | null;
  readonly read: Query;
  readonly primary: Query;
  /** Runs `work` in one transaction on the primary. */
  transaction<T>(work: (query: Query) => Promise<T>): Promise<T>;
  /**
   * Runs `work` on one primary connection whose round trips (`send`) read the database exactly
   * as the exported snapshot `token` saw it (SET TRANSACTION SNAPSHOT) and then the present,
   * several statements per round trip (snapshot-session.ts); undefined when that snapshot can no
   * longer be imported (its exporting transaction has ended).
   */
  snapshotSession<T>(token: string, work: (send: SnapshotSend) => Promise<T>): Promise<T | undefined>;
  /** The newest in-memory search snapshot posted to this thread (engine/postgres/search-snapshot.ts). */
  searchSnapshot(): { snapshot: Snapshot; token: string | undefined; origin?: SnapshotOrigin } | undefined;
  /** Whether this thread follows a pool's in-memory search index (readiness reports it). */
  readonly searchIndexOn?: boolean;
  /** The primary's and the replicas' state, for readiness; never throws. */
  health(): Promise<PostgresHealth>;
}
