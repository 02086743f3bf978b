// Bearer API keys (SPEC.md section 5). The key's hash is looked up by a worker on every
// request, so revocation, expiry and deactivation apply to the very next request in every
// process. Cookies are never read here. Admission (admission.ts) decides when a key is checked.
import type { Middleware } from 'koa';
import { createHash } from 'node:crypto';
import type { EnginePool } from '../engine/pool.js';
import type { AuthFailure, Principal } from '../shared/jobs.js';
import { Problem } from './problem.js';

const KEY = /^ma_[A-Za-z0-9_-]{43}$/;
const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

const REASONS: Record<AuthFailure, string> = {
  unknown: 'The API key is not valid.',
  expired: 'The API key has expired.',
  revoked: 'The API key has been revoked.',
  inactive: "The API key's owner is not active.",
};

/** The token of an `Authorization: Bearer …` header, if there is one. */
export function bearerToken(header: string | undefined): string | undefined {
  return header ? BEARER.exec(header)?.[1] : undefined;
}

/** Why a request was refused, as metrics count it (never the key or its prefix). */
export type AuthFailureReason = 'missing' | 'malformed' | AuthFailure;
export const AUTH_FAILURE_REASONS: readonly AuthFailureReason[] = [
  'missing',
  'malformed',
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

function unauthorized(reason: AuthFailureReason, detail: string, tokenPresented: boolean): Unauthorized {
  return new Unauthorized(reason, detail, {
    'WWW-Authenticate': tokenPresented ? 'Bearer error="invalid_token"' : 'Bearer',
  });
}

/**
 * The 401 for a request that presents no usable bearer token (none, or another scheme), found
 * without asking the engine.
 */
export function missingKey(header: string | undefined): Problem {
  if (!header) return unauthorized('missing', 'An API key is required: send Authorization: Bearer <key>.', false);
  return unauthorized('malformed', 'The Authorization header must be of the form Bearer <key>.', false);
}

/** Resolves a bearer token to its key's principal, or rejects with the 401 that says why. */
export async function verifyKey(engine: EnginePool, token: string): Promise<Principal> {
  if (!KEY.test(token))
    throw unauthorized(
      'malformed',
      'The API key is malformed: expected ma_ followed by 43 URL-safe base64 characters.',
      true,
    );
  const hash = createHash('sha256').update(token, 'utf8').digest('hex');
  const result = await engine.run({ kind: 'authenticate', keyHash: hash, now: Date.now() });
  if (!result.ok) throw unauthorized(result.reason, REASONS[result.reason], true);
  return result.principal;
}

export interface AuthState {
  /** Set by admission (admission.ts) when the request carried a genuine key. */
  principal?: Principal;
}

/** The caller's principal, or the 401 for a request that brought no key. */
export function principalOf(ctx: { state: AuthState; get(field: string): string }): Principal {
  if (ctx.state.principal) return ctx.state.principal;
  throw missingKey(ctx.get('Authorization') || undefined);
}

/** Route guard: answers 401 unless admission found a genuine key. */
export const requireApiKey: Middleware<AuthState> = async (ctx, next) => {
  principalOf(ctx);
  await next();
};
