// IMAP passwords at rest: AES-256-GCM (node:crypto), one random 96-bit IV per value, stored as
// `v1:<iv b64>:<tag b64>:<ciphertext b64>`. The key is Sync:SecretKey, or for a SQLite archive
// without one, 32 random bytes generated once into `sync-secret` next to the database file
// (mode 0600), the way the web session secret is kept (gateway/web/session-secret.ts). A
// PostgreSQL archive has no directory beside its URL, and a key kept in the same database as the
// ciphertext protects nothing from whoever reads a dump: there Sync:SecretKey is required
// (docs/sync.md, "Accounts and credentials").
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readOrCreateSecretFile } from './secret-file.js';
import { dirname, join, resolve } from 'node:path';
import { parseSecretKey } from '../../shared/config.js';
import { StoreError } from '../../shared/errors.js';

export const SYNC_SECRET_FILE_NAME = 'sync-secret';
const FORMAT = 'v1';

export function syncSecretFilePath(databasePath: string): string {
  return join(dirname(resolve(databasePath)), SYNC_SECRET_FILE_NAME);
}

/** Encrypts and decrypts stored credentials with one key. */
export class SecretBox {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('An AES-256 key is 32 bytes.');
    this.#key = Buffer.from(key);
  }

  encrypt(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [FORMAT, iv.toString('base64'), tag.toString('base64'), ct.toString('base64')].join(':');
  }

  /**
   * The plaintext, or a StoreError of one sentence (`what` names the value, e.g. "the IMAP
   * password of account 3") when the key is not the one it was encrypted with or the value was
   * altered. The message never holds the value or the key.
   */
  decrypt(stored: string, what: string): string {
    const parts = stored.split(':');
    if (parts.length !== 4 || parts[0] !== FORMAT) {
      throw new StoreError(`Cannot decrypt ${what}: it is not in the expected format (${FORMAT}:iv:tag:ciphertext).`);
    }
    try {
      const iv = Buffer.from(parts[1]!, 'base64');
      const tag = Buffer.from(parts[2]!, 'base64');
      if (iv.length !== 12 || tag.length !== 16) throw new Error('bad lengths');
      const decipher = createDecipheriv('aes-256-gcm', this.#key, iv);
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(Buffer.from(parts[3]!, 'base64')), decipher.final()]).toString('utf8');
    } catch {
      throw new StoreError(`Cannot decrypt ${what}: Sync:SecretKey changed, or the stored value was altered?`);
    }
  }
}

/**
 * The key for an archive: Sync:SecretKey when given; else, for a SQLite file, the key in
 * `sync-secret` beside it, generated on first use with mode 0600. A PostgreSQL archive (or an
 * in-memory database) without Sync:SecretKey is a StoreError.
 */
export function loadSecretKey(options: { secretKey?: string | undefined; databasePath: string }): Buffer {
  if (options.secretKey !== undefined) {
    const key = parseSecretKey(options.secretKey);
    if (!key) throw new StoreError('Sync:SecretKey must be 32 bytes as base64 or as 64 hexadecimal digits.');
    return key;
  }
  const path = options.databasePath;
  if (/^postgres(ql)?:\/\//i.test(path.trim())) {
    throw new StoreError(
      'IMAP accounts on a PostgreSQL archive need Sync:SecretKey (32 bytes, base64 or hex): no key is kept next to a database URL.',
    );
  }
  if (path === '' || path === ':memory:') {
    throw new StoreError('An in-memory archive has no place for a generated key: set Sync:SecretKey.');
  }
  return keyFile(syncSecretFilePath(path));
}

function keyFile(path: string): Buffer {
  const key = parseSecretKey(readOrCreateSecretFile(path, () => randomBytes(32).toString('base64')));
  if (!key) throw new StoreError(`The key file ${path} does not hold 32 bytes in base64; restore it from a backup.`);
  return key;
}
