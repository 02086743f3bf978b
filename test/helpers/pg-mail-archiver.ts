// A small Mail Archiver database on any PostgreSQL server, written with plain SQL the way Mail
// Archiver itself writes its rows (docs/compat.md): its schema from our DDL fixtures, then one
// account, one non-admin user assigned to it, a few messages and an API key (11-character
// prefix, lowercase hex SHA-256, UTC CreatedAt).
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { MAIL_ARCHIVER_2609_DDL, MAIL_ARCHIVER_DDL } from '../../engine/postgres/schema.js';
import { loadSqlFile } from './postgres.js';

const OPEN_PRS = new URL('../../../test/fixtures/mail-archiver-open-prs.sql', import.meta.url);

/**
 * The Mail Archiver schemas the tests build (docs/compat.md): `2608.1`; `2609.4`, as upstream's
 * release migrates it (and as the CLI creates it); `newest`, 2609.4 with what open upstream pull
 * requests add (ArchivedEmails."IsRead", the pg_trgm index where the extension can be created).
 */
export type MailArchiverShape = '2608.1' | '2609.4' | 'newest';
const SHAPE_FILES: Record<MailArchiverShape, URL[]> = {
  '2608.1': [MAIL_ARCHIVER_DDL],
  '2609.4': [MAIL_ARCHIVER_DDL, MAIL_ARCHIVER_2609_DDL],
  newest: [MAIL_ARCHIVER_DDL, MAIL_ARCHIVER_2609_DDL, OPEN_PRS],
};

/** The shape the tests build unless they ask for another: `newest`, or TEST_MAIL_ARCHIVER_SHAPE. */
export const DEFAULT_SHAPE: MailArchiverShape = (() => {
  const wanted = process.env.TEST_MAIL_ARCHIVER_SHAPE ?? 'newest';
  if (!(wanted in SHAPE_FILES)) throw new Error(`TEST_MAIL_ARCHIVER_SHAPE must be one of ${Object.keys(SHAPE_FILES)}`);
  return wanted as MailArchiverShape;
})();

/** Builds Mail Archiver's schema in `shape` into the empty database at `url`. */
export async function loadMailArchiverSchema(url: string, shape: MailArchiverShape = DEFAULT_SHAPE): Promise<void> {
  for (const file of SHAPE_FILES[shape]) await loadSqlFile(url, file);
}

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
export async function createSmallArchive(
  url: string,
  messages = 3,
  shape: MailArchiverShape = DEFAULT_SHAPE,
): Promise<SmallArchive> {
  await loadMailArchiverSchema(url, shape);
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
