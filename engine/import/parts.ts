// MIME parts as mature mail readers read them, repaired before mailparser reads the message again
// (docs/import.md, "What a message says"). mailparser decodes each part by what it declares; real
// mail declares wrongly, and these are the readings Thunderbird and mutt give instead:
//
//   - a text part whose charset cannot decode it (none, us-ascii or UTF-8 with bytes that are not
//     UTF-8, or a charset nobody knows) is windows-1252, as 8-bit header bytes are (headers.ts);
//   - a UTF-7 text part is decoded (mailparser refuses UTF-7 outright);
//   - a text part with a Content-Disposition nobody knows is inline (mailparser makes it an
//     attachment, leaving an HTML-only message without a body);
//   - a part's header line that is not UTF-8 is read as the message's own header lines are
//     (headers.ts), not as latin1 whole: a Cyrillic file name whose last byte was cut;
//   - a part whose Content-Type is no type/subtype (`text plain`) is text/plain; charset=us-ascii
//     (RFC 2045, section 5.2), as the header block's is (headers.ts);
//   - a base64 part ends at its padding or at its first line that is not base64: text after it
//     (a signature a list server appended, say) is not decoded into the file.
//
// Splitting and re-joining a message costs about as much as parsing it, so this runs only when
// a cheap look at the message (partsNeedRepair) says one of these can apply: rarely.
import { once } from 'node:events';
import { Splitter, type MimeNode } from '@zone-eu/mailsplit';
import iconv from 'iconv-lite';
import type { ParsedMail } from 'mailparser';
import { isMediaType, isUtf8, utf8HeaderBlock, withDefaultType } from './headers.js';

const cp1252 = new TextDecoder('windows-1252');
import type { Repair } from './repairs.js';

const UTF7 = /^(?:(?:cs)?unicode-1-1-)?utf-?7$/i;
const UTF7_DECLARED = /charset\s*=\s*"?(?:(?:cs)?unicode-1-1-)?utf-?7\b/i;
/** Decoded without iconv-lite by libmime (mailparser's charset layer). */
const JAPANESE = /^(?:jis|iso-?2022-?jp|eucjp)/i;
const KNOWN_DISPOSITIONS = new Set(['inline', 'attachment']);
const TEXT_TYPES = new Set(['text/plain', 'text/html']);

/** Whether any of the part repairs above can apply, from the raw message and mailparser's reading of it. */
export function partsNeedRepair(raw: Buffer, mail: ParsedMail): boolean {
  const html = typeof mail.html === 'string' ? mail.html : '';
  if ((mail.text ?? '').includes('\uFFFD') || html.includes('\uFFFD')) return true;
  let base64 = false;
  for (const a of mail.attachments) {
    if (!isMediaType(a.contentType) || LATIN1_READ.test(a.filename ?? '')) return true;
    if (TEXT_TYPES.has(a.contentType) && !KNOWN_DISPOSITIONS.has(String(a.contentDisposition ?? ''))) return true;
    base64 ||= String(a.headers?.get('content-transfer-encoding') ?? '').toLowerCase() === 'base64';
  }
  // UTF-7 left undecoded reads as `Fr+APY-sche`: only text with such a run can be UTF-7.
  const utf7 = UTF7_RUN.test(mail.text ?? '') || UTF7_RUN.test(html);
  return (utf7 && declaresUtf7(raw)) || (base64 && textAfterBase64(raw));
}

const UTF7_RUN = /\+[A-Za-z0-9+/]{2,}-?/;
/**
 * What a name of 8-bit bytes mailparser read as latin1 shows: a C1 control (a UTF-8 continuation
 * byte) or two letters of the latin1 range in a row (UTF-8, Big5, GB2312 bytes); a name such as
 * `Käse.pdf` does not.
 */
const LATIN1_READ = /[\u0080-\u009f]|[\u00a0-\u00ff]{2}/;

/** Whether a charset parameter names UTF-7: a look at each `charset` (there are a few). */
function declaresUtf7(raw: Buffer): boolean {
  for (const name of ['harset', 'HARSET'])
    for (let at = raw.indexOf(name); at >= 0; at = raw.indexOf(name, at + 6))
      if (UTF7_DECLARED.test(raw.toString('latin1', at - 1, at + 40))) return true;
  return false;
}

/**
 * Whether a part may end in text after its base64 data: where a part ends (before a boundary
 * line, or at the end of the message), its last line is not base64 but one of the few lines
 * before it is (a long base64 line, or one with padding). A look at the ends of parts only.
 */
function textAfterBase64(raw: Buffer): boolean {
  for (let end = raw.indexOf('\n--'); ; end = raw.indexOf('\n--', end + 3)) {
    let stop = end < 0 ? raw.length : end;
    for (let n = 0; n < 6 && stop > 0; n++) {
      const start = raw.lastIndexOf(0x0a, stop - 1) + 1;
      const line = raw.toString('latin1', start, stop).trim();
      stop = start - 1;
      if (line === '') continue;
      if (line.startsWith('--')) break; // a boundary, or a signature delimiter: looked at from its own end
      if (BASE64_LINE.test(line)) {
        // The part's last line is base64 itself: nothing after its data. Further up, a line
        // that is surely base64 (long, or padded) means text follows data; a short one may be
        // the data's last line, so the look goes on up.
        if (n > 0 && (line.length >= 40 || line.endsWith('='))) return true;
        if (n === 0) break;
      }
    }
    if (end < 0) return false;
  }
}

/** The message with its parts repaired, and what was guessed; null when nothing changed. */
export async function repairParts(raw: Buffer): Promise<{ raw: Buffer; repairs: Repair[] } | null> {
  const splitter = new Splitter();
  const items: Array<MimeNode | { type: 'body' | 'data'; value: Buffer }> = [];
  splitter.on('data', (item) => items.push(item));
  const ended = once(splitter, 'end');
  splitter.end(raw);
  await ended;

  const repairs = new Set<Repair>();
  let changed = false;
  const out: Buffer[] = [];
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    if (item.type !== 'node') {
      out.push(item.value);
      continue;
    }
    // The node's body: the 'body' items that follow it.
    const body: Buffer[] = [];
    while (items[i + 1]?.type === 'body') body.push((items[++i] as { value: Buffer }).value);
    const fixed = item.multipart ? null : await repairPart(item, Buffer.concat(body), repairs);
    if (fixed) changed = true;
    let headers = item.getHeaders();
    if (!isUtf8(headers)) {
      headers = utf8HeaderBlock(headers, raw);
      repairs.add('eightBitHeaders');
      changed = true;
    }
    out.push(headers, ...(fixed ? [fixed] : body));
  }
  return changed ? { raw: Buffer.concat(out), repairs: [...repairs] } : null;
}

/** One leaf part: its new body (its headers changed in place), or null when it stays as it is. */
async function repairPart(node: MimeNode, body: Buffer, repairs: Set<Repair>): Promise<Buffer | null> {
  let fixed: Buffer | null = null;
  if (node.encoding === 'base64') {
    const cut = base64Only(body);
    if (cut.length < body.length) {
      fixed = body = cut;
      repairs.add('base64TrailingText');
    }
  }
  // RFC 2045, section 5.2: a Content-Type that is no type/subtype (`text plain`) is the default.
  if (node.contentType && !isMediaType(node.contentType)) {
    if (node.headers) node.headers.update('Content-Type', withDefaultType(node.headers.getFirst('Content-Type')));
    node.contentType = 'text/plain';
    node.charset ||= 'us-ascii';
    repairs.add('invalidContentType');
    fixed ??= body;
  }
  const type = node.contentType || (node.root ? 'text/plain' : '');
  if (!TEXT_TYPES.has(type) || node.disposition === 'attachment') return fixed;
  if (node.disposition && !KNOWN_DISPOSITIONS.has(node.disposition)) {
    if (node.headers) node.headers.update('Content-Disposition', 'inline');
    fixed ??= body;
  }
  const charset = (node.charset || '').trim();
  if (UTF7.test(charset)) return asUtf8(node, iconv.decode(await decoded(node, body), 'utf7'));
  const undecodable =
    !charset ||
    /^(?:us-)?ascii$|^utf-?8$/i.test(charset) ||
    (!iconv.encodingExists(charset) && !JAPANESE.test(charset));
  if (!undecodable) return fixed;
  const bytes = await decoded(node, body);
  if (isUtf8(bytes)) return fixed;
  repairs.add('undecodableCharset');
  // Line by line, as header lines are: a stray byte in UTF-8 text spoils only its own line.
  const lines: string[] = [];
  for (let start = 0; start < bytes.length;) {
    const lf = bytes.indexOf(0x0a, start);
    const stop = lf < 0 ? bytes.length : lf + 1;
    const line = bytes.subarray(start, stop);
    lines.push(isUtf8(line) ? line.toString('utf8') : cp1252.decode(line));
    start = stop;
  }
  return asUtf8(node, lines.join(''));
}

/** The part's body replaced by this text, as base64 UTF-8 (its headers say so). */
function asUtf8(node: MimeNode, text: string): Buffer {
  node.setCharset('utf-8');
  if (node.headers) node.headers.update('Content-Transfer-Encoding', 'base64');
  return Buffer.from(`${Buffer.from(text, 'utf8').toString('base64').replace(/.{76}/g, '$&\r\n')}\r\n`, 'latin1');
}

/** A part's bytes, its transfer encoding undone (by mailsplit's own decoder, as mailparser reads it). */
async function decoded(node: MimeNode, body: Buffer): Promise<Buffer> {
  const decoder = node.getDecoder();
  const chunks: Buffer[] = [];
  decoder.on('data', (c: Buffer) => chunks.push(c));
  const ended = once(decoder, 'end');
  decoder.end(body);
  await ended;
  return Buffer.concat(chunks);
}

/**
 * A base64 body up to its first line that is not base64, or up to its padding when what follows
 * is not more base64 (some encoders write padded pieces one after another). Blank lines do not
 * end it.
 */
function base64Only(body: Buffer): Buffer {
  const text = body.toString('latin1');
  const lines: Array<{ stop: number; chars: number; padded: boolean }> = [];
  for (let start = 0; start < text.length;) {
    const lf = text.indexOf('\n', start);
    const stop = lf < 0 ? text.length : lf + 1;
    const line = text.slice(start, stop).trim();
    start = stop;
    if (line === '') continue;
    if (!BASE64_LINE.test(line)) break;
    lines.push({ stop, chars: line.length, padded: line.endsWith('=') });
  }
  // At a padding the data ends, unless whole groups of four follow (up to the end found above).
  let rest = lines.reduce((n, l) => n + l.chars, 0);
  let end = lines.at(-1)?.stop ?? 0;
  for (const line of lines) {
    rest -= line.chars;
    if (line.padded && rest > 0 && rest % 4 !== 0) {
      end = line.stop;
      break;
    }
  }
  // What is cut must be more than blank lines.
  return text.slice(end).trim() === '' ? body : body.subarray(0, end);
}

const BASE64_LINE = /^[A-Za-z0-9+/]+=*$/;

/**
 * The messages carried inline (`message/rfc822` with `Content-Disposition: inline`, not
 * transfer-encoded): mailparser reads such a part into the body text and keeps no file of it, so
 * the original it carries could not be downloaded. Each as its bytes and the name its part gives,
 * in the order they come; the parts nested inside them stay inside.
 */
export async function inlineMessages(raw: Buffer): Promise<Array<{ fileName: string; content: Buffer }>> {
  // A cheap look first: most mail names neither.
  const mentions = (words: string[]) => words.some((w) => raw.indexOf(w) >= 0);
  if (!mentions(['rfc822', 'RFC822', 'Rfc822']) || !mentions(['inline', 'INLINE', 'Inline'])) return [];
  // ignoreEmbedded: an embedded message is one body, its bytes as written, not split into parts.
  const splitter = new Splitter({ ignoreEmbedded: true });
  const found: Array<{ fileName: string; chunks: Buffer[] }> = [];
  let current: Buffer[] | null = null;
  splitter.on('data', (item: MimeNode | { type: 'body' | 'data'; value: Buffer }) => {
    if (item.type === 'body') current?.push(item.value);
    else if (item.type === 'node' && isInlineMessage(item)) {
      current = [];
      found.push({ fileName: item.filename || '', chunks: current });
    } else current = null;
  });
  const ended = once(splitter, 'end');
  splitter.end(raw);
  await ended;
  return found.map((m) => ({ fileName: m.fileName, content: Buffer.concat(m.chunks) }));
}

/** What mailsplit reads as an embedded message (and mailparser then into the body). */
function isInlineMessage(node: MimeNode): boolean {
  return (
    node.contentType === 'message/rfc822' &&
    node.disposition === 'inline' &&
    (!node.encoding || ['7bit', '8bit', 'binary'].includes(node.encoding))
  );
}
