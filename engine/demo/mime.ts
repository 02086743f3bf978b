// A small RFC 5322 / MIME writer for generated mail (demo archive, benchmark corpus). Output is
// deterministic for the same input: boundaries derive from the Message-ID, not from randomness.
import { createHash } from 'node:crypto';

export interface Mailbox {
  name?: string;
  address: string;
}

export interface MimeAttachment {
  fileName: string;
  contentType: string;
  content: Buffer;
  /** Shown in the HTML body through cid: (goes into multipart/related). */
  contentId?: string;
}

export interface MessageSpec {
  from: Mailbox;
  to: Mailbox[];
  cc?: Mailbox[];
  bcc?: Mailbox[];
  subject: string;
  date: Date;
  messageId: string;
  inReplyTo?: string;
  /** Adds a Received header stamped with this time. */
  received?: Date;
  text?: string;
  html?: string;
  attachments?: MimeAttachment[];
}

const CRLF = '\r\n';
const ASCII_PRINTABLE = /^[\x20-\x7e]*$/;
const ATOM_PHRASE = /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~ ]+$/;

/** RFC 2047 B encoding in UTF-8, split into words of at most 75 characters. */
export function encodeWords(text: string): string {
  if (ASCII_PRINTABLE.test(text)) return text;
  const words: string[] = [];
  let chunk = '';
  for (const ch of text) {
    // 45 bytes of UTF-8 are 60 base64 characters: with "=?UTF-8?B?" and "?=", 72.
    if (Buffer.byteLength(chunk + ch) > 45) {
      words.push(chunk);
      chunk = '';
    }
    chunk += ch;
  }
  if (chunk) words.push(chunk);
  return words.map((w) => `=?UTF-8?B?${Buffer.from(w).toString('base64')}?=`).join(`${CRLF} `);
}

export function formatMailbox(m: Mailbox): string {
  if (!m.name) return m.address;
  if (!ASCII_PRINTABLE.test(m.name)) return `${encodeWords(m.name)} <${m.address}>`;
  const phrase = ATOM_PHRASE.test(m.name) ? m.name : `"${m.name.replace(/["\\]/g, '\\$&')}"`;
  return `${phrase} <${m.address}>`;
}

/** RFC 5322 date-time in UTC: "Tue, 01 Jul 2003 10:52:37 +0000". */
export function formatDate(date: Date): string {
  return date.toUTCString().replace('GMT', '+0000');
}

function wrap(text: string, width: number): string {
  const lines: string[] = [];
  for (let i = 0; i < text.length; i += width) lines.push(text.slice(i, i + width));
  return lines.join(CRLF);
}

/** Quoted-printable (RFC 2045 section 6.7) of UTF-8 text, with soft breaks at 76 characters. */
export function encodeQuotedPrintable(text: string): string {
  const out: string[] = [];
  for (const line of text.replace(/\r\n/g, '\n').split('\n')) {
    const bytes = Buffer.from(line, 'utf8');
    let current = '';
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i]!;
      const last = i === bytes.length - 1;
      const literal = (b >= 33 && b <= 126 && b !== 61) || ((b === 32 || b === 9) && !last);
      const piece = literal ? String.fromCharCode(b) : `=${b.toString(16).toUpperCase().padStart(2, '0')}`;
      if (current.length + piece.length > 75) {
        out.push(`${current}=`);
        current = '';
      }
      current += piece;
    }
    out.push(current);
  }
  return out.join(CRLF);
}

function textPart(type: 'text/plain' | 'text/html', body: string): string {
  const plain = ASCII_PRINTABLE.test(body.replace(/[\r\n\t]/g, '')) && body.split('\n').every((l) => l.length <= 998);
  const headers = `Content-Type: ${type}; charset=utf-8${CRLF}Content-Transfer-Encoding: ${plain ? '7bit' : 'quoted-printable'}`;
  const encoded = plain ? body.replace(/\r?\n/g, CRLF) : encodeQuotedPrintable(body);
  return `${headers}${CRLF}${CRLF}${encoded}`;
}

function fileParams(fileName: string): { name: string; filename: string } {
  if (ASCII_PRINTABLE.test(fileName)) {
    const quoted = `"${fileName.replace(/["\\]/g, '\\$&')}"`;
    return { name: `name=${quoted}`, filename: `filename=${quoted}` };
  }
  // Mail clients read both: RFC 2047 in name= (Outlook's way), RFC 2231 in filename*=.
  return { name: `name="${encodeWords(fileName)}"`, filename: `filename*=UTF-8''${encodeURIComponent(fileName)}` };
}

function attachmentPart(a: MimeAttachment, inline: boolean): string {
  const p = fileParams(a.fileName);
  const lines = [
    `Content-Type: ${a.contentType}; ${p.name}`,
    `Content-Disposition: ${inline ? 'inline' : 'attachment'}; ${p.filename}`,
    ...(inline ? [`Content-ID: <${a.contentId}>`] : []),
    'Content-Transfer-Encoding: base64',
  ];
  return `${lines.join(CRLF)}${CRLF}${CRLF}${wrap(a.content.toString('base64'), 76)}`;
}

function multipart(subtype: string, boundary: string, parts: string[]): string {
  const body = parts.map((p) => `--${boundary}${CRLF}${p}${CRLF}`).join('');
  return `Content-Type: multipart/${subtype}; boundary="${boundary}"${CRLF}${CRLF}${body}--${boundary}--`;
}

export function buildMessage(spec: MessageSpec): Buffer {
  const seed = createHash('sha1').update(spec.messageId).digest('hex').slice(0, 16);
  let depth = 0;
  const boundary = () => `----=_Part_${depth++}_${seed}`;

  // Inline parts need an HTML body to live in; without one they are plain attachments.
  const inline = spec.html === undefined ? [] : (spec.attachments ?? []).filter((a) => a.contentId);
  const attached = (spec.attachments ?? []).filter((a) => !inline.includes(a));
  let html = spec.html === undefined ? undefined : textPart('text/html', spec.html);
  if (html && inline.length > 0)
    html = multipart('related', boundary(), [html, ...inline.map((a) => attachmentPart(a, true))]);
  const text = spec.text === undefined ? undefined : textPart('text/plain', spec.text);
  let body =
    text && html ? multipart('alternative', boundary(), [text, html]) : (text ?? html ?? textPart('text/plain', ''));
  if (attached.length > 0)
    body = multipart('mixed', boundary(), [body, ...attached.map((a) => attachmentPart(a, false))]);

  const list = (ms: Mailbox[] | undefined) => (ms ?? []).map(formatMailbox).join(`,${CRLF} `);
  const headers = [
    ...(spec.received
      ? [
          `Received: from mx.example.net (mx.example.net [192.0.2.25])${CRLF}\tby mail.example.org with ESMTPS; ${formatDate(spec.received)}`,
        ]
      : []),
    `From: ${formatMailbox(spec.from)}`,
    `To: ${list(spec.to)}`,
    ...(spec.cc?.length ? [`Cc: ${list(spec.cc)}`] : []),
    ...(spec.bcc?.length ? [`Bcc: ${list(spec.bcc)}`] : []),
    `Subject: ${encodeWords(spec.subject)}`,
    `Date: ${formatDate(spec.date)}`,
    `Message-ID: <${spec.messageId}>`,
    ...(spec.inReplyTo ? [`In-Reply-To: <${spec.inReplyTo}>`, `References: <${spec.inReplyTo}>`] : []),
    'MIME-Version: 1.0',
  ];
  return Buffer.from(`${headers.join(CRLF)}${CRLF}${body}${CRLF}`, 'utf8');
}
