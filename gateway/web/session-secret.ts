// The key that signs session cookies. From Web:SessionSecret when set; otherwise generated once
// and kept next to the database, so sessions survive a restart and every process of a PM2
// cluster on this host signs with the same key. A PostgreSQL archive keeps it in the database
// instead, shared by the gateways on every host (gateway/server.ts).
import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { isPostgresUrl, type Settings } from '../../shared/config.js';

export const SECRET_FILE_NAME = 'session-secret';

export function secretFilePath(settings: Settings): string {
  return join(dirname(resolve(settings.Database.Path)), SECRET_FILE_NAME);
}

export function sessionSecret(settings: Settings, logger: Logger): string {
  if (settings.Web.SessionSecret) return settings.Web.SessionSecret;
  if (isPostgresUrl(settings.Database.Path)) {
    // There is no directory beside a URL (and a path made from one would hold its password).
    // gateway/server.ts passes in the secret every gateway on the database shares (engine/
    // archive.ts sharedSessionSecret); a gateway embedded without one signs with a key of its
    // own, and its sessions end with the process.
    logger.warn('no Web:SessionSecret for a PostgreSQL archive: web sessions last until this process stops');
    return randomBytes(32).toString('base64url');
  }
  const path = secretFilePath(settings);
  const existing = readSecret(path, logger);
  if (existing) return existing;
  mkdirSync(dirname(path), { recursive: true });
  // Written whole to a private temp file, then linked into place: link() fails if another
  // process got there first, and nobody ever reads a half-written secret.
  const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(temp, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(temp, path);
    logger.info({ path }, 'generated a session secret');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(temp);
  }
  const secret = readSecret(path, logger);
  if (!secret)
    throw new Error(`The session secret file ${path} is empty or too short; delete it to have a new one generated.`);
  return secret;
}

function readSecret(path: string, logger: Logger): string | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if ((statSync(path).mode & 0o077) !== 0) {
    // Someone loosened it; anyone who reads it can forge sessions.
    try {
      chmodSync(path, 0o600);
      logger.warn({ path }, 'session secret file was readable by others; reset its mode to 0600');
    } catch {
      logger.warn({ path }, 'session secret file is readable by others; restrict it to mode 0600');
    }
  }
  return text.length >= 16 ? text : undefined;
}
