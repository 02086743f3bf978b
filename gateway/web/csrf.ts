// Synchronizer-token CSRF protection: one random token per session, kept in the signed session
// cookie and echoed by every form as `_csrf`. A cross-site page can make the browser send the
// cookie (SameSite=Lax stops that for POST in current browsers, this covers the rest) but
// cannot read the token out of our pages.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';

export class CsrfError extends Error {
  override name = 'CsrfError';
}

export function newCsrfToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The session's token, creating one (and so the session) if needed. */
export function csrfToken(ctx: Context, lifetimeMs: number): string {
  const session = ctx.session as { csrf?: string; exp?: number };
  session.exp ??= Date.now() + lifetimeMs;
  session.csrf ??= newCsrfToken();
  return session.csrf;
}

/** Throws CsrfError unless the form's `_csrf` equals the session's token. */
export function checkCsrf(ctx: Context): void {
  const expected = (ctx.session as { csrf?: unknown } | null)?.csrf;
  const sent = (ctx.request.body as Record<string, unknown> | undefined)?._csrf;
  if (typeof expected !== 'string' || typeof sent !== 'string') throw new CsrfError('missing CSRF token');
  const a = Buffer.from(expected);
  const b = Buffer.from(sent);
  if (a.length !== b.length || !timingSafeEqual(a, b)) throw new CsrfError('CSRF token mismatch');
}
