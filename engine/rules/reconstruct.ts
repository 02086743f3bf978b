// A message rebuilt from what a store keeps of it, for mail whose original bytes the archive does
// not have: Mail Archiver's PostgreSQL database (it keeps none) and mail archived on SQLite before
// originals were kept (docs/evidence.md, "Reconstructions"). Mail Archiver's own "Export as EML"
// does the same from the same columns. It is never the original: the MIME structure, encodings and
// boundaries are new, and the message says so in a header of its own.
//
// The same stored fields always give the same bytes (boundaries are derived from the message, the
// date and Message-ID come from the store), so a reconstruction has a stable SHA-256 and ETag.
import { createHash } from 'node:crypto';
import MailComposer from 'nodemailer/lib/mail-composer';
import { resolveBody } from './body.js';
import type { NewEmail } from './new-email.js';
import type { RawDetail } from './summary.js';

export interface StoredAttachment {
  fileName: string;
  contentType: string;
  isInline: boolean;
  /** The Content-ID an HTML body refers to (cid:), when the store kept it. */
  contentId?: string | null;
  content: Buffer;
}

/** A message's fields as a writer handed them over (NewEmail), read back for a rebuild. */
export interface StoredMessage extends Pick<
  NewEmail,
  'messageId' | 'subject' | 'from' | 'to' | 'cc' | 'bcc' | 'sentDate' | 'textBody' | 'htmlBody'
> {
  /** The header block as received, where the store kept it (PostgreSQL's RawHeaders). */
  rawHeaders?: string | null;
  attachments: StoredAttachment[];
}

/** A message's stored columns, in the names both stores select them by (RawDetail). */
export type StoredRow = Pick<
  RawDetail,
  | 'message_id'
  | 'subject'
  | 'from_addr'
  | 'to_addr'
  | 'cc_addr'
  | 'bcc_addr'
  | 'sent_date'
  | 'text_body'
  | 'html_body'
  | 'text_untruncated'
  | 'html_untruncated'
  | 'text_original'
  | 'html_original'
> & { raw_headers?: string | null };

/** What a reconstruction is built from, the bodies resolved by the fallback chain (SPEC.md, “EmailDetailDto”). */
export function storedMessageOf(row: StoredRow, attachments: StoredAttachment[]): StoredMessage {
  return {
    messageId: row.message_id,
    subject: row.subject,
    from: row.from_addr,
    to: row.to_addr,
    cc: row.cc_addr,
    bcc: row.bcc_addr,
    sentDate: row.sent_date,
    rawHeaders: row.raw_headers ?? null,
    textBody: resolveBody(row.text_original, row.text_untruncated, row.text_body),
    htmlBody: resolveBody(row.html_original, row.html_untruncated, row.html_body),
    attachments,
  };
}

/** The header every reconstruction carries, naming itself one. */
export const RECONSTRUCTED_HEADER = 'X-Mail-Archive-Reconstructed';

// Headers of the received block that describe the old MIME structure, which the reconstruction
// replaces with its own.
const STRUCTURE_HEADERS = new Set([
  'content-type',
  'content-transfer-encoding',
  'content-disposition',
  'content-id',
  'content-length',
  'mime-version',
  RECONSTRUCTED_HEADER.toLowerCase(),
]);

/** A header block's fields, unfolded, in order; lines that are not fields are dropped. */
export function headerFields(block: string): Array<{ key: string; value: string }> {
  const fields: Array<{ key: string; value: string }> = [];
  for (const line of block.replace(/\r\n/g, '\n').split('\n')) {
    if (line === '') break; // the end of the header block
    if (/^[ \t]/.test(line) && fields.length > 0) {
      fields[fields.length - 1]!.value += `\r\n${line}`;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0 || !/^[!-9;-~]+$/.test(line.slice(0, colon).trimEnd())) continue;
    fields.push({ key: line.slice(0, colon).trimEnd(), value: line.slice(colon + 1).replace(/^[ \t]/, '') });
  }
  return fields;
}

/**
 * A received Date field's instant, or NaN: RFC 5322's form with its zone, comments dropped (the
 * zone's name in parentheses that many mailers add).
 */
function receivedDate(value: string): number {
  return Date.parse(
    value
      .replace(/\r\n/g, '')
      .replace(/\([^()]*\)/g, ' ')
      .trim(),
  );
}

/** One field as it goes out: the name, then the value with its own folds, as received. */
const fieldLine = (f: { key: string; value: string }) => `${f.key}: ${f.value}`;

/**
 * The message as RFC 5322 bytes with CRLF line ends (docs/postgres.md, "Originals and
 * reconstructions"). The received header block is kept field by field as it was received (folds,
 * encoded words and all), first and in its order; the fields it lacks come from the stored
 * columns (From, To, Cc, Bcc, Subject, Message-ID, Date); the MIME structure is new, built by the
 * composer from the bodies and attachments. A received Date that does not name the stored sent
 * date (to the second) is replaced by it: the archive's date is the one the API gives.
 */
export async function reconstructMessage(message: StoredMessage): Promise<Buffer> {
  const seed = createHash('sha256')
    .update(JSON.stringify([message.messageId, message.sentDate, message.subject, message.from]))
    .digest('hex')
    .slice(0, 24);
  const date = new Date(message.sentDate);
  const datable = !Number.isNaN(date.getTime());
  const kept = (message.rawHeaders ? headerFields(message.rawHeaders) : []).filter((f) => {
    const key = f.key.toLowerCase();
    if (STRUCTURE_HEADERS.has(key)) return false;
    if (key !== 'date' || !datable) return true;
    return Math.floor(receivedDate(f.value) / 1000) === Math.floor(message.sentDate / 1000);
  });
  const has = (name: string) => kept.some((f) => f.key.toLowerCase() === name);
  const composer = new MailComposer({
    // From the received headers where they were kept; else from the stored fields.
    ...(has('from') || !message.from ? {} : { from: message.from }),
    ...(has('to') || !message.to ? {} : { to: message.to }),
    ...(has('cc') || !message.cc ? {} : { cc: message.cc }),
    ...(has('bcc') || !message.bcc ? {} : { bcc: message.bcc }),
    ...(has('subject') ? {} : { subject: message.subject }),
    // The composer insists on a Message-ID: without a stored one it gets one that names itself as
    // made up (an .invalid domain, RFC 2606), derived from the message so it is the same each time.
    messageId: message.messageId ? bracketed(message.messageId) : `<reconstructed.${seed}@mail-archive.invalid>`,
    // Without a usable date the composer would write the time of the rebuild: the epoch instead,
    // so that the same fields give the same bytes.
    date: datable ? date : new Date(0),
    ...(message.textBody !== null ? { text: message.textBody } : {}),
    ...(message.htmlBody !== null ? { html: message.htmlBody } : {}),
    attachments: message.attachments.map((a) => ({
      filename: a.fileName || undefined,
      contentType: a.contentType || 'application/octet-stream',
      content: a.content,
      contentDisposition: a.isInline ? ('inline' as const) : ('attachment' as const),
      ...(a.contentId ? { cid: String(a.contentId).replace(/^<|>$/g, '') } : {}),
    })),
    headers: [{ key: RECONSTRUCTED_HEADER, value: 'rebuilt from the archived fields; not the original message' }],
    baseBoundary: seed,
    newline: '\r\n',
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  const node = composer.compile();
  node.keepBcc = true; // the archive kept the Bcc it saw (outgoing mail); the rebuild shows it
  const built = await new Promise<Buffer>((resolve, reject) => {
    node.build((err: Error | null, bytes: Buffer) => (err ? reject(err) : resolve(bytes)));
  });
  if (kept.length === 0) return built;
  // The composer's header block, less what the received one has (its Date and Message-ID are
  // always written), after the received fields.
  const end = built.indexOf('\r\n\r\n');
  const made = headerFields(built.subarray(0, end).toString('latin1')).filter((f) => !has(f.key.toLowerCase()));
  return Buffer.concat([Buffer.from([...kept, ...made].map(fieldLine).join('\r\n'), 'utf8'), built.subarray(end)]);
}

function bracketed(id: string): string {
  const trimmed = id.trim();
  return trimmed.startsWith('<') ? trimmed : `<${trimmed}>`;
}
