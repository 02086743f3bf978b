// Range requests on attachment downloads (RFC 9110 section 14): `curl -C -` and download
// managers resume a large file. One byte range is served as 206 from the stored chunks that
// cover it, and only those are read; several ranges are answered with the whole file (200), as
// RFC 9110 allows, since multipart/byteranges helps no download client we know of. If-Range
// with the ETag (or a date, which never matches: the validator is the ETag) guards a resumed
// download against a different file.
import parseRange from 'range-parser';
import type { Context } from 'koa';
import { Problem } from '../problem.js';

export interface ByteRange {
  start: number;
  /** Inclusive, as in Content-Range. */
  end: number;
}

/**
 * The single range to send, null for the whole file, or a 416 Problem when no range of the
 * header lies within the file. An If-Range that does not match the ETag means the whole file.
 */
export function requestedRange(ctx: Context, size: number, etag: string): ByteRange | null {
  const header = ctx.get('Range');
  if (!header || ctx.method !== 'GET') return null;
  const ifRange = ctx.get('If-Range');
  if (ifRange && ifRange.trim() !== etag) return null;
  const ranges = parseRange(size, header, { combine: true });
  // A header we cannot read, or another unit than bytes: ignored, as RFC 9110 section 14.2 asks.
  if (ranges === -2 || (ranges !== -1 && ranges.type !== 'bytes')) return null;
  if (ranges === -1 || size === 0) {
    throw new Problem(416, `The requested range is not within the file (${size} bytes).`, {
      'Content-Range': `bytes */${size}`,
    });
  }
  if (ranges.length !== 1) return null;
  return { start: ranges[0]!.start, end: ranges[0]!.end };
}
