// A message's original bytes at rest (docs/evidence.md, "Originals"): named by their SHA-256, stored
// once per digest, compressed. Both stores keep them the same way where they keep them.
//
// Brotli at quality 1: measured on the import benchmark's typical mail (8 KB average, a fifth with
// an attachment) it stores 47 % of the bytes at 85 µs a message on this machine's 2 vCPU, against
// 141 µs for deflate level 1 at the same ratio and 280 µs for brotli 5 at 44 %; the import spends
// about 1.3 ms a message, so quality 1 keeps its cost near 7 %. zstd level 1 (Node 24) does the
// same ratio at 58 µs, but Node 20 (supported) has no zstd, and an archive written on Node 24 must
// open on Node 20.
// The codec is recorded per original, so a later choice never strands one already stored.
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, brotliCompressSync, brotliDecompressSync, constants, type BrotliOptions } from 'node:zlib';

export type OriginalCodec = 'br' | 'none';

export interface PackedOriginal {
  /** SHA-256 of the original bytes, lowercase hex. */
  sha256: string;
  /** The original's length in bytes. */
  size: number;
  codec: OriginalCodec;
  data: Buffer;
}

const BROTLI = {
  params: { [constants.BROTLI_PARAM_QUALITY]: 1, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT },
};

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

const brotliOptions = (bytes: Buffer): BrotliOptions => ({
  params: { ...BROTLI.params, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length },
});

const packed = (bytes: Buffer, sha256: string, data: Buffer): PackedOriginal =>
  data.length < bytes.length
    ? { sha256, size: bytes.length, codec: 'br', data }
    : { sha256, size: bytes.length, codec: 'none', data: bytes };

/** Compresses; bytes that do not shrink are kept as they are. */
export function packOriginal(bytes: Buffer, sha256 = sha256Hex(bytes)): PackedOriginal {
  return packed(bytes, sha256, brotliCompressSync(bytes, brotliOptions(bytes)));
}

const compress = promisify(brotliCompress);

/**
 * packOriginal with its compression on libuv's thread pool (zlib's async call), so that an
 * importer parsing on its own thread keeps a second core busy with it instead of doing it between
 * messages. The digest stays here (about 20 µs for 8 KB): WebCrypto's async digest costs more than
 * that in copying and checking its input on this thread (seen in a profile of the import).
 */
export async function packOriginalAsync(bytes: Buffer): Promise<PackedOriginal> {
  const sha256 = sha256Hex(bytes);
  return packed(bytes, sha256, await compress(bytes, brotliOptions(bytes)));
}

/**
 * The original bytes, checked: their length and SHA-256 must be the recorded ones, else
 * OriginalDamaged (a store's row edited or its file damaged: never served as the original).
 */
export function unpackOriginal(stored: { sha256: string; size: number; codec: string; data: Uint8Array }): Buffer {
  const data = Buffer.from(stored.data.buffer, stored.data.byteOffset, stored.data.byteLength);
  let bytes: Buffer;
  try {
    if (stored.codec === 'br') bytes = brotliDecompressSync(data, { maxOutputLength: Math.max(1, stored.size) });
    else if (stored.codec === 'none') bytes = data;
    else throw new OriginalDamaged(`it is stored with an unknown codec (${stored.codec})`);
  } catch (err) {
    if (err instanceof OriginalDamaged) throw err;
    throw new OriginalDamaged('its stored bytes do not decompress');
  }
  if (bytes.length !== stored.size || sha256Hex(bytes) !== stored.sha256) {
    throw new OriginalDamaged('its bytes no longer match the SHA-256 recorded when it was archived');
  }
  return bytes;
}

/** A stored original failed its check; `reason` completes "The original …". */
export class OriginalDamaged extends Error {
  constructor(readonly reason: string) {
    super(`The stored original failed its integrity check: ${reason}.`);
    this.name = 'OriginalDamaged';
  }
}
