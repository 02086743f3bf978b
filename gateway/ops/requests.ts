// Request metrics: one middleware, just inside problems(), that times every request until its
// response is sent and counts API-key failures by reason.
//
// The route label is the matched @koa/router template (`/api/v1/emails/:id`), one of the fixed
// paths below, or `other`: a raw path would let any client create a new series per URL.
import type { Context, Middleware } from 'koa';
import { Unauthorized } from '../auth.js';
import type { GatewayMetrics } from './metrics.js';

const FIXED_ROUTES = new Set(['/mcp', '/healthz', '/readyz', '/metrics']);
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The tools this server offers (the five of SPEC.md, “MCP server”, and ours); any other name a client sends is counted as `other`. */
export const TOOL_NAMES = new Set([
  'list_accounts',
  'list_folders',
  'search_emails',
  'aggregate_emails',
  'get_email',
  'get_thread',
  'get_attachment',
]);

/** The route template a path belongs to, for answers given before the router ran (401, 429). */
export type RouteResolver = (path: string) => string | undefined;

export function routeLabel(ctx: Context, resolve?: RouteResolver): string {
  const matched = (ctx as Context & { _matchedRoute?: unknown })._matchedRoute;
  if (typeof matched === 'string') return matched;
  if (FIXED_ROUTES.has(ctx.path)) return ctx.path;
  return resolve?.(ctx.path) ?? 'other';
}

/** The tool of an MCP tools/call whose body was parsed (so authenticated and well-formed). */
function toolLabel(ctx: Context): string | undefined {
  if (ctx.path !== '/mcp') return undefined;
  const body = (ctx.request as { body?: unknown }).body as
    { method?: unknown; params?: { name?: unknown } } | undefined;
  if (!body || typeof body !== 'object' || body.method !== 'tools/call') return undefined;
  const name = body.params?.name;
  return typeof name === 'string' && TOOL_NAMES.has(name) ? name : 'other';
}

export function requestMetrics(metrics: GatewayMetrics, resolve?: RouteResolver): Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    let recorded = false;
    // On 'finish' the last byte went to the socket; 'close' alone means the client left early.
    // Either way, the status sent (or about to be) is the one problems() settled on.
    const record = () => {
      if (recorded) return;
      recorded = true;
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const status = ctx.res.statusCode;
      metrics.observeRequest(
        { method: METHODS.has(ctx.method) ? ctx.method : 'other', route: routeLabel(ctx, resolve), status },
        seconds,
      );
      const tool = toolLabel(ctx);
      if (tool) metrics.observeToolCall({ tool, status }, seconds);
    };
    ctx.res.once('finish', record);
    ctx.res.once('close', record);
    try {
      await next();
    } catch (err) {
      if (err instanceof Unauthorized) metrics.countAuthFailure(err.reason);
      throw err;
    }
  };
}
