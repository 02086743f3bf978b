// The header block as mature mail readers see it, repaired before mailparser reads it
// (docs/import.md, "What a message says"). mailparser decodes header bytes as UTF-8 and RFC 2047
// words by their declared charset, with U+FFFD for anything that does not fit; real mail is
// messier, and these repairs are the ones Thunderbird, mutt and Python's email package make:
//
//   - a header line that is not valid UTF-8 is windows-1252 (Latin-1's superset): raw 8-bit
//     names written by old mailers with no encoded word ("Jürgen" as the byte 0xFC); unless it is
//     mostly UTF-8 (a name whose last byte was cut: what is valid stays UTF-8), or a charset the
//     message's parts declare decodes it (a Big5 subject beside a Big5 body);
//   - adjacent encoded words of one charset are decoded together: a character split between
//     two of them is one character;
//   - an encoded word that declares UTF-8 but whose bytes are not UTF-8 is windows-1252 too
//     (`=?UTF-8?Q?Fr=F6sche?=`);
//   - raw 8-bit bytes inside an encoded word belong to the word's charset, whatever it is
//     (`=?iso-8859-1?Q?Fr<0xF6>sche?=` is Frösche, not the byte read twice);
//   - a UTF-7 encoded word is decoded here (mailparser refuses UTF-7) and given on as UTF-8;
//   - a Content-Type that is no type/subtype (`text plain`) is text/plain; charset=us-ascii
//     (RFC 2045, section 5.2);
//   - blanks before the first header field (` From: …`) are not part of it;
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
  // A first field indented (` From: …`): nothing precedes it to continue, so it is a field.
  if (out[0] === 0x20 || out[0] === 0x09) {
    const indent = INDENTED_FIELD.exec(out.toString('latin1', 0, Math.min(out.length, 1024)))?.[0].length ?? 0;
    if (indent > 0) {
      repairs.push('indentedFirstField');
      out = out.subarray(indent);
    }
  }
  return out;
}

/** The blanks before a first line that is a header field. */
const INDENTED_FIELD = /^[ \t]+(?=[!-9;-~]+[ \t]*:)/;

export interface RepairedMessage {
  /** The message to parse: the repaired header block, then the body as it was. */
  raw: Buffer;
  /** The header block as text, 8-bit lines read as eightBitLine reads them (what is stored as raw headers). */
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
  const asWritten: string[] = [];
  let declared: string[] | undefined;
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
    if (isUtf8(line)) {
      const text = line.toString('utf8');
      lines.push(text);
      asWritten.push(text);
    } else {
      eightBit = true;
      declared ??= declaredCharsets(raw);
      lines.push(eightBitLine(line, declared));
      asWritten.push(cp1252.decode(line));
    }
    start = stop;
  }
  const headerText = lines.join('');
  // The fingerprint reads 8-bit lines as windows-1252, as it always has: a better reading of a
  // line must not make a message already archived look different (docs/import.md, "Duplicates").
  const fields = unfoldFields(asWritten.join(''));
  const repairedFields = unfoldFields(headerText).map((field) => repairField(field));
  const body = raw.subarray(end);
  if (eightBit || repairedFields.some((f) => f.relabelled)) repairs.push('eightBitHeaders');
  if (repairedFields.some((f) => f.defaultType)) repairs.push('invalidContentType');
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

/**
 * A header line that is not valid UTF-8, read as mail readers read it. A line that is mostly
 * UTF-8 (more bytes in valid multi-byte sequences than bytes that fit none: a name whose last
 * byte was cut) is UTF-8, its stray bytes left out. Otherwise it is in the first charset the
 * message's own parts declare that decodes it whole (a Big5 or GB2312 subject beside a Big5 or
 * GB2312 body), else windows-1252.
 */
function eightBitLine(line: Buffer, declared: readonly string[]): string {
  let valid = 0;
  let invalid = 0;
  for (let i = 0; i < line.length;) {
    const b = line[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    const n = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    if (n > 1 && isUtf8(line.subarray(i, i + n))) {
      valid += n;
      i += n;
    } else {
      invalid++;
      i++;
    }
  }
  // U+FFFD would not survive: mailparser reads a file name holding it as latin1.
  if (valid > invalid) return utf8Lenient.decode(line).replace(/\uFFFD/g, '');
  for (const charset of declared) {
    try {
      return new TextDecoder(charset, { fatal: true }).decode(line);
    } catch {
      // A charset this runtime does not know, or bytes it cannot decode: the next one.
    }
  }
  return cp1252.decode(line);
}

/**
 * A part's header block with its 8-bit lines read as the message's own header lines are
 * (eightBitLine), as UTF-8: mailparser reads a part header that is not UTF-8 as latin1, whole.
 */
export function utf8HeaderBlock(block: Buffer, message: Buffer): Buffer {
  const declared = declaredCharsets(message);
  const lines: string[] = [];
  for (let start = 0; start < block.length;) {
    const lf = block.indexOf(0x0a, start);
    const stop = lf < 0 ? block.length : lf + 1;
    const line = block.subarray(start, stop);
    lines.push(isUtf8(line) ? line.toString('utf8') : eightBitLine(line, declared));
    start = stop;
  }
  return Buffer.from(lines.join(''), 'utf8');
}

const utf8Lenient = new TextDecoder('utf-8');
const CHARSET_PARAM = /charset\s*=\s*"?([A-Za-z0-9._:+-]+)/gi;
/** How much of a message is searched for the charsets its parts declare. */
const DECLARED_SCAN_BYTES = 1024 * 1024;

/** The charsets the message declares (Content-Type parameters), in order, without UTF-8 and ASCII. */
function declaredCharsets(raw: Buffer): string[] {
  const text = raw.toString('latin1', 0, Math.min(raw.length, DECLARED_SCAN_BYTES));
  const found = new Set<string>();
  for (const m of text.matchAll(CHARSET_PARAM)) {
    const name = m[1]!.toLowerCase();
    // UTF-16 and -32 (and x-user-defined) decode nearly any bytes: no evidence for a header.
    if (!/^(?:utf-?8|(?:us-)?ascii|utf-?7|utf-?(?:16|32)(?:[bl]e)?|x-user-defined)$/.test(name)) found.add(name);
  }
  return [...found];
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

function repairField(field: string): { text: string; relabelled: boolean; defaultType?: boolean } {
  const colon = field.indexOf(':');
  if (colon <= 0) return { text: field, relabelled: false };
  const name = field.slice(0, colon).trim().toLowerCase();
  let value = field.slice(colon + 1);
  const ending = /\r?\n$/.exec(value)?.[0] ?? '';
  value = value.slice(0, value.length - ending.length);
  // RFC 2045, section 5.2: a Content-Type that is no type/subtype is the default one.
  if (name === 'content-type' && !isMediaType(value))
    return {
      text: `${field.slice(0, colon)}: ${withDefaultType(value)}${ending}`,
      relabelled: false,
      defaultType: true,
    };
  let relabelled = false;
  if (value.includes('=?')) value = joinAdjacentWords(value);
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

/**
 * A Content-Type value that is no type/subtype made text/plain, charset us-ascii unless it names
 * one (RFC 2045, section 5.2); its parameters kept, as Python's email package keeps them (a
 * file's name stays its name).
 */
export function withDefaultType(value: string): string {
  const semi = value.indexOf(';');
  const params =
    semi < 0
      ? ''
      : value
          .slice(semi)
          .replace(/\r?\n[ \t]+/g, ' ')
          .trim();
  return `text/plain${/(?:^|;)\s*charset\s*=/i.test(params) ? '' : '; charset=us-ascii'}${params}`;
}

const MEDIA_TYPE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Whether a Content-Type value starts with type/subtype (comments and folding aside). */
export function isMediaType(value: string): boolean {
  const type = value
    .replace(/\([^()]*\)/g, '')
    .split(';')[0]!
    .trim();
  return MEDIA_TYPE.test(type);
}

/**
 * Adjacent encoded words of one charset as one word of their bytes together: an encoder may split
 * a character between two words, and RFC 2047 readers (Python's email package, Thunderbird)
 * decode such a run as one text. The whitespace between adjacent words is not text (RFC 2047,
 * section 6.2).
 */
function joinAdjacentWords(value: string): string {
  const words = [...value.matchAll(ENCODED_WORD)];
  if (words.length < 2) return value;
  let out = '';
  let at = 0;
  for (let i = 0; i < words.length;) {
    let j = i;
    const key = (w: RegExpMatchArray) => `${w[1]!.toLowerCase()}${w[2]!.toLowerCase()}`;
    while (
      j + 1 < words.length &&
      key(words[j + 1]!) === key(words[i]!) &&
      /^\s*$/.test(value.slice(words[j]!.index! + words[j]![0].length, words[j + 1]!.index!))
    )
      j++;
    const first = words[i]!;
    const last = words[j]!;
    out += value.slice(at, first.index!);
    if (j === i) out += first[0];
    else {
      const bytes = Buffer.concat(words.slice(i, j + 1).map((w) => wordBytes(w[3]!, w[4]!)));
      out += `=?${first[1]}${first[2]}?B?${bytes.toString('base64')}?=`;
    }
    at = last.index! + last[0].length;
    i = j + 1;
  }
  return out + value.slice(at);
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
