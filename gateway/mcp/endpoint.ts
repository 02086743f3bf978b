// POST /mcp: the MCP server over stateless Streamable HTTP (SPEC.md, “MCP server”, “Authentication”, “Errors” and “Limits”), for
// two protocol eras on one endpoint (docs/decisions.md, ADR 15):
//
// - 2025-11-25 and older (the `initialize` handshake; what the v1 SDK, the Inspector and most
//   clients speak): a fresh McpServer and a JSON-answering transport per request, as before;
// - 2026-07-28 (no handshake; every request carries its revision in `params._meta` and in the
//   MCP-Protocol-Version / Mcp-Method / Mcp-Name headers): the SDK's createMcpHandler, which
//   checks that envelope and those headers and answers with a fresh McpServer per request.
//
// The SDK's own classifier (isLegacyRequest) decides which one a message belongs to, so the two
// can never disagree with the SDK about it. Both are built from the same factory (server.ts)
// and the same tool list (tools.ts).
//
// Every request passes, in order: Cache-Control: no-store (set first, so errors carry it too) →
// Origin check (403) → the JSON body is read → admission: the key check (401) and the rate limit
// (429) of the Mcp policy, or of McpFree for a message that carries no work → method (405; CORS
// preflights answered here) → a key is required (401) → a body that did not read (413, parse
// error) → a tools/call the engine has no room for (503) → the SDK, for either era.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ServerResponse } from 'node:http';
import type { Context, Middleware } from 'koa';
import bodyParser from 'koa-bodyparser';
import compose from 'koa-compose';
import type { Logger } from 'pino';
import { NodeStreamableHTTPServerTransport, toNodeHandler, toWebRequest } from '@modelcontextprotocol/node';
import { createMcpHandler, isLegacyRequest, ProtocolError } from '@modelcontextprotocol/server';
import type { Settings } from '../../shared/config.js';
import type { ArchiveService } from '../archive-service.js';
import { keyOf, type AuthState } from '../auth.js';
import { callerOf } from '../client.js';
import { Problem } from '../problem.js';
import { answerPreflight, isPreflight, originGuard } from './origin.js';
import { createMcpServer } from './server.js';
import { mcpTools, type McpTool, type ToolContext } from './tools.js';

const PATH = '/mcp';

// JSON-RPC 2.0 error codes the transport layer answers with itself.
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;

export function mcpEndpoint(
  settings: Settings,
  service: ArchiveService,
  /**
   * Admission (rate limit and key check, admission.ts) under the Mcp policy for messages that
   * carry work, and under the McpFree policy for those that do not (freeMessage below).
   */
  admits: { work: Middleware; free: Middleware },
  logger: Logger,
): Middleware {
  const tools = mcpTools(settings.Mcp, settings.Api);
  const parseJson = bodyParser({ enableTypes: ['json'], jsonLimit: '1mb', strict: true });

  const gate: Middleware = async (ctx, next) => {
    if (ctx.path !== PATH) throw new Problem(404, `No resource at ${ctx.path}; the MCP endpoint is ${PATH}.`);
    if (isPreflight(ctx)) return answerPreflight(ctx);
    if (ctx.method !== 'POST') {
      // Stateless: no server-to-client event stream to GET, no session to DELETE.
      throw new Problem(405, `${ctx.method} is not allowed on ${PATH}; send each JSON-RPC message as a POST.`, {
        Allow: 'POST',
      });
    }
    await next();
  };

  // The 2026-07-28 path. Its factory is called inside the SDK, per request; the caller it serves
  // is handed over through the request's async context rather than through the SDK's authInfo,
  // which would have to carry the key itself.
  const currentRequest = new AsyncLocalStorage<ToolContext>();
  const modern = toNodeHandler(
    createMcpHandler(
      () => {
        const context = currentRequest.getStore();
        if (!context) throw new Error('MCP server factory called outside a request');
        return createMcpServer(tools, context);
      },
      // 2025-era messages never reach this handler (they are routed below), so it refuses them.
      { legacy: 'reject', onerror: (err) => reportSdkError(logger, err) },
    ),
    { onerror: (err) => reportSdkError(logger, err) },
  );

  // The body is read before admission, because which budget a message spends depends on it.
  const admit: Middleware = async (ctx, next) => {
    const carriesWork = ctx.path === PATH && ctx.method === 'POST' && !freeMessage(await readBody(ctx, parseJson));
    return (carriesWork ? admits.work : admits.free)(ctx, next);
  };

  const serve: Middleware = async (ctx) => {
    // The key is checked now, on its own: once the transport answers, a 401 can no longer be sent.
    await keyOf(ctx as Context & { state: AuthState }).check();
    const read = ctx.state.mcpBody as BodyRead;
    if ('error' in read) {
      if (!(read.error instanceof SyntaxError)) throw read.error;
      return jsonRpcError(ctx, 400, PARSE_ERROR, 'Parse error: the request body is not valid JSON.');
    }
    const body: unknown = read.body;
    if (Array.isArray(body)) {
      // One message per request keeps every call under the rate limit; batches left MCP in 2025-06-18.
      return jsonRpcError(
        ctx,
        400,
        INVALID_REQUEST,
        'Batches are not supported: send one JSON-RPC message per HTTP request.',
      );
    }
    refuseWhenBusy(body, tools, service);
    const context: ToolContext = {
      service,
      caller: callerOf(ctx as Context & { state: AuthState }, 'mcp'),
      logger,
    };
    const legacy = await isLegacyRequest(await toWebRequest(ctx.req, body), body);
    ctx.respond = false; // the SDK writes the answer itself
    keepNoStore(ctx.res);
    try {
      if (legacy) await serveLegacy(ctx, context, body);
      else await currentRequest.run(context, () => modern(ctx.req, ctx.res, body));
    } catch (err) {
      if (ctx.res.headersSent) {
        logger.error({ err }, 'MCP transport failed after answering began');
        ctx.res.destroy();
        return;
      }
      ctx.respond = true; // nothing sent yet: problems() can still answer 500
      throw err;
    }
  };

  /** 2025-11-25 and older: one McpServer and one transport answer the one message, then close. */
  async function serveLegacy(ctx: Context, context: ToolContext, body: unknown): Promise<void> {
    const server = createMcpServer(tools, context);
    const transport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    ctx.res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(ctx.req, ctx.res, body);
  }

  return compose([
    async (ctx, next) => {
      ctx.set('Cache-Control', 'no-store');
      await next();
    },
    originGuard(settings.Mcp.AllowedOrigins),
    admit,
    gate,
    serve,
  ]);
}

/**
 * A tools/call whose tool needs a full engine lane is refused here, as HTTP 503 problem+json
 * with Retry-After (what HTTP clients and proxies back off from), before the transport starts
 * answering; see docs/mcp.md. Every other message (initialize, tools/list, cheap tools) goes on.
 */
function refuseWhenBusy(body: unknown, tools: readonly McpTool[], service: ArchiveService): void {
  const message = body as { method?: unknown; params?: { name?: unknown } } | null;
  if (message?.method !== 'tools/call') return;
  const heavyJob = tools.find((t) => t.name === message.params?.name)?.heavyJob;
  if (heavyJob) service.engine.admit(heavyJob);
}

type BodyRead = { body: unknown } | { error: unknown };

/**
 * Parses the JSON body into ctx.request.body (the SDK needs it parsed, as the stream is then
 * spent) and keeps the outcome in ctx.state.mcpBody for serve(): too large stays an HTTP error
 * (413 problem+json); JSON that does not parse is answered the way the SDK answers it, as a
 * JSON-RPC parse error. Either is answered only after admission, as free messages.
 */
async function readBody(ctx: Context, parseJson: Middleware): Promise<BodyRead> {
  let read: BodyRead;
  try {
    await parseJson(ctx, async () => {});
    read = { body: ctx.request.body };
  } catch (error) {
    read = { error };
  }
  ctx.state.mcpBody = read;
  return read;
}

/** JSON-RPC methods that do no work: connecting, keeping alive, and being told things. */
const FREE_METHODS = new Set(['initialize', 'ping', 'server/discover']);

/**
 * Whether a message spends the free budget rather than Mcp:RateLimitPerMinute (docs/mcp.md,
 * "What counts against the budget"): the handshake, pings and notifications, and anything the
 * endpoint refuses before any work (a body that does not parse, a batch, a message without a
 * method). Everything else counts, tools/list included.
 */
function freeMessage(read: BodyRead): boolean {
  if ('error' in read) return true;
  const method = (read.body as { method?: unknown } | null)?.method;
  if (Array.isArray(read.body) || typeof method !== 'string') return true;
  return FREE_METHODS.has(method) || method.startsWith('notifications/');
}

/**
 * Every /mcp answer is `Cache-Control: no-store` (SPEC.md, “Authentication”: never let a CDN cache /mcp), but the SDK passes its own
 * `no-cache, no-transform` to writeHead when it answers with an event stream (a 2026-07-28
 * subscriptions/listen), which would replace ours. Keep no-store, and no-transform if asked for
 * (it stops proxies from buffering the stream to compress it).
 */
function keepNoStore(res: ServerResponse): void {
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
  res.writeHead = ((...args: unknown[]) => {
    for (const headers of args.slice(1)) {
      if (!headers || typeof headers !== 'object' || Array.isArray(headers)) continue;
      const fields = headers as Record<string, unknown>;
      for (const name of Object.keys(fields)) {
        if (name.toLowerCase() !== 'cache-control') continue;
        fields[name] = /no-transform/i.test(String(fields[name])) ? 'no-store, no-transform' : 'no-store';
      }
    }
    return writeHead(...args);
  }) as ServerResponse['writeHead'];
}

/**
 * What the 2026-07-28 handler reports: a request it refused (a wrong envelope, header or media
 * type, an unsupported revision; the client was told why) is the client's business, anything
 * else ours.
 */
function reportSdkError(logger: Logger, err: Error): void {
  const refused = err instanceof ProtocolError || /^(Rejected |Unsupported Media Type)/.test(err.message);
  if (refused) logger.debug({ err }, 'MCP request refused');
  else logger.error({ err }, 'MCP request failed');
}

function jsonRpcError(ctx: Context, status: number, code: number, message: string): void {
  ctx.status = status;
  ctx.body = { jsonrpc: '2.0', error: { code, message }, id: null };
}
