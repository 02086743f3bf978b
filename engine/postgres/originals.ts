// Messages' bytes on Mail Archiver's database (docs/evidence.md, "PostgreSQL"; docs/postgres.md,
// "Originals and reconstructions"). Mail Archiver keeps no original, so each message is rebuilt
// from what it does keep (RawHeaders, the bodies, the attachments), as its own "Export as EML"
// does, and marked as a reconstruction, unless this service imported it and kept its bytes
// (mail_archive_gateway.originals). The GoBD fork keeps one in
// archive_worm."ArchivedEmailSources" (docs/compat.md, "The GoBD fork's archive_worm"): where it
// has a row for the message, those bytes are served as the original once their SHA-256 matches
// the one it recorded; one that does not is damaged, never served as the original.
import pg from 'pg';
import { MESSAGE_COPY_BATCH_BYTES, type MessageCopy, type Viewer } from '../../shared/jobs.js';
import { OriginalDamaged, sha256Hex, unpackOriginal } from '../rules/originals.js';
import { reconstructMessage, storedMessageOf, type StoredRow } from '../rules/reconstruct.js';
import { iso } from '../rules/time.js';
import { T, visibleAccounts, zonedMs } from './columns.js';
import type { PgContext } from './context.js';
import { WORM_SCHEMA, SOURCES_TABLE, type SourcesShape } from './shape.js';
import { raw, sql, type Sql } from './sql.js';

const ident = pg.escapeIdentifier;

/** The fork's kept original of message `id` (bytes and recorded hash), as the detected columns name them. */
function keptOriginal(sources: SourcesShape, id: number): Sql {
  const content = `s.${ident(sources.content)}`;
  return sql`SELECT ${raw(sources.contentIsText ? `convert_to(${content}, 'UTF8')` : content)} AS bytes,
                    ${raw(`s.${ident(sources.sha256)}`)}::text AS sha256
               FROM ${raw(`${WORM_SCHEMA}.${ident(SOURCES_TABLE)}`)} s
              WHERE ${raw(`s.${ident(sources.emailId)}`)} = ${id} LIMIT 1`;
}

/** The kept bytes when they match their recorded SHA-256; else OriginalDamaged. */
function checkedOriginal(kept: { bytes: Buffer | null; sha256: string | null }): { bytes: Buffer; sha256: string } {
  const recorded = kept.sha256?.trim().toLowerCase() ?? '';
  if (!kept.bytes) throw new OriginalDamaged('its row holds no bytes');
  if (!/^[0-9a-f]{64}$/.test(recorded)) throw new OriginalDamaged('no SHA-256 is recorded for it');
  const actual = sha256Hex(kept.bytes);
  if (actual !== recorded) {
    throw new OriginalDamaged('its bytes no longer match the SHA-256 recorded when it was archived');
  }
  return { bytes: kept.bytes, sha256: actual };
}

/**
 * The message's kept original, checked: the fork's where it has a row for it, else ours (mail this
 * service imported: docs/postgres.md, "Originals and reconstructions"); OriginalDamaged when the
 * one found fails its check, null when none is kept.
 */
async function keptCopy(
  ctx: PgContext,
  id: number,
): Promise<{ bytes: Buffer; sha256: string } | OriginalDamaged | null> {
  try {
    if (ctx.sources) {
      const [kept] = await ctx.read<{ bytes: Buffer | null; sha256: string | null }>(keptOriginal(ctx.sources, id));
      if (kept) return checkedOriginal(kept);
    }
    const [ours] = await ctx.read<{ sha256: string; size: number; codec: string; data: Buffer }>(
      sql`SELECT o.sha256, o.size::float8 AS size, o.codec, o.data
            FROM mail_archive_gateway.email_originals eo JOIN mail_archive_gateway.originals o ON o.id = eo.original_id
           WHERE eo.email_id = ${id}`,
    );
    return ours ? { bytes: unpackOriginal(ours), sha256: ours.sha256 } : null;
  } catch (err) {
    if (err instanceof OriginalDamaged) return err;
    throw err;
  }
}

export const RECONSTRUCTED_NOTE =
  'Mail Archiver keeps no original message: this one is rebuilt from the archived fields (RawHeaders, bodies, attachments).';

interface Row extends StoredRow {
  id: number;
  account_id: number;
  folder: string;
}

/**
 * `reconstruct` is moot here: where no original is kept (all of Mail Archiver's mail, the fork's
 * without a source row), a reconstruction is the message's bytes.
 */
export async function messageCopies(
  ctx: PgContext,
  viewer: Viewer,
  ids: readonly number[],
): Promise<{ copies: MessageCopy[]; next: number }> {
  const copies: MessageCopy[] = [];
  let bytes = 0;
  let next = 0;
  for (; next < ids.length && bytes < MESSAGE_COPY_BATCH_BYTES; next++) {
    const id = ids[next]!;
    const [row] = await ctx.read<Row>(
      sql`SELECT e."Id" AS id, e."MailAccountId" AS account_id, e."FolderName" AS folder,
                 ${zonedMs('e."SentDate"', ctx.zone)} AS sent_date, e."From" AS from_addr, e."To" AS to_addr,
                 e."Cc" AS cc_addr, e."Bcc" AS bcc_addr, e."Subject" AS subject, e."MessageId" AS message_id,
                 e."RawHeaders" AS raw_headers,
                 NULLIF(e."Body", '') AS text_body, NULLIF(e."HtmlBody", '') AS html_body,
                 NULLIF(e."BodyUntruncatedText", '') AS text_untruncated,
                 NULLIF(e."BodyUntruncatedHtml", '') AS html_untruncated,
                 e."OriginalBodyText" AS text_original, e."OriginalBodyHtml" AS html_original
            FROM ${T.emails} e WHERE e."Id" = ${id} AND ${visibleAccounts(viewer, 'e."MailAccountId"')}`,
    );
    if (!row) continue;
    const base = {
      id: row.id,
      accountId: row.account_id,
      folder: row.folder,
      sentDate: iso(row.sent_date),
      from: row.from_addr,
      subject: row.subject,
    };
    const kept = await keptCopy(ctx, id);
    if (kept && !(kept instanceof OriginalDamaged)) {
      bytes += kept.bytes.length;
      copies.push({ ...base, copy: 'original', ...kept });
      continue;
    }
    // As on SQLite: a damaged original is flagged, and a reconstruction is given in its place for
    // exports (the route answers 409).
    const marks = kept
      ? { note: `${kept.message} A reconstruction is given instead.`, damaged: true as const }
      : { note: RECONSTRUCTED_NOTE };
    const attachments = await ctx.read<{
      fileName: string;
      contentType: string;
      contentId: string | null;
      content: Buffer | null;
    }>(
      sql`SELECT a."FileName" AS "fileName", a."ContentType" AS "contentType", a."ContentId" AS "contentId",
                 COALESCE(c."Content", a."Content") AS content
            FROM ${T.attachments} a LEFT JOIN ${T.contents} c ON c."Id" = a."AttachmentContentId"
           WHERE a."ArchivedEmailId" = ${id} ORDER BY a."Id"`,
    );
    const rebuilt = await reconstructMessage(
      storedMessageOf(
        row,
        attachments.map((a) => ({
          fileName: a.fileName,
          contentType: a.contentType,
          // Mail Archiver records no disposition; a Content-ID is what an inline part has.
          isInline: Boolean(a.contentId),
          contentId: a.contentId,
          content: a.content ?? Buffer.alloc(0),
        })),
      ),
    );
    bytes += rebuilt.length;
    copies.push({ ...base, copy: 'reconstructed', bytes: rebuilt, sha256: sha256Hex(rebuilt), ...marks });
  }
  return { copies, next };
}
