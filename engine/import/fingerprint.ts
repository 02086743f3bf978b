// What "the same message" means beside its Message-ID (docs/import.md, "Duplicates"): test
// suites, broken clients and resent mail reuse Message-IDs for different messages, so a message
// is a duplicate only when its content agrees too. The content is what the message says, not
// how one copy of it travelled or was filed: the header fields that describe the message itself
// and its body, with line ends and trailing blank lines made alike. Trace and mailbox fields
// (Received, Return-Path, Delivered-To, Status, X-Mozilla-Status, X-UID, Content-Length, …)
// differ between copies of one message and are left out.
import { createHash } from 'node:crypto';

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

/**
 * SHA-256 (hex) of the message's content fields (as written, as repairHeaders cut them, blanks
 * collapsed) and its body, without CRs and trailing blank lines.
 */
export function contentFingerprint(fields: readonly string[], body: Buffer): string {
  let head = '';
  for (const field of fields) {
    const colon = field.indexOf(':');
    const name = colon > 0 ? field.slice(0, colon).trim().toLowerCase() : '';
    if (CONTENT_FIELDS.has(name))
      head += `${name}:${field
        .slice(colon + 1)
        .replace(/\s+/g, ' ')
        .trim()}\n`;
  }
  const hash = createHash('sha256').update(`${head}\n`);
  let start = 0;
  if (body[start] === 0x0d) start++;
  if (body[start] === 0x0a) start++;
  let stop = body.length;
  while (stop > start && (body[stop - 1] === 0x0a || body[stop - 1] === 0x0d || body[stop - 1] === 0x20)) stop--;
  // CRLF as LF: the body without its CRs, in the pieces between them.
  let from = start;
  for (let cr = body.indexOf(0x0d, from); cr >= 0 && cr < stop; cr = body.indexOf(0x0d, from)) {
    hash.update(body.subarray(from, cr));
    from = cr + 1;
  }
  hash.update(body.subarray(from, stop));
  return hash.digest('hex');
}
