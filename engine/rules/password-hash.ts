// The web password as both stores check it: this service's scrypt format (Mail Archiver's own,
// on a PostgreSQL archive, is engine/rules/passwords.ts), a fingerprint of the stored hash that
// ends sessions when the password changes, and a decoy that makes every refusal cost the same.
import {
  createHash,
  randomBytes,
  scrypt as scryptCb,
  scryptSync,
  timingSafeEqual,
  type ScryptOptions,
} from 'node:crypto';
import { isMailArchiverHash, verifyMailArchiverPasswordSync } from './passwords.js';

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
