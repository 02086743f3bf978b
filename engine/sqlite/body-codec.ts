// How the SQLite archive keeps a message's stored text and HTML bodies (email_bodies.text_body,
// html_body): as TEXT when short, else as a BLOB: the UTF-8's length in 4 bytes (little-endian),
// then the UTF-8 compressed with brotli. The column's type says which, so rows written before
// bodies were packed read as they are, with no migration of a million rows (docs/performance.md,
// "Where the bytes go"). The length comes first so that a message's size is known without
// unpacking it (emails.ts storedBodyBytes routes large details by it).
//
// Every connection has body_text() and body_bytes() (open.ts addFunctions): SQL that needs a
// body's words (the full-text triggers, a thread's excerpts) reads body_text(text_body), never
// the column itself.
import { brotliCompressSync, brotliDecompressSync, constants } from 'node:zlib';
import { prepareBody, STORED_BODY_LIMIT } from '../rules/body.js';
import type { NewEmail, PackedBodies } from '../rules/new-email.js';

/**
 * Bodies shorter than this stay TEXT: below it the packed form saved little and each read would
 * pay for the decoding.
 */
export const PACK_MIN_BYTES = 512;

/** Brotli's fastest quality in text mode, as for originals (engine/rules/originals.ts). */
const BROTLI_PARAMS = {
  [constants.BROTLI_PARAM_QUALITY]: 1,
  [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
};

/** The body as stored: the text itself, or its packed bytes when that saves at least an eighth. */
export function packBody(text: string | null): string | Buffer | null {
  // Fewer than a third as many UTF-16 units can never make PACK_MIN_BYTES of UTF-8.
  if (text === null || text.length < PACK_MIN_BYTES / 3) return text;
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length < PACK_MIN_BYTES) return text;
  const packed = brotliCompressSync(bytes, {
    params: { ...BROTLI_PARAMS, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length },
  });
  if (packed.length + LENGTH_BYTES > bytes.length - (bytes.length >> 3)) return text;
  // A buffer of exactly its length: brotli's result is a view of a 16 KB one, which a hand-over
  // between threads would copy whole.
  const stored = Buffer.allocUnsafeSlow(LENGTH_BYTES + packed.length);
  stored.writeUInt32LE(bytes.length, 0);
  packed.copy(stored, LENGTH_BYTES);
  return stored;
}

const LENGTH_BYTES = 4;

/** A stored body as text again (what packBody was given). */
export function bodyText(stored: string | Uint8Array | null | undefined): string | null {
  if (stored === null || stored === undefined) return null;
  if (typeof stored === 'string') return stored;
  return brotliDecompressSync(stored.subarray(LENGTH_BYTES)).toString('utf8');
}

/** A packed body's length in bytes of UTF-8, from its first four. */
export function packedBytes(stored: Uint8Array): number {
  return Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength).readUInt32LE(0);
}

/**
 * A message's bodies as the writer stores them (prepared: NULs out, cut at the stored-body limit,
 * engine/rules/body.ts; then packed), for a parse thread to do ahead of the writer (prepare.ts).
 */
export function packedBodies(email: Pick<NewEmail, 'textBody' | 'htmlBody'>): PackedBodies {
  return {
    limit: STORED_BODY_LIMIT,
    text: packBody(prepareBody(email.textBody).stored),
    html: packBody(prepareBody(email.htmlBody).stored),
  };
}
