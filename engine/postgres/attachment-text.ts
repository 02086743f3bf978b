// Attachment text on a PostgreSQL archive (own migration 7): the same store interface as
// engine/sqlite/attachment-text.ts over Mail Archiver's EmailAttachments and AttachmentContents.
// Mail Archiver archives mail without telling us, so `mail-archive reindex --attachments` is how
// its attachments get text; the importer does it for what it writes itself.
import type { AttachmentTextPage, Viewer } from '../../shared/jobs.js';
import {
  pageOfText,
  type AttachmentTextRow,
  type AttachmentTextStore,
  type ExtractResult,
  type PendingContent,
} from '../rules/attachment-text.js';
import { ATTACHMENT_SCAN_CHARS, ATTACHMENT_SCAN_FILES, type AttachmentText } from '../search/snippet.js';
import { T, visibleAccounts } from './columns.js';
import { reindexDocuments } from './search-index.js';
import { raw, reused, sql } from './sql.js';
import type { PgContext } from './context.js';

const TEXTS = raw('mail_archive_gateway.attachment_texts');
/** An attachment's content key, as the attachment handle has it (positive: AttachmentContents). */
const KEY = raw('COALESCE(a."AttachmentContentId", -a."Id")');

export class PgAttachmentTexts implements AttachmentTextStore {
  constructor(private readonly ctx: PgContext) {}

  async pending(
    limit: number,
    { emailIds, after = 0 }: { emailIds?: readonly number[]; after?: number } = {},
  ): Promise<PendingContent[]> {
    if (emailIds && emailIds.length === 0) return [];
    const only = emailIds ? sql`AND a."ArchivedEmailId" = ANY(${[...emailIds]}::int[])` : sql``;
    // Walks EmailAttachments by "Id" from the cursor (its primary key), probing our table per
    // row, and stops after `limit` finds: a long reindex does not rescan what it has done.
    const rows = await this.ctx.primary<PendingContent & { holder: number }>(
      sql`SELECT ${KEY} AS "contentId", a."Id" AS cursor, a."ContentType" AS "contentType", a."FileName" AS "fileName",
                 COALESCE(octet_length(c."Content"), octet_length(a."Content"), 0)::float8 AS size,
                 a."ArchivedEmailId" AS holder
            FROM ${T.attachments} a LEFT JOIN ${T.contents} c ON c."Id" = a."AttachmentContentId"
           WHERE a."Id" > ${after} AND NOT EXISTS (SELECT 1 FROM ${TEXTS} t WHERE t.content_id = ${KEY}) ${only}
           ORDER BY a."Id" LIMIT ${Math.min(limit, 1_000_000)}`,
    );
    // One content attached twice in the same stretch is read once (once per message asked for).
    const seen = new Set<string>();
    return rows.flatMap(({ holder, ...r }) => {
      const key = emailIds ? `${holder} ${r.contentId}` : `${r.contentId}`;
      if (seen.has(key)) return [];
      seen.add(key);
      return [emailIds ? { ...r, emailId: holder } : r];
    });
  }

  async countPending(): Promise<number> {
    const [row] = await this.ctx.primary<{ n: number }>(
      sql`SELECT count(DISTINCT ${KEY})::float8 AS n FROM ${T.attachments} a
           WHERE NOT EXISTS (SELECT 1 FROM ${TEXTS} t WHERE t.content_id = ${KEY})`,
    );
    return row!.n;
  }

  async content(c: PendingContent): Promise<Buffer> {
    // One statement per attachment read: prepared once per connection (a key lookup).
    const source = reused(
      c.contentId > 0
        ? sql`SELECT "Content" AS data FROM ${T.contents} WHERE "Id" = ${c.contentId}`
        : sql`SELECT "Content" AS data FROM ${T.attachments} WHERE "Id" = ${-c.contentId}`,
    );
    const [row] = await this.ctx.primary<{ data: Buffer | null }>(source);
    return row?.data ?? Buffer.alloc(0);
  }

  async save(
    results: ReadonlyArray<{ contentId: number; result: ExtractResult }>,
    emailIds: readonly number[] = [],
  ): Promise<void> {
    await this.ctx.transaction(async (query) => {
      if (results.length > 0) {
        const now = Date.now();
        await query(
          sql`INSERT INTO ${TEXTS} (content_id, status, text, chars, truncated, extracted_at)
              SELECT * FROM unnest(${results.map((r) => r.contentId)}::int[], ${results.map((r) => r.result.status)}::text[],
                                   ${results.map((r) => r.result.text)}::text[], ${results.map((r) => r.result.text.length)}::int[],
                                   ${results.map((r) => r.result.truncated)}::bool[], ${results.map(() => now)}::bigint[])
              ON CONFLICT (content_id) DO UPDATE SET status = excluded.status, text = excluded.text, chars = excluded.chars,
                truncated = excluded.truncated, extracted_at = excluded.extracted_at`,
        );
      }
      const found = results.filter((r) => r.result.status === 'ok' && r.result.text !== '').map((r) => r.contentId);
      // A document holds the text of its message's contents (status 'ok'); one without any is
      // the same whoever built it, the writer (writer.ts) or the catch-up. So of `emailIds`, only
      // the messages with text are built again: rebuilding every new message with a file (a
      // fifth of typical mail) read its body back and rewrote its GIN entries for nothing.
      // Each part by an index of EmailAttachments (a content key is an AttachmentContents "Id",
      // or minus the attachment's own for bytes kept in its row), not a scan of all of them.
      const holders =
        found.length === 0 && emailIds.length === 0
          ? []
          : (
              await query<{ id: number }>(
                sql`SELECT a."ArchivedEmailId" AS id FROM ${T.attachments} a
                     WHERE a."AttachmentContentId" = ANY(${found.filter((k) => k > 0)}::int[])
                    UNION
                    SELECT a."ArchivedEmailId" FROM ${T.attachments} a
                     WHERE a."Id" = ANY(${found.filter((k) => k < 0).map((k) => -k)}::int[]) AND a."AttachmentContentId" IS NULL
                    UNION
                    SELECT a."ArchivedEmailId" FROM ${T.attachments} a JOIN ${TEXTS} t ON t.content_id = ${KEY}
                     WHERE a."ArchivedEmailId" = ANY(${[...emailIds]}::int[]) AND t.status = 'ok' AND t.text <> ''`,
              )
            ).map((r) => r.id);
      await reindexDocuments(query, holders);
    });
  }
}

export async function attachmentText(
  ctx: PgContext,
  viewer: Viewer,
  emailId: number,
  attachmentId: number,
  offset = 0,
  maxChars?: number,
): Promise<AttachmentTextPage | null> {
  const rows = await ctx.read<AttachmentTextRow<boolean>>(
    sql`SELECT a."Id" AS id, a."ArchivedEmailId" AS "emailId", e."MailAccountId" AS "accountId",
               a."FileName" AS "fileName", a."ContentType" AS "contentType",
               COALESCE(octet_length(c."Content"), octet_length(a."Content"), 0)::float8 AS size,
               t.status, t.text, t.truncated
          FROM ${T.attachments} a
          JOIN ${T.emails} e ON e."Id" = a."ArchivedEmailId"
          LEFT JOIN ${T.contents} c ON c."Id" = a."AttachmentContentId"
          LEFT JOIN ${TEXTS} t ON t.content_id = ${KEY}
         WHERE a."Id" = ${attachmentId} AND a."ArchivedEmailId" = ${emailId}
           AND ${visibleAccounts(viewer, 'e."MailAccountId"')}`,
  );
  const row = rows[0];
  if (!row) return null;
  const { status, text, truncated, ...attachment } = row;
  return pageOfText(attachment, status, text ?? '', truncated === true, offset, maxChars);
}

/**
 * The beginnings of the extracted text of these messages' attachments, in attachment order, for
 * snippets (engine/search/snippet.ts withAttachmentSnippets): each message's first
 * ATTACHMENT_SCAN_FILES attachments that have text, and of those only what lies within its first
 * ATTACHMENT_SCAN_CHARS characters of attachment text. `text` is read (a prefix of it, by left())
 * only for the rows within that bound, not for every attachment of the message (docs/search.md,
 * "Snippets").
 */
export async function attachmentTextsOf(
  ctx: PgContext,
  emailIds: readonly number[],
): Promise<Map<number, AttachmentText[]>> {
  const rows = await ctx.read<{ emailId: number; id: number; fileName: string; text: string }>(
    sql`WITH firsts AS (
          SELECT "emailId", id, "fileName", key FROM (
            SELECT a."ArchivedEmailId" AS "emailId", a."Id" AS id, a."FileName" AS "fileName", ${KEY} AS key,
                   row_number() OVER (PARTITION BY a."ArchivedEmailId" ORDER BY a."Id") AS n
              FROM ${T.attachments} a JOIN ${TEXTS} t ON t.content_id = ${KEY}
             WHERE a."ArchivedEmailId" = ANY(${[...emailIds]}::int[]) AND t.status = 'ok') numbered
           WHERE n <= ${ATTACHMENT_SCAN_FILES}::int
        ), placed AS (
          SELECT f.*, sum(least(t.chars, ${ATTACHMENT_SCAN_CHARS}::int)) OVER (PARTITION BY f."emailId" ORDER BY f.id)
                        - least(t.chars, ${ATTACHMENT_SCAN_CHARS}::int) AS before
            FROM firsts f JOIN ${TEXTS} t ON t.content_id = f.key
        )
        SELECT p."emailId", p.id, p."fileName", left(t.text, (${ATTACHMENT_SCAN_CHARS}::int - p.before)::int) AS text
          FROM placed p JOIN ${TEXTS} t ON t.content_id = p.key
         WHERE p.before < ${ATTACHMENT_SCAN_CHARS}::int AND t.chars > 0
         ORDER BY p."emailId", p.id`,
  );
  const out = new Map<number, AttachmentText[]>();
  for (const { emailId, id, fileName, text } of rows) {
    const list = out.get(emailId) ?? [];
    list.push({ id, fileName, text });
    out.set(emailId, list);
  }
  return out;
}
