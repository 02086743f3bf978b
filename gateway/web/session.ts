// Cookie sessions (koa-session): the session lives in a signed cookie, so every process that
// shares the secret shares the sessions, and a restart keeps them. Expiry is enforced here,
// not left to the browser: `exp` is fixed at sign-in, covered by the signature, and checked on
// every request; the user behind it is re-read from the database on every request too.
import type Koa from 'koa';
import type { Context, Middleware } from 'koa';
import createSession from 'koa-session';
import type { EnginePool } from '../../engine/index.js';
import type { Settings } from '../../shared/config.js';
import type { WebUser } from '../../shared/jobs.js';
import { newCsrfToken } from './csrf.js';

export const SESSION_COOKIE = 'mag_session';

/** What the cookie carries. Never a password, a key or a password hash. */
export interface SessionData {
  /** Signed-in user id; absent for a visitor who has only loaded the sign-in form. */
  uid?: number;
  /** Password-hash fingerprint at sign-in: a password change ends the session. */
  stamp?: string;
  csrf?: string;
  /** Epoch ms after which the session is void. */
  exp?: number;
  /** Epoch ms the session began; a sign-out after it ends it on the server (migration 6). */
  iat?: number;
}

export interface WebState {
  user: WebUser | null;
}

export function sessionOf(ctx: Context): SessionData {
  return ctx.session as SessionData;
}

export function sessionMiddleware(app: Koa, settings: Settings, secret: string): Middleware {
  app.keys = [secret];
  const lifetimeMs = settings.Web.SessionLifetimeMinutes * 60_000;
  const session = createSession(
    {
      key: SESSION_COOKIE,
      maxAge: lifetimeMs,
      httpOnly: true,
      signed: true,
      sameSite: 'lax',
      rolling: false,
      renew: false,
      valid: (_ctx: unknown, data: SessionData) => typeof data.exp === 'number' && data.exp > Date.now(),
    },
    app,
  );
  return async (ctx, next) => {
    // Secure cookies over HTTPS as Koa sees it (X-Forwarded-Proto counts only with TrustProxy),
    // and always behind a trusted proxy, which is where TLS ends in such a deployment.
    ctx.cookies.secure = ctx.secure || settings.Server.TrustProxy;
    await session(ctx, next);
  };
}

/** Starts a fresh session: a new CSRF token and a new absolute expiry. */
export function startSession(
  ctx: Context,
  settings: Settings,
  data: Omit<SessionData, 'csrf' | 'exp' | 'iat'>,
): SessionData {
  const now = Date.now();
  const fresh: SessionData = {
    ...data,
    csrf: newCsrfToken(),
    exp: now + settings.Web.SessionLifetimeMinutes * 60_000,
    iat: now,
  };
  ctx.session = fresh;
  return sessionOf(ctx);
}

/** Puts the session's user, still active and with an unchanged password, on ctx.state.user. */
export function loadUser(engine: EnginePool): Middleware<WebState> {
  return async (ctx, next) => {
    ctx.state.user = null;
    const s = sessionOf(ctx);
    if (s && typeof s.uid === 'number' && typeof s.stamp === 'string') {
      // A cookie from before this field began at most a lifetime before it expires.
      const issuedAt = typeof s.iat === 'number' ? s.iat : 0;
      const user = await engine.run({ kind: 'sessionUser', userId: s.uid, stamp: s.stamp, issuedAt });
      if (user) ctx.state.user = user;
      else ctx.session = null;
    }
    await next();
  };
}
