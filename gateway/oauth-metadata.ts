// OAuth discovery (docs/mcp.md, "OAuth" and "When a key is refused").
//
// With Mcp:OAuth:Enabled the service is its own authorization server for /mcp: the 401 challenge
// of /mcp names its protected-resource metadata (RFC 9728, as the MCP authorization spec asks),
// which names this server as the authorization server, whose metadata (RFC 8414) lists the
// endpoints of gateway/oauth/. The REST API keeps taking API keys only: no metadata names it.
//
// Without it (the default), nothing advertises OAuth, because some clients (Cursor) stop sending
// a configured Authorization header once a server advertises OAuth discovery, which would lock
// out key users: no `resource_metadata` in any challenge, and every discovery document or OAuth
// endpoint a client guesses (protected-resource and authorization-server metadata, OpenID
// configuration, /register, /authorize, /token) is a 404 problem+json saying so and, when the
// request carries the key the client was configured with, why that key was refused. Bridges
// print that answer, which is how their user learns "The API key has been revoked." rather than
// "Dynamic Client Registration rejected". That key check is the one admission makes (a failed
// key costs its IP one point of Server:AuthFailuresPerIpPerMinute), so these paths are no cheaper
// an oracle than /mcp itself.
import type { Context, Middleware } from 'koa';
import type { EnginePool } from '../engine/index.js';
import type { Settings } from '../shared/config.js';
import { bearerToken, keyHashOf, malformedKey, refusedKey, Unauthorized } from './auth.js';
import { addressPartition } from './address.js';
import { publicBase } from './oauth/urls.js';
import { OAUTH_PATHS, SCOPE } from './oauth/endpoints.js';
import { Problem } from './problem.js';
import type { RateLimiter } from './rate-limit.js';

const PRM = '/.well-known/oauth-protected-resource';
const AS_METADATA = '/.well-known/oauth-authorization-server';

/** Paths an OAuth client discovers or guesses at. */
const OAUTH_GUESSES =
  /^\/(?:\.well-known\/(?:oauth-protected-resource|oauth-authorization-server|openid-configuration)(?:\/.*)?|register|authorize|token|oauth\/.*)$/;

const NO_OAUTH =
  'This server does not offer OAuth: it accepts only API keys, sent as the header Authorization: Bearer <key> ' +
  '(a key is created on the API Keys page, /keys, or with mail-archive keys create).';

/** Whether the service is an authorization server for /mcp. */
export const oauthEnabled = (settings: Settings): boolean => settings.Mcp.Enabled && settings.Mcp.OAuth.Enabled;

/**
 * Wraps /mcp (inside problems()) when OAuth is on: a 401 challenge gains `resource_metadata`,
 * which needs the request's origin (or Server:PublicUrl) and so cannot be written where the 401
 * is made.
 */
export function challengeWithMetadata(settings: Settings): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      if (err instanceof Unauthorized && (ctx.path === '/mcp' || ctx.path.startsWith('/mcp/')))
        err.headers['WWW-Authenticate'] +=
          `, resource_metadata="${publicBase(ctx, settings)}${PRM}/mcp", scope="${SCOPE}"`;
      throw err;
    }
  };
}

export function oauthDiscovery(settings: Settings, engine: EnginePool, authFailures: RateLimiter): Middleware {
  const on = oauthEnabled(settings);
  return async (ctx, next) => {
    if (on) {
      const read = ctx.method === 'GET' || ctx.method === 'HEAD';
      if (read && (ctx.path === `${PRM}/mcp` || ctx.path === `${PRM}/mcp/`)) return protectedResource(ctx, settings);
      if (read && ctx.path === AS_METADATA) return authorizationServer(ctx, settings);
      if (OAUTH_PATHS.has(ctx.path)) return next();
      if (ctx.method === 'OPTIONS' && (ctx.path === `${PRM}/mcp` || ctx.path === AS_METADATA)) {
        // A browser client's preflight: SDK clients send MCP-Protocol-Version with discovery.
        discoveryHeaders(ctx);
        ctx.set('Access-Control-Allow-Methods', 'GET');
        ctx.set('Access-Control-Allow-Headers', 'MCP-Protocol-Version, Content-Type');
        ctx.status = 204;
        return;
      }
      if (OAUTH_GUESSES.test(ctx.path))
        throw new Problem(
          404,
          `OAuth on this server is for the MCP server only: its protected-resource metadata is ${PRM}/mcp and its ` +
            `authorization server's metadata ${AS_METADATA}. The REST API takes API keys only.`,
        );
      return next();
    }
    if (OAUTH_GUESSES.test(ctx.path))
      throw new Problem(404, `${NO_OAUTH} ${await keyStatus(ctx, engine, authFailures)}`);
    return next();
  };
}

/** Discovery documents may be read by a client in a browser (RFC 8414 section 3, RFC 9728 section 3). */
function discoveryHeaders(ctx: Context): void {
  ctx.set('Access-Control-Allow-Origin', '*');
  ctx.set('Cache-Control', 'no-cache');
}

/** RFC 9728 metadata of /mcp: this server is its authorization server. */
function protectedResource(ctx: Context, settings: Settings): void {
  const base = publicBase(ctx, settings);
  discoveryHeaders(ctx);
  ctx.body = {
    resource: `${base}/mcp`,
    authorization_servers: [base],
    bearer_methods_supported: ['header'],
    scopes_supported: [SCOPE],
    resource_name: 'mail-archive-gateway MCP server',
    // No documentation link: /apidocs needs a session and documents the REST API, and the
    // service has no public page about its MCP server (RFC 9728 section 2 makes it optional).
  };
}

/** RFC 8414 metadata: what gateway/oauth/ implements, and nothing it does not. */
function authorizationServer(ctx: Context, settings: Settings): void {
  const base = publicBase(ctx, settings);
  discoveryHeaders(ctx);
  ctx.body = {
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    ...(settings.Mcp.OAuth.AllowDynamicRegistration ? { registration_endpoint: `${base}/oauth/register` } : {}),
    revocation_endpoint: `${base}/oauth/revoke`,
    scopes_supported: [SCOPE],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
    // No service_documentation, for the reason protectedResource() gives (RFC 8414 section 2: optional).
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
  const ip = addressPartition(ctx.ip);
  await authFailures.check(ip);
  const keyHash = keyHashOf(token);
  const refusal = keyHash
    ? await engine
        .run({ kind: 'authenticate', keyHash, now: Date.now() })
        .then((auth) => (auth.ok ? undefined : refusedKey(auth.reason, auth.oauth)))
    : malformedKey();
  if (!refusal) return `The key sent is valid: send it with every request to /mcp or /api/v1, and no OAuth is needed.`;
  await authFailures.consume(ip);
  return `The key sent was refused: ${refusal.detail}`;
}
