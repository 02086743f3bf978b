// mbox files, streamed: a multi-gigabyte mailbox is read in 1 MiB chunks and never held whole.
//
// A message starts at a "From " line that opens the file or follows a blank line (the mbox
// separator). Lines of the form ">From ", ">>From " … are mboxrd escapes: one ">" is removed on
// reading and added on writing, so a body line that begins with "From " survives the round trip.
import { createReadStream } from 'node:fs';

export interface MboxEntry {
  /** The message itself: no From_ line, no separator blank line, escapes undone. */
  raw: Buffer;
  /** Byte offset of the entry's From_ line in the file (0 for text before the first one). */
  offset: number;
  /** Bytes the entry takes in the file, separator included. */
  length: number;
}

const LF = 0x0a;
const CR = 0x0d;
const FROM = Buffer.from('From ');
const LF_FROM = Buffer.from('\nFrom ');
const ESCAPED_FROM = /^>(>*From )/gm;
const NEEDS_ESCAPE = /^(>*From )/gm;

/**
 * Cuts an mbox byte stream into entries. push() takes regions that start at a line start and end
 * just after a line feed (the last region may lack it), so every "From " candidate is found whole.
 */
export class MboxSplitter {
  #parts: Buffer[] = [];
  #entryStart = 0;
  #hasEntry = false;
  // The last bytes before the current region; a file start behaves like a preceding blank line.
  #tail = Buffer.from('\n\n\n');

  push(region: Buffer, base: number): MboxEntry[] {
    const out: MboxEntry[] = [];
    let segment = 0;
    let j = region.subarray(0, FROM.length).equals(FROM) ? 0 : next(region, 0);
    while (j >= 0) {
      if (this.#followsBlankLine(region, j)) {
        this.#parts.push(region.subarray(segment, j));
        this.#emit(out);
        segment = j;
        this.#entryStart = base + j;
        this.#hasEntry = true;
      }
      j = next(region, j + 1);
    }
    this.#parts.push(region.subarray(segment));
    this.#tail = Buffer.concat([this.#tail, region.subarray(-3)]).subarray(-3);
    return out;
  }

  end(): MboxEntry[] {
    const out: MboxEntry[] = [];
    this.#emit(out);
    return out;
  }

  #followsBlankLine(region: Buffer, j: number): boolean {
    // The byte before j is always a line feed; the line before it is blank when the byte before
    // that is another line feed (or CR after a line feed).
    const at = (i: number) => (i >= 0 ? region[i]! : this.#tail[this.#tail.length + i]!);
    const b2 = at(j - 2);
    return b2 === LF || (b2 === CR && at(j - 3) === LF);
  }

  #emit(out: MboxEntry[]): void {
    const bytes = this.#parts.length === 1 ? this.#parts[0]! : Buffer.concat(this.#parts);
    this.#parts = [];
    const length = bytes.length;
    if (!this.#hasEntry) {
      // Text before the first From_ line: nothing if blank, else handed on so that it is reported.
      if (bytes.toString('latin1').trim() !== '') out.push({ raw: bytes, offset: 0, length });
      return;
    }
    out.push({ raw: unescape(stripEnvelope(bytes)), offset: this.#entryStart, length });
  }
}

function next(region: Buffer, from: number): number {
  // The line feed that ends the previous line sits one byte before the candidate.
  const i = region.indexOf(LF_FROM, Math.max(0, from - 1));
  return i < 0 ? -1 : i + 1;
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
  let carry: Buffer = Buffer.alloc(0);
  let carryStart = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: chunkBytes })) {
    const buf = carry.length > 0 ? Buffer.concat([carry, chunk as Buffer]) : (chunk as Buffer);
    const lastLf = buf.lastIndexOf(LF);
    if (lastLf < 0) {
      carry = buf;
      continue;
    }
    yield* splitter.push(buf.subarray(0, lastLf + 1), carryStart);
    carry = buf.subarray(lastLf + 1);
    carryStart += lastLf + 1;
  }
  if (carry.length > 0) yield* splitter.push(carry, carryStart);
  yield* splitter.end();
}

/** asctime in UTC, the date form of a From_ line: "Sat Jan  3 01:05:34 1996". */
function asctime(date: Date): string {
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
