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

export interface StoredAttachment {
  fileName: string;
  contentType: string;
  isInline: boolean;
  /** The Content-ID an HTML body refers to (cid:), when the store kept it. */
  contentId?: string | null;
  content: Buffer;
}

export interface StoredMessage {
  messageId: string;
  subject: string;
  from: string;
  to: string;
  cc: string;
  bcc: string;
  /** Epoch milliseconds. */
  sentDate: number;
  textBody: string | null;
  htmlBody: string | null;
  /** The header block as received, where the store kept it (PostgreSQL's RawHeaders). */
  rawHeaders?: string | null;
  attachments: StoredAttachment[];
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

/** The message as RFC 5322 bytes with CRLF line ends. */
export async function reconstructMessage(message: StoredMessage): Promise<Buffer> {
  const seed = createHash('sha256')
    .update(JSON.stringify([message.messageId, message.sentDate, message.subject, message.from]))
    .digest('hex')
    .slice(0, 24);
  const kept = message.rawHeaders
    ? headerFields(message.rawHeaders).filter((f) => !STRUCTURE_HEADERS.has(f.key.toLowerCase()))
    : [];
  const has = (name: string) => kept.some((f) => f.key.toLowerCase() === name);
  const headers = [
    ...kept.map((f) => ({ key: f.key, value: f.value, prepared: true })),
    {
      key: RECONSTRUCTED_HEADER,
      value: 'rebuilt from the archived fields; not the original message',
    },
  ];
  const date = new Date(message.sentDate);
  const composer = new MailComposer({
    // From the received headers where they were kept; else from the stored fields.
    ...(has('from') || !message.from ? {} : { from: message.from }),
    ...(has('to') || !message.to ? {} : { to: message.to }),
    ...(has('cc') || !message.cc ? {} : { cc: message.cc }),
    ...(has('bcc') || !message.bcc ? {} : { bcc: message.bcc }),
    ...(has('subject') ? {} : { subject: message.subject }),
    // The composer insists on a Message-ID: without a stored one it gets one that names itself as
    // made up (an .invalid domain, RFC 2606), derived from the message so it is the same each time.
    ...(has('message-id')
      ? {}
      : {
          messageId: message.messageId ? bracketed(message.messageId) : `<reconstructed.${seed}@mail-archive.invalid>`,
        }),
    ...(has('date') || Number.isNaN(date.getTime()) ? {} : { date }),
    ...(message.textBody !== null ? { text: message.textBody } : {}),
    ...(message.htmlBody !== null ? { html: message.htmlBody } : {}),
    attachments: message.attachments.map((a) => ({
      filename: a.fileName || undefined,
      contentType: a.contentType || 'application/octet-stream',
      content: a.content,
      contentDisposition: a.isInline ? ('inline' as const) : ('attachment' as const),
      ...(a.contentId ? { cid: a.contentId.replace(/^<|>$/g, '') } : {}),
    })),
    headers,
    baseBoundary: seed,
    newline: '\r\n',
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  const node = composer.compile();
  node.keepBcc = true; // the archive kept the Bcc it saw (outgoing mail); the rebuild shows it
  return new Promise((resolve, reject) => {
    node.build((err: Error | null, bytes: Buffer) => (err ? reject(err) : resolve(bytes)));
  });
}

function bracketed(id: string): string {
  const trimmed = id.trim();
  return trimmed.startsWith('<') ? trimmed : `<${trimmed}>`;
}
