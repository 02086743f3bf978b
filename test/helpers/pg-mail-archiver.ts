// A small Mail Archiver database on any PostgreSQL server, written with plain SQL the way Mail
// Archiver itself writes its rows (docs/compat.md): its schema from our DDL fixture, then one
// account, one non-admin user assigned to it, a few messages and an API key (11-character
// prefix, lowercase hex SHA-256, UTC CreatedAt).
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { loadSqlFile } from './postgres.js';

export const MAIL_ARCHIVER_SCHEMA = new URL('../../../engine/pg/mail-archiver-schema.sql', import.meta.url);

export interface SmallArchive {
  accountId: number;
  userId: number;
  /** Ids of the messages written, oldest first. */
  emailIds: number[];
  key: string;
  keyId: number;
}

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** A new key for `userId`, stored as Mail Archiver stores it. */
export function addKey(url: string, userId: number, name = 'test'): Promise<{ key: string; keyId: number }> {
  const key = `ma_${randomBytes(32).toString('base64url')}`;
  const hash = createHash('sha256').update(key, 'utf8').digest('hex');
  return withClient(url, async (c) => {
    const { rows } = await c.query<{ Id: number }>(
      `INSERT INTO mail_archiver."ApiKeys" ("UserId", "Name", "KeyPrefix", "KeyHash", "CreatedAt")
       VALUES ($1, $2, $3, $4, (now() AT TIME ZONE 'UTC')) RETURNING "Id"`,
      [userId, name, key.slice(0, 11), hash],
    );
    return { key, keyId: rows[0]!.Id };
  });
}

/** One plain-text message in INBOX of `accountId`; returns its id. */
export function addMessage(url: string, accountId: number, subject: string): Promise<number> {
  return withClient(url, async (c) => {
    const { rows } = await c.query<{ Id: number }>(
      `INSERT INTO mail_archiver."ArchivedEmails"
         ("MailAccountId", "MessageId", "Subject", "Body", "HtmlBody", "From", "To", "Cc", "Bcc",
          "SentDate", "ReceivedDate", "IsOutgoing", "HasAttachments", "FolderName", "IsLocked")
       VALUES ($1, $2, $3, $4, '', 'sender@example.org', 'alice@example.org', '', '',
               '2026-03-02 10:00:00', (now() AT TIME ZONE 'UTC'), false, false, 'INBOX', false)
       RETURNING "Id"`,
      [accountId, `<${randomBytes(8).toString('hex')}@example.org>`, subject, `Body of ${subject}`],
    );
    return rows[0]!.Id;
  });
}

/** Loads Mail Archiver's schema into the empty database at `url` and writes a small archive. */
export async function createSmallArchive(url: string, messages = 3): Promise<SmallArchive> {
  await loadSqlFile(url, MAIL_ARCHIVER_SCHEMA);
  const ids = await withClient(url, async (c) => {
    const account = await c.query<{ Id: number }>(
      `INSERT INTO mail_archiver."MailAccounts" ("Name", "EmailAddress", "UseSSL", "LastSync", "IsEnabled")
       VALUES ('Work', 'alice@example.org', true, '1970-01-01', true) RETURNING "Id"`,
    );
    const user = await c.query<{ Id: number }>(
      `INSERT INTO mail_archiver."Users" ("Username", "Email", "IsAdmin", "IsActive", "CreatedAt")
       VALUES ('alice', 'alice@example.org', false, true, (now() AT TIME ZONE 'UTC')) RETURNING "Id"`,
    );
    await c.query(`INSERT INTO mail_archiver."UserMailAccounts" ("UserId", "MailAccountId") VALUES ($1, $2)`, [
      user.rows[0]!.Id,
      account.rows[0]!.Id,
    ]);
    return { accountId: account.rows[0]!.Id, userId: user.rows[0]!.Id };
  });
  const emailIds: number[] = [];
  for (let i = 1; i <= messages; i++) emailIds.push(await addMessage(url, ids.accountId, `Quarterly report ${i}`));
  const { key, keyId } = await addKey(url, ids.userId, 'laptop');
  return { ...ids, emailIds, key, keyId };
}
