// Mail Archiver's columns under the names the store-independent mappers read (RawSummary,
// RawKey, ...), so that one mapping turns rows of either store into the same DTOs. Dates leave
// SQL as epoch milliseconds: SentDate is wall-clock time in the display zone, every other naive
// timestamp is UTC (docs/compat.md, "Timestamps").
import type { SortKey } from '../../shared/jobs.js';
import { raw, sql, type Sql } from './sql.js';

export const T = {
  emails: raw('mail_archiver."ArchivedEmails"'),
  attachments: raw('mail_archiver."EmailAttachments"'),
  contents: raw('mail_archiver."AttachmentContents"'),
  accounts: raw('mail_archiver."MailAccounts"'),
  users: raw('mail_archiver."Users"'),
  userAccounts: raw('mail_archiver."UserMailAccounts"'),
  keys: raw('mail_archiver."ApiKeys"'),
  accessLogs: raw('mail_archiver."AccessLogs"'),
};

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

/** RawSummary's columns from `mail_archiver."ArchivedEmails" e`. */
export const summaryColumns = (zone: string): Sql => sql`e."Id" AS id, e."MailAccountId" AS account_id,
  e."Subject" AS subject, e."From" AS from_addr, e."To" AS to_addr, ${zonedMs('e."SentDate"', zone)} AS sent_date,
  e."IsOutgoing"::int AS is_outgoing, e."HasAttachments"::int AS has_attachments, e."FolderName" AS folder`;

/** Limits `column` (an account id) to what the viewer may see: admins all, others assigned ones. */
export function visibleAccounts(viewer: { isAdmin: boolean; userId: number }, column: string): Sql {
  if (viewer.isAdmin) return raw('true');
  return sql`${raw(column)} IN (SELECT "MailAccountId" FROM mail_archiver."UserMailAccounts" WHERE "UserId" = ${viewer.userId})`;
}

/** SQLite's NOCASE folds ASCII only and compares code points: lower() under "C" does the same. */
export const SORT_COLUMNS: Record<Exclude<SortKey, 'relevance'>, string> = {
  sentDate: 'e."SentDate"',
  receivedDate: 'e."ReceivedDate"',
  subject: 'lower(e."Subject" COLLATE "C")',
  from: 'lower(e."From" COLLATE "C")',
  to: 'lower(e."To" COLLATE "C")',
};
