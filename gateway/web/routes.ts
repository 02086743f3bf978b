// The web surface on the API's port: sign-in, the API Keys page and the API documentation.
// Mounted only when the REST API or the MCP server is enabled, and only for its own paths, so
// /api and /mcp never see a session (they accept bearer keys only). Each group of pages has its
// own file (login-routes.ts, keys-routes.ts, docs-routes.ts, and the OAuth consent page in
// gateway/oauth/authorize.ts); this one builds what they share and mounts them.
import Router from '@koa/router';
import type { Redis } from 'ioredis';
import type Koa from 'koa';
import type { Context, Middleware, Next } from 'koa';
import compose from 'koa-compose';
import type { Logger } from 'pino';
import type { EnginePool } from '../../engine/index.js';
import type { ArchiveService } from '../archive-service.js';
import { RateLimiter } from '../rate-limit.js';
import type { Settings } from '../../shared/config.js';
import { buildApiDocs, DOCS_PATH } from './apidocs.js';
import { sendAsset, SwaggerAssets, WebAssets } from './assets.js';
import { docsRoutes } from './docs-routes.js';
import { WebError, webErrors } from './errors.js';
import { setPageHeaders } from './headers.js';
import { keysRoutes } from './keys-routes.js';
import { loginRoutes } from './login-routes.js';
import { mailRoutes, READING_PREFIXES } from './mail-routes.js';
import { pageKit, readingPagesOn, type WebContext } from './page-kit.js';
import type { WebState } from './session.js';
import { LoginThrottle } from './throttle.js';
import { authorizeRoutes } from '../oauth/authorize.js';
import { ClientMetadataDocuments } from '../oauth/clients.js';
import { AUTHORIZE_PATH } from '../oauth/endpoints.js';
import { oauthEnabled } from '../oauth-metadata.js';

export { LOGIN_FAILED } from './login-routes.js';

export interface WebDeps {
  engine: EnginePool;
  logger: Logger;
  redis?: Redis;
  /** The sign-in throttle, when the gateway keeps it (for its rejection metrics). */
  throttle?: LoginThrottle;
  /** What the reading pages run (the same service as REST and MCP); without it they are off. */
  service?: ArchiveService;
  /** The reading pages' per-user budget, when the gateway keeps it (for its rejection metrics). */
  readingLimiter?: RateLimiter;
}

/** The reading pages' per-user budget (Web:ReadingRequestsPerMinute), Redis-shared when there is Redis. */
export function readingLimiter(settings: Settings, logger: Logger, redis?: Redis): RateLimiter {
  return new RateLimiter({ name: 'WebReading', pointsPerMinute: settings.Web.ReadingRequestsPerMinute }, logger, redis);
}

export function webSurface(app: Koa, settings: Settings, deps: WebDeps): Middleware {
  const { engine, logger } = deps;
  const docsEnabled = settings.Api.Enabled && settings.Api.EnableSwaggerUi;
  const assets = new WebAssets();
  const kit = pageKit(app, settings, { engine, logger, assets });
  const router = new Router<WebState>();
  const reading = readingPagesOn(settings) && deps.service !== undefined;

  router.get('/', (ctx) => ctx.redirect(reading ? '/search' : '/keys'));
  router.get('/assets/:name', (ctx) => {
    const asset = assets.get(ctx.params.name!);
    if (!asset) throw new WebError(404, 'Not found', 'There is no such file.');
    sendAsset(ctx, asset);
  });
  loginRoutes(router, kit, deps.throttle ?? new LoginThrottle(settings, logger, deps.redis));
  keysRoutes(router, kit);
  const oauth = oauthEnabled(settings);
  if (oauth) {
    const { session, form } = kit;
    const fetches = new RateLimiter(
      { name: 'OAuthMetadataFetch', pointsPerMinute: settings.Mcp.OAuth.ClientMetadataFetchesPerIpPerMinute },
      logger,
      deps.redis,
    );
    const documents = new ClientMetadataDocuments(settings.Mcp.OAuth, fetches);
    authorizeRoutes(router, { settings, engine, logger, session, form, chrome: (ctx) => kit.chrome(ctx), documents });
  }
  if (reading) {
    mailRoutes(router, kit, {
      service: deps.service!,
      limiter: deps.readingLimiter ?? readingLimiter(settings, logger, deps.redis),
    });
  }
  if (docsEnabled) {
    const swagger = new SwaggerAssets();
    docsRoutes(router, kit, buildApiDocs(settings, swagger, assets), swagger);
  }

  const stack = compose([
    webErrors(logger, (ctx) => kit.chrome(ctx as WebContext)),
    async (ctx: Context, next: Next) => {
      setPageHeaders(ctx);
      await next();
    },
    router.routes() as unknown as Middleware,
    router.allowedMethods() as unknown as Middleware,
  ]);
  // A person who opens an address that is nowhere gets a page with the site's header and a way
  // on, not raw problem+json (docs/web.md, "Pages").
  const notFound = compose([
    webErrors(logger, (ctx) => kit.chrome(ctx as WebContext)),
    (ctx: Context) => {
      setPageHeaders(ctx);
      throw new WebError(404, 'Not found', `There is no page at ${ctx.path}.`);
    },
  ]);
  return ownPathsOnly(
    stack,
    {
      prefixes: ['/keys', '/assets', ...(docsEnabled ? [DOCS_PATH] : []), ...(reading ? READING_PREFIXES : [])],
      exact: ['/', '/login', '/logout', ...(oauth ? [AUTHORIZE_PATH] : [])],
    },
    notFound,
  );
}

/** Paths of programs, not people: an unknown one stays problem+json whatever Accept says. */
const MACHINE_PREFIXES = ['/api', '/mcp', '/.well-known', '/oauth', '/healthz', '/readyz', '/metrics'];

/** Whether the request prefers an HTML page to JSON (a browser's navigation does; curl, which accepts any type, does not). */
const wantsHtml = (ctx: Context): boolean =>
  (ctx.method === 'GET' || ctx.method === 'HEAD') &&
  ctx.accepts('application/problem+json', 'application/json', 'text/html') === 'text/html';

/**
 * Runs `stack` for the surface's own paths only; any other path goes on untouched, to the 404
 * after this surface, except that a browser asking for a page there is answered by `notFound`.
 */
function ownPathsOnly(
  stack: (ctx: Context, next: Next) => Promise<void>,
  paths: { prefixes: string[]; exact: string[] },
  notFound: (ctx: Context, next: Next) => Promise<void>,
): Middleware {
  const exact = new Set(paths.exact);
  const under = (path: string, p: string) => path === p || path.startsWith(`${p}/`);
  return (ctx, next) => {
    const path = ctx.path;
    const ours = exact.has(path) || paths.prefixes.some((p) => under(path, p));
    if (ours) return stack(ctx, next);
    if (wantsHtml(ctx) && !MACHINE_PREFIXES.some((p) => under(path, p))) return notFound(ctx, next);
    return next();
  };
}
