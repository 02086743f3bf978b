// The authorization endpoint (RFC 6749 section 4.1.1, OAuth 2.1): the page where a person,
// signed in on the web surface with the same users and passwords, sees which client asks to
// read the archive through /mcp, narrows the grant (which of their accounts, how long) and
// allows or denies it. Mounted on the web surface (gateway/web/routes.ts), so it has the
// session, its CSRF token and the page headers.
//
// Nothing is redirected to before the client and its redirect URI are known to belong together
// (exact string match against what the client registered or published): a wrong client or
// redirect URI is an error page here, never a redirect (RFC 6749 section 4.1.2.1), so the
// endpoint is no open redirector. Errors after that go back to the client, with its state.
import type Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import { newAuthorizationCode, CODE_CHALLENGE, secretHash } from '../../engine/index.js';
import type { EnginePool } from '../../engine/index.js';
import type { Settings } from '../../shared/config.js';
import type { MailAccountDto } from '../../shared/dto.js';
import { checkCsrf } from '../web/csrf.js';
import { PAGE_CSP, setPageHeaders } from '../web/headers.js';
import type { WebState } from '../web/session.js';
import { consentPage, type Chrome } from '../web/views.js';
import { addressPartition } from '../address.js';
import { ClientMetadataDocuments, ClientProblem, resolveClient, type ResolvedClient } from './clients.js';
import { AUTHORIZE_PATH } from './endpoints.js';
import { isOurResource, mcpResource, publicBase } from './urls.js';

/** A request that cannot be sent back to the client: shown to the person instead. */
export class AuthorizePageError extends Error {}

/** An OAuth error for the client, sent to its (checked) redirect URI. */
class RedirectError extends Error {
  constructor(
    readonly code: string,
    description: string,
  ) {
    super(description);
  }
}

/** The request's parameters after every check. */
interface AuthorizationRequest {
  client: ResolvedClient;
  redirectUri: string;
  state: string | undefined;
  codeChallenge: string;
  resource: string;
}

const MAX_STATE = 2048;

function one(params: Record<string, unknown>, name: string): string | undefined {
  const value = params[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') throw new AuthorizePageError(`The parameter ${name} was given more than once.`);
  return value;
}

/** The URL of the client's redirect URI with the answer's parameters added (its own query kept). */
export function redirectWith(redirectUri: string, params: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value);
  return url.href;
}

/** The CSP source a form may submit to, and so be redirected to: the redirect URI's origin or scheme. */
function formTarget(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
}

export interface AuthorizeDeps {
  settings: Settings;
  engine: EnginePool;
  logger: Logger;
  session: Middleware;
  form: Middleware;
  chrome: (ctx: Context & { state: WebState }) => Chrome;
  /** Client ID Metadata Documents, fetched with bounds and kept as their headers allow. */
  documents: ClientMetadataDocuments;
}

export function authorizeRoutes(router: Router<WebState>, deps: AuthorizeDeps): void {
  const { settings, engine, logger } = deps;
  const oauth = settings.Mcp.OAuth;
  const durations = [...new Set([1, 7, 30, 90, oauth.MaxGrantDays].filter((d) => d <= oauth.MaxGrantDays))].sort(
    (a, b) => a - b,
  );
  const defaultDays = Math.min(30, oauth.MaxGrantDays);

  /** Checks the client and its redirect URI (errors are pages), then the rest (errors go to the client). */
  async function read(ctx: Context, params: Record<string, unknown>): Promise<AuthorizationRequest> {
    let client: ResolvedClient;
    try {
      client = await resolveClient(one(params, 'client_id'), engine, deps.documents, addressPartition(ctx.ip));
    } catch (err) {
      if (err instanceof ClientProblem) throw new AuthorizePageError(err.message);
      throw err;
    }
    const redirectUri = one(params, 'redirect_uri');
    if (!redirectUri) throw new AuthorizePageError('The request does not say where to send the answer (redirect_uri).');
    if (!client.redirectUris.includes(redirectUri))
      throw new AuthorizePageError(
        `The redirect URI ${redirectUri} is not one that ${client.name} registered, so this request cannot be answered.`,
      );
    const state = one(params, 'state');
    if (state !== undefined && state.length > MAX_STATE)
      throw new AuthorizePageError('The state parameter is too long.');
    const request = { client, redirectUri, state };
    try {
      if (one(params, 'response_type') !== 'code')
        throw new RedirectError('unsupported_response_type', 'response_type must be code.');
      const codeChallenge = one(params, 'code_challenge');
      if (!codeChallenge || !CODE_CHALLENGE.test(codeChallenge))
        throw new RedirectError('invalid_request', 'PKCE is required: send code_challenge (S256, 43 characters).');
      if (one(params, 'code_challenge_method') !== 'S256')
        throw new RedirectError('invalid_request', 'code_challenge_method must be S256.');
      const resource = one(params, 'resource');
      if (resource !== undefined && !isOurResource(resource, ctx, settings))
        throw new RedirectError('invalid_target', `This server issues tokens for ${mcpResource(ctx, settings)} only.`);
      return { ...request, codeChallenge, resource: mcpResource(ctx, settings) };
    } catch (err) {
      if (!(err instanceof RedirectError)) throw err;
      ctx.redirect(
        redirectWith(redirectUri, {
          error: err.code,
          error_description: err.message,
          state,
          iss: publicBase(ctx, settings),
        }),
      );
      return Promise.reject(err);
    }
  }

  /** Runs `work` with the checked request; a RedirectError was already answered. */
  async function withRequest(
    ctx: Context,
    params: Record<string, unknown>,
    work: (request: AuthorizationRequest) => Promise<void>,
  ): Promise<void> {
    let request: AuthorizationRequest;
    try {
      request = await read(ctx, params);
    } catch (err) {
      if (err instanceof RedirectError) return;
      throw err;
    }
    await work(request);
  }

  async function accountsOf(ctx: Context & { state: WebState }): Promise<MailAccountDto[]> {
    const user = ctx.state.user!;
    return engine.run({
      kind: 'accounts',
      principal: { userId: user.id, username: user.username, isAdmin: user.isAdmin, keyId: 0, keyPrefix: '' },
    });
  }

  router.get(AUTHORIZE_PATH, deps.session, async (ctx) => {
    // A visitor who is not signed in goes to the sign-in page before the client is resolved: a
    // metadata document is fetched only for a person who can consent, so no anonymous request
    // makes this server fetch a URL (docs/security.md, "OAuth for MCP"). The request is checked
    // in full when the person comes back.
    if (!ctx.state.user) {
      ctx.status = 302;
      ctx.redirect(`/login?next=${encodeURIComponent(ctx.originalUrl)}`);
      return;
    }
    await withRequest(ctx, ctx.query as Record<string, unknown>, async (request) => {
      setPageHeaders(
        ctx,
        `${PAGE_CSP.replace("form-action 'self'", `form-action 'self' ${formTarget(request.redirectUri)}`)}`,
      );
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = consentPage(deps.chrome(ctx), {
        client: request.client,
        redirectUri: request.redirectUri,
        resource: request.resource,
        accounts: await accountsOf(ctx),
        durations,
        defaultDays,
        fields: {
          client_id: request.client.clientId,
          redirect_uri: request.redirectUri,
          state: request.state ?? '',
          code_challenge: request.codeChallenge,
          code_challenge_method: 'S256',
          response_type: 'code',
          resource: request.resource,
        },
      });
    });
  });

  router.post(AUTHORIZE_PATH, deps.session, deps.form, async (ctx) => {
    const body = (ctx.request.body ?? {}) as Record<string, unknown>;
    if (!ctx.state.user) {
      ctx.status = 303;
      ctx.redirect('/login');
      return;
    }
    checkCsrf(ctx);
    await withRequest(ctx, body, async (request) => {
      const user = ctx.state.user!;
      const iss = publicBase(ctx, settings);
      ctx.status = 303;
      if (body.decision !== 'allow') {
        logger.info({ user: user.username, client: request.client.clientId }, 'OAuth grant denied');
        ctx.redirect(
          redirectWith(request.redirectUri, {
            error: 'access_denied',
            error_description: 'The user denied the request.',
            state: request.state,
            iss,
          }),
        );
        return;
      }
      const days = Number(body.days);
      if (!durations.includes(days)) throw new AuthorizePageError('Choose how long the grant lasts from the list.');
      const chosen = body.scope_accounts === 'all' ? null : [body.accounts ?? []].flat().map(Number);
      if (chosen && (chosen.length === 0 || chosen.some((id) => !Number.isSafeInteger(id))))
        throw new AuthorizePageError('Choose at least one account, or all of them.');
      const now = Date.now();
      const code = newAuthorizationCode();
      const issued = await engine.run({
        kind: 'oauthIssueCode',
        actorId: user.id,
        now,
        maxGrants: settings.Web.MaxActiveKeysPerUser,
        code: {
          codeHash: secretHash(code),
          clientId: request.client.clientId,
          clientName: request.client.name,
          redirectUri: request.redirectUri,
          codeChallenge: request.codeChallenge,
          resource: request.resource,
          accountIds: chosen ? [...new Set(chosen)] : null,
          grantExpiresAt: now + days * 86_400_000,
          expiresAt: now + oauth.CodeLifetimeSeconds * 1000,
        },
      });
      if (issued === 'too many grants')
        throw new AuthorizePageError(
          `You already have ${settings.Web.MaxActiveKeysPerUser} active OAuth grants, the most allowed (Web:MaxActiveKeysPerUser); revoke one on the API Keys page first.`,
        );
      if (issued !== 'issued') throw new AuthorizePageError('You cannot grant access to an account you do not see.');
      logger.info(
        { user: user.username, client: request.client.clientId, days, accounts: chosen ?? 'all' },
        'OAuth grant approved',
      );
      ctx.redirect(redirectWith(request.redirectUri, { code, state: request.state, iss }));
    });
  });
}
