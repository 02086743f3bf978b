// The header block as mature mail readers see it, repaired before mailparser reads it
// (docs/import.md, "What a message says"). mailparser decodes header bytes as UTF-8 and RFC 2047
// words by their declared charset, with U+FFFD for anything that does not fit; real mail is
// messier, and these repairs are the ones Thunderbird, mutt and Python's email package make:
//
//   - a header line that is not valid UTF-8 is windows-1252 (Latin-1's superset): raw 8-bit
//     names written by old mailers with no encoded word ("Jürgen" as the byte 0xFC);
//   - an encoded word that declares UTF-8 but whose bytes are not UTF-8 is windows-1252 too
//     (`=?UTF-8?Q?Fr=F6sche?=`);
//   - raw 8-bit bytes inside an encoded word belong to the word's charset, whatever it is
//     (`=?iso-8859-1?Q?Fr<0xF6>sche?=` is Frösche, not the byte read twice);
//   - a UTF-7 encoded word is decoded here (mailparser refuses UTF-7) and given on as UTF-8;
//   - leading blank or whitespace-only lines are not part of the message, lines that end in a
//     bare CR (old Mac mail) end in LF, and a header block not closed by a blank line ends at the
//     first line that is neither a header field nor a continuation: the body starts there.
//   - comments in address fields are not names: `Pete(his account)@silly.test` is
//     Pete@silly.test; a comment right after a bare address is that address's display name, the
//     old convention (`jdoe@example.com (John Doe)`), as Python's email package reads it; a
//     comment anywhere else is dropped (`unlisted-recipients:; (no To-header on input)`).
//
// Only the header block is rewritten; the body's bytes are untouched (but for bare CR line ends).
// What was guessed is reported (Repair) so the import summary can list it.
import iconv from 'iconv-lite';
import type { Repair } from './repairs.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });
const cp1252 = new TextDecoder('windows-1252');

/** Whether these bytes are valid UTF-8. */
export function isUtf8(bytes: Uint8Array): boolean {
  try {
    utf8.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/** Where the header block ends (the index of its blank line's first byte), or the length. */
export function headerEnd(raw: Buffer): number {
  const lf = raw.indexOf('\n\n');
  const crlf = raw.indexOf('\r\n\r\n');
  const ends = [lf >= 0 ? lf + 1 : -1, crlf >= 0 ? crlf + 2 : -1].filter((i) => i >= 0);
  return ends.length ? Math.min(...ends) : raw.length;
}

/** Whether the line at `start` is a continuation (leading blank) or a field: ftext (RFC 5322), blanks, a colon. */
function isFieldOrContinuation(raw: Buffer, start: number, stop: number): boolean {
  const first = raw[start]!;
  if (first === 0x20 || first === 0x09) return true;
  let i = start;
  while (i < stop && raw[i]! >= 0x21 && raw[i]! <= 0x7e && raw[i] !== 0x3a) i++;
  if (i === start) return false;
  while (i < stop && (raw[i] === 0x20 || raw[i] === 0x09)) i++;
  return raw[i] === 0x3a;
}

/**
 * Where the header block really ends: at its blank line, or earlier, at the first line after a
 * field that is neither a field nor a continuation (a block nobody closed: that line is body).
 */
function blockEnd(raw: Buffer): { end: number; closed: boolean } {
  const blank = headerEnd(raw);
  let start = raw.indexOf(0x0a) + 1; // the first line is the parser's to judge
  while (start > 0 && start < blank) {
    const lf = raw.indexOf(0x0a, start);
    const stop = lf < 0 || lf > blank ? blank : lf + 1;
    if (!isFieldOrContinuation(raw, start, stop)) return { end: start, closed: false };
    start = stop;
  }
  return { end: blank, closed: true };
}

const BLANK_LINES = /^(?:[ \t]*\r?\n)+/;

/** The message without leading blank or whitespace-only lines, its bare CR line ends made LF. */
function normalised(raw: Buffer, repairs: Repair[]): Buffer {
  let out = raw;
  // Bare CR line ends: the first line ends in CR without LF (old Mac mail, some exports).
  const firstEnd = out.findIndex((b) => b === 0x0a || b === 0x0d);
  if (firstEnd >= 0 && out[firstEnd] === 0x0d && out[firstEnd + 1] !== 0x0a) {
    repairs.push('crLineEnds');
    out = Buffer.from(out.toString('latin1').replace(/\r(?!\n)/g, '\n'), 'latin1');
  }
  if (out[0] === 0x20 || out[0] === 0x09 || out[0] === 0x0a || out[0] === 0x0d) {
    const skip = BLANK_LINES.exec(out.toString('latin1', 0, Math.min(out.length, 4096)))?.[0].length ?? 0;
    out = out.subarray(skip);
  }
  return out;
}

export interface RepairedMessage {
  /** The message to parse: the repaired header block, then the body as it was. */
  raw: Buffer;
  /** The header block as text, 8-bit lines read as windows-1252 (what is stored as raw headers). */
  headerText: string;
  /** What had to be guessed, if anything. */
  repairs: Repair[];
  /**
   * The header fields as written (8-bit lines read as windows-1252), each with its continuation
   * lines, and the body: what fingerprint.ts hashes, not changed by the repairs here.
   */
  fields: string[];
  body: Buffer;
}

const ADDRESS_FIELDS = new Set(['from', 'sender', 'reply-to', 'to', 'cc', 'bcc']);
const ENCODED_WORD = /=\?([^?*\s]+)((?:\*[^?]*)?)\?([qb])\?([^?]*)\?=/gi;
const UTF8_NAME = /^utf-?8$/i;
const UTF7_NAME = /^(?:(?:cs)?unicode-1-1-)?utf-?7$/i;
/** An encoded word with raw 8-bit bytes in it, on a line read as latin1 (one char per byte). */
const WORD_WITH_8BIT = /=\?[^?\s]+\?([qb])\?[^?\s]*[\x80-\xff][^?\s]*\?=/gi;

export function repairHeaders(input: Buffer): RepairedMessage {
  const repairs: Repair[] = [];
  const raw = normalised(input, repairs);
  const { end, closed } = blockEnd(raw);
  if (!closed) repairs.push('unterminatedHeaders');
  const block = raw.subarray(0, end);
  // Line by line: one bad line says nothing about the others' charset.
  const lines: string[] = [];
  let start = 0;
  let eightBit = false;
  while (start < block.length) {
    const lf = block.indexOf(0x0a, start);
    const stop = lf < 0 ? block.length : lf + 1;
    let line = block.subarray(start, stop);
    if (!isUtf8(line)) {
      // Raw bytes inside an encoded word are the word's own: written as =XX they keep its charset.
      const text = line.toString('latin1');
      const escaped = text.replace(WORD_WITH_8BIT, (word, enc: string) =>
        enc.toLowerCase() === 'q'
          ? word.replace(/[\x80-\xff]/g, (c) => `=${c.charCodeAt(0).toString(16).toUpperCase()}`)
          : word,
      );
      if (escaped !== text) line = Buffer.from(escaped, 'latin1');
    }
    if (isUtf8(line)) lines.push(line.toString('utf8'));
    else {
      eightBit = true;
      lines.push(cp1252.decode(line));
    }
    start = stop;
  }
  const headerText = lines.join('');
  const fields = unfoldFields(headerText);
  const repairedFields = fields.map((field) => repairField(field));
  const body = raw.subarray(end);
  if (eightBit || repairedFields.some((f) => f.relabelled)) repairs.push('eightBitHeaders');
  const repaired = repairedFields.map((f) => f.text).join('');
  const gap = closed ? '' : headerText.endsWith('\r\n') ? '\r\n' : '\n';
  if (closed && raw === input && repaired === block.toString('latin1') && isUtf8(block))
    return { raw, headerText, repairs, fields, body };
  return {
    raw: Buffer.concat([Buffer.from(repaired + gap, 'utf8'), raw.subarray(end)]),
    headerText,
    repairs,
    fields,
    body,
  };
}

/** The header block cut into fields, each with its continuation lines and line endings. */
function unfoldFields(text: string): string[] {
  const fields: string[] = [];
  for (const line of text.split(/(?<=\n)/)) {
    if (/^[ \t]/.test(line) && fields.length > 0) fields[fields.length - 1] += line;
    else fields.push(line);
  }
  return fields;
}

function repairField(field: string): { text: string; relabelled: boolean } {
  const colon = field.indexOf(':');
  if (colon <= 0) return { text: field, relabelled: false };
  const name = field.slice(0, colon).trim().toLowerCase();
  let value = field.slice(colon + 1);
  const ending = /\r?\n$/.exec(value)?.[0] ?? '';
  value = value.slice(0, value.length - ending.length);
  let relabelled = false;
  if (value.includes('=?'))
    value = value.replace(ENCODED_WORD, (word, charset: string, lang: string, enc: string, text: string) => {
      if (UTF7_NAME.test(charset)) {
        const decoded = iconv.decode(wordBytes(enc, text), 'utf7');
        return `=?UTF-8${lang}?B?${Buffer.from(decoded, 'utf8').toString('base64')}?=`;
      }
      if (!UTF8_NAME.test(charset) || isUtf8(wordBytes(enc, text))) return word;
      relabelled = true;
      return `=?windows-1252${lang}?${enc}?${text}?=`;
    });
  if (ADDRESS_FIELDS.has(name) && value.includes('('))
    value = ' ' + withoutComments(value.replace(/\r?\n[ \t]+/g, ' ').trim());
  return { text: `${field.slice(0, colon)}:${value}${ending}`, relabelled };
}

/** The bytes an encoded word's text stands for. */
function wordBytes(encoding: string, text: string): Buffer {
  if (encoding.toLowerCase() === 'b') return Buffer.from(text, 'base64');
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '_') bytes.push(0x20);
    else if (c === '=' && /^[0-9a-f]{2}$/i.test(text.slice(i + 1, i + 3))) {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(...Buffer.from(c, 'utf8'));
  }
  return Buffer.from(bytes);
}

/**
 * An address list without its comments (RFC 5322 CFWS), keeping quoted strings, angle-bracketed
 * addresses and groups; a comment that follows a bare address becomes its display name.
 */
export function withoutComments(value: string): string {
  return splitTopLevel(value)
    .map((mailbox) => {
      const { text, comments } = stripComments(mailbox);
      const trailing = /\)\s*[;]?\s*$/.test(mailbox) ? comments.at(-1) : undefined;
      const bare = text.trim();
      // `addr (Name)`: no phrase, no brackets, no group; the last comment closes the mailbox.
      if (trailing && /^[^\s<>":;,@]+@[^\s<>":;,]+$/.test(bare) && trailing.trim() !== '') {
        return ` "${trailing.trim().replace(/["\\]/g, '\\$&')}" <${bare}>`;
      }
      return text.replace(/\s+/g, ' ').replace(/\s+([;,])/g, '$1');
    })
    .join(',')
    .trim();
}

/** Splits at commas outside quotes, comments and angle brackets. */
function splitTopLevel(value: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let angle = false;
  let current = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (c === '\\' && (quoted || depth > 0)) {
      current += c + (value[i + 1] ?? '');
      i++;
      continue;
    }
    if (quoted) quoted = c !== '"';
    else if (depth > 0) depth += c === '(' ? 1 : c === ')' ? -1 : 0;
    else if (c === '"') quoted = true;
    else if (c === '(') depth = 1;
    else if (c === '<') angle = true;
    else if (c === '>') angle = false;
    else if (c === ',' && !angle) {
      parts.push(current);
      current = '';
      continue;
    }
    current += c;
  }
  parts.push(current);
  return parts;
}

/** The text outside comments (each comment removed: `Pete(x)@host` is `Pete@host`), and the comments' contents. */
function stripComments(value: string): { text: string; comments: string[] } {
  let text = '';
  const comments: string[] = [];
  let depth = 0;
  let quoted = false;
  let comment = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (depth > 0) {
      if (c === '\\') {
        comment += value[++i] ?? '';
        continue;
      }
      if (c === '(') depth++;
      else if (c === ')' && --depth === 0) {
        comments.push(comment);
        comment = '';
        continue;
      }
      comment += c;
      continue;
    }
    if (quoted) {
      if (c === '\\') {
        text += c + (value[++i] ?? '');
        continue;
      }
      if (c === '"') quoted = false;
      text += c;
      continue;
    }
    if (c === '"') quoted = true;
    if (c === '(') {
      depth = 1;
      continue;
    }
    text += c;
  }
  return { text, comments };
}
