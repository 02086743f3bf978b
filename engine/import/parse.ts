// One raw RFC 5322 message to one NewEmail record, ready for ArchiveWriter.
import { compile } from 'html-to-text';
import { simpleParser, type AddressObject, type EmailAddress, type ParsedMail, type Attachment } from 'mailparser';
import { dedupKeyFor, type NewAttachment, type NewEmail } from '../rules/new-email.js';
import { referencedIds } from '../rules/threads.js';
import { contentFingerprint } from './fingerprint.js';
import { repairHeaders } from './headers.js';
import { parseMailDate, receivedHeaderDate } from './mail-date.js';
import { inlineMessages, partsNeedRepair, repairParts } from './parts.js';
import type { Repair } from './repairs.js';
import { DEFAULT_IMPORT_LIMITS } from './limits.js';
import { tnefFiles } from './tnef.js';
import { uudecode } from './uuencode.js';

/** A message that cannot be archived; the importer skips it with a warning. */
export class MalformedMessageError extends Error {
  override name = 'MalformedMessageError';
}

export interface ParseContext {
  accountId: number;
  /** The account's own address: mail from it is outgoing. */
  accountEmail: string;
  folder: string;
  /** Epoch ms used when the message has neither a usable Date nor a Received date. */
  fallbackDate: number;
  /** Files taken out of one winmail.dat (Import:MaxTnefFiles; default 100); the rest stay inside it. */
  maxTnefFiles?: number;
}

const PARSER_OPTIONS = {
  // Inline images are stored as attachments; rewriting cid: links to data: URIs would copy
  // every image into the HTML body a second time.
  keepCidLinks: true,
  // textAsHtml is not stored, and linkifying it is the slowest step of parsing.
  skipTextLinks: true,
  // mailparser derives text from HTML only when the HTML part is the message root, not when it
  // sits beside attachments; deriving it here for every HTML-only message keeps them alike.
  skipHtmlToText: true,
} as const;

// mailparser's own converter, tuned for reading: no image placeholders ("logo [cid:…]"),
// headings in their own case, and a link's address only when it differs from its text.
export const htmlToText = compile({
  // The whole document, not only <body>: text a browser shows outside it (before <body>, after
  // </body>, in a document with no <body>) is what a reader sees, so it must be searchable too.
  baseElements: { selectors: ['html'], returnDomByDefault: true },
  selectors: [
    { selector: 'head', format: 'skip' },
    { selector: 'style', format: 'skip' },
    { selector: 'script', format: 'skip' },
    { selector: 'img', format: 'skip' },
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true } },
    ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: { uppercase: false } })),
  ],
});

/** Valid header field names (RFC 5322 ftext), as mailparser keys them: lower case. */
const FIELD_NAME = /^[!-9;-~]+$/;
/** A header line's start (RFC 5322 ftext, then a colon), or an mbox From_ line kept in a message file. */
const HEADER_LINE = /^(?:[!-9;-~]+[ \t]*:|From )/;

/** A message ready for the writer, and what had to be guessed to read it (for the import summary). */
export interface ParsedMessage extends NewEmail {
  repairs: Repair[];
}

async function parsed(raw: Buffer): Promise<ParsedMail> {
  try {
    return await simpleParser(raw, PARSER_OPTIONS);
  } catch (err) {
    throw new MalformedMessageError(`it cannot be parsed (${(err as Error).message})`);
  }
}

export async function parseMessage(raw: Buffer, ctx: ParseContext): Promise<ParsedMessage> {
  if (raw.length === 0 || raw.toString('latin1', 0, Math.min(raw.length, 4096)).trim() === '') {
    throw new MalformedMessageError('the message is empty');
  }
  const repaired = repairHeaders(raw);
  // The header repairs read anything as a header block, and mailparser takes any first line for a
  // field: without this, 4,000 random bytes were archived as a message with four repairs. A
  // message's first line is a field (name, colon) or, in a file saved from an mbox, a From_ line.
  if (!HEADER_LINE.test(repaired.fields[0] ?? ''))
    throw new MalformedMessageError('it does not start with a header field');
  const repairs = [...repaired.repairs];
  let mail = await parsed(repaired.raw);
  // Parts that declare what they are wrongly (parts.ts): read again, repaired, when it can apply.
  if (partsNeedRepair(repaired.raw, mail)) {
    const fixed = await repairParts(repaired.raw);
    if (fixed) {
      mail = await parsed(fixed.raw);
      repairs.push(...fixed.repairs);
    }
  }
  // A message starts with a header field. Anything else is not mail: a wrong mbox split, a
  // truncated file, a stray binary.
  const first = mail.headerLines[0];
  if (!first || !FIELD_NAME.test(first.key)) throw new MalformedMessageError('it does not start with a header field');

  const sent = parseMailDate(headerValue(mail, 'date'));
  const receivedHeader = headerValue(mail, 'received');
  const received = receivedHeader === null ? null : receivedHeaderDate(receivedHeader);
  const sentDate = sent ?? received ?? ctx.fallbackDate;
  const messageId = (mail.messageId ?? '').trim();
  const html = mail.html === false || mail.html === undefined ? null : mail.html;
  const attachments = mail.attachments.map(toAttachment);
  // A message carried inline is also a file (docs/import.md, "What a message says"); its text
  // stays in the body too, where mailparser put it, so search finds it either way.
  for (const m of await inlineMessages(repaired.raw))
    attachments.push({
      fileName: m.fileName.trim() || `attachment-${attachments.length + 1}.eml`,
      contentType: 'message/rfc822',
      content: m.content,
      isInline: false,
    });

  return {
    accountId: ctx.accountId,
    folder: ctx.folder,
    messageId,
    subject: mail.subject ?? '',
    from: addressText(mail.from),
    to: addressText(mail.to),
    cc: addressText(mail.cc),
    bcc: addressText(mail.bcc),
    sentDate,
    receivedDate: received ?? sentDate,
    isOutgoing: isFrom(mail.from, ctx.accountEmail),
    textBody: textBodyOf(mail, html),
    htmlBody: html,
    attachments: withTnefContents(attachments, ctx.maxTnefFiles ?? DEFAULT_IMPORT_LIMITS.maxTnefFiles),
    dedupKey: dedupKeyFor(messageId, raw, contentFingerprint(repaired.fields, repaired.body)),
    refs: referencedIds(mail.references, mail.inReplyTo, messageId),
    rawHeaders: repaired.headerText.slice(0, MAX_RAW_HEADERS),
    repairs,
  };
}

/** Raw headers kept at most this long; a block beyond it is cut (a runaway Received chain). */
const MAX_RAW_HEADERS = 256 * 1024;

function textBodyOf(mail: ParsedMail, html: string | null): string | null {
  const text = mail.text ?? '';
  if (html !== null && isReport(mail) && isStatusOnly(text)) {
    // A report (RFC 6522) whose explanation is HTML: mailparser's text is then the
    // machine-readable status alone. The explanation is the body, the status after it (as
    // mailparser reads a report whose explanation is plain text).
    const explanation = htmlToText(html).trim();
    const squeeze = (t: string) => t.replace(/\s+/g, ' ').trim();
    if (!explanation || squeeze(explanation).includes(squeeze(text))) return explanation || text;
    return `${explanation}\n\n${text.trim()}`;
  }
  if (mail.text?.trim()) return mail.text;
  // An empty text beside HTML is what skipHtmlToText leaves for an HTML-only message.
  if (html !== null) return htmlToText(html).trim();
  return mail.text ?? null;
}

/** Whether text is only header-like fields (RFC 3464 delivery status), blank lines aside. */
function isStatusOnly(text: string): boolean {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== '');
  return lines.length > 0 && lines.every((l) => /^[!-9;-~]+:|^[ \t]/.test(l));
}

function isReport(mail: ParsedMail): boolean {
  return /^\s*multipart\/report\b/i.test(headerValue(mail, 'content-type') ?? '');
}

/** The unfolded value of the first (topmost) header of that name, or null. */
function headerValue(mail: ParsedMail, key: string): string | null {
  const line = mail.headerLines.find((h) => h.key === key)?.line;
  if (line === undefined) return null;
  return line
    .slice(line.indexOf(':') + 1)
    .replace(/\r?\n[ \t]+/g, ' ')
    .trim();
}

/** Display text such as `Name <addr>, addr2`; a header given twice is joined. */
function addressText(value: AddressObject | AddressObject[] | undefined): string {
  if (!value) return '';
  return (Array.isArray(value) ? value : [value])
    .flatMap((a) => a.value.map(formatAddress))
    .filter(Boolean)
    .join(', ');
}

// mailparser's own .text quotes every name ("Alice Weber" <a@b>); quote only where a name
// would otherwise read as several addresses or a group.
const NEEDS_QUOTES = /[",;:<>@()[\]\\]/;

function formatAddress(a: EmailAddress): string {
  if (a.group) return `${a.name}: ${a.group.map(formatAddress).join(', ')};`;
  const name = a.name?.trim();
  if (!name) return a.address ?? '';
  const phrase = NEEDS_QUOTES.test(name) ? `"${name.replace(/["\\]/g, '\\$&')}"` : name;
  return a.address ? `${phrase} <${a.address}>` : phrase;
}

function addresses(list: EmailAddress[]): string[] {
  return list.flatMap((a) => (a.group ? addresses(a.group) : a.address ? [a.address] : []));
}

function isFrom(from: AddressObject | undefined, accountEmail: string): boolean {
  const own = accountEmail.trim().toLowerCase();
  return own !== '' && !!from && addresses(from.value).some((a) => a.toLowerCase() === own);
}

// Names for parts that carry none, so that a download still gets a sensible file name.
const EXTENSIONS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'application/pdf': 'pdf',
  'text/plain': 'txt',
  'text/html': 'html',
  'text/calendar': 'ics',
  'text/csv': 'csv',
  'message/rfc822': 'eml',
};

function toAttachment(a: Attachment, index: number): NewAttachment {
  // The type the part declares, as declared: mailparser replaces application/octet-stream with a
  // guess from the file name, which would relabel the bytes in the API and in the download.
  const declared = (a.headers?.get('content-type') as { value?: string } | undefined)?.value?.trim();
  const contentType = (declared || a.contentType || 'application/octet-stream').toLowerCase();
  const fileName = a.filename?.trim() || `attachment-${index + 1}.${EXTENSIONS[contentType] ?? 'bin'}`;
  // Inline: shown in the body (Content-Disposition: inline, or a part of multipart/related).
  const isInline = a.contentDisposition === 'inline' || a.related === true;
  const contentId = a.contentId?.trim().replace(/^<|>$/g, '');
  return { fileName, contentType, content: decodedContent(a), isInline, ...(contentId ? { contentId } : {}) };
}

// Types of files found inside a winmail.dat, by extension; anything else is octet-stream.
const TYPES_BY_EXTENSION: Record<string, string> = {
  ...Object.fromEntries(Object.entries(EXTENSIONS).map(([type, ext]) => [ext, type])),
  jpeg: 'image/jpeg',
  doc: 'application/msword',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xls: 'application/vnd.ms-excel',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  zip: 'application/zip',
};

/**
 * Each winmail.dat (TNEF) is followed by the files it carries, at most `maxFiles` of them (a
 * hostile one may carry 50,000); the original stays as it was, so nothing is lost.
 */
function withTnefContents(attachments: NewAttachment[], maxFiles: number): NewAttachment[] {
  return attachments.flatMap((a) => {
    const tnef = a.contentType === 'application/ms-tnef' || /^winmail\.dat$/i.test(a.fileName);
    const files = tnef ? tnefFiles(a.content, maxFiles) : null;
    if (!files) return [a];
    return [
      a,
      ...files.map((f) => ({
        fileName: f.fileName,
        contentType: TYPES_BY_EXTENSION[f.fileName.split('.').pop()!.toLowerCase()] ?? 'application/octet-stream',
        content: f.content,
        isInline: false,
      })),
    ];
  });
}

/** x-uuencode parts come out of mailparser still encoded: the file is what they encode. */
function decodedContent(a: Attachment): Buffer {
  const encoding = String(a.headers?.get('content-transfer-encoding') ?? '')
    .trim()
    .toLowerCase();
  if (!/^(?:x-)?uu(?:encode|e)?$/.test(encoding)) return a.content;
  return uudecode(a.content) ?? a.content;
}
