// Bearer API keys (SPEC.md section 5). The key's hash is looked up by a worker on every
// request, so revocation, expiry and deactivation apply to the very next request in every
// process. Cookies are never read here.
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

export async function authenticate(engine: EnginePool, header: string | undefined): Promise<Principal> {
  if (!header) throw unauthorized('missing', 'An API key is required: send Authorization: Bearer <key>.', false);
  const token = bearerToken(header);
  if (!token) throw unauthorized('malformed', 'The Authorization header must be of the form Bearer <key>.', false);
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
  principal: Principal;
}

/** Puts the caller's principal on ctx.state, or answers 401. */
export function requireApiKey(engine: EnginePool): Middleware<AuthState> {
  return async (ctx, next) => {
    ctx.state.principal = await authenticate(engine, ctx.get('Authorization') || undefined);
    await next();
  };
}
