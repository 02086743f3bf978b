// The OAuth rules both stores keep (docs/mcp.md, "OAuth"; docs/security.md): what a code or a
// refresh token must be to be exchanged, PKCE, and how a grant's key is named. Only SQL differs
// between engine/sqlite/oauth.ts (SQLite) and engine/postgres/oauth.ts (PostgreSQL).
//
// A grant is one row of the keys table (its current access token, a key like any other) and one
// row of our own oauth_grants. A refresh rotates the key's hash in place, so the grant stays one
// row on the API Keys page, and revoking that row (here, in the CLI or in Mail Archiver) ends
// the grant: a refresh of a grant whose key is revoked is refused.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { OAuthTokenResult } from '../../shared/jobs.js';
import { MAX_KEY_NAME_LENGTH, UNPRINTABLE } from '../../shared/key-name.js';

/** Refresh tokens: `mar_` and 43 URL-safe base64 characters (32 random bytes). */
export const newRefreshToken = (): string => `mar_${randomBytes(32).toString('base64url')}`;

/** Authorization codes: `mac_` and 43 URL-safe base64 characters. */
export const newAuthorizationCode = (): string => `mac_${randomBytes(32).toString('base64url')}`;

/** Codes and refresh tokens are stored as their SHA-256 only, like keys. */
export const secretHash = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('hex');

/** RFC 7636 section 4.1: 43 to 128 unreserved characters. */
export const CODE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
/** An S256 challenge: base64url of a SHA-256, 43 characters. */
export const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** PKCE S256 (RFC 7636 section 4.6), compared in constant time. */
export function pkceMatches(verifier: string, challenge: string): boolean {
  if (!CODE_VERIFIER.test(verifier)) return false;
  const computed = Buffer.from(createHash('sha256').update(verifier, 'ascii').digest('base64url'));
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}

/** What the key of a grant is called: the keys page and Mail Archiver show it. */
export const OAUTH_KEY_PREFIX = 'OAuth: ';

/** A client's name as it may be shown and stored: printable, trimmed, bounded. It is the client's own word. */
export function clientDisplayName(name: unknown, fallback: string): string {
  const text = typeof name === 'string' ? name.replace(new RegExp(UNPRINTABLE.source, 'gu'), '').trim() : '';
  return (text || fallback).slice(0, 60);
}

export const grantKeyName = (clientName: string): string =>
  `${OAUTH_KEY_PREFIX}${clientName}`.slice(0, MAX_KEY_NAME_LENGTH);

export const invalidGrant = (description: string): OAuthTokenResult => ({
  ok: false,
  error: 'invalid_grant',
  description,
});

/** A stored code as either store reads it. */
export interface CodeRow {
  user_id: number;
  client_id: string;
  redirect_uri: string;
  code_challenge: string;
  resource: string;
  expires_at: number;
  used_at: number | null;
  /** The grant the code was exchanged for, once it was. */
  grant_id: number | null;
}

/**
 * Why a code cannot be exchanged (RFC 6749 section 4.1.3, RFC 7636 section 4.6, RFC 8707), or
 * null. A used code is refused here; the store then also revokes the grant it was exchanged
 * for (section 4.1.2: a code used twice means it leaked).
 */
export function codeRefusal(
  row: CodeRow | undefined,
  request: { clientId: string; redirectUri: string | undefined; codeVerifier: string; resource: string | undefined },
  now: number,
): OAuthTokenResult | null {
  if (!row) return invalidGrant('The authorization code is not valid.');
  if (row.used_at !== null)
    return invalidGrant(
      row.grant_id !== null
        ? 'The authorization code has already been used; the grant it was exchanged for is now revoked, as a code used twice may have leaked. Sign in again to connect.'
        : 'The authorization code has already been used.',
    );
  if (row.expires_at <= now) return invalidGrant('The authorization code has expired.');
  if (row.client_id !== request.clientId) return invalidGrant('The authorization code was issued to another client.');
  if (request.redirectUri !== row.redirect_uri)
    return invalidGrant('redirect_uri must be the one sent with the authorization request.');
  if (!pkceMatches(request.codeVerifier, row.code_challenge))
    return invalidGrant('The code_verifier does not match the code_challenge of the authorization request.');
  if (request.resource !== undefined && request.resource !== row.resource)
    return { ok: false, error: 'invalid_target', description: `The code was issued for the resource ${row.resource}.` };
  return null;
}

/** A grant and its current key as either store reads them for a refresh. */
export interface RefreshRow {
  grant_id: number;
  client_id: string;
  resource: string;
  used_at: number | null;
  grant_expires_at: number;
  grant_revoked_at: number | null;
  key_revoked_at: number | null;
  user_active: number;
}

/**
 * Why a refresh token cannot be exchanged, or null. `reused` tells the store to revoke the
 * whole grant: a rotated token presented again means two parties hold it (OAuth 2.1 section 4.3.1).
 */
export function refreshRefusal(
  row: RefreshRow | undefined,
  request: { clientId: string; resource: string | undefined },
  now: number,
): { result: OAuthTokenResult; reused: boolean } | null {
  const no = (description: string, reused = false) => ({ result: invalidGrant(description), reused });
  if (!row) return no('The refresh token is not valid.');
  if (row.client_id !== request.clientId) return no('The refresh token was issued to another client.');
  if (row.used_at !== null)
    return no('The refresh token was already used; the grant is revoked. Sign in again to connect.', true);
  if (row.grant_revoked_at !== null || row.key_revoked_at !== null) return no('The grant has been revoked.');
  if (row.grant_expires_at <= now) return no('The grant has expired. Sign in again to connect.');
  if (row.user_active !== 1) return no("The grant's user is not active.");
  if (request.resource !== undefined && request.resource !== row.resource)
    return {
      result: { ok: false, error: 'invalid_target', description: `The grant is for the resource ${row.resource}.` },
      reused: false,
    };
  return null;
}

/** An access token's expiry: its lifetime, but never past the grant's end. */
export const accessExpiry = (now: number, accessMs: number, grantExpiresAt: number): number =>
  Math.min(now + accessMs, grantExpiresAt);

/** The grant's accounts as stored (JSON text or jsonb), or null for all. */
export function parseAccountIds(value: unknown): number[] | null {
  if (value === null || value === undefined) return null;
  const list: unknown = typeof value === 'string' ? JSON.parse(value) : value;
  return Array.isArray(list) ? list.filter((v): v is number => Number.isSafeInteger(v)) : null;
}

/** Whether the actor is active and may read every chosen account (null: all they see). */
export function consentAllowed(
  user: { isActive: boolean; isAdmin: boolean } | null,
  chosen: number[] | null,
  visible: number[] | null,
): boolean {
  if (!user || !user.isActive) return false;
  if (chosen === null) return true;
  return chosen.length > 0 && (visible === null || chosen.every((id) => visible.includes(id)));
}

/**
 * The accounts a viewer may read, given those its user may (`assigned`, null for every account):
 * an OAuth grant narrowed to some accounts sees those of them the user still may.
 */
export function narrowedToGrant(
  assigned: readonly number[] | null,
  only: readonly number[] | null | undefined,
): number[] | null {
  if (!only) return assigned && [...assigned];
  return (assigned ?? only).filter((id) => only.includes(id));
}
