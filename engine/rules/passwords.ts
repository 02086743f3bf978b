// Mail Archiver's password format, so that a user of a PostgreSQL archive signs in here with the
// password Mail Archiver knows, and a password set here works there (docs/compat.md):
// `iterations.base64(salt).base64(hash)`, PBKDF2-HMAC-SHA512, 600,000 iterations, a 16-byte salt
// and a 32-byte hash. Older Mail Archiver rows may hold base64(SHA-256(password)), which upstream
// still accepts (and upgrades on sign-in); this service accepts it and never writes it.
import { createHash, pbkdf2, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';

export const PBKDF2_ITERATIONS = 600_000;
const SALT_BYTES = 16;
const HASH_BYTES = 32;
const FORMAT = /^(\d{1,9})\.([A-Za-z0-9+/]+={0,2})\.([A-Za-z0-9+/]+={0,2})$/;
const LEGACY = /^[A-Za-z0-9+/]{43}=$/;

export function isMailArchiverHash(stored: string | null): boolean {
  return stored !== null && (FORMAT.test(stored) || LEGACY.test(stored));
}

export function hashMailArchiverPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  return new Promise((resolve, reject) =>
    pbkdf2(password, salt, PBKDF2_ITERATIONS, HASH_BYTES, 'sha512', (err, key) =>
      err ? reject(err) : resolve(`${PBKDF2_ITERATIONS}.${salt.toString('base64')}.${key.toString('base64')}`),
    ),
  );
}

/** Blocking, for worker threads. False for anything not in one of the two formats. */
export function verifyMailArchiverPasswordSync(password: string, stored: string): boolean {
  const m = FORMAT.exec(stored);
  if (m) {
    const iterations = Number(m[1]);
    const expected = Buffer.from(m[3]!, 'base64');
    if (iterations < 1 || expected.length === 0) return false;
    const got = pbkdf2Sync(password, Buffer.from(m[2]!, 'base64'), iterations, expected.length, 'sha512');
    return timingSafeEqual(expected, got);
  }
  if (LEGACY.test(stored)) {
    const got = createHash('sha256').update(password, 'utf8').digest();
    return timingSafeEqual(Buffer.from(stored, 'base64'), got);
  }
  return false;
}
