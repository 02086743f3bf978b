// Security headers for every web answer. The pages load only same-origin files: no inline
// script or style, no frames, forms post only back here.
import { createHash } from 'node:crypto';
import type { Context } from 'koa';

export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export function setPageHeaders(ctx: Context, csp = PAGE_CSP): void {
  ctx.set({
    'Content-Security-Policy': csp,
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    'X-Content-Type-Options': 'nosniff',
    'Cross-Origin-Opener-Policy': 'same-origin',
    // Pages show per-user data and, once, a new key: never cache them anywhere.
    'Cache-Control': 'no-store',
  });
}

/** CSP source expression allowing exactly this inline script or style text. */
export function cspHash(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}
