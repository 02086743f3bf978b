// What "the same message" means beside its Message-ID (docs/import.md, "Duplicates"): test
// suites, broken clients and resent mail reuse Message-IDs for different messages, so a message
// is a duplicate only when its content agrees too. The content is what the message says, not
// how one copy of it travelled or was filed: the header fields that describe the message itself
// and its body, with line ends and trailing blank lines made alike. Trace and mailbox fields
// (Received, Return-Path, Delivered-To, Status, X-Mozilla-Status, X-UID, Content-Length, …)
// differ between copies of one message and are left out.
import { createHash } from 'node:crypto';
import { headerEnd } from './headers.js';

const CONTENT_FIELDS = new Set([
  'from',
  'sender',
  'reply-to',
  'to',
  'cc',
  'subject',
  'date',
  'in-reply-to',
  'references',
  'content-type',
  'content-transfer-encoding',
  'content-disposition',
]);

/** SHA-256 (hex) of the message's content fields, unfolded, and its body, with LF line ends. */
export function contentFingerprint(raw: Buffer): string {
  const end = headerEnd(raw);
  const hash = createHash('sha256');
  const header = raw.toString('latin1', 0, end).replace(/\r?\n[ \t]+/g, ' ');
  for (const line of header.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon).trim().toLowerCase() : '';
    if (CONTENT_FIELDS.has(name))
      hash.update(
        `${name}:${line
          .slice(colon + 1)
          .replace(/\s+/g, ' ')
          .trim()}\n`,
        'latin1',
      );
  }
  hash.update('\n');
  let body = raw.subarray(end);
  if (body[0] === 0x0d) body = body.subarray(1);
  if (body[0] === 0x0a) body = body.subarray(1);
  let stop = body.length;
  while (stop > 0 && (body[stop - 1] === 0x0a || body[stop - 1] === 0x0d || body[stop - 1] === 0x20)) stop--;
  body = body.subarray(0, stop);
  hash.update(body.includes(0x0d) ? Buffer.from(body.toString('latin1').replace(/\r\n/g, '\n'), 'latin1') : body);
  return hash.digest('hex');
}
