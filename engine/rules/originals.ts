// A message's original bytes at rest (docs/evidence.md, "Originals"): named by their SHA-256, stored
// once per digest, compressed. Both stores keep them the same way where they keep them.
//
// Brotli at quality 1: on the import benchmark's typical mail (8 KB average, a fifth with an
// attachment) it stores 47 % of the bytes at 31 µs a message on this machine's 2 vCPU (quiet),
// against 61 µs for deflate level 1 at the same ratio, 44 µs for brotli 2 at 46 % and 25 µs for
// brotli 0 at 48 %. zstd level 1 (Node 24) is not taken: Node 20 (supported) has none, and an
// archive written on Node 24 must open on Node 20. The importer packs on its parse threads
// (engine/import/parsers.ts): zlib's async call costs this thread as much as the sync one (its
// per-call setup runs here) and twice the CPU in all, so there is none here.
// The codec is recorded per original, so a later choice never strands one already stored.
import { createHash } from 'node:crypto';
import { brotliCompressSync, brotliDecompressSync, constants } from 'node:zlib';

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

/** Compresses; bytes that do not shrink are kept as they are. */
export function packOriginal(bytes: Buffer, sha256 = sha256Hex(bytes)): PackedOriginal {
  const data = brotliCompressSync(bytes, {
    params: { ...BROTLI.params, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length },
  });
  return data.length < bytes.length
    ? { sha256, size: bytes.length, codec: 'br', data }
    : { sha256, size: bytes.length, codec: 'none', data: bytes };
}

/**
 * An original on its way into a store, which keeps each digest once: the digest at once, the
 * packed form only when the store lacks it. Where a parse thread packed it already (`ahead`,
 * engine/import/parsers.ts), both come from there and nothing is hashed or compressed again.
 */
export function originalToStore(bytes: Buffer, ahead?: PackedOriginal): { sha256: string; pack: () => PackedOriginal } {
  const sha256 = ahead?.sha256 ?? sha256Hex(bytes);
  return { sha256, pack: () => ahead ?? packOriginal(bytes, sha256) };
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
