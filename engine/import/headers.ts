// The header block as mature mail readers see it, repaired before mailparser reads it
// (docs/import.md, "What a message says"). mailparser decodes header bytes as UTF-8 and RFC 2047
// words by their declared charset, with U+FFFD for anything that does not fit; real mail is
// messier, and these repairs are the ones Thunderbird, mutt and Python's email package make:
//
//   - a header line that is not valid UTF-8 is windows-1252 (Latin-1's superset): raw 8-bit
//     names written by old mailers with no encoded word ("Jürgen" as the byte 0xFC);
//   - an encoded word that declares UTF-8 but whose bytes are not UTF-8 is windows-1252 too
//     (`=?UTF-8?Q?Fr=F6sche?=`);
//   - comments in address fields are not names: `Pete(his account)@silly.test` is
//     Pete@silly.test; a comment right after a bare address is that address's display name, the
//     old convention (`jdoe@example.com (John Doe)`), as Python's email package reads it; a
//     comment anywhere else is dropped (`unlisted-recipients:; (no To-header on input)`).
//
// Only the header block is rewritten; the body's bytes are untouched.

const utf8 = new TextDecoder('utf-8', { fatal: true });
const cp1252 = new TextDecoder('windows-1252');

function isUtf8(bytes: Uint8Array): boolean {
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

export interface RepairedMessage {
  /** The message to parse: the repaired header block, then the body as it was. */
  raw: Buffer;
  /** The header block as text, 8-bit lines read as windows-1252 (what is stored as raw headers). */
  headerText: string;
}

const ADDRESS_FIELDS = new Set(['from', 'sender', 'reply-to', 'to', 'cc', 'bcc']);
const ENCODED_WORD = /=\?(utf-?8)((?:\*[^?]*)?)\?([qb])\?([^?]*)\?=/gi;

export function repairHeaders(raw: Buffer): RepairedMessage {
  const end = headerEnd(raw);
  const block = raw.subarray(0, end);
  // Line by line: one bad line says nothing about the others' charset.
  const lines: string[] = [];
  let start = 0;
  while (start < block.length) {
    const lf = block.indexOf(0x0a, start);
    const stop = lf < 0 ? block.length : lf + 1;
    const line = block.subarray(start, stop);
    lines.push(isUtf8(line) ? line.toString('utf8') : cp1252.decode(line));
    start = stop;
  }
  const headerText = lines.join('');
  const repaired = unfoldFields(headerText)
    .map((field) => repairField(field))
    .join('');
  if (repaired === block.toString('latin1') && isUtf8(block)) return { raw, headerText };
  return { raw: Buffer.concat([Buffer.from(repaired, 'utf8'), raw.subarray(end)]), headerText };
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

function repairField(field: string): string {
  const colon = field.indexOf(':');
  if (colon <= 0) return field;
  const name = field.slice(0, colon).trim().toLowerCase();
  let value = field.slice(colon + 1);
  const ending = /\r?\n$/.exec(value)?.[0] ?? '';
  value = value.slice(0, value.length - ending.length);
  value = value.replace(ENCODED_WORD, (word, _charset: string, lang: string, enc: string, text: string) =>
    isUtf8(wordBytes(enc, text)) ? word : `=?windows-1252${lang}?${enc}?${text}?=`,
  );
  if (ADDRESS_FIELDS.has(name) && value.includes('('))
    value = ' ' + withoutComments(value.replace(/\r?\n[ \t]+/g, ' ').trim());
  return `${field.slice(0, colon)}:${value}${ending}`;
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
