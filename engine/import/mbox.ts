// mbox files, streamed: a multi-gigabyte mailbox is read in 1 MiB chunks and never held whole.
//
// Where one message ends and the next begins (docs/import.md, "mbox separators"): a line that
// starts with "From " is a separator when
//   - it opens the file (after a UTF-8 byte-order mark, if any) or follows a blank line (mboxrd,
//     mboxo: what Dovecot, mutt and Thunderbird write) and reads as a From_ line (a sender, then
//     a date with a time of day), or
//   - the line after it is a header field (`Name: value`): Netscape and Mozilla wrote
//     `From - <date>` straight after the previous message's last line.
// A message whose headers carry a Content-Length (mboxcl, Netscape, Solaris) ends where it says,
// when it says so consistently: a separator (or the end of the file) stands exactly there, after
// at most one blank line. Then the "From " lines inside its body are body, escaped or not. When
// the length is not consistent it is ignored and the rules above apply.
// Lines of the form ">From ", ">>From " … are mboxrd escapes: one ">" is removed on reading and
// added on writing, so a body line that begins with "From " survives the round trip. An entry
// delimited by its Content-Length is mboxcl2, which escapes nothing: its ">From " lines are kept.
import { createReadStream } from 'node:fs';

export interface MboxEntry {
  /** The message itself: no From_ line, no separator blank line, escapes undone. */
  raw: Buffer;
  /** Byte offset of the entry's From_ line in the file (0 for text before the first one). */
  offset: number;
  /** Bytes the entry takes in the file, separator included. */
  length: number;
  /** Set when the file's lines end in a bare CR, read as LF. */
  crLineEnds?: true;
  /** Set on the file's last entry when it looks cut short (a file copied or downloaded in part): why. */
  cut?: string;
}

const LF = 0x0a;
const CR = 0x0d;
const FROM = Buffer.from('From ');
const LF_FROM = Buffer.from('\nFrom ');
const ESCAPED_FROM = /^>(>*From )/gm;
const NEEDS_ESCAPE = /^(>*From )/gm;
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);
/**
 * A From_ line: "From ", a sender (or "-"), then a date with a time of day, as every mbox writer
 * puts it. "From the archive of 2023: …" in a body is not one.
 */
const FROM_LINE = /^From \S+\s.*\b\d{1,2}:\d{2}\b/;
/** A header field line: a field name (RFC 5322 ftext), optional blanks, a colon. */
const HEADER_LINE = /^[!-9;-~]+[ \t]*:/;
const CONTENT_LENGTH = /^content-length[ \t]*:[ \t]*(\d{1,15})[ \t]*\r?$/im;

/**
 * A byte buffer that grows by doubling, so a large entry read in many chunks is copied O(n) times.
 * Taking bytes off the front moves a start mark, not the bytes behind it: moving them for every
 * entry copied the rest of a 1 MB read once per message, hundreds of times per chunk of small mail.
 */
class Bytes {
  data = Buffer.alloc(1 << 16);
  start = 0;
  length = 0;

  append(chunk: Buffer): void {
    if (this.start + this.length + chunk.length > this.data.length) {
      // Room at the front first (one move per read, not per entry), else a larger buffer.
      const size = Math.max(this.data.length, this.length + chunk.length);
      const target = size > this.data.length ? Buffer.alloc(Math.max(this.data.length * 2, size)) : this.data;
      this.data.copy(target, 0, this.start, this.start + this.length);
      this.data = target;
      this.start = 0;
    }
    chunk.copy(this.data, this.start + this.length);
    this.length += chunk.length;
  }

  view(): Buffer {
    return this.data.subarray(this.start, this.start + this.length);
  }

  /** Removes the first n bytes, returning a copy of them. */
  take(n: number): Buffer {
    const head = Buffer.from(this.data.subarray(this.start, this.start + n));
    this.start += n;
    this.length -= n;
    if (this.length === 0) this.start = 0;
    return head;
  }
}

/**
 * Cuts an mbox byte stream into entries. push() takes the file's bytes in order, in chunks of
 * any size; end() flushes the last entry. Only the current entry is held.
 */
export class MboxSplitter {
  #buf = new Bytes();
  /** File offset of #buf[0]. */
  #base = 0;
  #started = false;
  /** Whether #buf starts with a separator (false only for text before the first one). */
  #inEntry = false;
  /** Where in #buf to look for the next candidate "From " line. */
  #scanFrom = 0;
  /** The current entry's Content-Length end in #buf: undefined while unknown, null if none. */
  #lengthEnd: number | null | undefined;

  push(chunk: Buffer): MboxEntry[] {
    this.#buf.append(chunk);
    // How the file starts is decided once enough of it is read: a byte-order mark, then "From ".
    if (!this.#started && this.#buf.length < UTF8_BOM.length + FROM.length) return [];
    this.#start();
    return this.#split(false);
  }

  end(): MboxEntry[] {
    this.#start();
    const out = this.#split(true);
    if (this.#buf.length > 0) this.#emit(this.#buf.length, out);
    return out;
  }

  #start(): void {
    if (this.#started) return;
    this.#started = true;
    if (this.#buf.view().subarray(0, UTF8_BOM.length).equals(UTF8_BOM)) {
      this.#buf.take(UTF8_BOM.length);
      this.#base = UTF8_BOM.length;
    }
    this.#inEntry = this.#buf.view().subarray(0, FROM.length).equals(FROM);
  }

  #split(atEnd: boolean): MboxEntry[] {
    const out: MboxEntry[] = [];
    for (;;) {
      const buf = this.#buf.view();
      if (this.#inEntry && this.#lengthEnd === undefined) {
        const known = this.#contentLengthEnd(buf, atEnd);
        if (known === undefined) return out; // the header block is not complete yet
        this.#lengthEnd = known;
      }
      const lengthEnd = this.#lengthEnd;
      if (typeof lengthEnd === 'number') {
        // Consistent only if a separator (or the end of the file) stands exactly there.
        const at = this.#separatorAt(buf, lengthEnd, atEnd);
        if (at === undefined) return out; // not enough read yet to tell
        if (at !== null) {
          // mboxcl2: a Content-Length entry is not escaped, so its ">From " lines are literal.
          this.#emit(at, out, true);
          continue;
        }
        this.#lengthEnd = null; // inconsistent: ignore it, and look from the start again
        this.#scanFrom = 1;
      }
      let j = buf.indexOf(LF_FROM, Math.max(0, this.#scanFrom - 1));
      let cut = -1;
      while (j >= 0) {
        const line = j + 1;
        const verdict = this.#isSeparator(buf, line, atEnd);
        if (verdict === undefined) {
          this.#scanFrom = line; // its next line is not complete yet
          return out;
        }
        if (verdict) {
          cut = line;
          break;
        }
        j = buf.indexOf(LF_FROM, line);
      }
      if (cut < 0) {
        this.#scanFrom = Math.max(1, buf.length - FROM.length);
        return out;
      }
      this.#emit(cut, out);
    }
  }

  /** The separator rules for the "From " line at `line` (a line start); undefined: cannot tell yet. */
  #isSeparator(buf: Buffer, line: number, atEnd: boolean): boolean | undefined {
    const eol = buf.indexOf(LF, line);
    if (eol < 0) return atEnd ? false : undefined;
    const b1 = buf[line - 2];
    const afterBlank = line - 2 < 0 || b1 === LF || (b1 === CR && buf[line - 3] === LF);
    if (afterBlank && FROM_LINE.test(buf.toString('latin1', line, eol))) return true;
    const nextEnd = buf.indexOf(LF, eol + 1);
    if (nextEnd < 0 && !atEnd) return undefined;
    const next = buf.toString('latin1', eol + 1, nextEnd < 0 ? buf.length : nextEnd);
    return HEADER_LINE.test(next);
  }

  /**
   * Where the next entry starts if a separator stands at `end` (after at most one blank line);
   * null if none does; undefined while too little is read. The end of the file counts.
   */
  #separatorAt(buf: Buffer, end: number, atEnd: boolean): number | null | undefined {
    let at = end;
    for (let blank = 0; blank < 2; blank++) {
      if (buf.length - at < FROM.length) {
        if (!atEnd) return undefined;
        // The end of the file counts, but not a length that points beyond it.
        return at <= buf.length && buf.toString('latin1', at).trim() === '' ? buf.length : null;
      }
      if (buf.subarray(at, at + FROM.length).equals(FROM)) return at;
      if (buf[at] === LF) at += 1;
      else if (buf[at] === CR && buf[at + 1] === LF) at += 2;
      else return null;
    }
    return null;
  }

  /** The entry's Content-Length end in #buf, null when it has none, undefined before its headers are read. */
  #contentLengthEnd(buf: Buffer, atEnd: boolean): number | null | undefined {
    const firstLf = buf.indexOf(LF);
    if (firstLf < 0) return atEnd ? null : undefined;
    // The first blank line, "\n\n" or "\r\n\r\n", found line by line: searching the whole
    // buffer for each kind read to its end for every entry of a file that has only the other.
    let bodyStart = -1;
    for (let i = buf.indexOf(LF, firstLf); i >= 0; i = buf.indexOf(LF, i + 1)) {
      if (buf[i + 1] === LF) bodyStart = i + 2;
      else if (i > firstLf && buf[i - 1] === CR && buf[i + 1] === CR && buf[i + 2] === LF) bodyStart = i + 3;
      if (bodyStart >= 0) break;
    }
    if (bodyStart < 0) return atEnd ? null : undefined;
    const length = CONTENT_LENGTH.exec(buf.toString('latin1', firstLf + 1, bodyStart));
    return length ? bodyStart + Number(length[1]) : null;
  }

  #emit(n: number, out: MboxEntry[], literal = false): void {
    const bytes = this.#buf.take(n);
    const offset = this.#base;
    this.#base += n;
    const wasEntry = this.#inEntry;
    this.#inEntry = true;
    this.#scanFrom = 1;
    this.#lengthEnd = undefined;
    if (!wasEntry) {
      // Text before the first From_ line: nothing if blank, else handed on so that it is reported.
      if (bytes.toString('latin1').trim() !== '') out.push({ raw: bytes, offset, length: n });
      return;
    }
    const raw = stripEnvelope(bytes);
    out.push({ raw: literal ? raw : unescape(raw), offset, length: n });
  }
}

/** Drops the From_ line and the one blank line that separates the entry from the next. */
function stripEnvelope(entry: Buffer): Buffer {
  const firstLf = entry.indexOf(LF);
  let body = firstLf < 0 ? entry.subarray(entry.length) : entry.subarray(firstLf + 1);
  const n = body.length;
  if (n >= 2 && body[n - 1] === LF && body[n - 2] === LF) body = body.subarray(0, n - 1);
  else if (n >= 4 && body[n - 1] === LF && body[n - 2] === CR && body[n - 3] === LF && body[n - 4] === CR)
    body = body.subarray(0, n - 2);
  return body;
}

function unescape(raw: Buffer): Buffer {
  if (raw.indexOf('>From ') < 0) return raw;
  // latin1 maps bytes to code points one to one, so the round trip keeps any charset intact.
  return Buffer.from(raw.toString('latin1').replace(ESCAPED_FROM, '$1'), 'latin1');
}

/** Streams the entries of an mbox file in order, with their byte offsets. */
export async function* readMbox(path: string, chunkBytes = 1 << 20): AsyncGenerator<MboxEntry> {
  const splitter = new MboxSplitter();
  // An mbox whose lines end in a bare CR (old Mac mail programs) is read as if they ended in LF:
  // byte for byte, so offsets stay those of the file. Decided by its first line.
  let crLines: boolean | undefined;
  let held: Buffer | null = null;
  for await (const read of createReadStream(path, { highWaterMark: chunkBytes })) {
    let chunk = read as Buffer;
    crLines ??= endsFirstLineInCr(chunk);
    if (crLines) {
      if (held) chunk = Buffer.concat([held, chunk]);
      // A CR at the end may be the first half of a CRLF: decided with the next chunk.
      held = chunk[chunk.length - 1] === CR ? chunk.subarray(chunk.length - 1) : null;
      chunk = crToLf(held ? chunk.subarray(0, chunk.length - 1) : chunk);
    }
    for (const e of splitter.push(chunk)) yield crLines ? { ...e, crLineEnds: true } : e;
  }
  const rest = [...(held ? splitter.push(crToLf(held)) : []), ...splitter.end()];
  const last = rest.at(-1);
  if (last) {
    const cut = cutShort(last.raw);
    if (cut) last.cut = cut;
  }
  for (const e of rest) yield crLines ? { ...e, crLineEnds: true } : e;
}

const BOUNDARY = /^content-type:[^\n]*(?:\n[ \t][^\n]*)*?\bboundary\s*=\s*(?:"([^"\r\n]+)"|([^\s;]+))/im;

/**
 * Why the last entry of an mbox looks cut short, or undefined. Every mbox writer ends a message
 * with a line end (and a blank line); a file copied or downloaded in part ends mid-line, or
 * inside a multipart message before its closing boundary. Only the last entry can be cut so: any
 * other is followed by a separator.
 */
export function cutShort(raw: Buffer): string | undefined {
  if (raw.length === 0) return undefined;
  if (raw[raw.length - 1] !== LF) return 'it ends in the middle of a line';
  const head = raw.toString('latin1', 0, Math.min(raw.length, 64 * 1024));
  const blank = head.search(/\r?\n\r?\n/);
  const headerBlock = blank < 0 ? head : head.slice(0, blank);
  const boundary = BOUNDARY.exec(headerBlock);
  const name = boundary?.[1] ?? boundary?.[2];
  if (name && raw.lastIndexOf(`--${name}--`) < 0) return `its multipart body has no closing boundary ("--${name}--")`;
  return undefined;
}

/** Whether the first line ends in a bare CR (a byte-order mark and "From " come before). */
function endsFirstLineInCr(chunk: Buffer): boolean {
  const cr = chunk.indexOf(CR);
  const lf = chunk.indexOf(LF);
  return cr >= 0 && (lf < 0 || cr < lf) && chunk[cr + 1] !== LF && cr + 1 < chunk.length;
}

/** Bare CRs as LF, one byte for one. */
function crToLf(bytes: Buffer): Buffer {
  const out = Buffer.from(bytes);
  for (let i = out.indexOf(CR); i >= 0; i = out.indexOf(CR, i + 1)) if (out[i + 1] !== LF) out[i] = LF;
  return out;
}

/** asctime in UTC, the date form of a From_ line: "Sat Jan  3 01:05:34 1996". */
export function asctime(date: Date): string {
  // toUTCString: "Sat, 03 Jan 1996 01:05:34 GMT"
  const [weekday, day, month, year, time] = date.toUTCString().replace(',', '').split(' ') as [
    string,
    string,
    string,
    string,
    string,
  ];
  return `${weekday} ${month} ${String(Number(day)).padStart(2)} ${time} ${year}`;
}

/** One mboxrd entry for a message: From_ line, escaped lines with LF endings, separator. */
export function formatMboxEntry(raw: Buffer, sender: string, date: Date): Buffer {
  let text = raw.toString('latin1').replace(/\r\n/g, '\n');
  if (!text.endsWith('\n')) text += '\n';
  text = text.replace(NEEDS_ESCAPE, '>$1');
  return Buffer.from(`From ${sender.replace(/\s+/g, '') || 'MAILER-DAEMON'} ${asctime(date)}\n${text}\n`, 'latin1');
}
