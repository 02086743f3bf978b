// The gateway: one Koa app serving /api/v1 and /mcp on one port.
//
// Request path: problems (error shape) → security headers → [/api: rate limit → auth → route]
// or [/mcp: rate limit → MCP transport] → 404. Every data access becomes a typed job on the
// engine's worker pool; nothing here runs SQL.
import Koa from 'koa';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { EnginePool } from '../engine/pool.js';
import { engineQueues, type Settings } from '../shared/config.js';
import { AccessLogWriter, type AccessLogOptions } from './access-log.js';
import { apiRouter } from './api/router.js';
import { ArchiveService } from './archive-service.js';
import { createLogger } from './logger.js';
import { mcpEndpoint } from './mcp/endpoint.js';
import { mount } from './mount.js';
import { Problem, problems } from './problem.js';
import { connectRedis, rateLimit, RateLimiter } from './rate-limit.js';
import { webSurface } from './web/routes.js';

export interface GatewayOptions {
  logger?: Logger;
  /** Use this pool instead of starting one (tests that share a pool). */
  engine?: EnginePool;
  accessLog?: AccessLogOptions;
  /** Passed to a pool this gateway starts itself (tests of worker failure). */
  faultInjection?: boolean;
}

export interface Gateway {
  app: Koa;
  engine: EnginePool;
  accessLog: AccessLogWriter;
  limiters: { api: RateLimiter; mcp: RateLimiter };
  /** Flushes the access log, then stops the pool and Redis. Idempotent. */
  close(): Promise<void>;
}

export function createGateway(settings: Settings, options: GatewayOptions = {}): Gateway {
  const logger = options.logger ?? createLogger();
  const ownsEngine = !options.engine;
  const engine =
    options.engine ??
    new EnginePool({
      dbPath: settings.Database.Path,
      threads: settings.Engine.Threads,
      maxQueue: engineQueues(settings.Engine),
      faultInjection: options.faultInjection ?? false,
    });
  const accessLog = new AccessLogWriter(engine, logger, options.accessLog);
  const service = new ArchiveService(engine, accessLog);
  const redis: Redis | undefined = settings.Redis.Url ? connectRedis(settings.Redis.Url, logger) : undefined;
  const limiters = {
    api: new RateLimiter({ name: 'Api', pointsPerMinute: settings.Api.RateLimitPerMinute }, logger, redis),
    mcp: new RateLimiter({ name: 'Mcp', pointsPerMinute: settings.Mcp.RateLimitPerMinute }, logger, redis),
  };

  const app = new Koa();
  app.proxy = settings.Server.TrustProxy;
  app.silent = true; // problems() logs what matters; Koa's default handler would print stacks.
  // What problems() cannot see: a response stream that fails after its headers were sent.
  app.on('error', (err: Error, ctx?: Koa.Context) =>
    logger.error({ err, method: ctx?.method, path: ctx?.path }, 'response failed'),
  );

  app.use(problems(logger));
  app.use(async (ctx, next) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    await next();
  });

  if (settings.Api.Enabled) {
    const router = apiRouter(settings, service);
    app.use(
      mount('/api', rateLimit(limiters.api), router.routes() as unknown as Koa.Middleware, async (ctx) => {
        // Reached only when no route answered: a known path with another method is 405.
        const known = router.match(ctx.path, 'GET').path.length > 0;
        if (known)
          throw new Problem(405, `${ctx.method} is not allowed on ${ctx.path}; this API is read-only.`, {
            Allow: 'GET, HEAD',
          });
        throw new Problem(404, `No API resource at ${ctx.path}.`);
      }),
    );
  }
  if (settings.Mcp.Enabled) {
    app.use(mount('/mcp', mcpEndpoint(settings, service, limiters.mcp, logger)));
  } else {
    // Disabled is a 404, but still one no cache may keep (SPEC.md 5.8: never cache /mcp).
    app.use(
      mount('/mcp', async (ctx) => {
        ctx.set('Cache-Control', 'no-store');
        throw new Problem(404, `No resource at ${ctx.path}.`);
      }),
    );
  }
  if (settings.Api.Enabled || settings.Mcp.Enabled) {
    // Sign-in, API Keys and /apidocs: cookie sessions on their own paths only, never /api or /mcp.
    app.use(webSurface(app, settings, { engine, logger, ...(redis ? { redis } : {}) }));
  }
  app.use(async (ctx) => {
    throw new Problem(404, `No resource at ${ctx.path}.`);
  });

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await accessLog.close();
      if (ownsEngine) await engine.close();
      redis?.disconnect();
    })());

  return { app, engine, accessLog, limiters, close };
}
