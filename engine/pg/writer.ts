// Writing mail into a PostgreSQL archive: the same input (NewEmail) and the same policies as the
// SQLite ArchiveWriter (engine/store/writer.ts), into Mail Archiver's tables, so Mail Archiver
// shows what was imported here exactly as if it had archived it itself.
//
// - Bodies: engine/body.ts prepareBody. The stored body goes to "Body" / "HtmlBody" ('' when the
//   message has none: the columns are NOT NULL), the whole text when it had to be cut to
//   "BodyUntruncatedText" / "BodyUntruncatedHtml", the original bytes when it had to be cleaned
//   to "OriginalBodyText" / "OriginalBodyHtml".
// - Attachments: bytes de-duplicated in "AttachmentContents" by lowercase hex SHA-256, inserted
//   in the same transaction as the attachment row that refers to them (Mail Archiver deletes
//   unreferenced content rows at any time).
// - Dates: "SentDate" is wall-clock time in Database:TimeZone, to the second like SQLite;
//   "ReceivedDate" is UTC.
// - Duplicates: mail_archive_gateway.import_keys (migration 3) holds the dedup key of every
//   message stored here, per account and folder; a message whose key is there (and whose row
//   still exists) is skipped and counted as a duplicate, as on SQLite.
import { createHash } from 'node:crypto';
import { prepareBody, STORED_BODY_LIMIT } from '../body.js';
import { toSecond } from '../search/fts-key.js';
import { normalizeFolder, type NewEmail } from '../store/writer.js';
import { T, utcTimestamp, zonedTimestamp } from './columns.js';
import { sql } from './sql.js';
import type { PgContext, Query } from './store.js';

/** ArchivedEmails' identity sequence: ids for new messages come from where Mail Archiver takes its own. */
const EMAIL_ID_SEQUENCE = sql`pg_get_serial_sequence('mail_archiver."ArchivedEmails"', 'Id')`;

/** PostgreSQL text cannot hold NUL; SQLite can. Header fields lose theirs (bodies keep the original bytes). */
const noNul = (text: string): string => (text.includes('\0') ? text.replaceAll('\0', '') : text);

export interface PgWriterOptions {
  bodyLimit?: number;
  /** Runs after each committed batch (outside its transaction). */
  afterBatch?: (ctx: PgContext) => Promise<void>;
}

export class PgArchiveWriter {
  readonly #ctx: PgContext;
  readonly #bodyLimit: number;
  readonly #afterBatch: PgWriterOptions['afterBatch'];

  constructor(ctx: PgContext, options: PgWriterOptions = {}) {
    this.#ctx = ctx;
    this.#bodyLimit = options.bodyLimit ?? STORED_BODY_LIMIT;
    this.#afterBatch = options.afterBatch;
  }

  /** Stores a batch in one transaction; per message its new id, or null when it is already there. */
  async writeBatch(emails: readonly NewEmail[]): Promise<Array<number | null>> {
    const ids = await this.#ctx.transaction(async (query) => {
      const out: Array<number | null> = [];
      for (const email of emails) out.push(await this.#add(query, email));
      return out;
    });
    // ── The one call site for work that follows a committed batch (the search side-index). ──
    if (this.#afterBatch) await this.#afterBatch(this.#ctx);
    return ids;
  }

  async #add(query: Query, email: NewEmail): Promise<number | null> {
    const folder = noNul(normalizeFolder(email.folder));
    const dedupKey = noNul(email.dedupKey);
    // Claim the key (a new one, or one whose message has since been deleted from the archive)
    // together with the message's id, taken from ArchivedEmails' own identity sequence: one
    // round trip decides "duplicate or not" and the message row needs no second update.
    const claimed = await query<{ id: number }>(
      sql`INSERT INTO mail_archive_gateway.import_keys AS k (account_id, folder, dedup_key, email_id)
          VALUES (${email.accountId}, ${folder}, ${dedupKey}, nextval(${EMAIL_ID_SEQUENCE}))
          ON CONFLICT (account_id, folder, dedup_key) DO UPDATE SET email_id = EXCLUDED.email_id
            WHERE NOT EXISTS (SELECT 1 FROM ${T.emails} e WHERE e."Id" = k.email_id)
          RETURNING email_id AS id`,
    );
    if (claimed.length === 0) return null;
    const id = claimed[0]!.id;
    const text = prepareBody(email.textBody, this.#bodyLimit);
    const html = prepareBody(email.htmlBody, this.#bodyLimit);
    await query(
      sql`INSERT INTO ${T.emails} ("Id", "MailAccountId", "MessageId", "Subject", "Body", "HtmlBody", "From", "To", "Cc", "Bcc",
                                   "SentDate", "ReceivedDate", "IsOutgoing", "HasAttachments", "FolderName",
                                   "BodyUntruncatedText", "BodyUntruncatedHtml", "OriginalBodyText", "OriginalBodyHtml")
          VALUES (${id}, ${email.accountId}, ${noNul(email.messageId)}, ${noNul(email.subject)}, ${text.stored ?? ''},
                  ${html.stored ?? ''}, ${noNul(email.from)}, ${noNul(email.to)}, ${noNul(email.cc)}, ${noNul(email.bcc)},
                  ${zonedTimestamp(toSecond(email.sentDate), this.#ctx.zone)}, ${utcTimestamp(email.receivedDate)},
                  ${email.isOutgoing}, ${email.attachments.length > 0}, ${folder},
                  ${text.untruncated}, ${html.untruncated}, ${text.original}, ${html.original})`,
    );
    for (const a of email.attachments) {
      const contentId = await this.#content(query, a.content);
      await query(
        sql`INSERT INTO ${T.attachments} ("ArchivedEmailId", "FileName", "ContentType", "Size", "AttachmentContentId")
            VALUES (${id}, ${noNul(a.fileName)}, ${noNul(a.contentType)}, ${a.content.length}, ${contentId})`,
      );
    }
    return id;
  }

  /** The AttachmentContents id of these bytes, inserting them when new (bytes travel only then). */
  async #content(query: Query, bytes: Buffer): Promise<number> {
    const hash = createHash('sha256').update(bytes).digest('hex');
    const find = sql`SELECT "Id" AS id FROM ${T.contents} WHERE "Hash" = ${hash}`;
    const existing = await query<{ id: number }>(find);
    if (existing[0]) return existing[0].id;
    const inserted = await query<{ id: number }>(
      sql`INSERT INTO ${T.contents} ("Hash", "Content", "Size") VALUES (${hash}, ${bytes}, ${bytes.length})
          ON CONFLICT ("Hash") DO NOTHING RETURNING "Id" AS id`,
    );
    // Nothing returned: another writer stored the same bytes a moment ago; this statement sees them.
    return inserted[0]?.id ?? (await query<{ id: number }>(find))[0]!.id;
  }
}
