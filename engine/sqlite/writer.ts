// The archive's one write path for mail: the importer, the demo builder and the benchmark
// corpus generator all store messages through ArchiveWriter, so the body policy, attachment
// de-duplication and the search index are the same whoever writes.
import type { Db } from './open.js';
import { hasFileAttachments } from '../rules/attachment-counts.js';
import { prepareBody, STORED_BODY_LIMIT } from '../rules/body.js';
import { keyBase, SLOTS, toSecond } from '../search/fts-key.js';
import { messageTags } from '../search/tags.js';
import { normaliseSubject } from '../rules/threads.js';
import { linkNewMessage, relinkDuplicate } from './threads.js';
import { bumpGeneration } from './users.js';
import { ATTACHMENT_CHUNK_BYTES, messageIdOnlyKey, normalizeFolder, type NewEmail } from '../rules/new-email.js';
import { originalToStore, sha256Hex, type PackedOriginal } from '../rules/originals.js';
import { prepared } from './statements.js';
import { packBody } from './body-codec.js';

export class ArchiveWriter {
  readonly #db: Db;
  readonly #bodyLimit: number;
  readonly #insertEmail;
  readonly #insertBody;
  readonly #insertAttachment;
  readonly #hasKey;
  readonly #otherWithMessageId;
  readonly #findOriginal;
  readonly #insertOriginal;
  readonly #linkOriginal;
  readonly #idOfKey;
  readonly #hasOriginal;
  /** Messages already in the archive without an original that were given theirs (a second import). */
  originalsAttached = 0;
  /** Messages stored although another message in their folder has their Message-ID (their content differs). */
  sameIdDifferentContent = 0;

  constructor(db: Db, options: { bodyLimit?: number } = {}) {
    this.#db = db;
    this.#bodyLimit = options.bodyLimit ?? STORED_BODY_LIMIT;
    this.#insertEmail = db.prepare(
      `INSERT INTO emails (account_id, folder, message_id, subject, from_addr, to_addr, cc_addr, bcc_addr,
                           sent_date, received_date, is_outgoing, has_attachments, dedup_key, fts_key,
                           thread_subject, thread_reply)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (account_id, folder, dedup_key) DO NOTHING`,
    );
    this.#insertBody = db.prepare(
      `INSERT INTO email_bodies (email_id, text_body, html_body, text_untruncated, html_untruncated, text_original, html_original, fts_tags)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#hasKey = db.prepare('SELECT 1 FROM emails WHERE account_id = ? AND folder = ? AND dedup_key = ?').pluck();
    this.#otherWithMessageId = db
      .prepare('SELECT 1 FROM emails WHERE account_id = ? AND message_id = ? AND folder = ? AND id <> ? LIMIT 1')
      .pluck();
    this.#findOriginal = db.prepare('SELECT id FROM originals WHERE sha256 = ?').pluck();
    this.#insertOriginal = db.prepare('INSERT INTO originals (sha256, size, codec, data) VALUES (?, ?, ?, ?)');
    this.#linkOriginal = db.prepare('INSERT OR IGNORE INTO email_originals (email_id, original_id) VALUES (?, ?)');
    this.#idOfKey = db.prepare('SELECT id FROM emails WHERE account_id = ? AND folder = ? AND dedup_key = ?').pluck();
    this.#hasOriginal = db.prepare('SELECT 1 FROM email_originals WHERE email_id = ?').pluck();
    this.#insertAttachment = db.prepare(
      `INSERT INTO attachments (email_id, file_name, content_type, size, is_inline, content_id, mime_content_id)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
  }

  /** Stores one message; returns its id, or null when the same message is already there. */
  add(email: NewEmail): number | null {
    const folder = normalizeFolder(email.folder);
    const sentDate = toSecond(email.sentDate);
    const subject = normaliseSubject(email.subject);
    // Stored by an earlier version under its Message-ID alone: a duplicate, as it was then.
    const idOnly = messageIdOnlyKey(email.dedupKey);
    if (idOnly !== null && this.#hasKey.get(email.accountId, folder, idOnly) !== undefined) {
      relinkDuplicate(this.#db, { accountId: email.accountId, folder, dedupKey: idOnly }, email.refs ?? []);
      this.#attachToDuplicate(email, folder, idOnly);
      return null;
    }
    const info = this.#insertEmail.run(
      email.accountId,
      folder,
      email.messageId,
      email.subject,
      email.from,
      email.to,
      email.cc,
      email.bcc,
      sentDate,
      email.receivedDate,
      email.isOutgoing ? 1 : 0,
      hasFileAttachments(email.attachments) ? 1 : 0,
      email.dedupKey,
      freeFtsKey(this.#db, sentDate),
      subject.key,
      subject.reply ? 1 : 0,
    );
    if (info.changes === 0) {
      // A re-import may bring headers the stored copy never recorded (docs/import.md).
      relinkDuplicate(this.#db, { accountId: email.accountId, folder, dedupKey: email.dedupKey }, email.refs ?? []);
      this.#attachToDuplicate(email, folder, email.dedupKey);
      return null;
    }
    const id = Number(info.lastInsertRowid);
    if (email.original) this.#linkOriginal.run(id, this.#original(email.original, email.packedOriginal));
    if (idOnly !== null && this.#otherWithMessageId.get(email.accountId, email.messageId, folder, id) !== undefined)
      this.sameIdDifferentContent++;
    // Attachments first: the body's insert trigger indexes their file names.
    for (const a of email.attachments) {
      this.#insertAttachment.run(
        id,
        a.fileName,
        a.contentType,
        a.content.length,
        a.isInline ? 1 : 0,
        storeContent(this.#db, a.content),
        a.contentId ?? null,
      );
    }
    const text = prepareBody(email.textBody, this.#bodyLimit);
    const html = prepareBody(email.htmlBody, this.#bodyLimit);
    const tags = messageTags({ ...email, folder, hasAttachments: hasFileAttachments(email.attachments) });
    // Packed on a parse thread when the import had one (prepare.ts), else here.
    const ahead = email.packedBodies;
    const packed =
      ahead?.limit === this.#bodyLimit ? ahead : { text: packBody(text.stored), html: packBody(html.stored) };
    this.#insertBody.run(
      id,
      packed.text,
      packed.html,
      text.untruncated,
      html.untruncated,
      text.original,
      html.original,
      tags,
    );
    linkNewMessage(
      this.#db,
      {
        id,
        accountId: email.accountId,
        messageId: email.messageId,
        subject: email.subject,
        sentDate,
        refs: email.refs ?? [],
      },
      subject,
    );
    return id;
  }

  /** Runs `work` in one transaction and marks the archive changed if anything was written. */
  batch<T>(work: () => T): T {
    return this.#db.transaction(() => {
      const result = work();
      bumpGeneration(this.#db);
      return result;
    })();
  }

  /**
   * A message already stored whose copy came without an original (archived before originals were
   * kept) gets this one: importing the same source again completes the archive (docs/evidence.md).
   */
  #attachToDuplicate(email: NewEmail, folder: string, dedupKey: string): void {
    if (!email.original) return;
    const id = this.#idOfKey.get(email.accountId, folder, dedupKey) as number | undefined;
    if (id === undefined || this.#hasOriginal.get(id) !== undefined) return;
    this.#linkOriginal.run(id, this.#original(email.original, email.packedOriginal));
    this.originalsAttached++;
  }

  /** The original's row, stored once per SHA-256 (engine/rules/originals.ts). */
  #original(bytes: Buffer, ahead?: PackedOriginal): number {
    const original = originalToStore(bytes, ahead);
    const existing = this.#findOriginal.get(original.sha256) as number | undefined;
    if (existing !== undefined) return existing;
    const packed = original.pack();
    return Number(this.#insertOriginal.run(packed.sha256, packed.size, packed.codec, packed.data).lastInsertRowid);
  }
}

/** The next free full-text key in this sent second (engine/search/fts-key.ts). */
export function freeFtsKey(db: Db, sentDate: number): number {
  const lastSlot = prepared(db, 'SELECT max(fts_key) FROM emails WHERE fts_key BETWEEN ? AND ?').pluck();
  for (let base = keyBase(sentDate); ; base += SLOTS) {
    const last = lastSlot.get(base, base + SLOTS - 1) as number | null;
    if (last === null) return base;
    if (last < base + SLOTS - 1) return last + 1;
  }
}

/** An attachment content's row, stored once per SHA-256 in chunks of ATTACHMENT_CHUNK_BYTES. */
export function storeContent(db: Db, bytes: Buffer, sha256 = sha256Hex(bytes)): number {
  const existing = prepared(db, 'SELECT id FROM attachment_contents WHERE sha256 = ?').pluck().get(sha256) as
    number | undefined;
  if (existing !== undefined) return existing;
  const chunks = Math.max(1, Math.ceil(bytes.length / ATTACHMENT_CHUNK_BYTES));
  const id = Number(
    prepared(db, 'INSERT INTO attachment_contents (sha256, size, chunks) VALUES (?, ?, ?)').run(
      sha256,
      bytes.length,
      chunks,
    ).lastInsertRowid,
  );
  const insert = prepared(db, 'INSERT INTO attachment_chunks (content_id, seq, data) VALUES (?, ?, ?)');
  for (let seq = 0; seq < chunks; seq++)
    insert.run(id, seq, bytes.subarray(seq * ATTACHMENT_CHUNK_BYTES, (seq + 1) * ATTACHMENT_CHUNK_BYTES));
  return id;
}
