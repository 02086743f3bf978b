// A secret kept in a file of its own beside the archive (the web session secret, the key of the
// stored IMAP passwords): generated once with mode 0600, read by every process on the host.
import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export interface SecretFileEvents {
  /** The file was created by this call. */
  generated?: () => void;
  /** The file was readable by others: `fixed` when its mode was reset to 0600. */
  loosened?: (fixed: boolean) => void;
}

/** The file's text (trimmed), or undefined when it does not exist. Resets a loosened mode to 0600. */
export function readSecretFile(path: string, events: SecretFileEvents = {}): string | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if ((statSync(path).mode & 0o077) !== 0) {
    // Someone loosened it; whoever reads it holds the secret.
    let fixed = true;
    try {
      chmodSync(path, 0o600);
    } catch {
      fixed = false; // not ours to change; the secret still works
    }
    events.loosened?.(fixed);
  }
  return text;
}

/**
 * The file's text, creating the file with `generate()` first when it does not exist. Written
 * whole to a private temp file, then linked into place: link() fails if another process got
 * there first, and nobody ever reads a half-written secret.
 */
export function readOrCreateSecretFile(path: string, generate: () => string, events: SecretFileEvents = {}): string {
  const existing = readSecretFile(path, events);
  if (existing !== undefined) return existing;
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(temp, `${generate()}\n`, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(temp, path);
    events.generated?.();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(temp);
  }
  return readSecretFile(path, events) ?? '';
}
