// Mail Archiver's columns under the names the store-independent mappers read (RawSummary,
// RawKey, ...), so that one mapping turns rows of either store into the same DTOs. Dates leave
// SQL as epoch milliseconds: SentDate is wall-clock time in the display zone, every other naive
// timestamp is UTC (docs/compat.md, "Timestamps").
import type { SortKey, Viewer } from '../../shared/jobs.js';
import { join, raw, sql, type Sql } from './sql.js';

export const T = {
  emails: raw('mail_archiver."ArchivedEmails"'),
  attachments: raw('mail_archiver."EmailAttachments"'),
  contents: raw('mail_archiver."AttachmentContents"'),
  accounts: raw('mail_archiver."MailAccounts"'),
  users: raw('mail_archiver."Users"'),
  userAccounts: raw('mail_archiver."UserMailAccounts"'),
  keys: raw('mail_archiver."ApiKeys"'),
};

/** "AccessLogs" where the database has it: Mail Archiver's schema, or the GoBD fork's (PgContext.accessLogSchema). */
export const accessLogsTable = (ctx: { accessLogSchema: string }): Sql => raw(`${ctx.accessLogSchema}."AccessLogs"`);

/** A naive UTC timestamp column as epoch milliseconds (a float8, so pg gives a number). */
export const utcMs = (column: string): Sql =>
  raw(`(extract(epoch FROM (${column} AT TIME ZONE 'UTC')) * 1000)::float8`);

/** A SentDate-like column (wall clock in `zone`) as epoch milliseconds. */
export const zonedMs = (column: string, zone: string): Sql =>
  sql`(extract(epoch FROM (${raw(column)} AT TIME ZONE ${zone}::text)) * 1000)::float8`;

/** Epoch milliseconds as a naive UTC timestamp, for writing and comparing UTC columns. */
export const utcTimestamp = (ms: number): Sql => sql`(to_timestamp(${ms}::float8 / 1000) AT TIME ZONE 'UTC')`;

/** Epoch milliseconds as a naive wall-clock timestamp in `zone`, for SentDate. */
export const zonedTimestamp = (ms: number, zone: string): Sql =>
  sql`(to_timestamp(${ms}::float8 / 1000) AT TIME ZONE ${zone}::text)`;

/**
 * RawSummary's columns from `mail_archiver."ArchivedEmails" e`; with Mail Archiver's read flag
 * where the database has it (PgContext.isRead).
 */
export const summaryColumns = (ctx: { zone: string; isRead: boolean }): Sql => sql`e."Id" AS id,
  e."MailAccountId" AS account_id, e."Subject" AS subject, e."From" AS from_addr, e."To" AS to_addr,
  ${zonedMs('e."SentDate"', ctx.zone)} AS sent_date, e."IsOutgoing"::int AS is_outgoing,
  e."HasAttachments"::int AS has_attachments, e."FolderName" AS folder${raw(ctx.isRead ? ', e."IsRead" AS is_read' : '')}`;

/**
 * Limits `column` (an account id) to what the viewer may see: admins all, others assigned ones.
 * The assigned accounts as an array (an init plan, read once), not `IN (subquery)`: as a semi
 * join the planner guessed a tenth of the archive and, counting a restricted search, walked
 * every message by primary key to probe the side index for each (459 ms at 100,000 messages);
 * with the array it reads IX_ArchivedEmails_MailAccountId's bitmap and hashes it against the
 * side index's (140 ms). docs/performance.md, "PostgreSQL before the index is ready".
 */
export function visibleAccounts(viewer: Viewer, column: string): Sql {
  const parts: Sql[] = [];
  if (!viewer.isAdmin)
    parts.push(
      sql`${raw(column)} = ANY(ARRAY(SELECT "MailAccountId" FROM mail_archiver."UserMailAccounts" WHERE "UserId" = ${viewer.userId}))`,
    );
  // An OAuth grant narrowed to some accounts (shared/jobs.ts Principal.oauth).
  const only = viewer.oauth?.accountIds;
  if (only) parts.push(sql`${raw(column)} = ANY(${only}::int[])`);
  return join(parts, ' AND ', 'true');
}

/** SQLite's NOCASE folds ASCII only and compares code points: lower() under "C" does the same. */
export const SORT_COLUMNS: Record<Exclude<SortKey, 'relevance'>, string> = {
  sentDate: 'e."SentDate"',
  receivedDate: 'e."ReceivedDate"',
  subject: 'lower(e."Subject" COLLATE "C")',
  from: 'lower(e."From" COLLATE "C")',
  to: 'lower(e."To" COLLATE "C")',
};
