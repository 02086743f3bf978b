// GET /healthz, /readyz and (when Metrics:Enabled) /metrics: mounted before the API, MCP and
// web surfaces and before any rate limit or authentication, so probes never spend a budget and
// are served whether or not the API and MCP are enabled. None of them shows archive data.
import type { Redis } from 'ioredis';
import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import type { EnginePool } from '../../engine/index.js';
import { isPostgresUrl, type Settings } from '../../shared/config.js';
import { Problem } from '../problem.js';
import { allowList, isAllowed } from './allow-from.js';
import { ReadinessCheck } from './health.js';
import type { AccessLogWriter } from '../access-log.js';
import type { GatewayMetrics } from './metrics.js';

export interface OpsDeps {
  engine: EnginePool;
  logger: Logger;
  redis?: Redis;
  /** Present when Metrics:Enabled. */
  metrics?: GatewayMetrics;
  /** The access log's backlog, reported by /readyz. */
  accessLog?: AccessLogWriter;
}

/** Never cached, GET and HEAD only (405 otherwise). */
function probe(ctx: Context): void {
  ctx.set('Cache-Control', 'no-store');
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD')
    throw new Problem(405, `${ctx.method} is not allowed on ${ctx.path}.`, { Allow: 'GET, HEAD' });
}

export function opsRoutes(settings: Settings, deps: OpsDeps): Middleware {
  const accessLog = deps.accessLog;
  const readiness = new ReadinessCheck(deps.engine, deps.redis, {
    postgres: isPostgresUrl(settings.Database.Path),
    ...(accessLog ? { accessLog: () => accessLog.backlog } : {}),
  });
  const allowed = allowList(settings.Metrics.AllowFrom);
  const { metrics, logger } = deps;

  return async (ctx, next) => {
    switch (ctx.path) {
      case '/healthz':
        probe(ctx);
        ctx.body = { status: 'ok' };
        return;
      case '/readyz': {
        probe(ctx);
        const result = await readiness.run();
        ctx.status = result.status === 'unavailable' ? 503 : 200;
        ctx.body = result;
        return;
      }
      case '/metrics':
        if (!metrics) return next();
        // The socket's peer, never X-Forwarded-For: with Server:TrustProxy a client can still
        // put any address at the left of that header, and ctx.ip takes it from there.
        if (!isAllowed(allowed, ctx.req.socket.remoteAddress)) {
          logger.debug({ peer: ctx.req.socket.remoteAddress }, 'metrics scrape refused (Metrics:AllowFrom)');
          return next(); // the same 404 as a disabled endpoint: nothing tells it exists
        }
        probe(ctx);
        ctx.set('Content-Type', metrics.contentType);
        ctx.body = await metrics.text();
        return;
      default:
        return next();
    }
  };
}
