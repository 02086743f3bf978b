// API keys as both stores keep them (SPEC.md, "Authentication"): a key is `ma_` + 43 URL-safe
// base64 characters of 32 random bytes; only its SHA-256 (hex) and its first 11 characters are
// stored. Here: the format, the hash, a key row's status and listing, and whether a key is
// accepted now; each store only reads and writes its rows.
import { createHash, randomBytes } from 'node:crypto';
import type { AuthResult, KeyRow, KeyStatus } from '../../shared/jobs.js';
import { iso } from './time.js';
import { parseAccountIds } from './oauth.js';

export const KEY_PATTERN = /^ma_[A-Za-z0-9_-]{43}$/;
export const KEY_PREFIX_LENGTH = 11;
/** LastUsedAt is written at most this often per key. */
export const LAST_USED_INTERVAL_MS = 5 * 60 * 1000;

export function generateKey(): string {
  return `ma_${randomBytes(32).toString('base64url')}`;
}

export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export type { KeyRow, KeyStatus };

export interface RawKey {
  id: number;
  user_id: number;
  username: string;
  is_active: number;
  name: string;
  key_prefix: string;
  created_at: number;
  last_used_at: number | null;
  expires_at: number | null;
  revoked_at: number | null;
  /** The OAuth grant whose access token the key is (LEFT JOIN; null for an ordinary key). */
  grant_client_id?: string | null;
  grant_client_name?: string | null;
  grant_account_ids?: unknown;
  grant_expires_at?: number | null;
  grant_revoked_at?: number | null;
}

export function statusOf(
  r: { revoked_at: number | null; expires_at: number | null; is_active: number },
  now: number,
): KeyStatus {
  if (r.revoked_at !== null) return 'revoked';
  if (r.expires_at !== null && r.expires_at <= now) return 'expired';
  if (r.is_active !== 1) return 'owner inactive';
  return 'active';
}

export function toRow(r: RawKey, now: number): KeyRow {
  const row: KeyRow = {
    id: r.id,
    userId: r.user_id,
    username: r.username,
    name: r.name,
    prefix: r.key_prefix,
    createdAt: iso(r.created_at)!,
    lastUsedAt: iso(r.last_used_at),
    expiresAt: iso(r.expires_at),
    revokedAt: iso(r.revoked_at),
    status: statusOf(r, now),
  };
  if (typeof r.grant_client_id !== 'string' || r.grant_expires_at == null) return row;
  // An OAuth grant is listed by the grant: its access token lapses and is refreshed within it.
  const grantEnd = Number(r.grant_expires_at);
  row.oauth = {
    clientId: r.grant_client_id,
    clientName: r.grant_client_name ?? '',
    accountIds: parseAccountIds(r.grant_account_ids),
    expiresAt: iso(grantEnd)!,
  };
  row.expiresAt = iso(grantEnd);
  if (r.grant_revoked_at != null && r.revoked_at === null) row.status = 'revoked';
  else if (row.status === 'expired' && grantEnd > now) row.status = 'active';
  return row;
}

/** Why a key row is refused now (either store's row), or null when it is accepted. */
export function refusal(
  row:
    { revoked_at: number | null; expires_at: number | null; is_active: number; grant_id?: number | null } | undefined,
  now: number,
): AuthResult | null {
  if (!row) return { ok: false, reason: 'unknown' };
  const status = statusOf(row, now);
  const oauth = row.grant_id != null ? { oauth: true as const } : {};
  if (status === 'revoked') return { ok: false, reason: 'revoked', ...oauth };
  if (status === 'expired') return { ok: false, reason: 'expired', ...oauth };
  if (status === 'owner inactive') return { ok: false, reason: 'inactive', ...oauth };
  return null;
}

/** Mail Archiver's rule, kept by both stores: LastUsedAt is written when unset or older than five minutes. */
export const lastUsedDue = (lastUsedAt: number | null, now: number): boolean =>
  lastUsedAt === null || now - lastUsedAt >= LAST_USED_INTERVAL_MS;

/** The principal of an accepted key, from its row (either store's columns, same names). */
export function accepted(row: {
  id: number;
  key_prefix: string;
  user_id: number;
  username: string;
  is_admin: number;
  grant_id?: number | null;
  grant_account_ids?: unknown;
}): AuthResult {
  return {
    ok: true,
    principal: {
      userId: row.user_id,
      username: row.username,
      isAdmin: row.is_admin === 1,
      keyId: row.id,
      keyPrefix: row.key_prefix,
      ...(row.grant_id != null
        ? { oauth: { grantId: row.grant_id, accountIds: parseAccountIds(row.grant_account_ids) } }
        : {}),
    },
  };
}

/** What a key form answers when its user may not act or the key is not theirs. */
export const forbidden = { ok: false, reason: 'forbidden', message: 'Your account is not active.' } as const;
export const notFound = { ok: false, reason: 'not-found', message: 'There is no such API key.' } as const;
