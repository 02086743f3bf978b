// OAuth grants on a PostgreSQL archive (our migration 9): the access token is a row of Mail
// Archiver's ApiKeys, everything else is in mail_archive_gateway. The rules are engine/rules/oauth.ts's,
// shared with the SQLite store (engine/sqlite/oauth.ts). Everything runs on the primary.
import type {
  OAuthClient,
  OAuthCodeInput,
  OAuthRegisterLimits,
  OAuthRegisterResult,
  OAuthTokenRequest,
  OAuthTokenResult,
} from '../../shared/jobs.js';
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
import { generateKey, hashKey, KEY_PREFIX_LENGTH } from '../rules/keys.js';
import { T, utcTimestamp } from './columns.js';
import { sql } from './sql.js';
import type { PgContext, Query } from './context.js';

export async function client(ctx: PgContext, clientId: string): Promise<OAuthClient | null> {
  const [row] = await ctx.primary<{
    client_id: string;
    name: string;
    redirect_uris: string[];
    metadata: Record<string, unknown>;
    created_at: string;
  }>(sql`SELECT * FROM mail_archive_gateway.oauth_clients WHERE client_id = ${clientId}`);
  if (!row) return null;
  return {
    clientId: row.client_id,
    name: row.name,
    redirectUris: row.redirect_uris,
    metadata: row.metadata,
    createdAt: Number(row.created_at),
  };
}

/** As the SQLite store's registerOAuthClient: prune the stale unused clients, then register below the cap. */
export async function register(
  ctx: PgContext,
  c: OAuthClient,
  limits: OAuthRegisterLimits,
): Promise<OAuthRegisterResult> {
  const unused = sql`NOT EXISTS (SELECT 1 FROM mail_archive_gateway.oauth_codes k WHERE k.client_id = o.client_id)
            AND NOT EXISTS (SELECT 1 FROM mail_archive_gateway.oauth_grants g WHERE g.client_id = o.client_id)`;
  await ctx.primary(
    sql`DELETE FROM mail_archive_gateway.oauth_clients o WHERE o.created_at < ${c.createdAt - limits.unusedMs} AND ${unused}`,
  );
  // One statement counts and inserts; registrations racing each other may pass the cap by as many
  // as run at once, which the per-address budget keeps small.
  const inserted = await ctx.primary<{ client_id: string }>(
    sql`INSERT INTO mail_archive_gateway.oauth_clients (client_id, name, redirect_uris, metadata, created_at)
        SELECT ${c.clientId}, ${c.name}, ${JSON.stringify(c.redirectUris)}::jsonb, ${JSON.stringify(c.metadata)}::jsonb,
               ${c.createdAt}
         WHERE (SELECT count(*) FROM mail_archive_gateway.oauth_clients o WHERE ${unused}) < ${limits.maxUnused}
        RETURNING client_id`,
  );
  return inserted.length === 1 ? 'registered' : 'full';
}

export async function issueCode(
  ctx: PgContext,
  actorId: number,
  code: OAuthCodeInput,
  now: number,
  maxGrants: number,
): Promise<'issued' | 'refused' | 'too many grants'> {
  const [user] = await ctx.primary<{ is_active: boolean; is_admin: boolean; accounts: number[] }>(
    sql`SELECT u."IsActive" AS is_active, u."IsAdmin" AS is_admin,
               ARRAY(SELECT m."MailAccountId" FROM ${T.userAccounts} m WHERE m."UserId" = u."Id") AS accounts
          FROM ${T.users} u WHERE u."Id" = ${actorId}`,
  );
  const allowed = consentAllowed(
    user ? { isActive: user.is_active, isAdmin: user.is_admin } : null,
    code.accountIds,
    user?.is_admin ? null : (user?.accounts ?? []),
  );
  if (!allowed) return 'refused';
  const [live] = await ctx.primary<{ n: number }>(
    sql`SELECT count(*)::int AS n FROM mail_archive_gateway.oauth_grants g JOIN ${T.keys} k ON k."Id" = g.key_id
         WHERE g.user_id = ${actorId} AND g.revoked_at IS NULL AND k."RevokedAt" IS NULL AND g.expires_at > ${now}`,
  );
  if (live!.n >= maxGrants) return 'too many grants';
  await ctx.primary(sql`DELETE FROM mail_archive_gateway.oauth_codes WHERE expires_at < ${now - 86_400_000}`);
  await ctx.primary(
    sql`INSERT INTO mail_archive_gateway.oauth_codes (code_hash, user_id, client_id, client_name, redirect_uri,
          code_challenge, resource, account_ids, grant_expires_at, expires_at)
        VALUES (${code.codeHash}, ${actorId}, ${code.clientId}, ${code.clientName}, ${code.redirectUri},
                ${code.codeChallenge}, ${code.resource},
                ${code.accountIds === null ? null : JSON.stringify(code.accountIds)}::jsonb,
                ${code.grantExpiresAt}, ${code.expiresAt})`,
  );
  return 'issued';
}

async function revokeGrant(q: Query, grantId: number, now: number): Promise<void> {
  await q(
    sql`UPDATE mail_archive_gateway.oauth_grants SET revoked_at = coalesce(revoked_at, ${now}) WHERE id = ${grantId}`,
  );
  await q(
    sql`UPDATE ${T.keys} SET "RevokedAt" = ${utcTimestamp(now)}
         WHERE "Id" = (SELECT key_id FROM mail_archive_gateway.oauth_grants WHERE id = ${grantId}) AND "RevokedAt" IS NULL`,
  );
}

async function rotate(q: Query, grantId: number, keyId: number, expiresAt: number, now: number) {
  const accessToken = generateKey();
  await q(
    sql`UPDATE ${T.keys} SET "KeyHash" = ${hashKey(accessToken)}, "KeyPrefix" = ${accessToken.slice(0, KEY_PREFIX_LENGTH)},
               "ExpiresAt" = ${utcTimestamp(expiresAt)} WHERE "Id" = ${keyId}`,
  );
  const refreshToken = newRefreshToken();
  await q(
    sql`INSERT INTO mail_archive_gateway.oauth_refresh_tokens (token_hash, grant_id, created_at)
        VALUES (${secretHash(refreshToken)}, ${grantId}, ${now})`,
  );
  return { ok: true as const, accessToken, refreshToken, expiresAt, grantId };
}

type StoredCode = CodeRow & {
  client_name: string;
  account_ids: unknown;
  grant_expires_at: number;
  grant_id: number | null;
};

export function token(
  ctx: PgContext,
  request: OAuthTokenRequest,
  now: number,
  accessMs: number,
): Promise<OAuthTokenResult> {
  return ctx.transaction(async (q): Promise<OAuthTokenResult> => {
    if (request.grant === 'authorization_code') {
      const [raw] = await q<StoredCode>(
        sql`SELECT user_id, client_id, client_name, redirect_uri, code_challenge, resource, account_ids,
                   grant_expires_at::float8 AS grant_expires_at, expires_at::float8 AS expires_at,
                   used_at::float8 AS used_at, grant_id
              FROM mail_archive_gateway.oauth_codes WHERE code_hash = ${request.codeHash} FOR UPDATE`,
      );
      const refused = codeRefusal(raw, request, now);
      if (raw && refused) {
        if (raw.used_at !== null && raw.grant_id !== null) await revokeGrant(q, raw.grant_id, now);
        await q(
          sql`UPDATE mail_archive_gateway.oauth_codes SET used_at = coalesce(used_at, ${now})
               WHERE code_hash = ${request.codeHash}`,
        );
      }
      if (refused || !raw) return refused!;
      const expiresAt = accessExpiry(now, accessMs, raw.grant_expires_at);
      const [key] = await q<{ id: number }>(
        sql`INSERT INTO ${T.keys} ("UserId", "Name", "KeyPrefix", "KeyHash", "CreatedAt", "ExpiresAt")
            VALUES (${raw.user_id}, ${grantKeyName(raw.client_name)}, 'ma_pending', ${secretHash(`pending:${request.codeHash}`)},
                    ${utcTimestamp(now)}, ${utcTimestamp(expiresAt)})
            RETURNING "Id" AS id`,
      );
      const [grant] = await q<{ id: number }>(
        sql`INSERT INTO mail_archive_gateway.oauth_grants
              (user_id, key_id, client_id, client_name, resource, account_ids, created_at, expires_at)
            VALUES (${raw.user_id}, ${key!.id}, ${raw.client_id}, ${raw.client_name}, ${raw.resource},
                    ${raw.account_ids === null ? null : JSON.stringify(raw.account_ids)}::jsonb, ${now}, ${raw.grant_expires_at})
            RETURNING id`,
      );
      await q(
        sql`UPDATE mail_archive_gateway.oauth_codes SET used_at = ${now}, grant_id = ${grant!.id}
             WHERE code_hash = ${request.codeHash}`,
      );
      return rotate(q, grant!.id, key!.id, expiresAt, now);
    }
    const [row] = await q<RefreshRow & { key_id: number }>(
      sql`SELECT r.grant_id, g.client_id, g.resource, r.used_at::float8 AS used_at,
                 g.expires_at::float8 AS grant_expires_at, g.revoked_at::float8 AS grant_revoked_at,
                 CASE WHEN k."Id" IS NULL THEN 0 WHEN k."RevokedAt" IS NULL THEN NULL ELSE 1 END AS key_revoked_at,
                 CASE WHEN u."IsActive" THEN 1 ELSE 0 END AS user_active, g.key_id
            FROM mail_archive_gateway.oauth_refresh_tokens r
            JOIN mail_archive_gateway.oauth_grants g ON g.id = r.grant_id
            LEFT JOIN ${T.keys} k ON k."Id" = g.key_id
            LEFT JOIN ${T.users} u ON u."Id" = g.user_id
           WHERE r.token_hash = ${request.refreshHash} FOR UPDATE OF r`,
    );
    const refused = refreshRefusal(row, request, now);
    if (refused) {
      if (row && (refused.reused || row.key_revoked_at !== null)) await revokeGrant(q, row.grant_id, now);
      return refused.result;
    }
    await q(
      sql`UPDATE mail_archive_gateway.oauth_refresh_tokens SET used_at = ${now} WHERE token_hash = ${request.refreshHash}`,
    );
    return rotate(q, row!.grant_id, row!.key_id, accessExpiry(now, accessMs, row!.grant_expires_at), now);
  });
}

export async function revoke(ctx: PgContext, tokenHash: string, clientId: string, now: number): Promise<null> {
  const [grant] = await ctx.primary<{ id: number }>(
    sql`SELECT g.id FROM mail_archive_gateway.oauth_grants g JOIN ${T.keys} k ON k."Id" = g.key_id
         WHERE k."KeyHash" = ${tokenHash} AND g.client_id = ${clientId}
        UNION SELECT g.id FROM mail_archive_gateway.oauth_refresh_tokens r
          JOIN mail_archive_gateway.oauth_grants g ON g.id = r.grant_id
         WHERE r.token_hash = ${tokenHash} AND g.client_id = ${clientId}`,
  );
  if (grant) await ctx.transaction((q) => revokeGrant(q, grant.id, now));
  return null;
}
