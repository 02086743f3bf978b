// What every web page's handler shares: the session and form middleware, the page chrome (user,
// CSRF token, asset URLs), and the small answers (a page, a redirect to sign in, a 303). Built
// once per app by webSurface and handed to each group of routes.
import type Koa from 'koa';
import type { Context, Middleware } from 'koa';
import bodyParser from 'koa-bodyparser';
import compose from 'koa-compose';
import type { Logger } from 'pino';
import type { EnginePool } from '../../engine/index.js';
import type { Settings } from '../../shared/config.js';
import type { WebUser } from '../../shared/jobs.js';
import type { WebAssets } from './assets.js';
import { csrfToken } from './csrf.js';
import { loadUser, sessionMiddleware, type WebState } from './session.js';
import { sessionSecret } from './session-secret.js';
import type { Chrome } from './views.js';

/** The reading pages show what the REST API shows: on with it, unless turned off on their own. */
export const readingPagesOn = (settings: Settings) => settings.Api.Enabled && settings.Web.EnableReading;

export type WebContext = Context & { state: WebState };

export interface PageKit {
  settings: Settings;
  engine: EnginePool;
  logger: Logger;
  /** Loads the session and its user (`ctx.state.user`). */
  session: Middleware;
  /**
   * Loads the session cookie only: for pages whose first engine job checks the session's user
   * itself (the reading pages), so that checking it costs no crossing of its own.
   */
  cookie: Middleware;
  /** Parses a urlencoded form body of up to 16 kB. */
  form: Middleware;
  chrome(ctx: WebContext, current?: Chrome['current']): Chrome;
  page(ctx: WebContext, status: number, body: string): void;
  /** The signed-in user, or null after redirecting to the sign-in page that comes back to `next`. */
  requireUser(ctx: WebContext, next: string): WebUser | null;
  seeOther(ctx: WebContext, url: string): void;
}

export function pageKit(
  app: Koa,
  settings: Settings,
  deps: { engine: EnginePool; logger: Logger; assets: WebAssets },
): PageKit {
  const { engine, logger, assets } = deps;
  const docsEnabled = settings.Api.Enabled && settings.Api.EnableSwaggerUi;
  const readingEnabled = readingPagesOn(settings);
  const lifetimeMs = settings.Web.SessionLifetimeMinutes * 60_000;
  const cookie = sessionMiddleware(app, settings, sessionSecret(settings, logger));
  return {
    settings,
    engine,
    logger,
    session: compose([cookie, loadUser(engine)]) as Middleware,
    cookie,
    form: bodyParser({ enableTypes: ['form'], formLimit: '16kb' }) as Middleware,
    // Only pages with forms need the CSRF token, and asking for it creates the session.
    chrome: (ctx, current) => ({
      user: ctx.state.user ?? null,
      csrf: ctx.state.user || current === 'login' ? csrfToken(ctx, lifetimeMs) : '',
      docsEnabled,
      readingEnabled,
      assets: assets.urls,
      ...(current ? { current } : {}),
    }),
    page(ctx, status, body) {
      ctx.status = status;
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = body;
    },
    requireUser(ctx, next) {
      if (ctx.state.user) return ctx.state.user;
      // After a POST, 303 makes the browser fetch the sign-in page with GET.
      ctx.status = ctx.method === 'GET' || ctx.method === 'HEAD' ? 302 : 303;
      ctx.redirect(`/login?next=${encodeURIComponent(next)}`);
      return null;
    },
    seeOther(ctx, url) {
      ctx.status = 303;
      ctx.redirect(url);
    },
  };
}
