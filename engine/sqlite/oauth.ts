// OAuth grants on a SQLite archive (migration 7); the rules are engine/rules/oauth.ts's, shared with
// the PostgreSQL store (engine/postgres/oauth.ts).
import type {
  OAuthClient,
  OAuthCodeInput,
  OAuthRegisterLimits,
  OAuthRegisterResult,
  OAuthTokenRequest,
  OAuthTokenResult,
} from '../../shared/jobs.js';
import type { Db } from './open.js';
import { prepared } from './statements.js';
import {
  accessExpiry,
  codeRefusal,
  consentAllowed,
  grantKeyName,
  newRefreshToken,
  refreshRefusal,
  secretHash,
  type CodeRow,
  type RefreshRow,
} from '../rules/oauth.js';
import { visibleAccountIds } from './accounts.js';
import { generateKey, hashKey, KEY_PREFIX_LENGTH } from '../rules/keys.js';
import { getUser } from './users.js';

export function getOAuthClient(db: Db, clientId: string): OAuthClient | null {
  const row = prepared(db, 'SELECT * FROM oauth_clients WHERE client_id = ?').get(clientId) as
    { client_id: string; name: string; redirect_uris: string; metadata: string; created_at: number } | undefined;
  if (!row) return null;
  return {
    clientId: row.client_id,
    name: row.name,
    redirectUris: JSON.parse(row.redirect_uris) as string[],
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    createdAt: row.created_at,
  };
}

/**
 * Registers a client unless the clients that never completed an authorization are already at
 * `limits.maxUnused` (docs/mcp.md, "OAuth"). Those older than `limits.unusedMs` are pruned first:
 * a client "completed an authorization" once a code was issued to it (a code row, or the grant
 * it became). A registration flood thus holds at most that many rows, for that long.
 */
export function registerOAuthClient(db: Db, client: OAuthClient, limits: OAuthRegisterLimits): OAuthRegisterResult {
  return db
    .transaction((): OAuthRegisterResult => {
      prepared(
        db,
        `DELETE FROM oauth_clients WHERE created_at < ?
            AND NOT EXISTS (SELECT 1 FROM oauth_codes c WHERE c.client_id = oauth_clients.client_id)
            AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = oauth_clients.client_id)`,
      ).run(client.createdAt - limits.unusedMs);
      const unused = prepared(
        db,
        `SELECT count(*) FROM oauth_clients o
          WHERE NOT EXISTS (SELECT 1 FROM oauth_codes c WHERE c.client_id = o.client_id)
            AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = o.client_id)`,
      )
        .pluck()
        .get() as number;
      if (unused >= limits.maxUnused) return 'full';
      prepared(
        db,
        'INSERT INTO oauth_clients (client_id, name, redirect_uris, metadata, created_at) VALUES (?, ?, ?, ?, ?)',
      ).run(
        client.clientId,
        client.name,
        JSON.stringify(client.redirectUris),
        JSON.stringify(client.metadata),
        client.createdAt,
      );
      return 'registered';
    })
    .immediate();
}

export function issueOAuthCode(
  db: Db,
  actorId: number,
  code: OAuthCodeInput,
  now: number,
  maxGrants: number,
): 'issued' | 'refused' | 'too many grants' {
  const user = getUser(db, actorId);
  const visible = user ? visibleAccountIds(db, { userId: user.id, isAdmin: user.isAdmin }) : null;
  if (!consentAllowed(user, code.accountIds, visible)) return 'refused';
  const live = prepared(
    db,
    `SELECT count(*) FROM oauth_grants g JOIN api_keys k ON k.id = g.key_id
      WHERE g.user_id = ? AND g.revoked_at IS NULL AND k.revoked_at IS NULL AND g.expires_at > ?`,
  )
    .pluck()
    .get(actorId, now) as number;
  if (live >= maxGrants) return 'too many grants';
  // Codes live a minute; those long past are dropped here rather than by a timer.
  prepared(db, 'DELETE FROM oauth_codes WHERE expires_at < ?').run(now - 86_400_000);
  prepared(
    db,
    `INSERT INTO oauth_codes (code_hash, user_id, client_id, client_name, redirect_uri, code_challenge, resource,
                              account_ids, grant_expires_at, expires_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    code.codeHash,
    actorId,
    code.clientId,
    code.clientName,
    code.redirectUri,
    code.codeChallenge,
    code.resource,
    code.accountIds === null ? null : JSON.stringify(code.accountIds),
    code.grantExpiresAt,
    code.expiresAt,
  );
  return 'issued';
}

/** Ends a grant: the grant row and its key, at once. */
function revokeGrant(db: Db, grantId: number, now: number): void {
  prepared(db, 'UPDATE oauth_grants SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?').run(now, grantId);
  prepared(
    db,
    'UPDATE api_keys SET revoked_at = ? WHERE id = (SELECT key_id FROM oauth_grants WHERE id = ?) AND revoked_at IS NULL',
  ).run(now, grantId);
}

/** A new access token into the grant's key row (its hash, prefix and expiry), and a new refresh token. */
function rotate(db: Db, grantId: number, keyId: number, expiresAt: number, now: number) {
  const accessToken = generateKey();
  prepared(db, 'UPDATE api_keys SET key_hash = ?, key_prefix = ?, expires_at = ? WHERE id = ?').run(
    hashKey(accessToken),
    accessToken.slice(0, KEY_PREFIX_LENGTH),
    expiresAt,
    keyId,
  );
  const refreshToken = newRefreshToken();
  prepared(db, 'INSERT INTO oauth_refresh_tokens (token_hash, grant_id, created_at) VALUES (?, ?, ?)').run(
    secretHash(refreshToken),
    grantId,
    now,
  );
  return { ok: true as const, accessToken, refreshToken, expiresAt, grantId };
}

export function exchangeOAuthToken(
  db: Db,
  request: OAuthTokenRequest,
  now: number,
  accessMs: number,
): OAuthTokenResult {
  return db
    .transaction((): OAuthTokenResult => {
      if (request.grant === 'authorization_code') {
        const row = prepared(db, 'SELECT * FROM oauth_codes WHERE code_hash = ?').get(request.codeHash) as
          | (CodeRow & {
              client_name: string;
              account_ids: string | null;
              grant_expires_at: number;
              grant_id: number | null;
            })
          | undefined;
        const refused = codeRefusal(row, request, now);
        if (row && refused) {
          // A code presented again, or with a wrong verifier, is spent; a second use ends what the first got.
          if (row.used_at !== null && row.grant_id !== null) revokeGrant(db, row.grant_id, now);
          prepared(db, 'UPDATE oauth_codes SET used_at = coalesce(used_at, ?) WHERE code_hash = ?').run(
            now,
            request.codeHash,
          );
        }
        if (refused || !row) return refused!;
        const expiresAt = accessExpiry(now, accessMs, row.grant_expires_at);
        const key = prepared(
          db,
          'INSERT INTO api_keys (user_id, name, key_prefix, key_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
        ).run(
          row.user_id,
          grantKeyName(row.client_name),
          'ma_pending',
          secretHash(`pending:${request.codeHash}`),
          now,
          expiresAt,
        );
        const keyId = Number(key.lastInsertRowid);
        const grant = prepared(
          db,
          `INSERT INTO oauth_grants (user_id, key_id, client_id, client_name, resource, account_ids, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        ).run(
          row.user_id,
          keyId,
          row.client_id,
          row.client_name,
          row.resource,
          row.account_ids,
          now,
          row.grant_expires_at,
        );
        const grantId = Number(grant.lastInsertRowid);
        prepared(db, 'UPDATE oauth_codes SET used_at = ?, grant_id = ? WHERE code_hash = ?').run(
          now,
          grantId,
          request.codeHash,
        );
        return rotate(db, grantId, keyId, expiresAt, now);
      }
      const refreshHash = request.refreshHash;
      const row = prepared(
        db,
        `SELECT r.grant_id, g.client_id, g.resource, r.used_at, g.expires_at AS grant_expires_at,
              g.revoked_at AS grant_revoked_at, k.revoked_at AS key_revoked_at, u.is_active AS user_active, g.key_id
         FROM oauth_refresh_tokens r JOIN oauth_grants g ON g.id = r.grant_id
         JOIN api_keys k ON k.id = g.key_id JOIN users u ON u.id = g.user_id
        WHERE r.token_hash = ?`,
      ).get(refreshHash) as (RefreshRow & { key_id: number }) | undefined;
      const refused = refreshRefusal(row, request, now);
      if (refused) {
        if (row && (refused.reused || row.key_revoked_at !== null)) revokeGrant(db, row.grant_id, now);
        return refused.result;
      }
      prepared(db, 'UPDATE oauth_refresh_tokens SET used_at = ? WHERE token_hash = ?').run(now, refreshHash);
      return rotate(db, row!.grant_id, row!.key_id, accessExpiry(now, accessMs, row!.grant_expires_at), now);
    })
    .immediate();
}

/** RFC 7009: the token is an access token (a key's hash) or a refresh token of this client's grant. */
export function revokeOAuthToken(db: Db, tokenHash: string, clientId: string, now: number): null {
  const grant = prepared(
    db,
    `SELECT g.id FROM oauth_grants g JOIN api_keys k ON k.id = g.key_id WHERE k.key_hash = ? AND g.client_id = ?
     UNION SELECT g.id FROM oauth_refresh_tokens r JOIN oauth_grants g ON g.id = r.grant_id
      WHERE r.token_hash = ? AND g.client_id = ?`,
  )
    .pluck()
    .get(tokenHash, clientId, tokenHash, clientId) as number | undefined;
  if (grant !== undefined) db.transaction(() => revokeGrant(db, grant, now))();
  return null;
}
