// Users of the archive: who they are, whether they may still read, and which accounts they see.
import type { Db } from './open.js';
import { prepared } from './statements.js';
import { iso } from '../rules/time.js';
import { checkEmail, checkUsername, foldName, type UserRow } from '../rules/users.js';
import { StoreError } from '../../shared/errors.js';

interface RawUser {
  id: number;
  username: string;
  email: string | null;
  is_admin: number;
  is_active: number;
  created_at: number;
  account_ids: string | null;
}

const toUser = (r: RawUser): UserRow => ({
  id: r.id,
  username: r.username,
  email: r.email,
  isAdmin: r.is_admin === 1,
  isActive: r.is_active === 1,
  createdAt: iso(r.created_at),
  accountIds: r.account_ids
    ? r.account_ids
        .split(',')
        .map(Number)
        .sort((a, b) => a - b)
    : [],
});

const SELECT_USERS = `
  SELECT u.id, u.username, u.email, u.is_admin, u.is_active, u.created_at,
         (SELECT group_concat(account_id) FROM user_accounts WHERE user_id = u.id) AS account_ids
  FROM users u`;

export function addUser(
  db: Db,
  input: { username: string; email?: string | null; isAdmin?: boolean; passwordHash?: string | null; now?: number },
): UserRow {
  const username = checkUsername(input.username);
  const email = checkEmail(input.email);
  if (findUser(db, username)) throw new StoreError(`User "${username}" already exists.`);
  const info = prepared(
    db,
    'INSERT INTO users (username, email, is_admin, password_hash, created_at) VALUES (?, ?, ?, ?, ?)',
  ).run(username, email, input.isAdmin ? 1 : 0, input.passwordHash ?? null, input.now ?? Date.now());
  return getUser(db, Number(info.lastInsertRowid))!;
}

export function getUser(db: Db, id: number): UserRow | null {
  const row = prepared(db, `${SELECT_USERS} WHERE u.id = ?`).get(id) as RawUser | undefined;
  return row ? toUser(row) : null;
}

export function findUser(db: Db, username: string): UserRow | null {
  const wanted = username.trim();
  const row = prepared(db, `${SELECT_USERS} WHERE u.username = ?`).get(wanted) as RawUser | undefined;
  if (row) return toUser(row);
  // COLLATE NOCASE folds ASCII letters only, while usernames may hold any letter (Jürgen and
  // JÜRGEN differ to it). The users table is small: compare the folded names here.
  const folded = foldName(wanted);
  const ids = (prepared(db, 'SELECT id, username FROM users').all() as Array<{ id: number; username: string }>)
    .filter((u) => foldName(u.username) === folded)
    .map((u) => u.id);
  return ids.length === 1 ? getUser(db, ids[0]!) : null;
}

export function requireUser(db: Db, username: string): UserRow {
  const user = findUser(db, username);
  if (!user) throw new StoreError(`No user named "${username}".`);
  return user;
}

export function passwordHashOf(db: Db, userId: number): string | null {
  const row = prepared(db, 'SELECT password_hash FROM users WHERE id = ?').get(userId) as
    { password_hash: string | null } | undefined;
  return row?.password_hash ?? null;
}

export function listUsers(db: Db): UserRow[] {
  return (prepared(db, `${SELECT_USERS} ORDER BY u.username`).all() as RawUser[]).map(toUser);
}

export function setUserActive(db: Db, username: string, active: boolean): UserRow {
  const user = requireUser(db, username);
  prepared(db, 'UPDATE users SET is_active = ? WHERE id = ?').run(active ? 1 : 0, user.id);
  return getUser(db, user.id)!;
}

export function setPasswordHash(db: Db, username: string, passwordHash: string): void {
  const user = requireUser(db, username);
  prepared(db, 'UPDATE users SET password_hash = ? WHERE id = ?').run(passwordHash, user.id);
}

function requireAccount(db: Db, accountId: number): void {
  if (!prepared(db, 'SELECT 1 FROM mail_accounts WHERE id = ?').get(accountId)) {
    throw new StoreError(`No mail account with id ${accountId}.`);
  }
}

export function assignAccount(db: Db, username: string, accountId: number): boolean {
  const user = requireUser(db, username);
  requireAccount(db, accountId);
  const info = prepared(db, 'INSERT OR IGNORE INTO user_accounts (user_id, account_id) VALUES (?, ?)').run(
    user.id,
    accountId,
  );
  bumpGeneration(db);
  return info.changes > 0;
}

export function unassignAccount(db: Db, username: string, accountId: number): boolean {
  const user = requireUser(db, username);
  requireAccount(db, accountId);
  const info = prepared(db, 'DELETE FROM user_accounts WHERE user_id = ? AND account_id = ?').run(user.id, accountId);
  bumpGeneration(db);
  return info.changes > 0;
}

/** Marks the archive as changed for anything that caches what searches return. */
export function bumpGeneration(db: Db): void {
  prepared(db, 'UPDATE archive_state SET generation = generation + 1 WHERE id = 1').run();
}
