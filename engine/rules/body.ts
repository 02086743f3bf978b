// The body policy behind SPEC.md's fallback chain.
//
// The stored body is what search indexes and what every row carries: NUL-free and at most
// STORED_BODY_LIMIT characters. When the incoming body needed cleaning, its exact original is
// kept as bytes; when it only needed cutting, the whole text is kept as "untruncated". A read
// returns original, then untruncated, then stored: the first that exists.

/** The one place the stored-body limit is set: characters of text (about 1 MB). */
export const STORED_BODY_LIMIT = 1_000_000;

export interface PreparedBody {
  stored: string | null;
  untruncated: string | null;
  original: Buffer | null;
}

export function prepareBody(body: string | null | undefined, limit = STORED_BODY_LIMIT): PreparedBody {
  if (body === null || body === undefined) return { stored: null, untruncated: null, original: null };
  const hasNul = body.includes('\0');
  const cleaned = hasNul ? body.replaceAll('\0', '') : body;
  const tooLong = cleaned.length > limit;
  const stored = tooLong ? truncate(cleaned, limit) : cleaned;
  return {
    stored,
    untruncated: tooLong && !hasNul ? body : null,
    original: hasNul ? Buffer.from(body, 'utf8') : null,
  };
}

/** Cuts at `limit` UTF-16 units without splitting a surrogate pair. */
function truncate(text: string, limit: number): string {
  let end = limit;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return text.slice(0, end);
}

export function resolveBody(
  original: Buffer | Uint8Array | null,
  untruncated: string | null,
  stored: string | null,
): string | null {
  if (original) return Buffer.from(original.buffer, original.byteOffset, original.byteLength).toString('utf8');
  return untruncated ?? stored;
}
