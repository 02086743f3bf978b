// Browser origins (MCP transport spec, "Security Warning": servers MUST validate Origin to stop
// DNS rebinding). A request without Origin comes from a non-browser client and passes. A browser
// request passes only from an origin listed in Mcp:AllowedOrigins (default: none), and then gets
// the CORS headers a page at that origin needs to read the answer.
import type { Context, Middleware } from 'koa';
import { Problem } from '../problem.js';

/** Origins compare by scheme, host and port; case and a trailing slash in the setting do not matter. */
const normalize = (origin: string) => origin.trim().replace(/\/+$/, '').toLowerCase();

// Headers an MCP client sends (Mcp-Method and Mcp-Name on revision 2026-07-28), and the ones a page
// must be allowed to read (auth and rate-limit answers).
const REQUEST_HEADERS =
  'Authorization, Content-Type, Accept, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID';
const EXPOSED_HEADERS = 'WWW-Authenticate, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset';

/** Whether an Origin header names one of these origins (as Mcp:AllowedOrigins and Api:AllowedOrigins list them). */
export function originMatcher(allowedOrigins: readonly string[]): (origin: string) => boolean {
  const allowed = new Set(allowedOrigins.map(normalize));
  return (origin) => allowed.has(normalize(origin));
}

export function originGuard(allowedOrigins: readonly string[]): Middleware {
  const isAllowed = originMatcher(allowedOrigins);
  return async (ctx, next) => {
    const origin = ctx.get('Origin');
    if (!origin) return next();
    if (!isAllowed(origin)) {
      throw new Problem(
        403,
        `Requests from origin ${origin} are not allowed; the server admits only the origins in Mcp:AllowedOrigins.`,
      );
    }
    ctx.set({
      'Access-Control-Allow-Origin': origin,
      'Access-Control-Expose-Headers': EXPOSED_HEADERS,
      Vary: 'Origin',
    });
    await next();
  };
}

/** A CORS preflight from an admitted origin (originGuard has run): which method and headers may follow. */
export function isPreflight(ctx: Context): boolean {
  return ctx.method === 'OPTIONS' && Boolean(ctx.get('Origin')) && Boolean(ctx.get('Access-Control-Request-Method'));
}

export function answerPreflight(ctx: Context): void {
  ctx.set({
    'Access-Control-Allow-Methods': 'POST',
    'Access-Control-Allow-Headers': REQUEST_HEADERS,
    'Access-Control-Max-Age': '600',
  });
  ctx.status = 204;
}
