// Reparse on the SQLite store (docs/reparse.md): reading each message's stored form with its kept
// original, and rewriting the fields a fresh parse changed, batch by batch, each batch one
// transaction. What is compared and parsed is engine/import/reparse.ts's; this file only reads and
// writes. The full-text index follows by migration 1's triggers, the in-memory search index by the
// rewrite counter (migration 3), conversations by engine/sqlite/threads.ts relinkReparsed. The
// progress of a pass is a small file next to the archive, so no migration is needed for it.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type { ReparseCandidate, ReparseChange, ReparseProgress, ReparseStore } from '../store-contract.js';
import type { Db } from './open.js';
import { prepared } from './statements.js';
import { packBody } from './body-codec.js';
import { OriginalDamaged, unpackOriginal } from '../rules/originals.js';
import {
  needsRelink,
  REPARSE_FIELDS,
  type ReparseField,
  type StoredAttachment,
  type StoredForm,
} from '../rules/reparse.js';
import { normaliseSubject } from '../rules/threads.js';
import { keyBase } from '../search/fts-key.js';
import { relinkReparsed } from './threads.js';
import { bumpGeneration } from './users.js';
import { freeFtsKey, storeContent } from './writer.js';
import { refreshMessages } from './attachment-text.js';
import type { RawDetail } from '../rules/summary.js';

/** A batch is also cut at this many original bytes, so a run of large messages stays in bounds. */
const MAX_BATCH_BYTES = 64 * 1024 * 1024;

/** A message's stored columns (RawDetail's names, engine/rules/summary.ts) with what reparse also compares. */
interface Row extends RawDetail {
  thread_subject: string;
  thread_reply: number;
  fts_tags: string | null;
  sha256: string | null;
  size: number | null;
  codec: string | null;
  data: Buffer | null;
}

const READ_SQL = `
  SELECT e.id, e.account_id, e.folder, e.message_id, e.subject, e.from_addr, e.to_addr, e.cc_addr, e.bcc_addr,
         e.sent_date, e.received_date, e.is_outgoing, e.has_attachments, e.thread_subject, e.thread_reply,
         body_text(b.text_body) AS text_body, body_text(b.html_body) AS html_body, b.text_untruncated, b.html_untruncated, b.text_original, b.html_original, b.fts_tags,
         o.sha256, o.size, o.codec, o.data
    FROM emails e
    LEFT JOIN email_bodies b ON b.email_id = e.id
    LEFT JOIN email_originals eo ON eo.email_id = e.id
    LEFT JOIN originals o ON o.id = eo.original_id
   WHERE e.id > ? AND (? IS NULL OR e.account_id = ?)
   ORDER BY e.id LIMIT ?`;

export class SqliteReparse implements ReparseStore {
  readonly #db: Db;
  readonly #progressFile: string;

  constructor(db: Db) {
    this.#db = db;
    this.#progressFile = `${db.name}.reparse.json`;
  }

  async read(after: number, limit: number, accountId: number | null): Promise<ReparseCandidate[]> {
    const db = this.#db;
    const rows: Row[] = [];
    let bytes = 0;
    // One read transaction: the rows, their attachments and references describe one moment.
    return db.transaction(() => {
      for (const row of prepared(db, READ_SQL).iterate(after, accountId, accountId, limit) as Iterable<Row>) {
        rows.push(row);
        bytes += row.size ?? 0;
        if (bytes >= MAX_BATCH_BYTES) break;
      }
      if (rows.length === 0) return [];
      const ids = JSON.stringify(rows.map((r) => r.id));
      const attachments = byEmail(
        prepared(
          db,
          `SELECT a.email_id AS emailId, a.file_name AS fileName, a.content_type AS contentType, a.size,
                  a.is_inline AS isInline, c.sha256, a.mime_content_id AS contentId
             FROM attachments a JOIN attachment_contents c ON c.id = a.content_id
            WHERE a.email_id IN (SELECT value FROM json_each(?)) ORDER BY a.id`,
        ).all(ids) as Array<Omit<StoredAttachment, 'isInline'> & { emailId: number; isInline: number }>,
        (a): StoredAttachment => ({
          fileName: a.fileName,
          contentType: a.contentType,
          size: a.size,
          isInline: a.isInline === 1,
          sha256: a.sha256,
          contentId: a.contentId,
        }),
      );
      const refs = byEmail(
        prepared(
          db,
          'SELECT email_id AS emailId, ref FROM email_refs WHERE email_id IN (SELECT value FROM json_each(?))',
        ).all(ids) as Array<{ emailId: number; ref: string }>,
        (r) => r.ref,
      );
      return rows.map((r) => candidate(r, attachments.get(r.id) ?? [], (refs.get(r.id) ?? []).sort()));
    })();
  }

  async remaining(after: number, accountId: number | null): Promise<number> {
    return prepared(this.#db, 'SELECT count(*) FROM emails WHERE id > ? AND (? IS NULL OR account_id = ?)')
      .pluck()
      .get(after, accountId, accountId) as number;
  }

  async write(changes: readonly ReparseChange[]): Promise<void> {
    if (changes.length === 0) return;
    const db = this.#db;
    db.transaction(() => {
      for (const change of changes) writeOne(db, change);
      // received_date and the sort orders are not all in migration 3's triggers: count the rewrite
      // here, so the in-memory search index and a saved one (index-verify.ts) are built anew.
      prepared(db, 'UPDATE archive_state SET rewrites = rewrites + 1 WHERE id = 1').run();
      bumpGeneration(db);
    })();
  }

  async loadProgress(): Promise<ReparseProgress | null> {
    if (!existsSync(this.#progressFile)) return null;
    try {
      return JSON.parse(readFileSync(this.#progressFile, 'utf8')) as ReparseProgress;
    } catch {
      // A file cut short (a crash while it was written is excluded by the rename, a disk fault is
      // not): the pass starts over, which redoes work but changes nothing twice.
      return null;
    }
  }

  async saveProgress(progress: ReparseProgress): Promise<void> {
    // Written beside and renamed over: the file is always one whole state.
    const temporary = `${this.#progressFile}.tmp`;
    writeFileSync(temporary, `${JSON.stringify(progress)}\n`);
    renameSync(temporary, this.#progressFile);
  }

  async clearProgress(): Promise<void> {
    rmSync(this.#progressFile, { force: true });
  }
}

/** Each row's `value`, grouped by the message it belongs to, in the order read. */
function byEmail<R extends { emailId: number }, V>(rows: readonly R[], value: (row: R) => V): Map<number, V[]> {
  const grouped = new Map<number, V[]>();
  for (const row of rows) {
    const list = grouped.get(row.emailId);
    if (list) list.push(value(row));
    else grouped.set(row.emailId, [value(row)]);
  }
  return grouped;
}

function candidate(r: Row, attachments: StoredAttachment[], refs: string[]): ReparseCandidate {
  const stored: StoredForm = {
    messageId: r.message_id,
    subject: r.subject,
    from: r.from_addr,
    to: r.to_addr,
    cc: r.cc_addr,
    bcc: r.bcc_addr,
    sentDate: r.sent_date,
    receivedDate: r.received_date,
    isOutgoing: r.is_outgoing === 1,
    hasAttachments: r.has_attachments === 1,
    threadSubject: r.thread_subject,
    threadReply: r.thread_reply === 1,
    text: { stored: r.text_body, untruncated: r.text_untruncated, original: r.text_original },
    html: { stored: r.html_body, untruncated: r.html_untruncated, original: r.html_original },
    ftsTags: r.fts_tags ?? '',
    attachments,
    refs,
  };
  const base = { id: r.id, accountId: r.account_id, folder: r.folder, receivedDate: r.received_date, stored };
  if (r.data === null) return { ...base, original: null };
  try {
    return {
      ...base,
      original: unpackOriginal({ sha256: r.sha256!, size: r.size!, codec: r.codec!, data: r.data }),
    };
  } catch (err) {
    if (!(err instanceof OriginalDamaged)) throw err;
    return { ...base, original: null, damaged: err.message };
  }
}

/** Fields whose change rewrites the email_bodies row (attachments: its trigger indexes their file names). */
const BODY_FIELDS = new Set<ReparseField>(['textBody', 'htmlBody', 'tags', 'attachments']);
/** Fields whose change rewrites the emails row: every other, and attachments (has_attachments). */
const ROW_FIELDS = new Set<ReparseField>(REPARSE_FIELDS.filter((f) => f === 'attachments' || !BODY_FIELDS.has(f)));

function writeOne(db: Db, { id, fields, fresh }: ReparseChange): void {
  const current = prepared(
    db,
    'SELECT sent_date AS sentDate, fts_key AS ftsKey, account_id AS accountId FROM emails WHERE id = ?',
  ).get(id) as { sentDate: number; ftsKey: number; accountId: number } | undefined;
  if (!current) return; // deleted since it was read
  // Attachments first: the row's and the body's triggers index their file names.
  if (fields.includes('attachments')) {
    writeAttachments(db, id, fresh.attachments);
    refreshMessages(db, [id]);
  }
  if (fields.some((f) => ROW_FIELDS.has(f))) {
    // The full-text key orders by sent second (engine/search/fts-key.ts): a new second, a new key.
    const ftsKey =
      keyBase(current.sentDate) === keyBase(fresh.sentDate) ? current.ftsKey : freeFtsKey(db, fresh.sentDate);
    prepared(
      db,
      `UPDATE emails SET message_id = ?, subject = ?, from_addr = ?, to_addr = ?, cc_addr = ?, bcc_addr = ?,
              sent_date = ?, received_date = ?, is_outgoing = ?, has_attachments = ?, thread_subject = ?,
              thread_reply = ?, fts_key = ?
        WHERE id = ?`,
    ).run(
      fresh.messageId,
      fresh.subject,
      fresh.from,
      fresh.to,
      fresh.cc,
      fresh.bcc,
      fresh.sentDate,
      fresh.receivedDate,
      fresh.isOutgoing ? 1 : 0,
      fresh.hasAttachments ? 1 : 0,
      fresh.threadSubject,
      fresh.threadReply ? 1 : 0,
      ftsKey,
      id,
    );
  }
  if (fields.some((f) => BODY_FIELDS.has(f))) {
    const values = [
      packBody(fresh.text.stored),
      packBody(fresh.html.stored),
      fresh.text.untruncated,
      fresh.html.untruncated,
      fresh.text.original,
      fresh.html.original,
      fresh.ftsTags,
    ];
    const updated = prepared(
      db,
      `UPDATE email_bodies SET text_body = ?, html_body = ?, text_untruncated = ?, html_untruncated = ?,
              text_original = ?, html_original = ?, fts_tags = ?
        WHERE email_id = ?`,
    ).run(...values, id);
    if (updated.changes === 0)
      prepared(
        db,
        `INSERT INTO email_bodies (text_body, html_body, text_untruncated, html_untruncated, text_original, html_original,
                                   fts_tags, email_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(...values, id);
  }
  if (needsRelink(fields)) {
    relinkReparsed(
      db,
      {
        id,
        accountId: current.accountId,
        messageId: fresh.messageId,
        subject: fresh.subject,
        sentDate: fresh.sentDate,
        refs: fresh.refs,
      },
      normaliseSubject(fresh.subject),
    );
  }
}

/**
 * The message's attachment rows become the fresh ones, position by position: a row whose place
 * remains keeps its id (links to it stay valid), rows beyond the fresh list go, new ones are added.
 * Contents are stored once per SHA-256 as the writer stores them; a content no attachment names
 * any more is removed with its chunks and its text.
 */
function writeAttachments(db: Db, emailId: number, fresh: ReparseChange['fresh']['attachments']): void {
  const old = prepared(db, 'SELECT id, content_id AS contentId FROM attachments WHERE email_id = ? ORDER BY id').all(
    emailId,
  ) as Array<{ id: number; contentId: number }>;
  fresh.forEach((a, i) => {
    const contentId = storeContent(db, a.content, a.sha256);
    const values = [a.fileName, a.contentType, a.size, a.isInline ? 1 : 0, contentId, a.contentId];
    if (i < old.length)
      prepared(
        db,
        `UPDATE attachments SET file_name = ?, content_type = ?, size = ?, is_inline = ?, content_id = ?, mime_content_id = ?
          WHERE id = ?`,
      ).run(...values, old[i]!.id);
    else
      prepared(
        db,
        `INSERT INTO attachments (file_name, content_type, size, is_inline, content_id, mime_content_id, email_id)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ).run(...values, emailId);
  });
  for (const gone of old.slice(fresh.length)) prepared(db, 'DELETE FROM attachments WHERE id = ?').run(gone.id);
  for (const contentId of new Set(old.map((o) => o.contentId))) {
    if (prepared(db, 'SELECT 1 FROM attachments WHERE content_id = ? LIMIT 1').get(contentId) !== undefined) continue;
    prepared(db, 'DELETE FROM attachment_texts WHERE content_id = ?').run(contentId);
    prepared(db, 'DELETE FROM attachment_chunks WHERE content_id = ?').run(contentId);
    prepared(db, 'DELETE FROM attachment_contents WHERE id = ?').run(contentId);
  }
}
