// Attachment text on a SQLite archive (migration 5): what reindex and the importer need
// (contents not yet read, their bytes, saving what was found) and the attachmentText job.
import type { AttachmentTextPage, Viewer } from '../../shared/jobs.js';
import type {
  AttachmentTextRow,
  AttachmentTextStore,
  ExtractResult,
  PendingContent,
} from '../rules/attachment-text.js';
import { pageOfText } from '../rules/attachment-text.js';
import { ATTACHMENT_SCAN_CHARS, ATTACHMENT_SCAN_FILES, type AttachmentText } from '../search/snippet.js';
import type { Db } from './open.js';
import { prepared } from './statements.js';
import { visibleAccountsClause } from './accounts.js';
import { bumpGeneration } from './users.js';

// A content without an outcome, named by its first (lowest id) attachment row `a`.
const COLUMNS = 'c.id AS contentId, c.id AS cursor, c.size, a.content_type AS contentType, a.file_name AS fileName';
const NAMED = 'JOIN attachments a ON a.id = (SELECT min(id) FROM attachments WHERE content_id = c.id)';
const NO_OUTCOME = 'c.id > ? AND NOT EXISTS (SELECT 1 FROM attachment_texts t WHERE t.content_id = c.id)';
const PENDING = `SELECT ${COLUMNS} FROM attachment_contents c ${NAMED} WHERE ${NO_OUTCOME}`;

export function pendingContents(
  db: Db,
  limit: number,
  { emailIds, after = 0 }: { emailIds?: readonly number[] | undefined; after?: number } = {},
): PendingContent[] {
  if (emailIds) {
    if (emailIds.length === 0) return [];
    // Once for each of these messages that holds the content, in content order.
    return prepared(
      db,
      `SELECT ${COLUMNS}, m.email_id AS emailId
         FROM (SELECT DISTINCT email_id, content_id FROM attachments WHERE email_id IN (SELECT value FROM json_each(?))) m
         JOIN attachment_contents c ON c.id = m.content_id ${NAMED}
        WHERE ${NO_OUTCOME} ORDER BY c.id LIMIT ?`,
    ).all(JSON.stringify(emailIds), after, limit) as PendingContent[];
  }
  return prepared(db, `${PENDING} ORDER BY c.id LIMIT ?`).all(after, limit) as PendingContent[];
}

export function countPendingContents(db: Db): number {
  return prepared(
    db,
    'SELECT count(*) FROM attachment_contents c WHERE NOT EXISTS (SELECT 1 FROM attachment_texts t WHERE t.content_id = c.id)',
  )
    .pluck()
    .get() as number;
}

export function contentBytes(db: Db, contentId: number): Buffer {
  const chunks = prepared(db, 'SELECT data FROM attachment_chunks WHERE content_id = ? ORDER BY seq')
    .pluck()
    .all(contentId) as Buffer[];
  return Buffer.concat(chunks);
}

/** Rebuilds the attachment_fts rows of these messages from the texts stored now. */
export function refreshMessages(db: Db, emailIds: Iterable<number>): void {
  const remove = prepared(db, 'DELETE FROM attachment_fts WHERE rowid = (SELECT fts_key FROM emails WHERE id = ?)');
  const insert = prepared(
    db,
    `INSERT INTO attachment_fts (rowid, text)
     SELECT (SELECT fts_key FROM emails WHERE id = @id), group_concat(t.text, char(10))
       FROM attachment_texts t
      WHERE t.content_id IN (SELECT content_id FROM attachments WHERE email_id = @id)
        AND t.status = 'ok' AND t.text <> ''
     HAVING count(*) > 0`,
  );
  for (const id of emailIds) {
    remove.run(id);
    insert.run({ id });
  }
}

/**
 * Stores what was found, and re-indexes every message holding those contents plus `emailIds`
 * (new messages whose contents were read before, for another message). One transaction. The
 * generation changes (cached counts of attachment: searches are dropped); the rewrite counter
 * does not, so the in-memory index of ADR 13 stays current.
 */
export function saveAttachmentTexts(
  db: Db,
  results: ReadonlyArray<{ contentId: number; result: ExtractResult }>,
  emailIds: readonly number[] = [],
  now = Date.now(),
): void {
  db.transaction(() => {
    const upsert = prepared(
      db,
      `INSERT INTO attachment_texts (content_id, status, text, chars, truncated, extracted_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (content_id) DO UPDATE SET status = excluded.status, text = excluded.text, chars = excluded.chars,
         truncated = excluded.truncated, extracted_at = excluded.extracted_at`,
    );
    const holders = prepared(db, 'SELECT DISTINCT email_id FROM attachments WHERE content_id = ?').pluck();
    const messages = new Set(emailIds);
    for (const { contentId, result } of results) {
      upsert.run(contentId, result.status, result.text, result.text.length, result.truncated ? 1 : 0, now);
      if (result.status === 'ok' && result.text !== '')
        for (const id of holders.all(contentId) as number[]) messages.add(id);
    }
    if (messages.size === 0) return;
    refreshMessages(db, messages);
    bumpGeneration(db);
  })();
}

export class SqliteAttachmentTexts implements AttachmentTextStore {
  constructor(private readonly db: Db) {}
  pending = async (limit: number, options?: { emailIds?: readonly number[]; after?: number }) =>
    pendingContents(this.db, limit, options);
  countPending = async () => countPendingContents(this.db);
  content = async (c: PendingContent) => contentBytes(this.db, c.contentId);
  save = async (results: ReadonlyArray<{ contentId: number; result: ExtractResult }>, emailIds?: readonly number[]) =>
    saveAttachmentTexts(this.db, results, emailIds);
}

/** The attachmentText job: null when the attachment does not exist or is not visible. */
export function getAttachmentText(
  db: Db,
  viewer: Viewer,
  emailId: number,
  attachmentId: number,
  offset = 0,
  maxChars?: number,
): AttachmentTextPage | null {
  const visible = visibleAccountsClause(viewer, 'e.account_id');
  const row = prepared(
    db,
    `SELECT a.id, a.email_id AS emailId, e.account_id AS accountId, a.file_name AS fileName,
            a.content_type AS contentType, a.size, t.status, t.text, t.truncated
       FROM attachments a
       JOIN emails e ON e.id = a.email_id
       LEFT JOIN attachment_texts t ON t.content_id = a.content_id
      WHERE a.id = ? AND a.email_id = ? AND ${visible.sql}`,
  ).get(attachmentId, emailId, ...visible.params) as AttachmentTextRow<number> | undefined;
  if (!row) return null;
  const { status, text, truncated, ...attachment } = row;
  return pageOfText(attachment, status, text ?? '', truncated === 1, offset, maxChars);
}

/**
 * The beginnings of the extracted text of these messages' attachments, in attachment order, for
 * snippets (engine/search/snippet.ts withAttachmentSnippets): each message's first
 * ATTACHMENT_SCAN_FILES attachments that have text, and of those only what lies within its first
 * ATTACHMENT_SCAN_CHARS characters of attachment text. The bound is on what is read, not only on
 * what is returned: `chars` sits after `text` in the row, so reading it walks the text's overflow
 * pages, and it is read only for those first attachments; `text` only for the rows within the
 * characters (docs/search.md, "Snippets").
 */
export function attachmentTextsOf(db: Db, emailIds: readonly number[]): Map<number, AttachmentText[]> {
  const rows = prepared(
    db,
    `WITH firsts AS (
       SELECT email_id, id, file_name, content_id FROM (
         SELECT a.email_id, a.id, a.file_name, a.content_id,
                row_number() OVER (PARTITION BY a.email_id ORDER BY a.id) AS n
           FROM attachments a JOIN attachment_texts t ON t.content_id = a.content_id
          WHERE a.email_id IN (SELECT value FROM json_each(?)) AND t.status = 'ok')
        WHERE n <= ${ATTACHMENT_SCAN_FILES}
     ), placed AS (
       SELECT f.email_id, f.id, f.file_name, f.content_id,
              sum(min(t.chars, ${ATTACHMENT_SCAN_CHARS})) OVER (PARTITION BY f.email_id ORDER BY f.id ROWS UNBOUNDED PRECEDING)
                - min(t.chars, ${ATTACHMENT_SCAN_CHARS}) AS before
         FROM firsts f JOIN attachment_texts t ON t.content_id = f.content_id
     )
     SELECT p.email_id, p.id, p.file_name, substr(t.text, 1, ${ATTACHMENT_SCAN_CHARS} - p.before)
       FROM placed p JOIN attachment_texts t ON t.content_id = p.content_id
      WHERE p.before < ${ATTACHMENT_SCAN_CHARS} AND t.chars > 0
      ORDER BY p.email_id, p.id`,
  )
    .raw()
    .all(JSON.stringify(emailIds)) as Array<[number, number, string, string]>;
  const out = new Map<number, AttachmentText[]>();
  for (const [emailId, id, fileName, text] of rows) {
    const list = out.get(emailId) ?? [];
    list.push({ id, fileName, text });
    out.set(emailId, list);
  }
  return out;
}
