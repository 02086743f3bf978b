// The key that signs session cookies. From Web:SessionSecret when set; otherwise generated once
// and kept next to the database, so sessions survive a restart and every process of a PM2
// cluster on this host signs with the same key. A PostgreSQL archive keeps it in the database
// instead, shared by the gateways on every host (gateway/server.ts).
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { readOrCreateSecretFile } from '../../engine/index.js';
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
  const secret = readOrCreateSecretFile(path, () => randomBytes(32).toString('base64url'), {
    generated: () => logger.info({ path }, 'generated a session secret'),
    loosened: (fixed) =>
      fixed
        ? logger.warn({ path }, 'session secret file was readable by others; reset its mode to 0600')
        : logger.warn({ path }, 'session secret file is readable by others; restrict it to mode 0600'),
  });
  if (secret.length < 16)
    throw new Error(`The session secret file ${path} is empty or too short; delete it to have a new one generated.`);
  return secret;
}
