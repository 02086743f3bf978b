// CORS for /api/v1 (docs/openapi.md, "Browsers"), off by default. Api:AllowedOrigins lists the
// browser origins whose pages may read answers; requests from other origins are still served
// (a browser withholds the answer from the page without the headers), but their preflights are
// refused with a problem that says how to allow them, rather than a bare 405.
import type { Middleware } from 'koa';
import { originMatcher } from '../mcp/origin.js';
import { Problem } from '../problem.js';

const ALLOWED_METHODS = 'GET, HEAD';
const ALLOWED_HEADERS = 'Authorization, Accept, Accept-Encoding, If-None-Match, If-Range, Range';
// What a page may read beyond the CORS-safelisted response headers.
const EXPOSED_HEADERS = [
  'WWW-Authenticate',
  'Retry-After',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'ETag',
  'Accept-Ranges',
  'Content-Range',
  'Content-Disposition',
  'Content-Length',
  'X-Text-Truncated',
].join(', ');
const MAX_AGE_SECONDS = '600';

export function apiCors(allowedOrigins: readonly string[]): Middleware {
  const isAllowed = originMatcher(allowedOrigins);
  const none = allowedOrigins.length === 0;
  return async (ctx, next) => {
    const origin = ctx.get('Origin');
    if (!origin) return next();
    const admitted = isAllowed(origin);
    // Every answer that depends on Origin says so, for caches between here and the browser.
    ctx.vary('Origin');
    if (ctx.method === 'OPTIONS' && ctx.get('Access-Control-Request-Method')) {
      if (!admitted) {
        throw new Problem(
          403,
          none
            ? 'Cross-origin requests to this API are not enabled on this server (Api:AllowedOrigins is empty).'
            : `Cross-origin requests from ${origin} are not allowed; the server admits only the origins in Api:AllowedOrigins.`,
        );
      }
      ctx.set({
        'Access-Control-Allow-Origin': origin,
        'Access-Control-Allow-Methods': ALLOWED_METHODS,
        'Access-Control-Allow-Headers': ALLOWED_HEADERS,
        'Access-Control-Max-Age': MAX_AGE_SECONDS,
      });
      ctx.status = 204;
      return;
    }
    if (admitted) {
      ctx.set({ 'Access-Control-Allow-Origin': origin, 'Access-Control-Expose-Headers': EXPOSED_HEADERS });
    }
    await next();
  };
}
