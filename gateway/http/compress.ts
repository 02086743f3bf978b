// Compression of JSON answers (docs/performance.md, "Compression"): a search page of 58 KB goes
// out as about 6 KB. Only JSON and problem+json, and only above 1 KB: an attachment's bytes are
// sent as stored (often compressed already, and Range offsets refer to them), and small answers
// gain less than the work costs. Brotli at quality 4 (koa-compress's default) costs about what
// gzip does and compresses these answers better; deflate is not offered.
import type { Middleware } from 'koa';
import compress from 'koa-compress';
import { constants } from 'node:zlib';

const JSON_TYPES = /^application\/(?:problem\+)?json\b/i;

export const COMPRESS_THRESHOLD_BYTES = 1024;

const compressor = compress({
  filter: (type) => JSON_TYPES.test(type),
  threshold: COMPRESS_THRESHOLD_BYTES,
  gzip: { level: 6 },
  br: { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } },
  deflate: false,
});

/**
 * The compressor, with a route's JSON object serialised once before it looks. koa-compress reads
 * `ctx.response.length`, which for an object body is Koa's `JSON.stringify` just to measure it;
 * Koa (to send it) or the compressor (to encode it) then serialised it again. A search page of 50
 * messages is tens of kilobytes of JSON, on the gateway thread.
 */
export const compressJson: Middleware = (ctx, next) =>
  compressor(ctx, async () => {
    await next();
    const { body } = ctx;
    // Plain objects and arrays only: buffers, streams and the rest go to Koa as they are. The
    // type stays what Koa set for the object (application/json), or what the route set.
    if (Array.isArray(body) || (body != null && Object.getPrototypeOf(body) === Object.prototype))
      ctx.body = JSON.stringify(body);
  });
