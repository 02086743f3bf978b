// The authorization server's machine endpoints (docs/mcp.md, "OAuth"): token (RFC 6749 sections
// 4.1.3 and 6, with PKCE and RFC 8707 resources), dynamic client registration (RFC 7591) and
// revocation (RFC 7009). Their errors are OAuth's own JSON (`{error, error_description}`), which
// every OAuth client parses, not problem+json. The authorization endpoint, which a person sees,
// is gateway/oauth/authorize.ts, on the web surface. Only public clients exist: PKCE S256 is
// what binds a code to the client that asked for it.
import { randomBytes } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import bodyParser from 'koa-bodyparser';
import type { Logger } from 'pino';
import { clientDisplayName, EngineOverloaded, EngineTimedOut, secretHash } from '../../engine/index.js';
import type { EnginePool } from '../../engine/index.js';
import type { Settings } from '../../shared/config.js';
import type { OAuthTokenRequest } from '../../shared/jobs.js';
import { addressPartition } from '../address.js';
import { keyHashOf, REALM } from '../auth.js';
import { Problem } from '../problem.js';
import type { RateLimiter } from '../rate-limit.js';
import { checkRedirectUris, ClientProblem } from './clients.js';
import { isOurResource, mcpResource } from './urls.js';

/** The one scope: read the archive through /mcp, as far as the grant's accounts go. */
export const SCOPE = 'mail:read';

export const TOKEN_PATH = '/oauth/token';
export const REGISTER_PATH = '/oauth/register';
export const REVOKE_PATH = '/oauth/revoke';
export const AUTHORIZE_PATH = '/oauth/authorize';
export const OAUTH_PATHS: ReadonlySet<string> = new Set([TOKEN_PATH, REGISTER_PATH, REVOKE_PATH, AUTHORIZE_PATH]);

/** What a code (`mac_`) or refresh token (`mar_`) looks like (engine/rules/oauth.ts). */
const SECRET = /^ma[cr]_[A-Za-z0-9_-]{43}$/;

/** An OAuth error answer (RFC 6749 section 5.2). */
class OAuthError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    description: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
  }
}

/**
 * What the endpoints answer for an error raised around them (a spent budget, a busy engine): the
 * same status and headers, in OAuth's JSON, which is what an OAuth client parses. There is no
 * RFC 6749 code for a rate limit; `temporarily_unavailable` (section 4.1.2.1) is the nearest,
 * with Retry-After saying when.
 */
function asOAuthError(err: unknown): OAuthError | undefined {
  if (err instanceof OAuthError) return err;
  if (err instanceof Problem)
    return new OAuthError(
      err.status,
      err.status === 429 || err.status === 503 ? 'temporarily_unavailable' : 'invalid_request',
      err.detail,
      err.headers,
    );
  if (err instanceof EngineOverloaded || err instanceof EngineTimedOut)
    return new OAuthError(503, 'temporarily_unavailable', 'The server is busy; try again in a few seconds.', {
      'Retry-After': String(err.retryAfterSeconds),
    });
  return undefined;
}

function answer(ctx: Context, status: number, body: object): void {
  ctx.status = status;
  ctx.body = body;
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Pragma', 'no-cache');
}

/** A single string parameter, or undefined; a repeated one is an error (RFC 6749 section 3.1). */
function param(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') throw new OAuthError(400, 'invalid_request', `${name} must be given once, as text.`);
  return value;
}

function required(body: Record<string, unknown>, name: string): string {
  const value = param(body, name);
  if (value === undefined) throw new OAuthError(400, 'invalid_request', `${name} is required.`);
  return value;
}

/** The 401 of RFC 6749 section 5.2 for client credentials sent in a header that cannot be read. */
const unreadableClient = (): OAuthError =>
  new OAuthError(401, 'invalid_client', 'The Authorization header does not carry a readable client_id.', {
    'WWW-Authenticate': `Basic realm="${REALM}"`,
  });

/**
 * client_id from the body or, for a client that sends it so, HTTP Basic (with an empty secret).
 * The id in Basic is form-urlencoded (RFC 6749 section 2.3.1); one that does not decode is the
 * client's fault, a 401 invalid_client, never a server error.
 */
function clientIdOf(ctx: Context, body: Record<string, unknown>): string {
  const basic = /^Basic\s+(\S+)$/i.exec(ctx.get('Authorization'));
  if (basic) {
    const [id] = Buffer.from(basic[1]!, 'base64').toString('utf8').split(':');
    if (id) {
      try {
        return decodeURIComponent(id.replace(/\+/g, ' '));
      } catch {
        throw unreadableClient();
      }
    }
  }
  return required(body, 'client_id');
}

export interface OAuthEndpointDeps {
  engine: EnginePool;
  logger: Logger;
  /** Server:AuthFailuresPerIpPerMinute: a refused code or refresh token costs its IP a point. */
  authFailures: RateLimiter;
  registrations: RateLimiter;
  /** Mcp:OAuth:RevocationsPerIpPerMinute. */
  revocations: RateLimiter;
}

export function oauthEndpoints(settings: Settings, deps: OAuthEndpointDeps): Middleware {
  const { engine, logger, authFailures, registrations, revocations } = deps;
  const oauth = settings.Mcp.OAuth;
  const parse = bodyParser({ enableTypes: ['form', 'json'], formLimit: '16kb', jsonLimit: '16kb' }) as Middleware;

  async function token(ctx: Context, body: Record<string, unknown>): Promise<void> {
    // As admission treats keys (gateway/admission.ts, ADR 7): once the address has spent its
    // failed-authentication budget, something that cannot be a code or refresh token is refused
    // at once, and one that can is still looked up, so a genuine code or refresh token from an
    // address that also sent junk is served; only a refused one is the 429.
    const ip = addressPartition(ctx.ip);
    const spent = await authFailures.spent(ip);
    const grantType = required(body, 'grant_type');
    const clientId = clientIdOf(ctx, body);
    const resource = param(body, 'resource');
    if (resource !== undefined && !isOurResource(resource, ctx, settings))
      throw new OAuthError(400, 'invalid_target', `Tokens here are for ${mcpResource(ctx, settings)} only.`);
    let request: OAuthTokenRequest;
    const presented = grantType === 'authorization_code' ? body.code : body.refresh_token;
    if (spent && !(typeof presented === 'string' && SECRET.test(presented))) await authFailures.check(ip);
    if (grantType === 'authorization_code') {
      request = {
        grant: 'authorization_code',
        codeHash: secretHash(required(body, 'code')),
        clientId,
        redirectUri: param(body, 'redirect_uri'),
        codeVerifier: required(body, 'code_verifier'),
        resource: resource?.replace(/\/$/, ''),
      };
    } else if (grantType === 'refresh_token') {
      request = {
        grant: 'refresh_token',
        refreshHash: secretHash(required(body, 'refresh_token')),
        clientId,
        resource: resource?.replace(/\/$/, ''),
      };
    } else {
      throw new OAuthError(400, 'unsupported_grant_type', 'grant_type must be authorization_code or refresh_token.');
    }
    const now = Date.now();
    const result = await engine.run({ kind: 'oauthToken', request, now, accessMs: oauth.AccessTokenMinutes * 60_000 });
    if (!result.ok) {
      if (spent) await authFailures.check(ip);
      await authFailures.consume(ip).catch(() => undefined);
      logger.info({ ip: ctx.ip, grantType, error: result.error }, 'OAuth token refused');
      throw new OAuthError(400, result.error, result.description);
    }
    logger.info({ ip: ctx.ip, grantType, grantId: result.grantId }, 'OAuth token issued');
    answer(ctx, 200, {
      access_token: result.accessToken,
      token_type: 'Bearer',
      expires_in: Math.max(1, Math.floor((result.expiresAt - now) / 1000)),
      refresh_token: result.refreshToken,
      scope: SCOPE,
    });
  }

  async function register(ctx: Context, body: Record<string, unknown>): Promise<void> {
    if (!oauth.AllowDynamicRegistration)
      throw new OAuthError(
        403,
        'access_denied',
        'Dynamic client registration is off on this server (Mcp:OAuth:AllowDynamicRegistration); use a Client ID Metadata Document.',
      );
    await registrations.consume(addressPartition(ctx.ip));
    if (!ctx.is('application/json'))
      throw new OAuthError(400, 'invalid_client_metadata', 'Send the client metadata as application/json.');
    let redirectUris: string[];
    try {
      redirectUris = checkRedirectUris(body.redirect_uris, oauth.RedirectSchemes);
    } catch (err) {
      if (err instanceof ClientProblem) throw new OAuthError(400, 'invalid_redirect_uri', err.message);
      throw err;
    }
    const grantTypes = body.grant_types ?? ['authorization_code', 'refresh_token'];
    if (
      !Array.isArray(grantTypes) ||
      !grantTypes.includes('authorization_code') ||
      grantTypes.some((g) => g !== 'authorization_code' && g !== 'refresh_token')
    )
      throw new OAuthError(400, 'invalid_client_metadata', 'grant_types may be authorization_code and refresh_token.');
    const responseTypes = body.response_types ?? ['code'];
    if (!Array.isArray(responseTypes) || responseTypes.some((r) => r !== 'code'))
      throw new OAuthError(400, 'invalid_client_metadata', 'response_types may only be code.');
    const clientId = `mcp_${randomBytes(16).toString('base64url')}`;
    const createdAt = Date.now();
    const name = clientDisplayName(body.client_name, 'Unnamed client');
    // Public clients only: whatever method was asked for, the answer says "none" (RFC 7591 section 3.2.1).
    const metadata = {
      client_id: clientId,
      client_id_issued_at: Math.floor(createdAt / 1000),
      client_name: name,
      redirect_uris: redirectUris,
      grant_types: grantTypes,
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: SCOPE,
    };
    // Stored once: the columns hold the id, name and redirect URIs; of the answer only what they
    // do not (the rest is this server's constants).
    const stored = await engine.run({
      kind: 'oauthRegister',
      client: { clientId, name, redirectUris, metadata: { grant_types: grantTypes }, createdAt },
      limits: { unusedMs: oauth.UnusedClientMinutes * 60_000, maxUnused: oauth.MaxUnusedClients },
    });
    if (stored === 'full') {
      logger.warn({ ip: ctx.ip, max: oauth.MaxUnusedClients }, 'OAuth registration refused: too many unused clients');
      throw new OAuthError(
        429,
        'temporarily_unavailable',
        `This server holds ${oauth.MaxUnusedClients} registered clients that have not completed an authorization, ` +
          `the most it keeps (Mcp:OAuth:MaxUnusedClients); each is removed ${oauth.UnusedClientMinutes} minutes after ` +
          'it registered unless it is used. Try again later, or use a Client ID Metadata Document.',
        { 'Retry-After': '60' },
      );
    }
    logger.info({ ip: ctx.ip, clientId }, 'OAuth client registered');
    answer(ctx, 201, metadata);
  }

  async function revoke(ctx: Context, body: Record<string, unknown>): Promise<void> {
    // Each request is an engine job whatever the token: bounded per address like registration.
    await revocations.consume(addressPartition(ctx.ip));
    const token = required(body, 'token');
    const clientId = clientIdOf(ctx, body);
    // An access token is a key (its hash as the keys table has it); anything else may be a refresh token.
    await engine.run({
      kind: 'oauthRevoke',
      tokenHash: keyHashOf(token) ?? secretHash(token),
      clientId,
      now: Date.now(),
    });
    answer(ctx, 200, {});
  }

  const routes: Record<string, (ctx: Context, body: Record<string, unknown>) => Promise<void>> = {
    [TOKEN_PATH]: token,
    [REGISTER_PATH]: register,
    [REVOKE_PATH]: revoke,
  };

  return async (ctx, next) => {
    const route = routes[ctx.path];
    if (!route) return next();
    // Public clients in a browser may call these (CORS); no cookie is ever read here.
    ctx.set('Access-Control-Allow-Origin', '*');
    if (ctx.method === 'OPTIONS') {
      ctx.set('Access-Control-Allow-Methods', 'POST');
      ctx.set('Access-Control-Allow-Headers', 'Content-Type, Authorization');
      ctx.set('Access-Control-Max-Age', '600');
      ctx.status = 204;
      return;
    }
    try {
      if (ctx.method !== 'POST') {
        ctx.set('Allow', 'POST');
        throw new OAuthError(405, 'invalid_request', `${ctx.path} takes POST only.`);
      }
      try {
        await parse(ctx, async () => {});
      } catch {
        throw new OAuthError(
          400,
          'invalid_request',
          'The request body could not be read (at most 16 KB of form or JSON).',
        );
      }
      const body = ctx.request.body;
      await route(
        ctx,
        body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {},
      );
    } catch (caught) {
      const err = asOAuthError(caught);
      if (!err) throw caught;
      answer(ctx, err.status, { error: err.code, error_description: err.message });
      ctx.set(err.headers);
    }
  };
}
