// What the web UI may do, decided here in the engine: sign-in, and each user's API keys
// (SPEC.md, “Interactive documentation (browser only)”: users manage their own keys, administrators see and revoke anyone's).
// The actor is always re-read from the database, so a demoted or deactivated user loses
// rights on the next request whatever their session cookie says.
import { KEYS_PAGE_SIZE, type JobResult, type WebKeyResult, type WebUser } from '../../shared/jobs.js';
import type { Db } from './open.js';
import { StoreError } from '../../shared/errors.js';
import { createKey, getKey, listKeysPage, revokeKey } from './keys.js';
import { forbidden, notFound, type KeyRow } from '../rules/keys.js';
import { decoyHash, stampOf, verifyPasswordSync } from '../rules/password-hash.js';
import { findUser, getUser, passwordHashOf } from './users.js';
import { type UserRow } from '../rules/users.js';

const toWebUser = (user: UserRow, passwordHash: string): WebUser => ({
  id: user.id,
  username: user.username,
  isAdmin: user.isAdmin,
  stamp: stampOf(passwordHash),
});

export function login(db: Db, username: string, password: string): WebUser | null {
  const user = username.trim() ? findUser(db, username) : null;
  const stored = user ? passwordHashOf(db, user.id) : null;
  const matches = verifyPasswordSync(password, stored ?? decoyHash());
  if (!matches || !user || !stored || !user.isActive) return null;
  return toWebUser(user, stored);
}

export function sessionUser(db: Db, userId: number, stamp: string, issuedAt: number): WebUser | null {
  const user = getUser(db, userId);
  const stored = user ? passwordHashOf(db, user.id) : null;
  if (!user || !stored || !user.isActive || stampOf(stored) !== stamp) return null;
  const ended = db.prepare('SELECT ended_at FROM web_sessions_ended WHERE user_id = ?').pluck().get(userId) as
    number | undefined;
  if (ended !== undefined && issuedAt <= ended) return null;
  return toWebUser(user, stored);
}

/** Signing out: the user's sessions begun until now are void (all of them, on every device). */
export function endSessions(db: Db, userId: number, now: number): null {
  db.prepare(
    `INSERT INTO web_sessions_ended (user_id, ended_at) VALUES (?, ?)
       ON CONFLICT (user_id) DO UPDATE SET ended_at = max(ended_at, excluded.ended_at)`,
  ).run(userId, now);
  return null;
}

function activeActor(db: Db, actorId: number): UserRow | null {
  const user = getUser(db, actorId);
  return user && user.isActive ? user : null;
}

export function listKeysFor(
  db: Db,
  actorId: number,
  now: number,
  pages: { ownPage?: number; othersPage?: number; keyId?: number } = {},
): JobResult<'listKeysFor'> {
  const actor = activeActor(db, actorId);
  if (!actor) return forbidden;
  const own = listKeysPage(db, { userId: actor.id }, pages.ownPage, KEYS_PAGE_SIZE, now);
  const others = actor.isAdmin
    ? listKeysPage(db, { exceptUserId: actor.id }, pages.othersPage, KEYS_PAGE_SIZE, now)
    : null;
  const key = pages.keyId === undefined ? null : getKey(db, pages.keyId, now);
  const named = key && (actor.isAdmin || key.userId === actor.id) ? key : null;
  return { ok: true, value: { own, others, named } };
}

/** Same validation and storage as the CLI's `keys create` (createKey); bad input is a result, not a throw. */
export function createKeyFor(
  db: Db,
  actorId: number,
  name: string,
  expiresAt: number | null,
  now: number,
  maxActive?: number,
): WebKeyResult<{ key: string; row: KeyRow }> {
  const actor = activeActor(db, actorId);
  if (!actor) return forbidden;
  try {
    const created = createKey(db, {
      username: actor.username,
      name,
      expiresAt,
      now,
      ...(maxActive !== undefined ? { maxActive } : {}),
    });
    return { ok: true, value: { key: created.key, row: created.row } };
  } catch (err) {
    if (err instanceof StoreError) return { ok: false, reason: 'invalid', message: err.message };
    throw err;
  }
}

/** Someone else's key is "not found" to a non-administrator, so ids reveal nothing. */
export function revokeKeyAs(db: Db, actorId: number, keyId: number, now: number): WebKeyResult<KeyRow> {
  const actor = activeActor(db, actorId);
  if (!actor) return forbidden;
  const key = getKey(db, keyId, now);
  if (!key || (!actor.isAdmin && key.userId !== actor.id)) return notFound;
  return { ok: true, value: revokeKey(db, keyId, now) };
}
