// Values every gateway on one PostgreSQL database shares, kept in the service's own schema
// (mail_archive_gateway.settings, migration 4), so that processes on several hosts agree on them
// without each being configured: today the key that signs web sessions.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { CONNECT_TIMEOUT_MS } from './connect.js';

/**
 * The session-signing secret of this database: the one stored, or a new random one stored now.
 * Gateways starting together race harmlessly: the first insert wins and everyone reads it back.
 */
export async function sharedSessionSecret(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query(
      `INSERT INTO mail_archive_gateway.settings (name, value) VALUES ('session_secret', $1) ON CONFLICT (name) DO NOTHING`,
      [randomBytes(32).toString('base64url')],
    );
    const { rows } = await client.query<{ value: string }>(
      `SELECT value FROM mail_archive_gateway.settings WHERE name = 'session_secret'`,
    );
    return rows[0]!.value;
  } finally {
    await client.end().catch(() => {});
  }
}
