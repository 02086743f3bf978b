// The web surface on the API's port: sign-in, the API Keys page and the API documentation.
// Mounted only when the REST API or the MCP server is enabled, and only for its own paths, so
// /api and /mcp never see a session (they accept bearer keys only). Key operations are engine
// jobs that run the same store code as the CLI, with the permission rule inside the engine.
import Router from '@koa/router';
import type { Redis } from 'ioredis';
import type Koa from 'koa';
import type { Context, Middleware, Next } from 'koa';
import bodyParser from 'koa-bodyparser';
import compose from 'koa-compose';
import type { Logger } from 'pino';
import { EngineOverloaded, type EnginePool, EngineTimedOut, isArchiveUnavailable } from '../../engine/index.js';
import type { Settings } from '../../shared/config.js';
import type { JobResult, WebUser } from '../../shared/jobs.js';
import { sendProblem } from '../problem.js';
import { buildApiDocs, DOCS_ASSETS_PATH, DOCS_PATH, SPEC_PATH } from './apidocs.js';
import { sendAsset, SwaggerAssets, WebAssets } from './assets.js';
import { checkCsrf, csrfToken, CsrfError } from './csrf.js';
import { minExpiryDate, parseKeyForm, safeNext } from './forms.js';
import { setPageHeaders } from './headers.js';
import { loadUser, sessionMiddleware, startSession, type WebState } from './session.js';
import { sessionSecret } from './session-secret.js';
import { LoginThrottle } from './throttle.js';
import { authorizeRoutes, AuthorizePageError } from '../oauth/authorize.js';
import { AUTHORIZE_PATH } from '../oauth/endpoints.js';
import { oauthEnabled } from '../oauth-metadata.js';
import {
  confirmRevokePage,
  errorPage,
  keysPage,
  loginPage,
  signOutPage,
  type Chrome,
  type KeysModel,
} from './views.js';

export interface WebDeps {
  engine: EnginePool;
  logger: Logger;
  redis?: Redis;
  /** The sign-in throttle, when the gateway keeps it (for its rejection metrics). */
  throttle?: LoginThrottle;
}

type WebContext = Context & { state: WebState };

/** Same answer for a wrong password, an unknown user and an inactive one: nothing to enumerate. */
export const LOGIN_FAILED = 'Invalid username or password.';
const MAX_PASSWORD = 1024;

/** `?page=` of the keys page: absent is the first; past the last shows the last (the engine's pageWithin). */
function pageParam(value: unknown, name: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value === 'string' && /^[1-9]\d{0,8}$/.test(value)) return Number(value);
  throw new WebError(400, 'Bad request', `${name} must be a whole number from 1.`);
}

/** Thrown to end a request with an HTML error page. */
class WebError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

export function webSurface(app: Koa, settings: Settings, deps: WebDeps): Middleware {
  const { engine, logger } = deps;
  const docsEnabled = settings.Api.Enabled && settings.Api.EnableSwaggerUi;
  const lifetimeMs = settings.Web.SessionLifetimeMinutes * 60_000;
  const assets = new WebAssets();
  const swagger = docsEnabled ? new SwaggerAssets() : undefined;
  const docs = swagger ? buildApiDocs(settings, swagger, assets) : undefined;
  const throttle = deps.throttle ?? new LoginThrottle(settings, logger, deps.redis);
  const session = compose([
    sessionMiddleware(app, settings, sessionSecret(settings, logger)),
    loadUser(engine),
  ]) as Middleware;
  const form = bodyParser({ enableTypes: ['form'], formLimit: '16kb' }) as Middleware;

  // Only pages with forms need the CSRF token, and asking for it creates the session.
  const chrome = (ctx: WebContext, current?: Chrome['current']): Chrome => ({
    user: ctx.state.user ?? null,
    csrf: ctx.state.user || current === 'login' ? csrfToken(ctx, lifetimeMs) : '',
    docsEnabled,
    assets: assets.urls,
    ...(current ? { current } : {}),
  });
  const page = (ctx: WebContext, status: number, body: string) => {
    ctx.status = status;
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = body;
  };
  const requireUser = (ctx: WebContext, next: string): WebUser | null => {
    if (ctx.state.user) return ctx.state.user;
    // After a POST, 303 makes the browser fetch the sign-in page with GET.
    ctx.status = ctx.method === 'GET' || ctx.method === 'HEAD' ? 302 : 303;
    ctx.redirect(`/login?next=${encodeURIComponent(next)}`);
    return null;
  };
  const seeOther = (ctx: WebContext, url: string) => {
    ctx.status = 303;
    ctx.redirect(url);
  };

  async function listKeys(
    user: WebUser,
    at: { ownPage?: number; othersPage?: number; keyId?: number } = {},
  ): Promise<JobResult<'listKeysFor'> & { ok: true }> {
    const result = await engine.run({ kind: 'listKeysFor', actorId: user.id, now: Date.now(), ...at });
    if (!result.ok) throw new WebError(403, 'Not allowed', result.message);
    return result;
  }

  async function renderKeys(
    ctx: WebContext,
    user: WebUser,
    status: number,
    extra: Partial<KeysModel> = {},
  ): Promise<void> {
    const { own, others } = (await listKeys(user)).value;
    page(ctx, status, keysPage(chrome(ctx, 'keys'), { own, others, minExpiry: minExpiryDate(Date.now()), ...extra }));
  }

  const router = new Router<WebState>();

  router.get('/', (ctx) => ctx.redirect('/keys'));

  router.get('/assets/:name', (ctx) => {
    const asset = assets.get(ctx.params.name!);
    if (!asset) throw new WebError(404, 'Not found', 'There is no such file.');
    sendAsset(ctx, asset);
  });

  router.get('/login', session, (ctx) => {
    const next = safeNext(ctx.query.next);
    if (ctx.state.user) return ctx.redirect(next);
    page(
      ctx,
      200,
      loginPage(chrome(ctx, 'login'), {
        next,
        ...(ctx.query.signed_out !== undefined ? { notice: 'You have signed out.' } : {}),
      }),
    );
  });

  router.post('/login', session, form, async (ctx) => {
    checkCsrf(ctx);
    const body = ctx.request.body as Record<string, unknown>;
    const username = typeof body.username === 'string' ? body.username.trim() : '';
    const password = typeof body.password === 'string' ? body.password : '';
    const next = safeNext(body.next);
    const wait = await throttle.attempt(ctx.ip, username);
    if (wait !== null) {
      logger.warn({ ip: ctx.ip }, 'web sign-in throttled');
      ctx.set('Retry-After', String(wait));
      page(
        ctx,
        429,
        loginPage(chrome(ctx, 'login'), {
          username,
          next,
          error: `Too many sign-in attempts. Wait ${wait} seconds, then try again.`,
        }),
      );
      return;
    }
    const user =
      username && password.length <= MAX_PASSWORD ? await engine.run({ kind: 'login', username, password }) : null;
    if (!user) {
      // The username is not logged: people type their password into it by mistake.
      logger.info({ ip: ctx.ip }, 'web sign-in failed');
      page(ctx, 401, loginPage(chrome(ctx, 'login'), { username, next, error: LOGIN_FAILED }));
      return;
    }
    startSession(ctx, settings, { uid: user.id, stamp: user.stamp });
    logger.info({ user: user.username, ip: ctx.ip }, 'web sign-in');
    seeOther(ctx, next);
  });

  router.get('/logout', session, (ctx) => {
    if (!ctx.state.user) return ctx.redirect('/login');
    page(ctx, 200, signOutPage(chrome(ctx)));
  });

  router.post('/logout', session, form, async (ctx) => {
    checkCsrf(ctx);
    // On the server too: a copy of this cookie (or any other session of the user) is void now.
    if (ctx.state.user) await engine.run({ kind: 'endSessions', userId: ctx.state.user.id, now: Date.now() });
    ctx.session = null;
    seeOther(ctx, '/login?signed_out');
  });

  router.get('/keys', session, async (ctx) => {
    const user = requireUser(ctx, '/keys');
    if (!user) return;
    const revokedId = Number(ctx.query.revoked);
    const { own, others, named } = (
      await listKeys(user, {
        ownPage: pageParam(ctx.query.page, 'page'),
        othersPage: pageParam(ctx.query.othersPage, 'othersPage'),
        ...(Number.isSafeInteger(revokedId) ? { keyId: revokedId } : {}),
      })
    ).value;
    page(
      ctx,
      200,
      keysPage(chrome(ctx, 'keys'), {
        own,
        others,
        minExpiry: minExpiryDate(Date.now()),
        // The notice only for a key that is revoked: ?revoked=<an active key's id> says nothing.
        ...(named && named.revokedAt !== null ? { revoked: named } : {}),
      }),
    );
  });

  router.post('/keys', session, form, async (ctx) => {
    const user = requireUser(ctx, '/keys');
    if (!user) return;
    checkCsrf(ctx);
    const body = ctx.request.body as Record<string, unknown>;
    const now = Date.now();
    const input = parseKeyForm(body, now);
    const echo = {
      name: typeof body.name === 'string' ? body.name : '',
      expires: typeof body.expires === 'string' ? body.expires : '',
    };
    if (!input.ok) return renderKeys(ctx, user, 422, { form: { ...echo, error: input.error } });
    const result = await engine.run({
      kind: 'createKeyFor',
      actorId: user.id,
      name: input.name,
      expiresAt: input.expiresAt,
      now,
      maxActive: settings.Web.MaxActiveKeysPerUser,
    });
    if (!result.ok)
      return renderKeys(ctx, user, result.reason === 'invalid' ? 422 : 403, {
        form: { ...echo, error: result.message },
      });
    logger.info(
      { user: user.username, keyId: result.value.row.id, prefix: result.value.row.prefix },
      'API key created in the web UI',
    );
    // The plaintext key goes into this response only: not the session, not a redirect URL.
    await renderKeys(ctx, user, 200, { created: result.value });
  });

  router.post('/keys/revoke', session, form, async (ctx) => {
    const user = requireUser(ctx, '/keys');
    if (!user) return;
    checkCsrf(ctx);
    const body = ctx.request.body as Record<string, unknown>;
    const id = typeof body.id === 'string' && /^\d{1,15}$/.test(body.id) ? Number(body.id) : NaN;
    if (Number.isNaN(id)) throw new WebError(400, 'Bad request', 'The form did not name a key.');
    if (body.confirmed !== 'yes') {
      const key = (await listKeys(user, { keyId: id })).value.named;
      if (!key) throw new WebError(404, 'No such key', 'There is no such API key.');
      page(ctx, 200, confirmRevokePage(chrome(ctx, 'keys'), key));
      return;
    }
    const result = await engine.run({ kind: 'revokeKeyAs', actorId: user.id, keyId: id, now: Date.now() });
    if (!result.ok)
      throw new WebError(
        result.reason === 'not-found' ? 404 : 403,
        result.reason === 'not-found' ? 'No such key' : 'Not allowed',
        result.message,
      );
    logger.info(
      { user: user.username, keyId: id, owner: result.value.username, prefix: result.value.prefix },
      'API key revoked in the web UI',
    );
    seeOther(ctx, `/keys?revoked=${id}`);
  });

  const oauth = oauthEnabled(settings);
  if (oauth) authorizeRoutes(router, { settings, engine, logger, session, form, chrome: (ctx) => chrome(ctx) });

  if (docs && swagger) {
    router.get(DOCS_PATH, session, (ctx) => {
      if (!requireUser(ctx, DOCS_PATH)) return;
      setPageHeaders(ctx, docs.csp);
      page(ctx, 200, docs.html);
    });

    router.get(SPEC_PATH, session, (ctx) => {
      if (!ctx.state.user) {
        // A JSON client gets a status, not a redirect; API keys are never accepted here.
        sendProblem(ctx, 401, 'Sign in at /login to read the API documentation; API keys are not accepted here.');
        return;
      }
      ctx.type = 'application/json; charset=utf-8';
      ctx.body = docs.spec;
    });

    router.get(`${DOCS_ASSETS_PATH}/:version/:name`, (ctx) => {
      const asset = ctx.params.version === swagger.version ? swagger.get(ctx.params.name!) : undefined;
      if (!asset) throw new WebError(404, 'Not found', 'There is no such file.');
      sendAsset(ctx, asset);
    });
  }

  const stack = compose([
    webErrors(logger, (ctx) => chrome(ctx as WebContext)),
    async (ctx: Context, next: Next) => {
      setPageHeaders(ctx);
      await next();
    },
    router.routes() as unknown as Middleware,
    router.allowedMethods() as unknown as Middleware,
  ]);
  const prefixes = ['/keys', '/assets', ...(docsEnabled ? [DOCS_PATH] : [])];
  const exact = new Set(['/', '/login', '/logout', ...(oauth ? [AUTHORIZE_PATH] : [])]);
  return (ctx, next) => {
    const path = ctx.path;
    const ours = exact.has(path) || prefixes.some((p) => path === p || path.startsWith(`${p}/`));
    return ours ? stack(ctx, next) : next();
  };
}

/** Errors on web paths become HTML pages; the unexpected ones are logged and say nothing more. */
function webErrors(logger: Logger, chromeOf: (ctx: Context) => Chrome): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      let status = 500;
      let title = 'Something went wrong';
      let message = 'The server could not complete the request. The error has been logged.';
      if (err instanceof WebError) {
        ({ status, title, message } = err);
      } else if (err instanceof AuthorizePageError) {
        status = 400;
        title = 'This request cannot be authorized';
        message = err.message;
      } else if (err instanceof EngineOverloaded) {
        // Not logged: expected under a flood. Nothing ran, so the same form can simply be sent again.
        status = 503;
        title = 'Server busy';
        message = `The server is too busy to do this now; nothing was changed. Try again in a few seconds.`;
        ctx.set('Retry-After', String(err.retryAfterSeconds));
      } else if (err instanceof EngineTimedOut) {
        status = 503;
        title = 'Server busy';
        message =
          'This took longer than the server allows and was stopped. Reload the page to see whether it was done.';
        ctx.set('Retry-After', String(err.retryAfterSeconds));
      } else if (isArchiveUnavailable(err)) {
        status = 503;
        title = 'Archive unavailable';
        message = 'The archive database cannot be reached right now; nothing was changed. Try again in a few seconds.';
        ctx.set('Retry-After', '5');
      } else if (err instanceof CsrfError) {
        status = 403;
        title = 'Form expired';
        message = 'This form has expired or did not come from this site. Go back, reload the page and try again.';
      } else {
        const e = err as { status?: number; expose?: boolean; message?: string };
        if (e.status && e.status >= 400 && e.status < 500 && e.expose !== false) {
          status = e.status;
          title = 'Request not accepted';
          message = e.message ?? title;
        } else {
          logger.error({ err, method: ctx.method, path: ctx.path }, 'web request failed');
        }
      }
      let chrome: Chrome;
      try {
        chrome = chromeOf(ctx);
      } catch {
        chrome = { user: null, csrf: '', docsEnabled: false, assets: { css: '', js: '', icon: '' } };
      }
      ctx.status = status;
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = errorPage(
        chrome,
        title,
        message,
        chrome.user ? { href: '/keys', text: 'Back to API Keys' } : { href: '/login', text: 'Sign in' },
      );
    }
  };
}
