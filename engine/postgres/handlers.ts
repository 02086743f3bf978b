// One async function per job kind, over Mail Archiver's PostgreSQL schema. The same jobs, DTO
// mappers, body fallback, folder tree and key rules as the SQLite store (engine/sqlite/handlers.ts);
// only the SQL differs. Every read applies the visibility rule of SPEC.md, “Authentication” (permission model).
import type { Viewer } from '../../shared/jobs.js';
import { attachmentText } from './attachment-text.js';
import type { AccessType, AttachmentDto, EmailDetailDto, MailAccountDto } from '../../shared/dto.js';
import {
  KEYS_PAGE_SIZE,
  pageWithin,
  type AccessLogEntry,
  type AttachmentHandle,
  type AuthResult,
  type Job,
  type JobKind,
  type JobResult,
  type KeyListPage,
  type KeyRow,
  type WebUser,
} from '../../shared/jobs.js';
import { keyNameProblem, tooManyKeys } from '../../shared/key-name.js';
import { StoreError } from '../../shared/errors.js';
import { buildFolderTree } from '../rules/folders.js';
import {
  accepted,
  forbidden,
  generateKey,
  hashKey,
  KEY_PREFIX_LENGTH,
  LAST_USED_INTERVAL_MS,
  lastUsedDue,
  notFound,
  type RawKey,
  refusal,
  toRow,
} from '../rules/keys.js';
import { toDetail, type RawDetail } from '../rules/summary.js';
import { ATTACHMENT_CHUNK_BYTES } from '../rules/new-email.js';
import { decoyHash, stampOf, verifyPasswordSync } from '../rules/password-hash.js';
import { iso } from '../rules/time.js';
import { threadId } from 'node:worker_threads';
import { NO_KEY_HASH, WARM_UP_PRINCIPAL, warmedUp, warmUpStep } from '../search/warm-up.js';
import { accessLogsTable, summaryColumns, T, utcMs, utcTimestamp, visibleAccounts } from './columns.js';
import { searchPage } from './search.js';
import { messageCopies } from './originals.js';
import { chainEntries, lockChain } from './access-chain.js';
import { exportPageQuery } from '../rules/export-ids.js';
import { indexedSearch, searchIndexInfo } from './search-snapshot.js';
import { getThread } from './threads.js';
import * as pgOAuth from './oauth.js';
import { aggregateEmails } from './aggregate.js';
import { reused, sql } from './sql.js';
import type { PgContext } from './context.js';
import { SEARCH_PARAMS } from '../../shared/search-input.js';
import { encodeDetail } from '../rules/encoded-detail.js';
import {
  ATTACHMENT_ENTRY_BYTES,
  isMovedToQueryLane,
  movedToQueryLane,
  type MovedToQueryLane,
} from '../rules/large-detail.js';
import { messageView, type CidPart } from '../rules/mail-view.js';

type PgHandlers = { [K in JobKind]: (ctx: PgContext, job: Job<K>) => Promise<JobResult<K>> };

/** Mail Archiver's AccessLogType codes (docs/compat.md): the position in its enum. */
export const ACCESS_TYPE_CODES: Record<AccessType, number> = { Search: 2, Open: 3, Download: 4 };
const ACCESS_TYPES = Object.fromEntries(Object.entries(ACCESS_TYPE_CODES).map(([k, v]) => [v, k])) as Record<
  number,
  AccessType
>;
export const accessTypeOf = (code: number): AccessType | null => ACCESS_TYPES[code] ?? null;

/** Upstream's SearchParameters text: `q=…; from=…; …` in its order, only what was given, cut to 255. */
// SPEC.md's ten, in its order; our additions (snippets, include) are not upstream's to show.
const SEARCH_PARAM_ORDER: readonly string[] = SEARCH_PARAMS.filter((p) => p !== 'snippets' && p !== 'include');
export function searchParametersText(params: Record<string, unknown>): string {
  const keys = [
    ...SEARCH_PARAM_ORDER.filter((k) => k in params),
    ...Object.keys(params).filter((k) => !SEARCH_PARAM_ORDER.includes(k)),
  ];
  return keys
    .filter((k) => params[k] !== undefined && params[k] !== null && params[k] !== '')
    .map((k) => `${k}=${String(params[k])}`)
    .join('; ')
    .slice(0, 255);
}

export const KEY_COLUMNS = sql`k."Id" AS id, k."UserId" AS user_id, u."Username" AS username, u."IsActive"::int AS is_active,
  k."Name" AS name, k."KeyPrefix" AS key_prefix, ${utcMs('k."CreatedAt"')} AS created_at,
  ${utcMs('k."LastUsedAt"')} AS last_used_at, ${utcMs('k."ExpiresAt"')} AS expires_at,
  ${utcMs('k."RevokedAt"')} AS revoked_at, g.client_id AS grant_client_id, g.client_name AS grant_client_name,
  g.account_ids AS grant_account_ids, g.expires_at::float8 AS grant_expires_at, g.revoked_at::float8 AS grant_revoked_at,
  g.id AS grant_id`;

/** Keys, their users, and the OAuth grant a key is the access token of (our own table; none for most keys). */
export const KEY_FROM = sql`${T.keys} k JOIN ${T.users} u ON u."Id" = k."UserId"
  LEFT JOIN mail_archive_gateway.oauth_grants g ON g.key_id = k."Id"`;

async function authenticate(ctx: PgContext, keyHash: string, now: number): Promise<AuthResult> {
  // The primary, never a replica: a key revoked a moment ago must be refused now. Every request
  // asks this: prepared once per connection, the server no longer parses and plans it each time.
  const rows = await ctx.primary<RawKey & { is_admin: number; grant_id: number | null }>(
    reused(sql`SELECT ${KEY_COLUMNS}, u."IsAdmin"::int AS is_admin
                 FROM ${KEY_FROM} WHERE k."KeyHash" = ${keyHash}`),
  );
  const row = rows[0];
  const refused = refusal(row, now);
  if (refused || !row) return refused ?? { ok: false, reason: 'unknown' };
  if (lastUsedDue(row.last_used_at, now)) {
    await ctx.primary(
      sql`UPDATE ${T.keys} SET "LastUsedAt" = ${utcTimestamp(now)}
           WHERE "Id" = ${row.id} AND ("LastUsedAt" IS NULL OR "LastUsedAt" <= ${utcTimestamp(now - LAST_USED_INTERVAL_MS)})`,
    );
  }
  return accepted(row);
}

interface RawAccount {
  id: number;
  name: string;
  email_address: string;
  provider: string | null;
  is_enabled: boolean;
  last_sync: number | null;
}

/** Mail Archiver's "never synced" is 1970-01-01; the DTO says null. */
export const toAccountDto = (r: RawAccount): MailAccountDto => ({
  id: r.id,
  name: r.name,
  emailAddress: r.email_address,
  provider: r.provider ?? 'IMAP',
  isEnabled: r.is_enabled,
  lastSync: r.last_sync === null || r.last_sync <= 0 ? null : iso(r.last_sync),
});

export const ACCOUNT_COLUMNS = sql`a."Id" AS id, a."Name" AS name, a."EmailAddress" AS email_address,
  a."Provider" AS provider, a."IsEnabled" AS is_enabled, ${utcMs('a."LastSync"')} AS last_sync`;

async function accounts(ctx: PgContext, viewer: Viewer): Promise<MailAccountDto[]> {
  const rows = await ctx.read<RawAccount>(
    sql`SELECT ${ACCOUNT_COLUMNS} FROM ${T.accounts} a WHERE ${visibleAccounts(viewer, 'a."Id"')} ORDER BY a."Id"`,
  );
  return rows.map(toAccountDto);
}

async function folders(ctx: PgContext, viewer: Viewer, accountId: number) {
  const visible = await ctx.read(
    sql`SELECT 1 FROM ${T.accounts} a WHERE a."Id" = ${accountId} AND ${visibleAccounts(viewer, 'a."Id"')}`,
  );
  if (visible.length === 0) return null;
  const counts = await ctx.read<{ folder: string; count: number }>(
    sql`SELECT "FolderName" AS folder, count(*) AS count FROM ${T.emails}
         WHERE "MailAccountId" = ${accountId} GROUP BY "FolderName"`,
  );
  return buildFolderTree(counts);
}

/**
 * A message's detail, or, when it is larger than `maxBytes` (the interactive lane's limit,
 * engine/rules/large-detail.ts), only its size: its bodies' bytes (octet_length takes the raw size
 * from a TOAST pointer, never reading the value) and its attachments counted at
 * ATTACHMENT_ENTRY_BYTES each. One statement, prepared once per connection: a detail is read on
 * nearly every request, and its three statements as text (the size, the row, the attachments)
 * were three round trips, each parsed and planned, while an interactive thread waited
 * (docs/performance.md, "Reading one message on PostgreSQL"). A message the viewer may not see
 * is no row, whatever its size.
 */
async function detail(
  ctx: PgContext,
  viewer: Viewer,
  id: number,
  maxBytes = Number.MAX_SAFE_INTEGER,
): Promise<EmailDetailDto | MovedToQueryLane | null> {
  // Mail Archiver stores '' for "no body"; an empty legacy untruncated body does not count. CASE
  // reads a body only for a message within the limit: a larger one's values stay in TOAST.
  const rows = await ctx.read<RawDetail & { bytes: number; attachments: AttachmentDto[] | null }>(
    reused(sql`SELECT ${summaryColumns(ctx)}, e."Cc" AS cc_addr, e."Bcc" AS bcc_addr,
               ${utcMs('e."ReceivedDate"')} AS received_date, e."MessageId" AS message_id, s.bytes,
               CASE WHEN s.small THEN NULLIF(e."Body", '') END AS text_body,
               CASE WHEN s.small THEN NULLIF(e."HtmlBody", '') END AS html_body,
               CASE WHEN s.small THEN NULLIF(e."BodyUntruncatedText", '') END AS text_untruncated,
               CASE WHEN s.small THEN NULLIF(e."BodyUntruncatedHtml", '') END AS html_untruncated,
               CASE WHEN s.small THEN e."OriginalBodyText" END AS text_original,
               CASE WHEN s.small THEN e."OriginalBodyHtml" END AS html_original,
               CASE WHEN s.small THEN
                 (SELECT coalesce(json_agg(json_build_object('id', a."Id", 'fileName', a."FileName",
                                                             'contentType', a."ContentType", 'size', a."Size")
                                           ORDER BY a."Id"), '[]'::json)
                    FROM ${T.attachments} a WHERE a."ArchivedEmailId" = e."Id")
               END AS attachments
          FROM ${T.emails} e
          CROSS JOIN LATERAL (
            SELECT b.bytes, b.bytes <= ${maxBytes}::bigint AS small
              FROM (SELECT (coalesce(octet_length(e."Body"), 0) + coalesce(octet_length(e."HtmlBody"), 0)
                          + coalesce(octet_length(e."BodyUntruncatedText"), 0)
                          + coalesce(octet_length(e."BodyUntruncatedHtml"), 0)
                          + coalesce(octet_length(e."OriginalBodyText"), 0)
                          + coalesce(octet_length(e."OriginalBodyHtml"), 0)
                          + (SELECT count(*) FROM ${T.attachments} a WHERE a."ArchivedEmailId" = e."Id")
                            * ${ATTACHMENT_ENTRY_BYTES}::int)::bigint AS bytes OFFSET 0) b) s
         WHERE e."Id" = ${id}::int AND ${visibleAccounts(viewer, 'e."MailAccountId"')}`),
  );
  const row = rows[0];
  if (!row) return null;
  // The pool takes this back and reruns the job on the query lane (engine/rules/large-detail.ts).
  if (row.bytes > maxBytes) return movedToQueryLane(row.bytes);
  return toDetail(row, row.attachments ?? []);
}

/**
 * A message's attachments with their Content-IDs (Mail Archiver keeps them without brackets; ''
 * or NULL: none), in id order, for the web's message page (engine/rules/mail-view.ts). The caller
 * has read the message's detail as its viewer, which checked visibility.
 */
async function cidParts(ctx: PgContext, emailId: number): Promise<CidPart[]> {
  return ctx.read<CidPart>(
    sql`SELECT "Id" AS "attachmentId", NULLIF("ContentId", '') AS cid
          FROM ${T.attachments} WHERE "ArchivedEmailId" = ${emailId} ORDER BY "Id"`,
  );
}

/**
 * Where an attachment's bytes live, as one number: an AttachmentContents id (positive), the
 * legacy EmailAttachments.Content of that attachment (its id, negated), or nowhere (0: empty).
 */
async function attachment(ctx: PgContext, viewer: Viewer, emailId: number, attachmentId: number) {
  const rows = await ctx.read<Omit<AttachmentHandle, 'chunkCount'>>(
    sql`SELECT a."Id" AS id, a."ArchivedEmailId" AS "emailId", e."MailAccountId" AS "accountId",
               a."FileName" AS "fileName", a."ContentType" AS "contentType",
               COALESCE(octet_length(c."Content"), octet_length(a."Content"), 0)::bigint AS size,
               CASE WHEN c."Id" IS NOT NULL THEN c."Id" WHEN a."Content" IS NOT NULL THEN -a."Id" ELSE 0 END AS "contentId",
               COALESCE(c."Hash", 'attachment-' || a."Id") AS "contentTag"
          FROM ${T.attachments} a
          JOIN ${T.emails} e ON e."Id" = a."ArchivedEmailId"
          LEFT JOIN ${T.contents} c ON c."Id" = a."AttachmentContentId"
         WHERE a."Id" = ${attachmentId} AND a."ArchivedEmailId" = ${emailId}
           AND ${visibleAccounts(viewer, 'e."MailAccountId"')}`,
  );
  const row = rows[0];
  if (!row) return null;
  return { ...row, chunkCount: Math.max(1, Math.ceil(row.size / ATTACHMENT_CHUNK_BYTES)) };
}

/**
 * A compressed value this size or smaller is read whole, once, and its chunks served from memory.
 * PostgreSQL cuts a slice out of a compressed value by decompressing everything before it, so
 * reading a compressed 50 MB attachment slice by slice decompresses about 5 GB (13 s here);
 * values stored uncompressed (most attachments: zip, jpeg, pdf) are sliced as they lie.
 */
export const WHOLE_READ_LIMIT = 64 * 1024 * 1024;

/** The one whole value this worker thread holds (bounded by WHOLE_READ_LIMIT), by content id. */
let held: { contentId: number; data: Buffer } | undefined;

function chunkOf(data: Buffer, seq: number): Uint8Array | null {
  const start = seq * ATTACHMENT_CHUNK_BYTES;
  if (start >= data.length && !(seq === 0 && data.length === 0)) return null;
  // A copy with a buffer of its own, so the worker can move it to the gateway thread.
  return new Uint8Array(data.subarray(start, start + ATTACHMENT_CHUNK_BYTES));
}

/** One chunk of the bytes: PostgreSQL cuts it out (substring of bytea), so only it travels. */
async function attachmentChunk(ctx: PgContext, contentId: number, seq: number): Promise<Uint8Array | null> {
  if (contentId === 0) return seq === 0 ? new Uint8Array(0) : null;
  if (held?.contentId === contentId) return chunkOf(held.data, seq);
  const from = seq * ATTACHMENT_CHUNK_BYTES + 1;
  const source =
    contentId > 0
      ? sql`FROM ${T.contents} WHERE "Id" = ${contentId}`
      : sql`FROM ${T.attachments} WHERE "Id" = ${-contentId}`;
  const rows = await ctx.read<{ data: Buffer | null; whole: boolean }>(
    sql`SELECT CASE WHEN whole THEN "Content" ELSE substring("Content" FROM ${from}::int FOR ${ATTACHMENT_CHUNK_BYTES}::int) END AS data, whole
          FROM (SELECT "Content", pg_column_compression("Content") IS NOT NULL
                       AND octet_length("Content") <= ${WHOLE_READ_LIMIT}::int AS whole ${source}) v`,
  );
  const row = rows[0];
  if (!row?.data) return null;
  if (row.whole) {
    held = { contentId, data: row.data };
    return chunkOf(row.data, seq);
  }
  const data = row.data;
  if (data.length === 0 && seq > 0) return null;
  // A buffer of its own, so the worker can move it to the gateway thread instead of copying.
  return data.byteLength === data.buffer.byteLength ? data : new Uint8Array(data);
}

async function stats(ctx: PgContext, viewer: Viewer) {
  const rows = await ctx.read<{ emails: number; accounts: number; attachments: number; bytes: number }>(
    sql`SELECT (SELECT count(*) FROM ${T.emails} e WHERE ${visibleAccounts(viewer, 'e."MailAccountId"')}) AS emails,
               (SELECT count(*) FROM ${T.accounts} a WHERE ${visibleAccounts(viewer, 'a."Id"')}) AS accounts,
               (SELECT count(*) FROM ${T.attachments} t JOIN ${T.emails} e ON e."Id" = t."ArchivedEmailId"
                 WHERE ${visibleAccounts(viewer, 'e."MailAccountId"')}) AS attachments,
               pg_database_size(current_database()) AS bytes`,
  );
  const r = rows[0]!;
  return {
    emails: r.emails,
    accounts: r.accounts,
    attachments: r.attachments,
    databaseSizeInMB: viewer.isAdmin ? (r.bytes / (1024 * 1024)).toFixed(2) : '',
  };
}

/**
 * Into Mail Archiver's AccessLogs, one row per read, with its type codes and the columns it
 * fills (so its own audit page lists these reads); what it has no column for (key prefix,
 * client address, front end) goes to our access_log_details, keyed by the AccessLogs id. On the
 * GoBD fork's database the table is archive_worm's (PgContext.accessLogSchema): the same
 * columns, and its BEFORE INSERT trigger chains each row; we never write the chain's columns.
 */
async function writeAccessLog(ctx: PgContext, entries: readonly AccessLogEntry[]): Promise<{ written: number }> {
  if (entries.length === 0) return { written: 0 };
  // Five statements per batch, whatever its size: the chain's lock, the ids (explicit ids are allowed by
  // the identity column), then both tables from arrays. A batch is the gateway's flush interval.
  // A user deleted by Mail Archiver meanwhile still gets its row (Username ''): nothing is lost.
  const column = <T>(pick: (e: AccessLogEntry) => T) => entries.map(pick);
  await ctx.transaction(async (query) => {
    await lockChain(query); // before the ids are drawn: docs/evidence.md, "An access log nobody can quietly edit"
    const ids = (
      await query<{ id: number }>(
        sql`SELECT nextval(pg_get_serial_sequence(${`${ctx.accessLogSchema}."AccessLogs"`}::text, 'Id'))::int AS id
              FROM generate_series(1, ${entries.length}::int)`,
      )
    ).map((r) => r.id);
    await query(
      sql`INSERT INTO ${accessLogsTable(ctx)} ("Id", "Username", "Type", "Timestamp", "EmailId", "EmailSubject", "EmailFrom", "SearchParameters")
          SELECT r.id, COALESCE(u."Username", ''), r.code, to_timestamp(r.at / 1000) AT TIME ZONE 'UTC', r.email_id,
                 CASE WHEN r.code = ${ACCESS_TYPE_CODES.Open} THEN left(e."Subject", 255) END,
                 CASE WHEN r.code = ${ACCESS_TYPE_CODES.Open} THEN left(e."From", 255) END,
                 r.search
            FROM unnest(${ids}::int[], ${column((e) => e.userId)}::int[], ${column((e) => ACCESS_TYPE_CODES[e.type])}::int[],
                        ${column((e) => e.at)}::float8[], ${column((e) => e.emailId ?? null)}::int[],
                        ${column((e) => (e.type === 'Search' && e.searchParams ? searchParametersText(e.searchParams) : null))}::text[])
                 AS r(id, user_id, code, at, email_id, search)
            LEFT JOIN ${T.users} u ON u."Id" = r.user_id
            LEFT JOIN ${T.emails} e ON e."Id" = r.email_id`,
    );
    await query(
      sql`INSERT INTO mail_archive_gateway.access_log_details
            (access_log_id, user_id, account_id, key_prefix, client_ip, source, search_params)
          SELECT * FROM unnest(${ids}::int[], ${column((e) => e.userId)}::int[], ${column((e) => e.accountId ?? null)}::int[],
                               ${column((e) => e.keyPrefix)}::text[], ${column((e) => e.clientIp)}::text[],
                               ${column((e) => e.source)}::text[],
                               ${column((e) => (e.searchParams ? JSON.stringify(e.searchParams) : null))}::jsonb[])`,
    );
    await chainEntries(query, accessLogsTable(ctx), ids);
  });
  return { written: entries.length };
}

interface RawUser {
  id: number;
  username: string;
  is_admin: boolean;
  is_active: boolean;
  password_hash: string | null;
}

async function userById(ctx: PgContext, id: number): Promise<RawUser | null> {
  const rows = await ctx.primary<RawUser>(
    sql`SELECT "Id" AS id, "Username" AS username, "IsAdmin" AS is_admin, "IsActive" AS is_active,
               "PasswordHash" AS password_hash FROM ${T.users} WHERE "Id" = ${id}`,
  );
  return rows[0] ?? null;
}

const webUser = (u: RawUser, stored: string): WebUser => ({
  id: u.id,
  username: u.username,
  isAdmin: u.is_admin,
  stamp: stampOf(stored),
});

/** Mail Archiver compares user names lower-cased; so does sign-in here. */
async function login(ctx: PgContext, username: string, password: string): Promise<WebUser | null> {
  const name = username.trim();
  const rows = name
    ? await ctx.primary<RawUser>(
        sql`SELECT "Id" AS id, "Username" AS username, "IsAdmin" AS is_admin, "IsActive" AS is_active,
                   "PasswordHash" AS password_hash FROM ${T.users} WHERE lower("Username") = lower(${name})`,
      )
    : [];
  const user = rows.length === 1 ? rows[0]! : null;
  const stored = user?.password_hash ?? null;
  const matches = verifyPasswordSync(password, stored ?? decoyHash());
  if (!matches || !user || !stored || !user.is_active) return null;
  return webUser(user, stored);
}

async function sessionUser(ctx: PgContext, userId: number, stamp: string, issuedAt: number): Promise<WebUser | null> {
  const user = await userById(ctx, userId);
  const stored = user?.password_hash ?? null;
  if (!user || !stored || !user.is_active || stampOf(stored) !== stamp) return null;
  const [ended] = await ctx.primary<{ at: string }>(
    sql`SELECT ended_at AS at FROM mail_archive_gateway.web_sessions_ended WHERE user_id = ${userId}`,
  );
  if (ended && issuedAt <= Number(ended.at)) return null;
  return webUser(user, stored);
}

async function endSessions(ctx: PgContext, userId: number, now: number): Promise<null> {
  await ctx.primary(
    sql`INSERT INTO mail_archive_gateway.web_sessions_ended (user_id, ended_at) VALUES (${userId}, ${now})
        ON CONFLICT (user_id) DO UPDATE SET ended_at = greatest(web_sessions_ended.ended_at, EXCLUDED.ended_at)`,
  );
  return null;
}

async function keysWhere(
  ctx: PgContext,
  where: ReturnType<typeof sql>,
  now: number,
  window?: { limit: number; offset: number },
): Promise<KeyRow[]> {
  const rows = await ctx.primary<RawKey>(
    window
      ? sql`SELECT ${KEY_COLUMNS} FROM ${KEY_FROM} WHERE ${where}
             ORDER BY u."Username", k."Id" LIMIT ${window.limit} OFFSET ${window.offset}`
      : sql`SELECT ${KEY_COLUMNS} FROM ${KEY_FROM} WHERE ${where}
             ORDER BY u."Username", k."Id"`,
  );
  return rows.map((r) => toRow(r, now));
}

/** One page of the keys `where` selects, in keysWhere's order (KEYS_PAGE_SIZE to a page). */
async function keysPage(
  ctx: PgContext,
  where: ReturnType<typeof sql>,
  requestedPage: number | undefined,
  now: number,
): Promise<KeyListPage> {
  const [count] = await ctx.primary<{ n: number }>(sql`SELECT count(*)::int AS n FROM ${T.keys} k WHERE ${where}`);
  const total = count!.n;
  const page = pageWithin(total, requestedPage);
  const rows = await keysWhere(ctx, where, now, { limit: KEYS_PAGE_SIZE, offset: (page - 1) * KEYS_PAGE_SIZE });
  return { rows, total, page, pageSize: KEYS_PAGE_SIZE };
}

/** Creates a key the way Mail Archiver does (prefix length, hash, UTC CreatedAt); shared with the CLI. */
export async function insertKey(
  ctx: PgContext,
  userId: number,
  name: string,
  expiresAt: number | null,
  now: number,
  cap?: { maxActive: number; username: string },
): Promise<{ id: number; key: string; prefix: string }> {
  if (cap) {
    const [row] = await ctx.primary<{ n: number }>(
      sql`SELECT count(*)::int AS n FROM ${T.keys} WHERE "UserId" = ${userId} AND "RevokedAt" IS NULL
            AND ("ExpiresAt" IS NULL OR "ExpiresAt" > ${utcTimestamp(now)})`,
    );
    if (row!.n >= cap.maxActive) throw new StoreError(tooManyKeys(cap.username, cap.maxActive));
  }
  const key = generateKey();
  const prefix = key.slice(0, KEY_PREFIX_LENGTH);
  const rows = await ctx.primary<{ id: number }>(
    sql`INSERT INTO ${T.keys} ("UserId", "Name", "KeyPrefix", "KeyHash", "CreatedAt", "ExpiresAt")
        VALUES (${userId}, ${name}, ${prefix}, ${hashKey(key)}, ${utcTimestamp(now)},
                ${expiresAt === null ? null : utcTimestamp(expiresAt)})
        RETURNING "Id" AS id`,
  );
  return { id: rows[0]!.id, key, prefix };
}

export const pgHandlers: PgHandlers = {
  authenticate: (ctx, job) => authenticate(ctx, job.keyHash, job.now),
  accounts: (ctx, job) => accounts(ctx, job.principal),
  folders: (ctx, job) => folders(ctx, job.principal, job.accountId),
  search: (ctx, job) => searchPage(ctx, job.principal, job.query),
  searchView: async (ctx, job) => {
    const [results, visible, tree] = await Promise.all([
      searchPage(ctx, job.principal, job.query),
      accounts(ctx, job.principal),
      job.folderTreeOf === undefined ? null : folders(ctx, job.principal, job.folderTreeOf),
    ]);
    return { results, accounts: visible, folders: tree };
  },
  aggregate: (ctx, job) => aggregateEmails(ctx, job.principal, job.aggregate),
  // A message over the limit answers "moved" (engine/rules/large-detail.ts), read in the same statement.
  detail: async (ctx, job) =>
    (await detail(ctx, job.principal, job.id, job.interactiveMaxBytes)) as EmailDetailDto | null,
  detailJson: async (ctx, job) => encodeDetail(await pgHandlers.detail(ctx, { ...job, kind: 'detail' })),
  messageView: async (ctx, job) => {
    const email = await pgHandlers.detail(ctx, { ...job, kind: 'detail' });
    if (email === null) return null;
    // Sized as detail is: the pool reruns the job on the query lane (engine/rules/large-detail.ts).
    if (isMovedToQueryLane(email)) return email as never;
    return messageView(email, await cidParts(ctx, email.id), job);
  },
  thread: (ctx, job) => getThread(ctx, job.principal, job.id, job.excerpts === true),
  attachment: (ctx, job) => attachment(ctx, job.principal, job.emailId, job.attachmentId),
  attachmentText: (ctx, job) =>
    attachmentText(ctx, job.principal, job.emailId, job.attachmentId, job.offset, job.maxChars),
  attachmentChunk: (ctx, job) => attachmentChunk(ctx, job.contentId, job.seq),
  stats: (ctx, job) => stats(ctx, job.principal),
  messageCopies: (ctx, job) => messageCopies(ctx, job.principal, job.ids),
  exportIds: async (ctx, job) => {
    const first = await searchPage(ctx, job.principal, exportPageQuery(job.query, 1));
    if (first.totalItems > job.max) return { total: first.totalItems, ids: null };
    const ids = first.items.map((i) => i.id);
    for (let page = 2; page <= first.totalPages; page++) {
      for (const item of (await searchPage(ctx, job.principal, exportPageQuery(job.query, page))).items)
        ids.push(item.id);
    }
    return { total: first.totalItems, ids };
  },
  accessLog: (ctx, job) => writeAccessLog(ctx, job.entries),
  login: (ctx, job) => login(ctx, job.username, job.password),
  sessionUser: (ctx, job) => sessionUser(ctx, job.userId, job.stamp, job.issuedAt),
  endSessions: (ctx, job) => endSessions(ctx, job.userId, job.now),
  listKeysFor: async (ctx, job) => {
    const actor = await userById(ctx, job.actorId);
    if (!actor || !actor.is_active) return forbidden;
    const own = await keysPage(ctx, sql`k."UserId" = ${actor.id}`, job.ownPage, job.now);
    const others = actor.is_admin ? await keysPage(ctx, sql`k."UserId" <> ${actor.id}`, job.othersPage, job.now) : null;
    const [key] = job.keyId === undefined ? [] : await keysWhere(ctx, sql`k."Id" = ${job.keyId}`, job.now);
    const named = key && (actor.is_admin || key.userId === actor.id) ? key : null;
    return { ok: true, value: { own, others, named } };
  },
  createKeyFor: async (ctx, job) => {
    const actor = await userById(ctx, job.actorId);
    if (!actor || !actor.is_active) return forbidden;
    const name = job.name.trim();
    const problem = keyNameProblem(name);
    if (problem) return { ok: false, reason: 'invalid', message: problem };
    let created: Awaited<ReturnType<typeof insertKey>>;
    try {
      created = await insertKey(ctx, actor.id, name, job.expiresAt, job.now, {
        maxActive: job.maxActive,
        username: actor.username,
      });
    } catch (err) {
      if (err instanceof StoreError) return { ok: false, reason: 'invalid', message: err.message };
      throw err;
    }
    const [row] = await keysWhere(ctx, sql`k."Id" = ${created.id}`, job.now);
    return { ok: true, value: { key: created.key, row: row! } };
  },
  revokeKeyAs: async (ctx, job) => {
    const actor = await userById(ctx, job.actorId);
    if (!actor || !actor.is_active) return forbidden;
    const [key] = await keysWhere(ctx, sql`k."Id" = ${job.keyId}`, job.now);
    if (!key || (!actor.is_admin && key.userId !== actor.id)) return notFound;
    await ctx.primary(
      sql`UPDATE ${T.keys} SET "RevokedAt" = ${utcTimestamp(job.now)} WHERE "Id" = ${job.keyId} AND "RevokedAt" IS NULL`,
    );
    const [row] = await keysWhere(ctx, sql`k."Id" = ${job.keyId}`, job.now);
    return { ok: true, value: row! };
  },
  oauthClient: (ctx, job) => pgOAuth.client(ctx, job.clientId),
  oauthRegister: (ctx, job) => pgOAuth.register(ctx, job.client, job.limits),
  oauthIssueCode: (ctx, job) => pgOAuth.issueCode(ctx, job.actorId, job.code, job.now, job.maxGrants),
  oauthToken: (ctx, job) => pgOAuth.token(ctx, job.request, job.now, job.accessMs),
  oauthRevoke: (ctx, job) => pgOAuth.revoke(ctx, job.tokenHash, job.clientId, job.now),
  ping: async (ctx) => {
    // The lane answers even when a server does not: which one is down is readiness's to report.
    const postgres = await ctx.health();
    if (postgres.primary.status !== 'ok') return { schemaVersion: 0, postgres };
    const rows = await ctx
      .primary<{ version: number }>(sql`SELECT version FROM mail_archive_gateway.schema_version WHERE id = 1`)
      .catch(() => []);
    const searchIndex = await searchIndexInfo(ctx);
    return { schemaVersion: rows[0]?.version ?? 0, postgres, ...(searchIndex ? { searchIndex } : {}) };
  },
  warmUp: async (ctx) => {
    // Only on an index the thread holds: at a million messages SQL's count of the commonest word
    // takes seconds, which a warm-up must not spend.
    const latest = ctx.searchSnapshot();
    const step = warmUpStep(threadId, latest?.token !== undefined ? latest.snapshot : undefined);
    if ('answer' in step) return step.answer;
    const started = performance.now();
    await authenticate(ctx, NO_KEY_HASH, Date.now());
    const answer = await indexedSearch(ctx, WARM_UP_PRINCIPAL, step.query); // undefined: new mail, SQL's to find
    return answer ? warmedUp(step.query, answer.totalItems, started, threadId) : { word: null };
  },
  fault: () => {
    throw new Error('fault injection is disabled');
  },
};
