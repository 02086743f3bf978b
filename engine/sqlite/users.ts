// Users of the archive: who they are, whether they may still read, and which accounts they see.
import { randomBytes, scrypt as scryptCb, scryptSync, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import type { Db } from './open.js';
import { isMailArchiverHash, verifyMailArchiverPasswordSync } from '../rules/passwords.js';
import { prepared } from './statements.js';
import { iso } from '../rules/time.js';
import { EMAIL_ADDRESS } from './accounts.js';
import { StoreError } from '../../shared/errors.js';

export interface UserRow {
  id: number;
  username: string;
  email: string | null;
  isAdmin: boolean;
  isActive: boolean;
  createdAt: string;
  accountIds: number[];
}

// scrypt cost: N=2^15 takes ~50 ms here, enough to make offline guessing expensive.
const SCRYPT = { N: 32768, r: 8, p: 1, keylen: 32, maxmem: 64 * 1024 * 1024 };

function scrypt(password: string, salt: Buffer, keylen: number, opts: ScryptOptions): Promise<Buffer> {
  return new Promise((res, rej) => scryptCb(password, salt, keylen, opts, (e, k) => (e ? rej(e) : res(k))));
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, SCRYPT.keylen, SCRYPT);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64'), key.toString('base64')].join('$');
}

export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const parsed = parseStoredHash(stored);
  if (!parsed) return false;
  const got = await scrypt(password, parsed.salt, parsed.expected.length, parsed.options);
  return timingSafeEqual(parsed.expected, got);
}

/** The same check, blocking: for worker threads, where a job is synchronous anyway. */
export function verifyPasswordSync(password: string, stored: string | null): boolean {
  // A PostgreSQL archive holds Mail Archiver's format (engine/rules/passwords.ts).
  if (stored !== null && isMailArchiverHash(stored)) return verifyMailArchiverPasswordSync(password, stored);
  const parsed = parseStoredHash(stored);
  if (!parsed) return false;
  return timingSafeEqual(parsed.expected, scryptSync(password, parsed.salt, parsed.expected.length, parsed.options));
}

function parseStoredHash(stored: string | null): { salt: Buffer; expected: Buffer; options: ScryptOptions } | null {
  const parts = (stored ?? '').split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return null;
  const [, n, r, p, salt, hash] = parts as [string, string, string, string, string, string];
  const expected = Buffer.from(hash, 'base64');
  if (expected.length === 0) return null;
  return {
    salt: Buffer.from(salt, 'base64'),
    expected,
    options: { N: Number(n), r: Number(r), p: Number(p), maxmem: SCRYPT.maxmem },
  };
}

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

/** A new user's name as stored (trimmed, NFC), or a StoreError; the same rule on every store. */
export function checkUsername(input: string): string {
  const username = input.trim().normalize('NFC');
  if (!/^[\p{L}\p{N}._@-]{1,64}$/u.test(username)) {
    throw new StoreError(`Invalid username "${input}": use 1 to 64 letters, digits, dots, dashes, underscores or @.`);
  }
  return username;
}

/** A new user's contact address (trimmed; empty means none), or a StoreError. */
export function checkEmail(input: string | null | undefined): string | null {
  const email = input?.trim() || null;
  if (email !== null && !EMAIL_ADDRESS.test(email)) throw new StoreError(`"${input}" is not an e-mail address.`);
  return email;
}

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

/** Usernames match case-insensitively in every script and whatever the Unicode normal form. */
export const foldName = (name: string): string => name.normalize('NFC').toLowerCase();

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
