// What an OAuth-capable client finds when a key is refused (docs/mcp.md, "When a key is refused").
//
// MCP clients and bridges (mcp-remote, the Inspector, SDK clients with an auth provider) answer a
// 401 by discovering OAuth: the resource's protected-resource metadata (RFC 9728), then an
// authorization server's metadata (RFC 8414), then dynamic client registration (RFC 7591). This
// server takes static API keys only. So:
//
//   - the 401 challenge names its metadata (`resource_metadata`, as the MCP authorization spec
//     asks), and that metadata lists no authorization server: bearer keys in the header, nothing
//     to obtain them from;
//   - every OAuth endpoint a client then guesses at (authorization-server and OpenID metadata,
//     /register, /authorize, /token) answers 404 problem+json saying so, and, when the request
//     carries the key the client was configured with, why that key was refused. The bridges
//     print that answer, which is how their user learns "The API key has been revoked." rather
//     than "Dynamic Client Registration rejected".
//
// The key check here is the one admission makes (a failed key costs its IP one point of
// Server:AuthFailuresPerIpPerMinute), so these paths are no cheaper an oracle than /mcp itself.
import type { Context, Middleware } from 'koa';
import type { EnginePool } from '../engine/index.js';
import { bearerToken, keyHashOf, malformedKey, refusedKey, Unauthorized } from './auth.js';
import { Problem } from './problem.js';
import type { RateLimiter } from './rate-limit.js';

const PRM = '/.well-known/oauth-protected-resource';

/** The protected resources this server has, by path: each front end is its own resource. */
const RESOURCES: Record<string, string> = { '/mcp': 'MCP server', '/api/v1': 'REST API' };

/** Paths an OAuth client tries after finding no authorization server in the metadata. */
const OAUTH_ENDPOINTS =
  /^\/(?:\.well-known\/(?:oauth-authorization-server|openid-configuration)(?:\/.*)?|register|authorize|token|oauth\/.*)$/;

const NO_OAUTH =
  'This server does not offer OAuth: it accepts only API keys, sent as the header Authorization: Bearer <key> ' +
  '(a key is created on the API Keys page, /keys, or with mail-archive keys create).';

/** This server's own origin as the client addressed it (Koa's ctx.origin is the Origin header). */
const selfOrigin = (ctx: Context) => `${ctx.protocol}://${ctx.host}`;

/** The metadata URL of the resource a request path belongs to, for the 401 challenge. */
function metadataUrl(ctx: Context): string | undefined {
  const resource = Object.keys(RESOURCES).find((r) => ctx.path === r || ctx.path.startsWith(`${r}/`));
  return resource ? `${selfOrigin(ctx)}${PRM}${resource}` : undefined;
}

/**
 * Wraps /api and /mcp (inside problems()): a 401 challenge gains `resource_metadata`, which
 * needs the request's origin and so cannot be written where the 401 is made.
 */
export const challengeWithMetadata: Middleware = async (ctx, next) => {
  try {
    await next();
  } catch (err) {
    const url = metadataUrl(ctx);
    if (err instanceof Unauthorized && url) err.headers['WWW-Authenticate'] += `, resource_metadata="${url}"`;
    throw err;
  }
};

export function oauthDiscovery(engine: EnginePool, authFailures: RateLimiter): Middleware {
  return async (ctx, next) => {
    if (ctx.path === PRM || ctx.path.startsWith(`${PRM}/`)) return protectedResource(ctx, next);
    if (OAUTH_ENDPOINTS.test(ctx.path))
      throw new Problem(404, `${NO_OAUTH} ${await keyStatus(ctx, engine, authFailures)}`);
    return next();
  };
}

/** RFC 9728 metadata: bearer keys in the Authorization header, and no authorization server. */
async function protectedResource(ctx: Context, next: () => Promise<unknown>): Promise<void> {
  const path = ctx.path.slice(PRM.length) || '/mcp';
  const name = RESOURCES[path];
  if (!name || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) {
    await next();
    return;
  }
  ctx.set('Cache-Control', 'no-cache');
  ctx.body = {
    resource: `${selfOrigin(ctx)}${path}`,
    authorization_servers: [],
    bearer_methods_supported: ['header'],
    resource_name: `mail-archive-gateway ${name} (static API keys only; no OAuth)`,
    resource_documentation: `${selfOrigin(ctx)}/apidocs`,
  };
}

/** One sentence on the key the request carries, checked as admission would. */
async function keyStatus(ctx: Context, engine: EnginePool, authFailures: RateLimiter): Promise<string> {
  const header = ctx.get('Authorization') || undefined;
  const token = bearerToken(header);
  if (!token) {
    return header
      ? 'The Authorization header sent is not of the form Bearer <key>.'
      : 'No key was sent: configure the client to send that header.';
  }
  const ip = `ip:${ctx.ip}`;
  await authFailures.check(ip);
  const keyHash = keyHashOf(token);
  const refusal = keyHash
    ? await engine
        .run({ kind: 'authenticate', keyHash, now: Date.now() })
        .then((auth) => (auth.ok ? undefined : refusedKey(auth.reason)))
    : malformedKey();
  if (!refusal) return `The key sent is valid: send it with every request to /mcp or /api/v1, and no OAuth is needed.`;
  await authFailures.consume(ip);
  return `The key sent was refused: ${refusal.detail}`;
}
