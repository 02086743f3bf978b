// Read queries over archived mail: search, detail, folders, attachments and stats.
// Every query takes the principal and applies the visibility rule of SPEC.md, “Authentication” (permission model):
// what the caller may not see does not exist.
import { statSync } from 'node:fs';
import type {
  AttachmentDto,
  EmailDetailDto,
  EmailSummaryDto,
  FolderNodeDto,
  PagedResult,
  StatsDto,
} from '../../shared/dto.js';
import type { AttachmentHandle, SearchQuery, Viewer as SharedViewer } from '../../shared/jobs.js';
import { hasReadTerm, parseQuery } from '../../shared/query-language.js';
import { readTermsUnsupported } from '../../shared/search-input.js';
import type { Db } from './open.js';
import { prepared } from './statements.js';
import { searchEmails } from './search.js';
import { allSnippetTermsOf, lacksMarks, withAttachmentSnippets, withSnippets } from '../search/snippet.js';
import { attachmentTextsOf } from './attachment-text.js';
import { threadIdsOf } from './threads.js';
import { ATTACHMENT_ENTRY_BYTES } from '../rules/large-detail.js';
import { canSeeAccount, visibleAccountsClause } from './accounts.js';
import { buildFolderTree } from '../rules/folders.js';
import { toDetail, type RawDetail } from '../rules/summary.js';
import { SUMMARY_COLUMNS } from './summary-columns.js';

type Viewer = SharedViewer;

/** Search lives in the planner; re-exported so every read query is reachable from here. */
export { searchEmails };

/**
 * A search job's answer: the planner's page, with what the query asked for beyond SPEC.md
 * (snippets, include=threadId) added to its items.
 */
export function searchPage(db: Db, viewer: Viewer, query: SearchQuery): PagedResult<EmailSummaryDto> {
  // A SQLite archive has no read flag (Mail Archiver's IsRead): is:read cannot be answered.
  if (query.q !== undefined && hasReadTerm(parseQuery(query.q))) throw readTermsUnsupported();
  const result = searchEmails(db, viewer, query);
  if (result.items.length === 0) return result;
  let items = result.items;
  const terms = query.snippets ? allSnippetTermsOf(query.q) : null;
  if (terms?.body) {
    const rows = prepared(
      db,
      'SELECT email_id, body_text(text_body) FROM email_bodies WHERE email_id IN (SELECT value FROM json_each(?))',
    )
      .raw()
      .all(JSON.stringify(items.map((i) => i.id))) as Array<[number, string | null]>;
    items = withSnippets(items, terms.body, new Map(rows));
  }
  // Words found inside attachments (attachment: terms): the snippet is from there, naming the file.
  const unmarked = terms?.attachments ? items.filter(lacksMarks).map((i) => i.id) : [];
  if (terms?.attachments && unmarked.length > 0)
    items = withAttachmentSnippets(items, terms.attachments, attachmentTextsOf(db, unmarked));
  if (query.includeThreadId) {
    const threads = threadIdsOf(
      db,
      items.map((i) => i.id),
    );
    items = items.map((i) => ({ ...i, threadId: threads.get(i.id) ?? i.id }));
  }
  return items === result.items ? result : { ...result, items };
}

export function getEmailDetail(db: Db, viewer: Viewer, id: number): EmailDetailDto | null {
  const visible = visibleAccountsClause(viewer, 'e.account_id');
  const row = prepared(
    db,
    `SELECT ${SUMMARY_COLUMNS}, e.cc_addr, e.bcc_addr, e.received_date, e.message_id,
              body_text(b.text_body) AS text_body, body_text(b.html_body) AS html_body, b.text_untruncated, b.html_untruncated, b.text_original, b.html_original
       FROM emails e LEFT JOIN email_bodies b ON b.email_id = e.id
       WHERE e.id = ? AND ${visible.sql}`,
  ).get(id, ...visible.params) as RawDetail | undefined;
  if (!row) return null;
  const attachments = prepared(
    db,
    'SELECT id, file_name AS fileName, content_type AS contentType, size FROM attachments WHERE email_id = ? ORDER BY id',
  ).all(id) as AttachmentDto[];
  return toDetail(row, attachments);
}

/**
 * A stored body's size in bytes: a text one's from its record header, a packed one's
 * (body-codec.ts) from its first four bytes, as it will be once unpacked.
 */
const unpackedBytes = (column: string) =>
  `CASE typeof(${column}) WHEN 'blob' THEN body_bytes(${column}) ELSE octet_length(${column}) END`;

/**
 * A message's size for routing its detail (engine/rules/large-detail.ts): the bytes of its stored
 * bodies, read from the record headers (octet_length reads no content), and its attachments
 * counted at ATTACHMENT_ENTRY_BYTES each.
 */
export function storedBodyBytes(db: Db, id: number): number {
  const row = prepared(
    db,
    `SELECT coalesce((SELECT coalesce(${unpackedBytes('text_body')}, 0) + coalesce(${unpackedBytes('html_body')}, 0)
          + coalesce(octet_length(text_untruncated), 0) + coalesce(octet_length(html_untruncated), 0)
          + coalesce(octet_length(text_original), 0) + coalesce(octet_length(html_original), 0)
               FROM email_bodies WHERE email_id = @id), 0)
          + (SELECT count(*) FROM attachments WHERE email_id = @id) * ${ATTACHMENT_ENTRY_BYTES} AS bytes`,
  ).get({ id }) as { bytes: number | null } | undefined;
  return row?.bytes ?? 0;
}

/** null when the account does not exist or is not visible: the caller cannot tell which. */
export function getFolderTree(db: Db, viewer: Viewer, accountId: number): FolderNodeDto[] | null {
  if (!canSeeAccount(db, viewer, accountId)) return null;
  return buildFolderTree(folderCounts(db, accountId));
}

type FolderCounts = Array<{ folder: string; count: number }>;
/** Accounts whose folder counts one connection keeps: a bound on memory, not a tuning knob. */
const FOLDER_CACHE_ACCOUNTS = 64;
const folderCache = new WeakMap<Db, { mail: string; byAccount: Map<number, FolderCounts> }>();

/**
 * An account's messages per folder. Counting them reads every message of the account (5 to 8 ms
 * at 50,000), and the web's search page shows the tree on every page of a chosen account, so each
 * connection keeps the counts while the archive's mail is unchanged: the same test the search
 * index's snapshot is current by (index-share.ts currentSnapshot), new mail raising the largest
 * id and every rewrite (deletion, move, reparse) raising `rewrites`.
 */
function folderCounts(db: Db, accountId: number): FolderCounts {
  const state = prepared(
    db,
    'SELECT coalesce((SELECT max(id) FROM emails), 0) AS maxId, rewrites FROM archive_state WHERE id = 1',
  ).get() as { maxId: number; rewrites: number };
  const mail = `${state.maxId}:${state.rewrites}`;
  let cache = folderCache.get(db);
  if (!cache || cache.mail !== mail) folderCache.set(db, (cache = { mail, byAccount: new Map() }));
  let counts = cache.byAccount.get(accountId);
  if (!counts) {
    counts = prepared(db, 'SELECT folder, count(*) AS count FROM emails WHERE account_id = ? GROUP BY folder').all(
      accountId,
    ) as FolderCounts;
    if (cache.byAccount.size >= FOLDER_CACHE_ACCOUNTS) cache.byAccount.clear();
    cache.byAccount.set(accountId, counts);
  }
  return counts;
}

export function getAttachmentHandle(
  db: Db,
  viewer: Viewer,
  emailId: number,
  attachmentId: number,
): AttachmentHandle | null {
  const visible = visibleAccountsClause(viewer, 'e.account_id');
  const row = prepared(
    db,
    `SELECT a.id, a.email_id AS emailId, e.account_id AS accountId, a.file_name AS fileName,
              a.content_type AS contentType, a.size, a.content_id AS contentId, c.chunks AS chunkCount, c.sha256 AS contentTag
       FROM attachments a
       JOIN emails e ON e.id = a.email_id
       JOIN attachment_contents c ON c.id = a.content_id
       WHERE a.id = ? AND a.email_id = ? AND ${visible.sql}`,
  ).get(attachmentId, emailId, ...visible.params) as AttachmentHandle | undefined;
  return row ?? null;
}

export function readAttachmentChunk(db: Db, contentId: number, seq: number): Buffer | null {
  const data = prepared(db, 'SELECT data FROM attachment_chunks WHERE content_id = ? AND seq = ?')
    .pluck()
    .get(contentId, seq);
  return (data as Buffer | undefined) ?? null;
}

export function getStats(db: Db, viewer: Viewer): StatsDto {
  const emails = visibleAccountsClause(viewer, 'e.account_id');
  const accounts = visibleAccountsClause(viewer, 'a.id');
  const count = (sql: string, params: unknown[]) =>
    prepared(db, sql)
      .pluck()
      .get(...params) as number;
  return {
    emails: count(`SELECT count(*) FROM emails e WHERE ${emails.sql}`, emails.params),
    accounts: count(`SELECT count(*) FROM mail_accounts a WHERE ${accounts.sql}`, accounts.params),
    attachments: count(
      `SELECT count(*) FROM attachments t JOIN emails e ON e.id = t.email_id WHERE ${emails.sql}`,
      emails.params,
    ),
    databaseSizeInMB: viewer.isAdmin ? databaseSizeInMB(db) : '',
  };
}

/** The whole database on disk: main file plus write-ahead log, in MiB with two decimals. */
export function databaseSizeInMB(db: Db): string {
  const size = (path: string) => {
    try {
      return statSync(path).size;
    } catch {
      return 0;
    }
  };
  const bytes = size(db.name) + size(`${db.name}-wal`);
  return (bytes / (1024 * 1024)).toFixed(2);
}
