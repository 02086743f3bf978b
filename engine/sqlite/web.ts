// What the web UI may do, decided here in the engine: sign-in, and each user's API keys
// (SPEC.md section 4: users manage their own keys, administrators see and revoke anyone's).
// The actor is always re-read from the database, so a demoted or deactivated user loses
// rights on the next request whatever their session cookie says.
import { createHash, randomBytes } from 'node:crypto';
import { KEYS_PAGE_SIZE, type JobResult, type WebKeyResult, type WebUser } from '../../shared/jobs.js';
import type { Db } from './open.js';
import { StoreError } from '../../shared/errors.js';
import { createKey, getKey, listKeysPage, revokeKey, type KeyRow } from './keys.js';
import { findUser, getUser, passwordHashOf, verifyPasswordSync, type UserRow } from './users.js';

/** Fingerprint of the stored password hash: changing the password changes it. */
export function stampOf(passwordHash: string): string {
  return createHash('sha256').update(passwordHash, 'utf8').digest('base64url').slice(0, 16);
}

// A hash nobody's password matches, with the cost of a real one, so an unknown user, a user
// without a password and a wrong password all take the same time to refuse.
let decoy: string | undefined;
export function decoyHash(): string {
  decoy ??= ['scrypt', 32768, 8, 1, randomBytes(16).toString('base64'), randomBytes(32).toString('base64')].join('$');
  return decoy;
}

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

export const forbidden = { ok: false, reason: 'forbidden', message: 'Your account is not active.' } as const;
export const notFound = { ok: false, reason: 'not-found', message: 'There is no such API key.' } as const;

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
