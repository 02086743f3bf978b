// Messages' bytes (docs/evidence.md): the original kept at import or sync (migration 8), or a
// reconstruction from the stored fields for mail archived before originals were kept.
import { MESSAGE_COPY_BATCH_BYTES, type MessageCopy, type Viewer } from '../../shared/jobs.js';
import type { Db } from './open.js';
import { prepared } from './statements.js';
import { visibleAccountsClause } from './accounts.js';
import { OriginalDamaged, sha256Hex, unpackOriginal } from '../rules/originals.js';
import { reconstructMessage, storedMessageOf, type StoredMessage, type StoredRow } from '../rules/reconstruct.js';
import { iso } from '../rules/time.js';
import { readAttachmentChunk } from './emails.js';

interface CopyRow {
  id: number;
  accountId: number;
  folder: string;
  sentDate: number;
  from: string;
  subject: string;
  sha256: string | null;
  size: number | null;
  codec: string | null;
  data: Buffer | null;
}

export const NO_ORIGINAL_NOTE =
  'No original is kept for this message: it was archived before originals were kept. Importing its source again attaches it.';

/** The messages of `ids` the viewer may read, in order, until the batch's bytes are spent. */
export async function messageCopies(
  db: Db,
  viewer: Viewer,
  ids: readonly number[],
  reconstruct: boolean,
): Promise<{ copies: MessageCopy[]; next: number }> {
  const visible = visibleAccountsClause(viewer, 'e.account_id');
  const find = prepared(
    db,
    `SELECT e.id, e.account_id AS accountId, e.folder, e.sent_date AS sentDate, e.from_addr AS "from", e.subject,
            o.sha256, o.size, o.codec, o.data
       FROM emails e
       LEFT JOIN email_originals eo ON eo.email_id = e.id
       LEFT JOIN originals o ON o.id = eo.original_id
      WHERE e.id = ? AND ${visible.sql}`,
  );
  const copies: MessageCopy[] = [];
  let bytes = 0;
  let next = 0;
  const damaged = new Set<number>();
  // Read synchronously, so that every row of the batch comes from one moment of the archive.
  const rows: CopyRow[] = [];
  for (; next < ids.length && bytes < MESSAGE_COPY_BATCH_BYTES; next++) {
    const row = find.get(ids[next], ...visible.params) as CopyRow | undefined;
    if (!row) continue;
    rows.push(row);
    bytes += row.size ?? 0;
  }
  const stored = new Map(
    rows.filter((r) => r.data === null && reconstruct).map((r) => [r.id, storedMessage(db, r.id)]),
  );
  for (const row of rows) {
    const base = {
      id: row.id,
      accountId: row.accountId,
      folder: row.folder,
      sentDate: iso(row.sentDate),
      from: row.from,
      subject: row.subject,
    };
    let note = NO_ORIGINAL_NOTE;
    if (row.data !== null) {
      try {
        const original = unpackOriginal({ sha256: row.sha256!, size: row.size!, codec: row.codec!, data: row.data });
        copies.push({ ...base, copy: 'original', bytes: original, sha256: row.sha256! });
        continue;
      } catch (err) {
        if (!(err instanceof OriginalDamaged)) throw err;
        note = reconstruct ? `${err.message} A reconstruction is given instead.` : err.message;
        damaged.add(row.id);
        if (reconstruct) stored.set(row.id, storedMessage(db, row.id));
      }
    }
    const marks = damaged.has(row.id) ? { note, damaged: true as const } : { note };
    const message = stored.get(row.id);
    if (!message) {
      copies.push({ ...base, copy: 'none', bytes: null, sha256: null, ...marks });
      continue;
    }
    const rebuilt = await reconstructMessage(message);
    copies.push({ ...base, copy: 'reconstructed', bytes: rebuilt, sha256: sha256Hex(rebuilt), ...marks });
  }
  return { copies, next };
}

/** What the archive keeps of a message, with its attachments' bytes, for a reconstruction. */
function storedMessage(db: Db, id: number): StoredMessage {
  const row = prepared(
    db,
    `SELECT e.message_id, e.subject, e.from_addr, e.to_addr, e.cc_addr, e.bcc_addr, e.sent_date,
            body_text(b.text_body) AS text_body, body_text(b.html_body) AS html_body, b.text_untruncated, b.html_untruncated, b.text_original, b.html_original
       FROM emails e LEFT JOIN email_bodies b ON b.email_id = e.id WHERE e.id = ?`,
  ).get(id) as StoredRow;
  const attachments = prepared(
    db,
    // attachments.content_id names the stored bytes (attachment_contents); the Content-ID is
    // mime_content_id (migration 10), null for mail stored before it, whose rebuild gives none.
    `SELECT a.file_name AS fileName, a.content_type AS contentType, a.is_inline AS isInline, a.content_id AS bytesId,
            c.chunks, a.mime_content_id AS contentId
       FROM attachments a JOIN attachment_contents c ON c.id = a.content_id WHERE a.email_id = ? ORDER BY a.id`,
  ).all(id) as Array<{
    fileName: string;
    contentType: string;
    isInline: number;
    bytesId: number;
    chunks: number;
    contentId: string | null;
  }>;
  return storedMessageOf(
    row,
    attachments.map((a) => ({
      fileName: a.fileName,
      contentType: a.contentType,
      isInline: a.isInline === 1,
      contentId: a.contentId,
      content: Buffer.concat(
        Array.from({ length: a.chunks }, (_, seq) => readAttachmentChunk(db, a.bytesId, seq) ?? Buffer.alloc(0)),
      ),
    })),
  );
}
