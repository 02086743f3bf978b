// Bearer API keys (SPEC.md, “Authentication”). The key's hash is looked up by a worker on every
// request, so revocation, expiry and deactivation apply to the very next request in every
// process. Cookies are never read here. A KeyCheck (below) runs a request's jobs and looks its
// key up with the first of them; admission (admission.ts) decides what the outcome costs.
import type { Middleware } from 'koa';
import { createHash } from 'node:crypto';
import { EngineOverloaded, WARM_UP_PRINCIPAL, type EnginePool } from '../engine/index.js';
import {
  sessionAuth,
  type AuthFailure,
  type AuthResult,
  type Job,
  type JobResult,
  type OwnedKind,
  type Principal,
  type SessionClaim,
  type UnownedJob,
} from '../shared/jobs.js';
import { Problem } from './problem.js';

const KEY = /^ma_[A-Za-z0-9_-]{43}$/;
const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

const REASONS: Record<AuthFailure, string> = {
  unknown: 'The API key is not valid.',
  expired: 'The API key has expired.',
  revoked: 'The API key has been revoked.',
  inactive: "The API key's owner is not active.",
};

/** The same refusals for an OAuth grant's access token, which its holder never saw as a key. */
const GRANT_REASONS: Record<AuthFailure, string> = {
  unknown: 'The access token is not valid.',
  expired: 'The OAuth access token has expired; get a new one with the refresh token.',
  revoked: 'The OAuth grant behind this access token has been revoked; sign in again to connect.',
  inactive: "The OAuth grant's user is not active.",
};

/** An OAuth access token is for /mcp only (RFC 8707); elsewhere it is refused with this. */
export const WRONG_RESOURCE = 'This token was issued by OAuth for the MCP server (/mcp) only; use an API key here.';

/** The token of an `Authorization: Bearer …` header, if there is one. */
export function bearerToken(header: string | undefined): string | undefined {
  return header ? BEARER.exec(header)?.[1] : undefined;
}

/** Why a request was refused, as metrics count it (never the key or its prefix). */
export type AuthFailureReason = 'missing' | 'malformed' | 'audience' | AuthFailure;
export const AUTH_FAILURE_REASONS: readonly AuthFailureReason[] = [
  'missing',
  'malformed',
  'audience',
  'unknown',
  'expired',
  'revoked',
  'inactive',
];

/** A 401 that carries its reason, so the request metrics can count it without parsing text. */
export class Unauthorized extends Problem {
  constructor(
    readonly reason: AuthFailureReason,
    detail: string,
    headers: Record<string, string>,
  ) {
    super(401, detail, headers);
  }
}

/** The realm of every challenge: one protection space for /api and /mcp alike. */
export const REALM = 'mail-archive';

/**
 * The RFC 6750 challenge. A request that sent no token gets none of the error parameters
 * (section 3.1); one whose token was refused gets `invalid_token` and the reason in words, which
 * MCP bridges and OAuth-aware clients print, instead of reading a bare 401 as "OAuth needed"
 * (docs/mcp.md, "When a key is refused"). The reasons are plain ASCII without quotes, as a
 * quoted-string needs. oauth-metadata.ts adds `resource_metadata` where the URL is known.
 */
function unauthorized(reason: AuthFailureReason, detail: string, tokenPresented: boolean): Unauthorized {
  const challenge = tokenPresented
    ? `Bearer realm="${REALM}", error="invalid_token", error_description="${detail}"`
    : `Bearer realm="${REALM}"`;
  return new Unauthorized(reason, detail, { 'WWW-Authenticate': challenge });
}

/**
 * The 401 for a request that presents no usable bearer token (none, or another scheme), found
 * without asking the engine.
 */
export function missingKey(header: string | undefined): Problem {
  if (!header) return unauthorized('missing', 'An API key is required: send Authorization: Bearer <key>.', false);
  return unauthorized('malformed', 'The Authorization header must be of the form Bearer <key>.', false);
}

/** The SHA-256 (hex) the engine looks a key up by; undefined for a malformed key. */
export function keyHashOf(token: string): string | undefined {
  return KEY.test(token) ? createHash('sha256').update(token, 'utf8').digest('hex') : undefined;
}

/** The 401 for a bearer token that cannot be a key, found without asking the engine. */
export const malformedKey = (): Unauthorized =>
  unauthorized('malformed', 'The API key is malformed: expected ma_ followed by 43 URL-safe base64 characters.', true);

/** The 401 for an OAuth access token presented to another resource than /mcp. */
export const wrongResource = (): Unauthorized => unauthorized('audience', WRONG_RESOURCE, true);

/** The 401 for a key the engine refused, saying why. */
export const refusedKey = (reason: AuthFailure, oauth = false): Unauthorized =>
  unauthorized(reason, (oauth ? GRANT_REASONS : REASONS)[reason], true);

/**
 * The key a request carries, and the one way its jobs reach the engine: every job the request
 * runs as the key's principal goes through run(). The first carries the key check with it (one
 * crossing to a worker thread: an AuthedJob); later ones run as the principal it found.
 * `settle` (admission.ts) turns the check's outcome into the principal, charging the key's
 * budget, or into the answer to give instead (401, 429); a job's result is returned only after
 * that.
 */
export class KeyCheck {
  #checked: Promise<Principal> | undefined;
  #principal: Principal | undefined;

  /**
   * `credential`: the key's SHA-256, or a signed-in web session's claim (the reading pages,
   * gateway/web/mail-routes.ts), checked in the worker as a `sessionUser` job checks it.
   */
  constructor(
    private readonly engine: EnginePool,
    private readonly credential: string | SessionClaim,
    private readonly settle: (auth: AuthResult) => Promise<Principal>,
  ) {}

  get #credential(): { keyHash: string } | { session: SessionClaim } {
    return typeof this.credential === 'string' ? { keyHash: this.credential } : { session: this.credential };
  }

  /**
   * The gateway's own warm-up request (warm-up.ts): no key to look up, its jobs run as the
   * engine's WARM_UP_PRINCIPAL, and nothing it reads is recorded in the access log.
   */
  static warmUp(engine: EnginePool): KeyCheck {
    const key = new KeyCheck(engine, '', () => Promise.resolve(WARM_UP_PRINCIPAL));
    key.#principal = WARM_UP_PRINCIPAL;
    key.#checked = Promise.resolve(WARM_UP_PRINCIPAL);
    return key;
  }

  /** False for the warm-up request's check: what its jobs read goes in no access log. */
  get recorded(): boolean {
    return this.#principal !== WARM_UP_PRINCIPAL;
  }

  /** The key's principal, once a check found it genuine and admission charged it. */
  get principal(): Principal | undefined {
    return this.#principal;
  }

  /**
   * True while the key has not been looked up: no job carried the check (none was sent, or the
   * pool refused it unstarted) and check() was not called.
   */
  get unchecked(): boolean {
    return this.#checked === undefined;
  }

  /** Runs a job as the key's principal; the first one checks the key in the same job. */
  async run<K extends OwnedKind>(job: UnownedJob<K>): Promise<JobResult<K>> {
    if (this.#checked) {
      const principal = await this.#checked;
      return this.engine.run({ ...job, principal } as Job<K>);
    }
    const sent = this.engine.runAuthed<K>({ kind: 'authed', ...this.#credential, now: Date.now(), job });
    const checked = sent.then(
      (out) => this.#settled(out.auth),
      (err: unknown) => {
        // Refused before it started: nothing was looked up, so the check is still to be made.
        if (err instanceof EngineOverloaded) this.#checked = undefined;
        throw err;
      },
    );
    this.#checked = checked;
    await checked;
    const out = await sent;
    if ('error' in out) throw out.error;
    if ('result' in out) return out.result;
    throw new Error('unreachable: settle answers a refused key with its 401');
  }

  /** The key's principal, looking the key up on its own when no job has carried the check. */
  check(): Promise<Principal> {
    if (!this.#checked) {
      const credential = this.credential;
      const auth: Promise<AuthResult> =
        typeof credential === 'string'
          ? this.engine.run({ kind: 'authenticate', keyHash: credential, now: Date.now() })
          : this.engine.run({ kind: 'sessionUser', ...credential }).then(sessionAuth);
      this.#checked = auth.then((outcome) => this.#settled(outcome));
    }
    return this.#checked;
  }

  async #settled(auth: AuthResult): Promise<Principal> {
    this.#principal = await this.settle(auth);
    return this.#principal;
  }
}

export interface AuthState {
  /** Set by admission (admission.ts) when the request carries a bearer token. */
  key?: KeyCheck;
}

/** The request's key, or the 401 for a request that brought none. */
export function keyOf(ctx: { state: AuthState; get(field: string): string }): KeyCheck {
  if (ctx.state.key) return ctx.state.key;
  throw missingKey(ctx.get('Authorization') || undefined);
}

/** Route guard: answers 401 unless the request brought a key (admission checks it). */
export const requireApiKey: Middleware<AuthState> = async (ctx, next) => {
  keyOf(ctx);
  await next();
};
