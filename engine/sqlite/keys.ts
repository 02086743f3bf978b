// API keys on a SQLite archive (SPEC.md, “API key (record kept by the service)” and “States and transitions”; the format and the rules are
// engine/rules/keys.ts). The plaintext exists once, in the return value of createKey.
import { pageWithin, type AuthResult, type KeyRow } from '../../shared/jobs.js';
import type { Db } from './open.js';
import type { CreatedKey } from '../store-contract.js';
import { prepared } from './statements.js';
import {
  accepted,
  generateKey,
  hashKey,
  KEY_PATTERN,
  KEY_PREFIX_LENGTH,
  LAST_USED_INTERVAL_MS,
  lastUsedDue,
  refusal,
  toRow,
  type RawKey,
} from '../rules/keys.js';
import { StoreError } from '../../shared/errors.js';
import { requireUser } from './users.js';
import { keyNameProblem, MAX_KEY_NAME_LENGTH, tooManyKeys } from '../../shared/key-name.js';

const SELECT_KEYS = `
  SELECT k.id, k.user_id, u.username, u.is_active, k.name, k.key_prefix, k.created_at,
         k.last_used_at, k.expires_at, k.revoked_at, g.client_id AS grant_client_id,
         g.client_name AS grant_client_name, g.account_ids AS grant_account_ids,
         g.expires_at AS grant_expires_at, g.revoked_at AS grant_revoked_at
  FROM api_keys k JOIN users u ON u.id = k.user_id LEFT JOIN oauth_grants g ON g.key_id = k.id`;

export { MAX_KEY_NAME_LENGTH };

export function createKey(
  db: Db,
  input: { username: string; name: string; expiresAt?: number | null; now?: number; maxActive?: number },
): CreatedKey {
  const user = requireUser(db, input.username);
  const name = input.name.trim();
  const problem = keyNameProblem(name);
  if (problem) throw new StoreError(problem);
  const now = input.now ?? Date.now();
  if (input.maxActive !== undefined) {
    const active = prepared(
      db,
      'SELECT count(*) FROM api_keys WHERE user_id = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)',
    )
      .pluck()
      .get(user.id, now) as number;
    if (active >= input.maxActive) throw new StoreError(tooManyKeys(user.username, input.maxActive));
  }
  const key = generateKey();
  const prefix = key.slice(0, KEY_PREFIX_LENGTH);
  const info = prepared(
    db,
    'INSERT INTO api_keys (user_id, name, key_prefix, key_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
  ).run(user.id, name, prefix, hashKey(key), now, input.expiresAt ?? null);
  const id = Number(info.lastInsertRowid);
  return { id, key, prefix, row: getKey(db, id, now)! };
}

export function getKey(db: Db, id: number, now = Date.now()): KeyRow | null {
  const row = prepared(db, `${SELECT_KEYS} WHERE k.id = ?`).get(id) as RawKey | undefined;
  return row ? toRow(row, now) : null;
}

export function listKeys(db: Db, options: { username?: string; now?: number } = {}): KeyRow[] {
  const now = options.now ?? Date.now();
  if (options.username !== undefined) {
    const user = requireUser(db, options.username);
    return (prepared(db, `${SELECT_KEYS} WHERE k.user_id = ? ORDER BY k.id`).all(user.id) as RawKey[]).map((r) =>
      toRow(r, now),
    );
  }
  return (prepared(db, `${SELECT_KEYS} ORDER BY u.username, k.id`).all() as RawKey[]).map((r) => toRow(r, now));
}

/**
 * One page of keys: a user's own (`userId`), or everyone's but one user's (`exceptUserId`), in
 * the order listKeys gives them.
 */
export function listKeysPage(
  db: Db,
  filter: { userId: number } | { exceptUserId: number },
  requestedPage: number | undefined,
  pageSize: number,
  now: number,
): { rows: KeyRow[]; total: number; page: number; pageSize: number } {
  const own = 'userId' in filter;
  const where = own ? 'k.user_id = ?' : 'k.user_id <> ?';
  const order = own ? 'k.id' : 'u.username, k.id';
  const userId = own ? filter.userId : filter.exceptUserId;
  const total = prepared(db, `SELECT count(*) FROM api_keys k WHERE ${where}`).pluck().get(userId) as number;
  const page = pageWithin(total, requestedPage, pageSize);
  const rows = prepared(db, `${SELECT_KEYS} WHERE ${where} ORDER BY ${order} LIMIT ? OFFSET ?`).all(
    userId,
    pageSize,
    (page - 1) * pageSize,
  ) as RawKey[];
  return { rows: rows.map((r) => toRow(r, now)), total, page, pageSize };
}

/**
 * Finds a key by numeric id, by its prefix, or by the whole key (looked up by its hash). An
 * ambiguous prefix is an error. No message ever repeats a whole key.
 */
export function findKey(db: Db, idOrPrefix: string, now = Date.now()): KeyRow {
  const text = idOrPrefix.trim();
  if (/^\d+$/.test(text)) {
    const row = getKey(db, Number(text), now);
    if (!row) throw new StoreError(`No API key with id ${text}.`);
    return row;
  }
  if (KEY_PATTERN.test(text)) {
    const id = prepared(db, 'SELECT id FROM api_keys WHERE key_hash = ?').pluck().get(hashKey(text)) as
      number | undefined;
    if (id === undefined)
      throw new StoreError(`No API key matches the key given (prefix ${text.slice(0, KEY_PREFIX_LENGTH)}).`);
    return getKey(db, id, now)!;
  }
  const rows = prepared(db, `${SELECT_KEYS} WHERE k.key_prefix = ?`).all(text) as RawKey[];
  if (rows.length === 0) throw new StoreError(`No API key with prefix "${text}".`);
  if (rows.length > 1) throw new StoreError(`Prefix "${text}" names ${rows.length} keys; revoke by id instead.`);
  return toRow(rows[0]!, now);
}

/** Revokes a key; revoking twice keeps the first RevokedAt. Returns the key as it now is. */
export function revokeKey(db: Db, id: number, now = Date.now()): KeyRow {
  prepared(db, 'UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(now, id);
  const row = getKey(db, id, now);
  if (!row) throw new StoreError(`No API key with id ${id}.`);
  return row;
}

interface AuthRow {
  id: number;
  key_prefix: string;
  expires_at: number | null;
  revoked_at: number | null;
  last_used_at: number | null;
  user_id: number;
  username: string;
  is_admin: number;
  is_active: number;
  grant_id: number | null;
  grant_account_ids: unknown;
}

/**
 * Resolves a key hash to its principal, checking revocation, expiry and the owner on every
 * call so that any change takes effect on the very next request. Refreshes LastUsedAt at most
 * once per LAST_USED_INTERVAL_MS; the conditional UPDATE keeps that true across processes.
 */
export function authenticate(db: Db, keyHash: string, now: number): AuthResult {
  const row = prepared(
    db,
    `SELECT k.id, k.key_prefix, k.expires_at, k.revoked_at, k.last_used_at,
              u.id AS user_id, u.username, u.is_admin, u.is_active,
              g.id AS grant_id, g.account_ids AS grant_account_ids
       FROM api_keys k JOIN users u ON u.id = k.user_id LEFT JOIN oauth_grants g ON g.key_id = k.id
      WHERE k.key_hash = ?`,
  ).get(keyHash) as AuthRow | undefined;
  const refused = refusal(row, now);
  if (refused || !row) return refused ?? { ok: false, reason: 'unknown' };
  if (lastUsedDue(row.last_used_at, now)) {
    prepared(
      db,
      'UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)',
    ).run(now, row.id, now - LAST_USED_INTERVAL_MS);
  }
  return accepted(row);
}
