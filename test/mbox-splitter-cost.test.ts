// The mbox splitter's work grows with the file, not with the file times its messages: each byte
// read is copied and searched a bounded number of times, however small the messages are. Counted,
// not timed (CONTRIBUTING.md: performance is measured in bench/). Before the fix, taking an entry
// off the front moved the rest of the 1 MB read behind it, and the search for a header block's
// end read to the end of that read for every entry: tens of times the file for small mail.
//
// It patches Buffer.prototype while it runs, so it is a file of its own (ava runs files apart).
import test from 'ava';
import { buildMessage } from '../engine/demo/mime.js';
import { formatMboxEntry, MboxSplitter } from '../engine/import/mbox.js';

interface Cost {
  copied: number;
  scanned: number;
}

/** Splits `file` in reads of `chunk` bytes, counting the bytes Buffer#copy moved and Buffer#indexOf read. */
function split(file: Buffer, chunk: number): { entries: Buffer[]; cost: Cost } {
  const cost: Cost = { copied: 0, scanned: 0 };
  const { copy, indexOf } = Buffer.prototype;
  Buffer.prototype.copy = function (this: Buffer, target: Uint8Array, targetStart = 0, start = 0, end = this.length) {
    const n = copy.call(this, target, targetStart, start, end);
    cost.copied += n;
    return n;
  };
  Buffer.prototype.indexOf = function (this: Buffer, value: never, byteOffset = 0, encoding?: BufferEncoding) {
    const at = indexOf.call(this, value, byteOffset, encoding);
    cost.scanned += (at < 0 ? this.length : at) - Math.max(0, Number(byteOffset));
    return at;
  } as typeof indexOf;
  const entries: Buffer[] = [];
  try {
    const splitter = new MboxSplitter();
    for (let at = 0; at < file.length; at += chunk)
      for (const e of splitter.push(file.subarray(at, at + chunk))) entries.push(e.raw);
    for (const e of splitter.end()) entries.push(e.raw);
  } finally {
    Buffer.prototype.copy = copy;
    Buffer.prototype.indexOf = indexOf;
  }
  return { entries, cost };
}

/** `count` small messages (about 1 KB each) as one mbox, line ends LF or CRLF. */
function mbox(count: number, crlf: boolean): { file: Buffer; messages: Buffer[] } {
  const messages = Array.from({ length: count }, (_, i) => {
    const raw = buildMessage({
      from: { name: 'Ann', address: 'ann@example.com' },
      to: [{ address: 'bob@example.com' }],
      subject: `Note ${i}`,
      date: new Date(Date.UTC(2024, 0, 1) + i * 60_000),
      messageId: `note.${i}@example.com`,
      text: `Short note number ${i}.\n${'A line of ordinary text that fills the body. '.repeat(12)}\n`,
    });
    // buildMessage writes CRLF; the LF file is what most mbox writers leave.
    return crlf ? raw : Buffer.from(raw.toString('latin1').replace(/\r\n/g, '\n'), 'latin1');
  });
  // formatMboxEntry writes LF line ends; a CRLF mbox (as some Windows tools leave) is written here.
  const file = Buffer.concat(
    messages.map((raw, i) => {
      const date = new Date(Date.UTC(2024, 0, 1) + i * 60_000);
      if (!crlf) return formatMboxEntry(raw, 'ann@example.com', date);
      return Buffer.concat([Buffer.from(`From ann@example.com ${date.toUTCString()}\r\n`), raw, Buffer.from('\r\n')]);
    }),
  );
  return { file, messages };
}

for (const crlf of [false, true]) {
  test(`splitting an mbox of 3,000 small ${crlf ? 'CRLF' : 'LF'} messages in 1 MB reads copies and searches each byte a few times, not once per message`, (t) => {
    const { file, messages } = mbox(3000, crlf);
    const { entries, cost } = split(file, 1 << 20);
    t.is(entries.length, messages.length);
    // The split is exact: every entry is its message, byte for byte (the separator line dropped).
    t.true(entries.every((e, i) => e.equals(messages[i]!)));
    // Each byte is copied in (append), out (take), and at most once more when a read is moved to
    // the front of the buffer; the searches read each byte a few times (separators, header ends).
    t.true(cost.copied <= 4 * file.length, `copied ${cost.copied} bytes for a file of ${file.length}`);
    t.true(cost.scanned <= 6 * file.length, `searched ${cost.scanned} bytes for a file of ${file.length}`);
  });
}
