// The in-memory index saved to a file, so that a restarted process loads it instead of
// rebuilding it (minutes at a million messages; ADR 23). Store-neutral: a store hands over the
// packed snapshot (snapshot.ts), a few binary sections of its own (PostgreSQL: which documents
// the sets hold) and a small description of the state the snapshot was built from; on load it
// gets them back only if the file is whole, of this format and signed with its archive's key,
// and then checks that description against its archive before trusting anything.
//
// Layout: a 64-byte header, the meta JSON, a table of section lengths, the sections (each
// 8-aligned). The header holds a magic, the format version, the file's total length and a
// CRC-32 of everything after the header: a torn write, a truncated copy, a foreign file or one
// of another version is refused, never half-read. The header's second half is an HMAC-SHA256 of
// the header's first half and everything after it, keyed by a secret kept in the archive itself
// (ADR 31): a CRC proves a file whole, not who wrote it, and anyone who can write the file can
// recompute one. A file without this archive's MAC is never trusted, whatever it says; the CRC
// then tells a damaged file from one written by someone else. Written to a temporary file in
// the same directory, fsynced, then renamed over the old one (and the directory fsynced), so
// readers see the old file or the new one, never a mix, and two writers never interleave.
//
// Sizes: every byte goes through a read, a write, the HMAC and the CRC-32 in pieces of at most
// PIECE_BYTES, never as one view of a whole part. Past a few million messages a snapshot passes
// what one call takes (measured on Node 20.20 and 24.22, docs/scale.md, "What breaks first"): a
// Uint8Array over more than 2^32 bytes cannot be made on Node 20, an HMAC update of more than
// 2^31 - 1 bytes throws ("data is too long"), zlib's crc32 of 2^32 bytes or more sums only the
// first (length modulo 2^32) bytes without a word, and one read or write moves at most 2 GiB.
// Offsets and lengths are doubles throughout (the header's total, the table of lengths).
import { closeSync, fsyncSync, fstatSync, openSync, readSync, renameSync, rmSync, writeSync } from 'node:fs';
import { createHmac, randomBytes, timingSafeEqual, type Hmac } from 'node:crypto';
import { dirname } from 'node:path';
import { crc32 } from 'node:zlib';
import { MAGIC as SNAPSHOT_MAGIC } from './snapshot.js';

const FILE_MAGIC = 'MAGINDEX';
/**
 * Bumped whenever what a saved file means changes: its layout, the snapshot's layout
 * (snapshot.ts MAGIC is checked too), or which sets a build keeps and how (build.ts, rows.ts,
 * tags.ts, pairs.ts, tails.ts): an older file is then rebuilt, never misread.
 */
export const FORMAT_VERSION = 2;
const HEADER_BYTES = 64;
/** Where the MAC sits in the header: after the fields it covers, to the header's end. */
const MAC_AT = 32;
/** The key's length: an HMAC-SHA256 key shorter than its output would weaken it. */
export const INDEX_KEY_BYTES = 32;
/** LoadResult.reason of a file that is whole but was not written with this archive's key. */
export const NOT_SIGNED = 'not written by this service for this archive (its MAC does not match)';
/**
 * The largest piece of a part given to one read, write, HMAC update or CRC-32 (see "Sizes"
 * above); a test passes a smaller one (`pieceBytes`) to take the many-piece path with a small
 * archive.
 */
export const PIECE_BYTES = 64 * 1024 * 1024;

/** `pieceBytes`: PIECE_BYTES unless given (tests), at least 1 and at most PIECE_BYTES. */
export interface PieceOptions {
  pieceBytes?: number;
}

const align8 = (n: number) => Math.ceil(n / 8) * 8;

/** What a store records beside the snapshot: enough to tell whether it is its archive's. */
export interface SavedMeta {
  store: 'sqlite' | 'postgres';
  /** The archive the file belongs to, as the store names it (it compares on load). */
  identity: string;
  /** Messages at the last full build (the builder rebuilds at 1.25 times that). */
  fullBuildRows: number;
  savedAt: number;
  /** Anything else the store wants back. */
  extra?: Record<string, unknown>;
}

export interface Saved {
  meta: SavedMeta;
  /** The packed snapshot, in shared memory, ready to post. */
  snapshot: SharedArrayBuffer;
  /** The store's own sections, in the order given to save(). */
  sections: Uint8Array[];
}

/** Saves atomically, signed with `key` (the archive's secret, ADR 31); returns the bytes written. */
export function saveIndex(
  file: string,
  key: Uint8Array,
  meta: SavedMeta,
  snapshot: SharedArrayBuffer,
  sections: readonly Uint8Array[] = [],
  o: PieceOptions = {},
): number {
  const piece = pieceSize(o);
  const metaBytes = Buffer.from(JSON.stringify({ ...meta, snapshotMagic: SNAPSHOT_MAGIC }));
  const parts: Span[] = [{ buffer: snapshot, offset: 0, length: snapshot.byteLength }, ...sections.map(spanOf)];
  const table = new Float64Array(parts.length);
  parts.forEach((p, i) => (table[i] = p.length));
  const body: Span[] = [
    spanOf(pad(metaBytes)),
    spanOf(new Uint8Array(table.buffer)),
    ...parts.flatMap((p) => [p, spanOf(new Uint8Array(align8(p.length) - p.length))]),
  ];
  let crc = 0;
  let total = HEADER_BYTES;
  for (const b of body) total += b.length;
  for (const p of pieces(body, piece)) crc = crc32(p, crc);
  const header = Buffer.alloc(HEADER_BYTES);
  header.write(FILE_MAGIC, 0, 'latin1');
  header.writeUInt32LE(FORMAT_VERSION, 8);
  header.writeUInt32LE(metaBytes.length, 12);
  header.writeUInt32LE(parts.length, 16);
  header.writeUInt32LE(crc >>> 0, 20);
  header.writeDoubleLE(total, 24);
  const mac = hmac(key);
  mac.update(header.subarray(0, MAC_AT));
  for (const p of pieces(body, piece)) mac.update(p);
  mac.digest().copy(header, MAC_AT);

  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fd = openSync(temp, 'wx', 0o600);
  try {
    let at = 0;
    for (const p of [header, ...pieces(body, piece)]) {
      writeAll(fd, p, at);
      at += p.byteLength;
    }
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw err;
  }
  closeSync(fd);
  try {
    renameSync(temp, file);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
  syncDirectory(dirname(file));
  return total;
}

/** Why a file was not loaded, or what it held. */
export type LoadResult = { ok: true; saved: Saved } | { ok: false; reason: string };

/**
 * Loads a saved index; anything short of a whole file of this format, signed with `key`, is
 * refused with a reason (NOT_SIGNED when only the MAC is wrong).
 */
export function loadIndex(file: string, key: Uint8Array, o: PieceOptions = {}): LoadResult {
  const piece = pieceSize(o);
  const mac = hmac(key);
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    return { ok: false, reason: (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no file' : String(err) };
  }
  try {
    const size = fstatSync(fd).size;
    if (size < HEADER_BYTES) return { ok: false, reason: 'shorter than its header' };
    const header = Buffer.alloc(HEADER_BYTES);
    readAll(fd, header, 0);
    if (header.toString('latin1', 0, 8) !== FILE_MAGIC) return { ok: false, reason: 'not a search index file' };
    const version = header.readUInt32LE(8);
    if (version !== FORMAT_VERSION) return { ok: false, reason: `format ${version}, not ${FORMAT_VERSION}` };
    const metaLength = header.readUInt32LE(12);
    const count = header.readUInt32LE(16);
    const crc = header.readUInt32LE(20);
    if (header.readDoubleLE(24) !== size) return { ok: false, reason: 'truncated or extended' };
    let at = HEADER_BYTES;
    mac.update(header.subarray(0, MAC_AT));
    /** Everything read after the header, for the CRC-32 should the MAC not match. */
    const body: Span[] = [];
    const read = (target: Span) => {
      if (at + target.length > size) throw new Torn();
      for (const p of pieces([target], piece)) {
        readAll(fd, p, at);
        mac.update(p);
        at += p.byteLength;
      }
      body.push(target);
    };
    const metaBytes = new Uint8Array(align8(metaLength));
    read(spanOf(metaBytes));
    const table = new Float64Array(count);
    read(spanOf(new Uint8Array(table.buffer)));
    const parts: Array<SharedArrayBuffer | ArrayBuffer> = [];
    for (let i = 0; i < count; i++) {
      const length = table[i]!;
      if (!Number.isSafeInteger(length) || length < 0 || at + length > size) throw new Torn();
      // The snapshot goes straight into shared memory: no second copy of hundreds of MiB.
      const part = i === 0 ? new SharedArrayBuffer(length) : new ArrayBuffer(length);
      read({ buffer: part, offset: 0, length });
      read(spanOf(new Uint8Array(align8(length) - length)));
      parts.push(part);
    }
    if (at !== size) return { ok: false, reason: 'truncated or extended' };
    // Before anything of the file is believed, its meta included. A good MAC covers the stored
    // CRC-32 and every byte it sums, so the CRC is computed only to tell why a MAC failed: a
    // damaged file (a log line) from a whole one this archive's key did not sign (a warning).
    if (!timingSafeEqual(mac.digest(), header.subarray(MAC_AT))) {
      let sum = 0;
      for (const p of pieces(body, piece)) sum = crc32(p, sum);
      return { ok: false, reason: sum >>> 0 !== crc ? 'checksum mismatch' : NOT_SIGNED };
    }
    const meta = JSON.parse(Buffer.from(metaBytes.subarray(0, metaLength)).toString()) as SavedMeta & {
      snapshotMagic?: number;
    };
    if (meta.snapshotMagic !== SNAPSHOT_MAGIC || count < 1) return { ok: false, reason: 'another snapshot layout' };
    const { snapshotMagic: _, ...rest } = meta;
    return {
      ok: true,
      saved: {
        meta: rest,
        snapshot: parts[0] as SharedArrayBuffer,
        sections: parts.slice(1).map((p) => new Uint8Array(p)),
      },
    };
  } catch (err) {
    return { ok: false, reason: err instanceof Torn ? 'truncated' : String(err) };
  } finally {
    closeSync(fd);
  }
}

class Torn extends Error {}

function hmac(key: Uint8Array): Hmac {
  // A missing or short key would sign with next to nothing: a programming error, never a file's fault.
  if (key.byteLength < INDEX_KEY_BYTES) throw new Error('the search index key is missing or too short');
  return createHmac('sha256', key);
}

function pad(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(align8(bytes.byteLength));
  out.set(bytes);
  return out;
}

/** Some bytes of a buffer, which may be larger than one Uint8Array can view (see "Sizes" above). */
interface Span {
  buffer: ArrayBufferLike;
  offset: number;
  length: number;
}

const spanOf = (b: Uint8Array): Span => ({ buffer: b.buffer, offset: b.byteOffset, length: b.byteLength });

function pieceSize(o: PieceOptions): number {
  const size = o.pieceBytes ?? PIECE_BYTES;
  if (!Number.isInteger(size) || size < 1 || size > PIECE_BYTES) throw new Error(`pieceBytes ${size} out of range`);
  return size;
}

/** The spans' bytes in order, as views of at most `size` bytes each. */
function* pieces(spans: readonly Span[], size: number): Generator<Uint8Array> {
  for (const s of spans)
    for (let at = 0; at < s.length; at += size)
      yield new Uint8Array(s.buffer, s.offset + at, Math.min(size, s.length - at));
}

/** Writes all of `data` at `position`: a write may take fewer bytes than it was given. */
function writeAll(fd: number, data: Uint8Array, position: number): void {
  for (let done = 0; done < data.byteLength;) {
    done += writeSync(fd, data, done, data.byteLength - done, position + done);
  }
}

/** Fills `target` from `position`: a read may return fewer bytes than asked (none: the file ended). */
function readAll(fd: number, target: Uint8Array, position: number): void {
  for (let done = 0; done < target.byteLength;) {
    const n = readSync(fd, target, done, target.byteLength - done, position + done);
    if (n === 0) throw new Torn();
    done += n;
  }
}

/** Makes the rename itself durable (a crash right after it must not bring back the old name). */
function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // some filesystems refuse fsync on a directory: the rename is then as durable as they make it
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
