// A streaming ZIP writer for exports (docs/export.md, "The ZIP"): entries are written one after
// another into a stream whose reader sets the pace (every write waits for 'drain'), ZIP64 where a
// size, an offset or the count needs it (APPNOTE.TXT 6.3.10, sections 4.3.9, 4.4, 4.5.3). An entry
// whose bytes are known (a message) gets its sizes and CRC in its local header; one that is streamed
// (export.mbox, manifest.csv) gets a ZIP64 data descriptor after its data, so it may pass 4 GB.
// What it keeps per entry until the central directory is written is its name and a few numbers.
import { PassThrough } from 'node:stream';
import { once } from 'node:events';
import { crc32, deflateRaw, createDeflateRaw } from 'node:zlib';
import { promisify } from 'node:util';

const deflate = promisify(deflateRaw);

const MAX32 = 0xffffffff;
const MAX16 = 0xffff;
const UTF8_NAMES = 0x0800;
const DATA_DESCRIPTOR = 0x0008;
const VERSION_ZIP64 = 45;
const VERSION_DEFAULT = 20;

interface CentralEntry {
  name: Buffer;
  method: 0 | 8;
  time: number;
  date: number;
  crc: number;
  compressed: number;
  size: number;
  offset: number;
  /** Streamed: its local header had the ZIP64 extra field and a data descriptor followed. */
  streamed: boolean;
}

/** MS-DOS date and time (UTC), 1980 to 2107. */
function dosDateTime(when: Date): { date: number; time: number } {
  const year = Math.min(2107, Math.max(1980, when.getUTCFullYear()));
  return {
    date: ((year - 1980) << 9) | ((when.getUTCMonth() + 1) << 5) | when.getUTCDate(),
    time: (when.getUTCHours() << 11) | (when.getUTCMinutes() << 5) | (when.getUTCSeconds() >> 1),
  };
}

export class ZipWriter {
  /** The ZIP, for one reader. */
  readonly stream = new PassThrough({ highWaterMark: 1 << 20 });
  readonly #entries: CentralEntry[] = [];
  #offset = 0;
  readonly #until: (event: 'drain') => Promise<void>;

  /** `until` waits for the stream's event, rejecting when the export is stopped. */
  constructor(
    until: (emitter: NodeJS.EventEmitter, event: string) => Promise<void>,
    private readonly options: { forceZip64?: boolean } = {},
  ) {
    this.#until = (event) => until(this.stream, event);
  }

  get bytesWritten(): number {
    return this.#offset;
  }

  async #write(bytes: Buffer): Promise<void> {
    this.#offset += bytes.length;
    if (!this.stream.write(bytes)) await this.#until('drain');
  }

  /** An entry whose bytes are all here; deflated at `level` (0: stored). */
  async addBuffer(name: string, bytes: Buffer, when: Date, level: number): Promise<void> {
    const nameBytes = Buffer.from(name, 'utf8');
    const data = level > 0 ? await deflate(bytes, { level }) : bytes;
    const { date, time } = dosDateTime(when);
    const entry: CentralEntry = {
      name: nameBytes,
      method: level > 0 ? 8 : 0,
      date,
      time,
      crc: crc32(bytes),
      compressed: data.length,
      size: bytes.length,
      offset: this.#offset,
      streamed: false,
    };
    if (entry.size >= MAX32 || entry.compressed >= MAX32) return this.#addStreamedBuffer(entry, data);
    const header = Buffer.alloc(30);
    header.writeUInt32LE(0x04034b50, 0);
    header.writeUInt16LE(VERSION_DEFAULT, 4);
    header.writeUInt16LE(UTF8_NAMES, 6);
    header.writeUInt16LE(entry.method, 8);
    header.writeUInt16LE(time, 10);
    header.writeUInt16LE(date, 12);
    header.writeUInt32LE(entry.crc, 14);
    header.writeUInt32LE(entry.compressed, 18);
    header.writeUInt32LE(entry.size, 22);
    header.writeUInt16LE(nameBytes.length, 26);
    header.writeUInt16LE(0, 28);
    this.#entries.push(entry);
    await this.#write(Buffer.concat([header, nameBytes]));
    await this.#write(data);
  }

  async #addStreamedBuffer(entry: CentralEntry, data: Buffer): Promise<void> {
    entry.streamed = true;
    this.#entries.push(entry);
    await this.#write(this.#streamedHeader(entry));
    await this.#write(data);
    await this.#write(this.#descriptor(entry));
  }

  #streamedHeader(entry: CentralEntry): Buffer {
    const header = Buffer.alloc(30 + entry.name.length + 20);
    header.writeUInt32LE(0x04034b50, 0);
    header.writeUInt16LE(VERSION_ZIP64, 4);
    header.writeUInt16LE(UTF8_NAMES | DATA_DESCRIPTOR, 6);
    header.writeUInt16LE(entry.method, 8);
    header.writeUInt16LE(entry.time, 10);
    header.writeUInt16LE(entry.date, 12);
    header.writeUInt32LE(0, 14); // crc: in the data descriptor
    header.writeUInt32LE(MAX32, 18); // sizes: in the ZIP64 fields
    header.writeUInt32LE(MAX32, 22);
    header.writeUInt16LE(entry.name.length, 26);
    header.writeUInt16LE(20, 28);
    entry.name.copy(header, 30);
    const extra = 30 + entry.name.length;
    header.writeUInt16LE(0x0001, extra); // ZIP64 extended information
    header.writeUInt16LE(16, extra + 2);
    // Both sizes zero here: they follow the data, in the descriptor.
    return header;
  }

  #descriptor(entry: CentralEntry): Buffer {
    const d = Buffer.alloc(24);
    d.writeUInt32LE(0x08074b50, 0);
    d.writeUInt32LE(entry.crc, 4);
    d.writeBigUInt64LE(BigInt(entry.compressed), 8);
    d.writeBigUInt64LE(BigInt(entry.size), 16);
    return d;
  }

  /**
   * A streamed entry: `fill` writes its bytes with the function it is given (each write waits
   * for the reader) and resolves when done. Deflated at `level`.
   */
  async addStream(
    name: string,
    when: Date,
    level: number,
    fill: (write: (bytes: Buffer) => Promise<void>) => Promise<void>,
  ): Promise<void> {
    const { date, time } = dosDateTime(when);
    const entry: CentralEntry = {
      name: Buffer.from(name, 'utf8'),
      method: level > 0 ? 8 : 0,
      date,
      time,
      crc: 0,
      compressed: 0,
      size: 0,
      offset: this.#offset,
      streamed: true,
    };
    this.#entries.push(entry);
    await this.#write(this.#streamedHeader(entry));
    const deflater = level > 0 ? createDeflateRaw({ level }) : null;
    // The deflater's output goes out in order; while the reader is behind, this stops reading it,
    // its buffer fills and `write` below waits for it to drain.
    const pumped = deflater
      ? (async () => {
          for await (const chunk of deflater as AsyncIterable<Buffer>) {
            entry.compressed += chunk.length;
            await this.#write(chunk);
          }
        })()
      : Promise.resolve();
    pumped.catch(() => deflater?.destroy());
    await fill(async (bytes) => {
      entry.crc = crc32(bytes, entry.crc);
      entry.size += bytes.length;
      if (!deflater) {
        entry.compressed += bytes.length;
        await this.#write(bytes);
      } else if (!deflater.write(bytes)) {
        await Promise.race([once(deflater, 'drain'), pumped]);
      }
    });
    deflater?.end();
    await pumped;
    await this.#write(this.#descriptor(entry));
  }

  /** The central directory and its end; then the stream ends. */
  async finish(): Promise<void> {
    const start = this.#offset;
    for (const entry of this.#entries) await this.#write(this.#central(entry));
    const size = this.#offset - start;
    const count = this.#entries.length;
    const zip64 = this.options.forceZip64 || count >= MAX16 || start >= MAX32 || size >= MAX32;
    if (zip64) {
      const at = this.#offset;
      const record = Buffer.alloc(56);
      record.writeUInt32LE(0x06064b50, 0);
      record.writeBigUInt64LE(44n, 4);
      record.writeUInt16LE(VERSION_ZIP64, 12);
      record.writeUInt16LE(VERSION_ZIP64, 14);
      record.writeUInt32LE(0, 16);
      record.writeUInt32LE(0, 20);
      record.writeBigUInt64LE(BigInt(count), 24);
      record.writeBigUInt64LE(BigInt(count), 32);
      record.writeBigUInt64LE(BigInt(size), 40);
      record.writeBigUInt64LE(BigInt(start), 48);
      const locator = Buffer.alloc(20);
      locator.writeUInt32LE(0x07064b50, 0);
      locator.writeUInt32LE(0, 4);
      locator.writeBigUInt64LE(BigInt(at), 8);
      locator.writeUInt32LE(1, 16);
      await this.#write(Buffer.concat([record, locator]));
    }
    const end = Buffer.alloc(22);
    end.writeUInt32LE(0x06054b50, 0);
    // With a ZIP64 record every field points to it (-1), so that no reader mixes the two records.
    end.writeUInt16LE(zip64 ? MAX16 : count, 8);
    end.writeUInt16LE(zip64 ? MAX16 : count, 10);
    end.writeUInt32LE(zip64 ? MAX32 : size, 12);
    end.writeUInt32LE(zip64 ? MAX32 : start, 16);
    await this.#write(end);
    this.stream.end();
  }

  #central(entry: CentralEntry): Buffer {
    // ZIP64 fields, in their order, for each value that does not fit (or all three, streamed).
    const wide: bigint[] = [];
    const sizeWide = entry.streamed || entry.size >= MAX32;
    const compressedWide = entry.streamed || entry.compressed >= MAX32;
    const offsetWide = entry.streamed || entry.offset >= MAX32 || this.options.forceZip64 === true;
    if (sizeWide) wide.push(BigInt(entry.size));
    if (compressedWide) wide.push(BigInt(entry.compressed));
    if (offsetWide) wide.push(BigInt(entry.offset));
    const extraLength = wide.length > 0 ? 4 + 8 * wide.length : 0;
    const h = Buffer.alloc(46 + entry.name.length + extraLength);
    h.writeUInt32LE(0x02014b50, 0);
    h.writeUInt16LE(wide.length > 0 ? VERSION_ZIP64 : VERSION_DEFAULT, 4);
    h.writeUInt16LE(wide.length > 0 ? VERSION_ZIP64 : VERSION_DEFAULT, 6);
    h.writeUInt16LE(UTF8_NAMES | (entry.streamed ? DATA_DESCRIPTOR : 0), 8);
    h.writeUInt16LE(entry.method, 10);
    h.writeUInt16LE(entry.time, 12);
    h.writeUInt16LE(entry.date, 14);
    h.writeUInt32LE(entry.crc, 16);
    h.writeUInt32LE(compressedWide ? MAX32 : entry.compressed, 20);
    h.writeUInt32LE(sizeWide ? MAX32 : entry.size, 24);
    h.writeUInt16LE(entry.name.length, 28);
    h.writeUInt16LE(extraLength, 30);
    // comment length, disk number, internal and external attributes: 0
    h.writeUInt32LE(offsetWide ? MAX32 : entry.offset, 42);
    entry.name.copy(h, 46);
    if (extraLength > 0) {
      let at = 46 + entry.name.length;
      h.writeUInt16LE(0x0001, at);
      h.writeUInt16LE(8 * wide.length, at + 2);
      at += 4;
      for (const value of wide) {
        h.writeBigUInt64LE(value, at);
        at += 8;
      }
    }
    return h;
  }
}
