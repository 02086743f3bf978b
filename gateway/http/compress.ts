// Compression of JSON answers (docs/performance.md, "Compression"): a search page of 58 KB goes
// out as about 6 KB. Only JSON and problem+json, and only above 1 KB: an attachment's bytes are
// sent as stored (often compressed already, and Range offsets refer to them), and small answers
// gain less than the work costs. Brotli at quality 4 (koa-compress's default) costs about what
// gzip does and compresses these answers better; deflate is not offered.
import compress from 'koa-compress';
import { constants } from 'node:zlib';

const JSON_TYPES = /^application\/(?:problem\+)?json\b/i;

export const COMPRESS_THRESHOLD_BYTES = 1024;

export const compressJson = compress({
  filter: (type) => JSON_TYPES.test(type),
  threshold: COMPRESS_THRESHOLD_BYTES,
  gzip: { level: 6 },
  br: { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } },
  deflate: false,
});
