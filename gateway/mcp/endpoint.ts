// POST /mcp: the MCP server over stateless Streamable HTTP (SPEC.md sections 4, 5, 7, 8).
//
// Every request passes, in order: Cache-Control: no-store (set first, so errors carry it too) →
// Origin check (403) → admission: the key check (401) and the Mcp rate limit (429) →
// method (405; CORS preflights answered here) → a key is required (401) → JSON body (413, parse
// error) → a tools/call the engine has no room for (503) → a fresh McpServer and transport that
// answer the one JSON-RPC message and are closed after it.
import type { Context, Middleware } from 'koa';
import bodyParser from 'koa-bodyparser';
import compose from 'koa-compose';
import type { Logger } from 'pino';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Settings } from '../../shared/config.js';
import type { ArchiveService } from '../archive-service.js';
import { keyOf, type AuthState } from '../auth.js';
import { callerOf } from '../client.js';
import { Problem } from '../problem.js';
import { answerPreflight, isPreflight, originGuard } from './origin.js';
import { createMcpServer } from './server.js';
import { mcpTools, type McpTool } from './tools.js';

const PATH = '/mcp';

// JSON-RPC 2.0 error codes the transport layer answers with itself.
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;

export function mcpEndpoint(
  settings: Settings,
  service: ArchiveService,
  /** The Mcp policy's admission (rate limit and key check, admission.ts). */
  admit: Middleware,
  logger: Logger,
): Middleware {
  const tools = mcpTools(settings.Mcp);
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

  const serve: Middleware = async (ctx) => {
    // The key is checked now, on its own: once the transport answers, a 401 can no longer be sent.
    await keyOf(ctx as Context & { state: AuthState }).check();
    if (!(await readBody(ctx, parseJson))) return;
    if (Array.isArray(ctx.request.body)) {
      // One message per request keeps every call under the rate limit; batches left MCP in 2025-06-18.
      return jsonRpcError(
        ctx,
        400,
        INVALID_REQUEST,
        'Batches are not supported: send one JSON-RPC message per HTTP request.',
      );
    }
    refuseWhenBusy(ctx.request.body, tools, service);
    const server = createMcpServer(tools, {
      service,
      caller: callerOf(ctx as Context & { state: AuthState }, 'mcp'),
      logger,
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    ctx.res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    ctx.respond = false; // the transport writes the answer itself
    try {
      await transport.handleRequest(ctx.req, ctx.res, ctx.request.body);
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

/**
 * Parses the JSON body into ctx.request.body (the SDK needs it parsed, as the stream is then
 * spent). Too large stays an HTTP error (413 problem+json); JSON that does not parse is answered
 * the way the SDK answers it, as a JSON-RPC parse error. False when the answer is already set.
 */
async function readBody(ctx: Context, parseJson: Middleware): Promise<boolean> {
  try {
    await parseJson(ctx, async () => {});
    return true;
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
    jsonRpcError(ctx, 400, PARSE_ERROR, 'Parse error: the request body is not valid JSON.');
    return false;
  }
}

function jsonRpcError(ctx: Context, status: number, code: number, message: string): void {
  ctx.status = status;
  ctx.body = { jsonrpc: '2.0', error: { code, message }, id: null };
}
