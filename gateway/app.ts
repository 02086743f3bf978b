// The gateway: one Koa app serving /api/v1 and /mcp on one port.
//
// Request path: problems (error shape) → [request metrics] → security headers → /healthz,
// /readyz, /metrics → OAuth discovery (oauth-metadata.ts) → [/api: admission (rate limits) → route, whose job carries the key check]
// or [/mcp: admission → key check → MCP transport] → 404. Every data access becomes a typed job
// on the engine's worker pool, a keyed request's through its KeyCheck (auth.ts); nothing here
// runs SQL.
import Koa from 'koa';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { EnginePool } from '../engine/index.js';
import { engineQueues, type Settings } from '../shared/config.js';
import { AccessLogWriter, type AccessLogOptions } from './access-log.js';
import { admission } from './admission.js';
import { AuthFailureLog } from './auth-failure-log.js';
import { apiRouter } from './api/router.js';
import { ArchiveService } from './archive-service.js';
import { createLogger } from './logger.js';
import { mcpEndpoint } from './mcp/endpoint.js';
import { acceptable } from './http/accept.js';
import { compressJson } from './http/compress.js';
import { serverOptions } from './http/server-limits.js';
import { etagPerCoding } from './http/conditional.js';
import { apiCors } from './http/cors.js';
import { cancelWhenClientLeaves } from './http/client-gone.js';
import { mount } from './mount.js';
import { challengeWithMetadata, oauthDiscovery, oauthEnabled } from './oauth-metadata.js';
import { oauthEndpoints } from './oauth/endpoints.js';
import { GatewayMetrics } from './ops/metrics.js';
import { requestMetrics } from './ops/requests.js';
import { opsRoutes } from './ops/routes.js';
import { Problem, problems } from './problem.js';
import { connectRedis, RateLimiter } from './rate-limit.js';
import { warmUpGateway, WarmUpTokens } from './warm-up.js';
import { readingLimiter, webSurface } from './web/routes.js';
import { LoginThrottle } from './web/throttle.js';

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
  limiters: { api: RateLimiter; mcp: RateLimiter; mcpFree: RateLimiter; authFailures: RateLimiter };
  /** Present when Metrics:Enabled. */
  metrics?: GatewayMetrics;
  /**
   * The gateway's own first search, sent to the app once the engine has warmed its query threads
   * (warm-up.ts); resolves when it is answered, or at once with the API off.
   */
  warmUp(): Promise<void>;
  /** Flushes the access log, then stops the pool and Redis. Idempotent. */
  close(): Promise<void>;
}

const GONE = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE', 'ERR_STREAM_DESTROYED']);

/** An error that only says the client closed the connection before the answer was complete. */
function clientWentAway(err: Error & { code?: string }, ctx?: Koa.Context): boolean {
  return GONE.has(err.code ?? '') || err.message === 'aborted' || ctx?.req.destroyed === true;
}

export function createGateway(settings: Settings, options: GatewayOptions = {}): Gateway {
  const logger = options.logger ?? createLogger();
  const ownsEngine = !options.engine;
  const engine =
    options.engine ??
    new EnginePool({
      dbPath: settings.Database.Path,
      timeZone: settings.Database.TimeZone,
      readReplicas: settings.Database.ReadReplicas,
      threads: settings.Engine.Threads,
      maxQueue: engineQueues(settings.Engine),
      maxQueueWaitMs: settings.Engine.MaxQueueWaitMs,
      searchMemoryBytes: settings.Engine.SearchMemoryMB * 1024 * 1024,
      ...(settings.Engine.SearchIndexFile !== undefined ? { searchIndexFile: settings.Engine.SearchIndexFile } : {}),
      log: (line, level) => (level === 'warn' ? logger.warn(line) : logger.info(line)),
      jobTimeoutMs: settings.Engine.JobTimeoutSeconds * 1000,
      phraseScanWords: settings.Engine.PhraseScanWords,
      faultInjection: options.faultInjection ?? false,
    });
  const accessLog = new AccessLogWriter(engine, logger, {
    maxBacklog: settings.Server.AccessLogMaxBacklog,
    ...options.accessLog,
  });
  const service = new ArchiveService(engine, accessLog);
  const redis: Redis | undefined = settings.Redis.Url ? connectRedis(settings.Redis.Url, logger) : undefined;
  const limiters = {
    api: new RateLimiter({ name: 'Api', pointsPerMinute: settings.Api.RateLimitPerMinute }, logger, redis),
    mcp: new RateLimiter({ name: 'Mcp', pointsPerMinute: settings.Mcp.RateLimitPerMinute }, logger, redis),
    // MCP messages that carry no work (docs/mcp.md, "What counts against the budget").
    mcpFree: new RateLimiter({ name: 'McpFree', pointsPerMinute: settings.Mcp.FreeRequestsPerMinute }, logger, redis),
    // One per client IP for both front ends: failed keys are charged here, never to a prefix.
    authFailures: new RateLimiter(
      { name: 'AuthFailIp', pointsPerMinute: settings.Server.AuthFailuresPerIpPerMinute },
      logger,
      redis,
    ),
  };
  const throttle = new LoginThrottle(settings, logger, redis);
  const webReading = readingLimiter(settings, logger, redis);
  const failureLog = new AuthFailureLog(logger);
  const metrics = settings.Metrics.Enabled
    ? new GatewayMetrics({
        engine,
        accessLog,
        redis,
        limiters: [
          limiters.api,
          limiters.mcp,
          limiters.mcpFree,
          limiters.authFailures,
          ...throttle.limiters,
          webReading,
        ],
      })
    : undefined;

  const app = new Koa();
  app.proxy = settings.Server.TrustProxy;
  // Only the entries our own proxies appended: the client writes whatever it likes further left.
  app.maxIpsCount = settings.Server.TrustedProxyHops;
  app.silent = true; // problems() logs what matters; Koa's default handler would print stacks.
  // What problems() cannot see: a response stream that fails after its headers were sent. A
  // client that went away mid-download is not a server error: one debug line, no stack.
  app.on('error', (err: Error & { code?: string }, ctx?: Koa.Context) => {
    if (clientWentAway(err, ctx)) {
      logger.debug({ code: err.code ?? err.message, method: ctx?.method, path: ctx?.path }, 'client went away');
      return;
    }
    logger.error({ err, method: ctx?.method, path: ctx?.path }, 'response failed');
  });

  const router = settings.Api.Enabled ? apiRouter(settings, service) : undefined;
  const warmUpTokens = new WarmUpTokens();
  // Admission answers 401 and 429 before the router runs; label those by the route they asked for.
  const routeOf = (path: string) => {
    const template = router?.match(path, 'GET').path.at(-1)?.path;
    return typeof template === 'string' ? template : undefined;
  };
  app.use(problems(logger));
  app.use(cancelWhenClientLeaves);
  if (metrics) app.use(requestMetrics(metrics, routeOf));
  app.use(async (ctx, next) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    await next();
  });
  // /healthz, /readyz, /metrics: before every rate limit and authentication, whatever is enabled.
  app.use(
    opsRoutes(settings, { engine, logger, accessLog, ...(redis ? { redis } : {}), ...(metrics ? { metrics } : {}) }),
  );
  if (settings.Api.Enabled || settings.Mcp.Enabled) {
    // OAuth discovery: advertised for /mcp with Mcp:OAuth:Enabled, else 404s that say there is none.
    if (oauthEnabled(settings)) {
      app.use(challengeWithMetadata(settings));
      app.use(
        oauthEndpoints(settings, {
          engine,
          logger,
          authFailures: limiters.authFailures,
          registrations: new RateLimiter(
            { name: 'OAuthRegister', pointsPerMinute: settings.Mcp.OAuth.RegistrationsPerIpPerMinute },
            logger,
            redis,
          ),
          revocations: new RateLimiter(
            { name: 'OAuthRevoke', pointsPerMinute: settings.Mcp.OAuth.RevocationsPerIpPerMinute },
            logger,
            redis,
          ),
        }),
      );
    }
    app.use(oauthDiscovery(settings, engine, limiters.authFailures));
  }

  if (router) {
    app.use(
      mount(
        '/api',
        // Preflights and Accept are answered before the key check: they carry no work.
        apiCors(settings.Api.AllowedOrigins),
        acceptable,
        admission(limiters.api, limiters.authFailures, engine, failureLog, warmUpTokens) as Koa.Middleware,
        etagPerCoding,
        compressJson,
        router.routes() as unknown as Koa.Middleware,
        async (ctx) => {
          // Reached only when no route answered: a known path with another method is 405.
          const known = router.match(ctx.path, 'GET').path.length > 0;
          if (known)
            throw new Problem(405, `${ctx.method} is not allowed on ${ctx.path}; this API is read-only.`, {
              Allow: 'GET, HEAD',
            });
          throw new Problem(404, `No API resource at ${ctx.path}.`);
        },
      ),
    );
  }
  if (settings.Mcp.Enabled) {
    app.use(
      mount(
        '/mcp',
        mcpEndpoint(
          settings,
          service,
          {
            work: admission(limiters.mcp, limiters.authFailures, engine, failureLog) as Koa.Middleware,
            free: admission(limiters.mcpFree, limiters.authFailures, engine, failureLog) as Koa.Middleware,
          },
          logger,
        ),
      ),
    );
  } else {
    // Disabled is a 404, but still one no cache may keep (SPEC.md, “Authentication”: never let a CDN cache /mcp).
    app.use(
      mount('/mcp', async (ctx) => {
        ctx.set('Cache-Control', 'no-store');
        throw new Problem(404, `No resource at ${ctx.path}.`);
      }),
    );
  }
  if (settings.Api.Enabled || settings.Mcp.Enabled) {
    // Sign-in, API Keys and /apidocs: cookie sessions on their own paths only, never /api or /mcp.
    app.use(
      webSurface(app, settings, {
        engine,
        logger,
        throttle,
        service,
        readingLimiter: webReading,
        ...(redis ? { redis } : {}),
      }),
    );
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

  const warmUp = async () => {
    if (router)
      await warmUpGateway(app.callback(), serverOptions(settings.Server), engine.warmedUp, warmUpTokens, logger);
  };
  return { app, engine, accessLog, limiters, warmUp, close, ...(metrics ? { metrics } : {}) };
}
