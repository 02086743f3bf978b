// The Mail Archiver schema fixture (engine/postgres/mail-archiver-schema.sql) as the contract a
// PostgreSQL store relies on: names, types, the full-text index, the lock triggers, the migration
// history and the API-key storage described in docs/compat.md.
import { createHash, randomBytes } from 'node:crypto';
import test from 'ava';
import pg from 'pg';
import { createTestDatabase, loadSqlFile, type TestDatabase } from './helpers/postgres.js';

const FIXTURE = new URL('../../engine/postgres/mail-archiver-schema.sql', import.meta.url);
const LATEST_MIGRATION = '20260818120000_MigrateV2608_1';
const TS = 'timestamp without time zone';
const TSTZ = 'timestamp with time zone';

let db: TestDatabase;
let pool: pg.Pool;

test.before(async () => {
  db = await createTestDatabase('compat_schema');
  await loadSqlFile(db.url, FIXTURE);
  pool = new pg.Pool({ connectionString: db.url, max: 4 });
  // The teardown drops the database WITH (FORCE), which terminates any connection still open; an
  // idle pooled client then reports "terminating connection due to administrator command", which
  // without a listener is an uncaught exception that fails the file (seen once under Node 24 on a
  // loaded machine). At that point it is expected.
  pool.on('error', () => {});
});

test.after.always(async () => {
  await pool?.end();
  await db?.drop();
});

/** [data type, max length or null, nullable] as information_schema reports them. */
type Column = [string, number | null, boolean];
const col = (type: string, nullable = false, length: number | null = null): Column => [type, length, nullable];

// The columns a store reads or writes; every other column may exist but is not relied on.
const CONTRACT: Record<string, Record<string, Column>> = {
  MailAccounts: {
    Id: col('integer'),
    Name: col('text'),
    EmailAddress: col('text'),
    IsEnabled: col('boolean'),
    LastSync: col(TS),
    Provider: col('text', true),
  },
  Users: {
    Id: col('integer'),
    Username: col('character varying', false, 320),
    Email: col('character varying', false, 100),
    PasswordHash: col('text', true),
    IsAdmin: col('boolean'),
    IsActive: col('boolean'),
    CreatedAt: col(TS),
    LastLoginAt: col(TS, true),
  },
  UserMailAccounts: {
    Id: col('integer'),
    UserId: col('integer'),
    MailAccountId: col('integer'),
  },
  ArchivedEmails: {
    Id: col('integer'),
    MailAccountId: col('integer'),
    MessageId: col('text'),
    Subject: col('text'),
    Body: col('text'),
    HtmlBody: col('text'),
    From: col('text'),
    To: col('text'),
    Cc: col('text'),
    Bcc: col('text'),
    SentDate: col(TS),
    ReceivedDate: col(TS),
    IsOutgoing: col('boolean'),
    HasAttachments: col('boolean'),
    FolderName: col('text'),
    IsLocked: col('boolean'),
    HashCreatedAt: col(TSTZ, true),
    BodyUntruncatedText: col('text', true),
    BodyUntruncatedHtml: col('text', true),
    OriginalBodyText: col('bytea', true),
    OriginalBodyHtml: col('bytea', true),
    RawHeaders: col('text', true),
    FromDisplayName: col('text', true),
  },
  EmailAttachments: {
    Id: col('integer'),
    ArchivedEmailId: col('integer'),
    FileName: col('text'),
    ContentType: col('text'),
    Content: col('bytea', true),
    Size: col('bigint'),
    ContentId: col('text', true),
    AttachmentContentId: col('integer', true),
  },
  AttachmentContents: {
    Id: col('integer'),
    Hash: col('character varying', false, 64),
    Content: col('bytea'),
    Size: col('bigint'),
    CreatedAt: col(TS),
  },
  ApiKeys: {
    Id: col('integer'),
    UserId: col('integer'),
    Name: col('text'),
    KeyPrefix: col('character varying', false, 16),
    KeyHash: col('character varying', false, 64),
    CreatedAt: col(TS),
    LastUsedAt: col(TS, true),
    ExpiresAt: col(TS, true),
    RevokedAt: col(TS, true),
  },
  AccessLogs: {
    Id: col('integer'),
    Username: col('text'),
    Type: col('integer'),
    Timestamp: col(TS),
    EmailId: col('integer', true),
    EmailSubject: col('text', true),
    EmailFrom: col('text', true),
    SearchParameters: col('text', true),
    MailAccountId: col('integer', true),
  },
};

test('the tables and key columns exist in schema mail_archiver with their exact types', async (t) => {
  const { rows } = await pool.query<{
    table_name: string;
    column_name: string;
    data_type: string;
    character_maximum_length: number | null;
    is_nullable: 'YES' | 'NO';
  }>(
    `SELECT table_name, column_name, data_type, character_maximum_length, is_nullable
       FROM information_schema.columns WHERE table_schema = 'mail_archiver'`,
  );
  const actual: Record<string, Record<string, Column>> = {};
  for (const row of rows) {
    if (!(row.table_name in CONTRACT) || !(row.column_name in CONTRACT[row.table_name]!)) continue;
    actual[row.table_name] ??= {};
    actual[row.table_name]![row.column_name] = [row.data_type, row.character_maximum_length, row.is_nullable === 'YES'];
  }
  t.deepEqual(actual, CONTRACT);
});

test('the store-facing primary keys use identity columns and the payload table a sequence', async (t) => {
  const { rows } = await pool.query<{ table_name: string; is_identity: string; column_default: string | null }>(
    `SELECT table_name, is_identity, column_default FROM information_schema.columns
      WHERE table_schema = 'mail_archiver' AND column_name = 'Id'
        AND table_name = ANY($1) ORDER BY table_name`,
    [['AccessLogs', 'ApiKeys', 'ArchivedEmails', 'AttachmentContents', 'EmailAttachments', 'Users']],
  );
  const shape = Object.fromEntries(
    rows.map((r) => [r.table_name, r.is_identity === 'YES' ? 'identity' : r.column_default]),
  );
  t.deepEqual(shape, {
    AccessLogs: 'identity',
    ApiKeys: 'identity',
    ArchivedEmails: 'identity',
    AttachmentContents: `nextval('mail_archiver."AttachmentContents_Id_seq"'::regclass)`,
    EmailAttachments: 'identity',
    Users: 'identity',
  });
});

test('the full-text GIN index has the exact expression, and a query repeating it uses the index', async (t) => {
  const { rows } = await pool.query<{ indexdef: string }>(
    `SELECT indexdef FROM pg_indexes
      WHERE schemaname = 'mail_archiver' AND tablename = 'ArchivedEmails'
        AND indexname = 'idx_archivedemails_fulltext_search'`,
  );
  t.is(rows.length, 1);
  const expression =
    `to_tsvector('simple'::regconfig, ((((((((((COALESCE("Subject", ''::text) || ' '::text) ` +
    `|| COALESCE("Body", ''::text)) || ' '::text) || COALESCE("From", ''::text)) || ' '::text) ` +
    `|| COALESCE("To", ''::text)) || ' '::text) || COALESCE("Cc", ''::text)) || ' '::text) ` +
    `|| COALESCE("Bcc", ''::text)))`;
  t.is(
    rows[0]!.indexdef,
    `CREATE INDEX idx_archivedemails_fulltext_search ON mail_archiver."ArchivedEmails" USING gin (${expression})`,
  );

  // On an empty table the planner would scan; forbidding that shows the index matches the expression.
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL enable_seqscan = off');
    const plan = await client.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT "Id" FROM mail_archiver."ArchivedEmails"
        WHERE to_tsvector('simple', COALESCE("Subject", '') || ' ' || COALESCE("Body", '') || ' ' ||
              COALESCE("From", '') || ' ' || COALESCE("To", '') || ' ' || COALESCE("Cc", '') || ' ' ||
              COALESCE("Bcc", '')) @@ to_tsquery('simple', 'invoice:*')`,
    );
    await client.query('ROLLBACK');
    t.regex(plan.rows.map((r) => r['QUERY PLAN']).join('\n'), /Index Scan on idx_archivedemails_fulltext_search/);
  } finally {
    client.release();
  }
});

test('the unique indexes a store depends on exist', async (t) => {
  const { rows } = await pool.query<{ indexname: string; indexdef: string }>(
    `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'mail_archiver'
      AND indexname = ANY($1) ORDER BY indexname`,
    [
      [
        'IX_ApiKeys_KeyHash',
        'IX_AttachmentContents_Hash',
        'IX_UserMailAccounts_UserId_MailAccountId',
        'IX_Users_Username',
      ],
    ],
  );
  t.deepEqual(
    rows.map((r) => r.indexdef),
    [
      `CREATE UNIQUE INDEX "IX_ApiKeys_KeyHash" ON mail_archiver."ApiKeys" USING btree ("KeyHash")`,
      `CREATE UNIQUE INDEX "IX_AttachmentContents_Hash" ON mail_archiver."AttachmentContents" USING btree ("Hash")`,
      `CREATE UNIQUE INDEX "IX_UserMailAccounts_UserId_MailAccountId" ON mail_archiver."UserMailAccounts" USING btree ("UserId", "MailAccountId")`,
      `CREATE UNIQUE INDEX "IX_Users_Username" ON mail_archiver."Users" USING btree ("Username")`,
    ],
  );
});

test('the migration history is in schema public and ends at the latest migration', async (t) => {
  const { rows } = await pool.query<{ schema: string; latest: string; count: string }>(
    `SELECT (SELECT table_schema FROM information_schema.tables WHERE table_name = '__EFMigrationsHistory') AS schema,
            max("MigrationId") AS latest, count(*) AS count
       FROM public."__EFMigrationsHistory"`,
  );
  t.deepEqual(rows[0], { schema: 'public', latest: LATEST_MIGRATION, count: '24' });
});

test('an API key row with an 11-character prefix and a 64-hex SHA-256 is stored once per hash', async (t) => {
  const user = await pool.query<{ Id: number }>(
    `INSERT INTO mail_archiver."Users" ("Username", "Email", "IsAdmin", "IsActive", "CreatedAt")
     VALUES ('keyowner', 'keyowner@local', false, true, (now() AT TIME ZONE 'UTC')) RETURNING "Id"`,
  );
  const userId = user.rows[0]!.Id;
  const key = `ma_${randomBytes(32).toString('base64url')}`;
  const hash = createHash('sha256').update(key, 'utf8').digest('hex');
  t.is(key.length, 46);

  const inserted = await pool.query<{ KeyPrefix: string; KeyHash: string; sqlHash: string }>(
    `INSERT INTO mail_archiver."ApiKeys" ("UserId", "Name", "KeyPrefix", "KeyHash", "CreatedAt")
     VALUES ($1, 'laptop', $2, $3, (now() AT TIME ZONE 'UTC'))
     RETURNING "KeyPrefix", "KeyHash", encode(sha256(convert_to($4::text, 'UTF8')), 'hex') AS "sqlHash"`,
    [userId, key.slice(0, 11), hash, key],
  );
  t.deepEqual(inserted.rows[0], { KeyPrefix: key.slice(0, 11), KeyHash: hash, sqlHash: hash });
  t.regex(inserted.rows[0]!.KeyHash, /^[0-9a-f]{64}$/);

  const duplicate = await t.throwsAsync(
    pool.query(
      `INSERT INTO mail_archiver."ApiKeys" ("UserId", "Name", "KeyPrefix", "KeyHash", "CreatedAt")
       VALUES ($1, 'copy', $2, $3, (now() AT TIME ZONE 'UTC'))`,
      [userId, key.slice(0, 11), hash],
    ),
  );
  t.like(duplicate as unknown as { code: string; constraint: string }, {
    code: '23505',
    constraint: 'IX_ApiKeys_KeyHash',
  });
});

test('locked messages refuse changes except IsLocked and FolderName, and refuse deletion', async (t) => {
  // Upstream's migrations look the triggers and functions up by these names.
  const triggers = await pool.query<{ tgname: string; proname: string }>(
    `SELECT tg.tgname, p.proname FROM pg_trigger tg JOIN pg_proc p ON p.oid = tg.tgfoid
      WHERE tg.tgrelid = 'mail_archiver."ArchivedEmails"'::regclass AND NOT tg.tgisinternal ORDER BY tg.tgname`,
  );
  t.deepEqual(triggers.rows, [
    { tgname: 'prevent_locked_email_deletion', proname: 'prevent_locked_email_deletion' },
    { tgname: 'prevent_locked_email_updates', proname: 'prevent_locked_email_changes' },
  ]);
  const account = await pool.query<{ Id: number }>(
    `INSERT INTO mail_archiver."MailAccounts" ("Name", "EmailAddress", "UseSSL", "LastSync", "IsEnabled")
     VALUES ('locked', 'locked@example.org', true, '1970-01-01', true) RETURNING "Id"`,
  );
  const email = await pool.query<{ Id: number; sentUtc: string }>(
    `INSERT INTO mail_archiver."ArchivedEmails"
       ("MailAccountId", "MessageId", "Subject", "Body", "HtmlBody", "From", "To", "Cc", "Bcc",
        "SentDate", "ReceivedDate", "IsOutgoing", "HasAttachments", "FolderName", "IsLocked")
     VALUES ($1, 'm1@example.org', 'Invoice', 'body', '', 'a@example.org', 'b@example.org', '', '',
             '2026-03-02 10:00:00', '2026-03-02 09:05:00', false, false, 'INBOX', true)
     RETURNING "Id",
       to_char("SentDate" AT TIME ZONE 'Europe/Berlin' AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS "sentUtc"`,
    [account.rows[0]!.Id],
  );
  const { Id: id, sentUtc } = email.rows[0]!;
  // A naive SentDate written in a Berlin display zone (UTC+1 in March) is one hour later than UTC.
  t.is(sentUtc, '2026-03-02T09:00:00Z');

  const edit = await t.throwsAsync(
    pool.query(`UPDATE mail_archiver."ArchivedEmails" SET "Subject" = 'changed' WHERE "Id" = $1`, [id]),
  );
  t.is((edit as unknown as { code: string }).code, 'P0001');
  const move = await pool.query(`UPDATE mail_archiver."ArchivedEmails" SET "FolderName" = 'Archive' WHERE "Id" = $1`, [
    id,
  ]);
  t.is(move.rowCount, 1);
  const removal = await t.throwsAsync(pool.query(`DELETE FROM mail_archiver."ArchivedEmails" WHERE "Id" = $1`, [id]));
  t.is((removal as unknown as { code: string }).code, 'P0001');
  await pool.query(`UPDATE mail_archiver."ArchivedEmails" SET "IsLocked" = false WHERE "Id" = $1`, [id]);
  const deleted = await pool.query(`DELETE FROM mail_archiver."ArchivedEmails" WHERE "Id" = $1`, [id]);
  t.is(deleted.rowCount, 1);
});
