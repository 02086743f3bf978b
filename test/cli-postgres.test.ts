// The CLI on a PostgreSQL archive: what only PostgreSQL has. Creating Mail Archiver's schema in
// an empty database, connection failures, the formats Mail Archiver reads (password hashes, key
// hashes, e-mail placeholders, access-log rows), and the mail write path (PgArchiveWriter).
// Everything the two stores share is tested on both in test/cli.test.ts and test/import.test.ts.
import test, { type ExecutionContext } from 'ava';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openAdmin, openStore } from '../engine/archive.js';
import { importPaths } from '../engine/import/importer.js';
import { progressOf } from '../engine/cli/commands/index.js';
import { STORED_BODY_LIMIT } from '../engine/rules/body.js';
import { OWN_SCHEMA_VERSION } from '../engine/postgres/schema.js';
import { verifyMailArchiverPasswordSync } from '../engine/rules/passwords.js';
import { hashKey } from '../engine/rules/keys.js';
import type { NewEmail } from '../engine/rules/new-email.js';
import { runCli } from './helpers/cli.js';
import type { Run } from './helpers/cli.js';
import { cliArchive, fails, json, ok } from './helpers/cli-archive.js';
import { tempDir } from './helpers/fixture.js';

const FIXTURES = fileURLToPath(new URL('../../test/fixtures/mail/', import.meta.url));
/** An import's --json summary; mixed.mbox holds one malformed entry, warned about on stderr. */
function summary(t: ExecutionContext, r: Run): { imported: number; duplicates: number; failed: number } {
  t.regex(r.stderr, /^(mail-archive: warning: [^\n]+\n)*$/);
  const s = JSON.parse(r.stdout) as { imported: number; duplicates: number; failed: number };
  t.is(r.code, s.failed > 0 ? 1 : 0, 'an import with a failed message exits 1');
  return s;
}

const ADMIN = { userId: 1, username: 'root', isAdmin: true, keyId: 1, keyPrefix: 'ma_x' };

test('users add on an empty database creates Mail Archiver schema with its 28 history rows, and ours', async (t) => {
  const a = await cliArchive(t, 'postgres');
  t.false(await a.exists());
  t.regex(ok(t, await a.cli(['users', 'add', 'alice'])), /^Created user alice \(id 1\)\.\n$/);
  const [history] = await a.pgQuery<{ n: number; newest: string }>(
    'SELECT count(*)::int AS n, max("MigrationId") AS newest FROM public."__EFMigrationsHistory"',
  );
  t.deepEqual(history, { n: 28, newest: '20260929120000_MigrateV2609_4' });
  const [own] = await a.pgQuery<{ version: number }>('SELECT version FROM mail_archive_gateway.schema_version');
  t.is(own!.version, OWN_SCHEMA_VERSION);
  t.true(OWN_SCHEMA_VERSION >= 3, 'the import-keys migration is there');
  const [user] = await a.pgQuery<{ Username: string; Email: string; IsActive: boolean; PasswordHash: string | null }>(
    'SELECT "Username", "Email", "IsActive", "PasswordHash" FROM mail_archiver."Users"',
  );
  // No --email: a unique placeholder Mail Archiver accepts (NOT NULL, unique), read back as none.
  t.like(user, { Username: 'alice', IsActive: true, PasswordHash: null });
  t.regex(user!.Email, /^no-email-[0-9a-f]{16}@users\.invalid$/);
  ok(t, await a.cli(['users', 'add', 'bob']));
  t.deepEqual(
    json<Array<{ email: string | null }>>(t, await a.cli(['users', 'list', '--json'])).map((u) => u.email),
    [null, null],
  );
});

test('users add --password-stdin stores Mail Archiver password format, and the web sign-in accepts it', async (t) => {
  const a = await cliArchive(t, 'postgres');
  const password = 'correct horse battery staple';
  ok(
    t,
    await a.cli(['users', 'add', 'Alice', '--password-stdin', '--email', 'alice@example.com'], {
      input: `${password}\n`,
    }),
  );
  const [row] = await a.pgQuery<{ PasswordHash: string; Email: string }>(
    'SELECT "PasswordHash", "Email" FROM mail_archiver."Users"',
  );
  t.regex(row!.PasswordHash, /^600000\.[A-Za-z0-9+/]+={0,2}\.[A-Za-z0-9+/]+={0,2}$/);
  t.true(verifyMailArchiverPasswordSync(password, row!.PasswordHash));
  t.false(verifyMailArchiverPasswordSync(`${password}\n`, row!.PasswordHash));
  t.is(row!.Email, 'alice@example.com');
  const store = await openStore({ path: a.db });
  t.teardown(() => store.close());
  // User names compare lower-cased, as in Mail Archiver.
  t.like(await store.run({ kind: 'login', username: 'alice', password }), { username: 'Alice', isAdmin: false });
  t.is(await store.run({ kind: 'login', username: 'alice', password: 'wrong password' }), null);
});

test('users add refuses an e-mail Mail Archiver cannot hold: too long, or another user has it', async (t) => {
  const a = await cliArchive(t, 'postgres');
  fails(t, await a.cli(['users', 'add', 'alice', '--email', `${'a'.repeat(95)}@example.com`]), '100 characters');
  ok(t, await a.cli(['users', 'add', 'alice', '--email', 'shared@example.com']));
  fails(t, await a.cli(['users', 'add', 'bob', '--email', 'shared@example.com']), 'shared@example.com');
  t.deepEqual(await a.usernames(), ['alice']);
});

test('keys create stores the prefix and SHA-256 Mail Archiver checks, and the gateway accepts the key', async (t) => {
  const a = await cliArchive(t, 'postgres');
  ok(t, await a.cli(['users', 'add', 'alice']));
  const made = json<{ id: number; key: string; prefix: string }>(
    t,
    await a.cli(['keys', 'create', 'ALICE', '--name', 'laptop', '--json']),
  );
  const rows = await a.pgQuery<{ KeyPrefix: string; KeyHash: string; Name: string }>(
    'SELECT "KeyPrefix", "KeyHash", "Name" FROM mail_archiver."ApiKeys"',
  );
  t.deepEqual(rows, [{ KeyPrefix: made.key.slice(0, 11), KeyHash: hashKey(made.key), Name: 'laptop' }]);
  t.false(JSON.stringify(await a.pgQuery('SELECT * FROM mail_archiver."ApiKeys"')).includes(made.key));
  const store = await openStore({ path: a.db });
  t.teardown(() => store.close());
  t.like(await store.run({ kind: 'authenticate', keyHash: hashKey(made.key), now: Date.now() }), {
    ok: true,
    principal: { username: 'alice', keyId: made.id },
  });
  ok(t, await a.cli(['keys', 'revoke', made.prefix]));
  t.like(await store.run({ kind: 'authenticate', keyHash: hashKey(made.key), now: Date.now() }), {
    ok: false,
    reason: 'revoked',
  });
});

test('accounts add writes what Mail Archiver requires: UseSSL, IsEnabled, LastSync never, Provider IMPORT', async (t) => {
  const a = await cliArchive(t, 'postgres');
  t.is(ok(t, await a.cli(['accounts', 'add', '--name', 'Work', '--email', 'work@example.com'])), '1\n');
  const [row] = await a.pgQuery(
    'SELECT "UseSSL", "IsEnabled", "LastSync"::text AS "LastSync", "Provider" FROM mail_archiver."MailAccounts"',
  );
  t.deepEqual(row, { UseSSL: true, IsEnabled: true, LastSync: '1970-01-01 00:00:00', Provider: 'IMPORT' });
});

test('access-log shows the reads Mail Archiver logged itself, and not its other events', async (t) => {
  const a = await cliArchive(t, 'postgres');
  const admin = await a.admin();
  await admin.addUser({ username: 'alice' });
  await a.writeAccessLog([
    {
      userId: 1,
      type: 'Open',
      at: Date.parse('2024-05-01T10:00:00Z'),
      keyPrefix: 'ma_aaaaaaaa',
      clientIp: '10.0.0.1',
      source: 'mcp',
      emailId: 5,
    },
  ]);
  // Written by Mail Archiver: a sign-in (0), a search from its UI (2), a restore (5).
  await a.pgQuery(
    `INSERT INTO mail_archiver."AccessLogs" ("Username", "Type", "Timestamp", "SearchParameters")
     VALUES ('alice', 0, '2024-05-01 11:00:00', NULL), ('Alice', 2, '2024-05-01 12:00:00', 'q=budget; page=1'),
            ('alice', 5, '2024-05-01 13:00:00', NULL)`,
  );
  const rows = json<Array<Record<string, unknown>>>(t, await a.cli(['access-log', '--json']));
  t.deepEqual(
    rows.map((r) => [r.type, r.username, r.userId, r.source, r.keyPrefix, r.at]),
    [
      ['Search', 'Alice', 1, 'mail-archiver', null, '2024-05-01T12:00:00.000Z'],
      ['Open', 'alice', 1, 'mcp', 'ma_aaaaaaaa', '2024-05-01T10:00:00.000Z'],
    ],
  );
  t.deepEqual(rows[0]!.searchParams, { q: 'budget', page: '1' });
  t.is(json<unknown[]>(t, await a.cli(['access-log', '--user', 'alice', '--type', 'search', '--json'])).length, 1);
});

test('a wrong URL or a refused connection is one sentence, exit 1, and never the password', async (t) => {
  const { dir, cleanup } = tempDir('mag-cli-pg-');
  t.teardown(cleanup);
  const secret = 's3cr3t-Pa55word';
  const cases = [
    [`postgres://postgres:${secret}@127.0.0.1:1/archive`, 'nothing accepts connections there'],
    [`postgres://postgres:${secret}@127.0.0.1:5432/mag_no_such_database_here`, 'the database does not exist'],
    [`postgres://postgres:${secret}@no-such-host.invalid:5432/archive`, 'does not resolve'],
  ] as const;
  for (const [url, why] of cases) {
    for (const args of [['users', 'add', 'alice'], ['keys', 'list'], ['access-log'], ['import', '1', dir], ['demo']]) {
      const r = await runCli(['--db', url, ...args], { cwd: dir });
      t.is(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
      const err = fails(t, r, why, 'named by --db');
      t.false(err.includes(secret), 'no password');
    }
    // Database:Path from the environment behaves the same, and is named as such.
    const fromEnv = await runCli(['users', 'list'], { cwd: dir, env: { Database__Path: url } });
    t.is(fromEnv.code, 1);
    t.regex(fromEnv.stderr, /named by Database:Path/);
    t.false(fromEnv.stderr.includes(secret));
  }
});

test('backup refuses a PostgreSQL archive in one sentence, naming pg_dump', async (t) => {
  const a = await cliArchive(t, 'postgres');
  const r = await a.cli(['backup', join(a.dir, 'copy.db')]);
  t.is(r.code, 1);
  fails(t, r, 'pg_dump');
});

test("reparse refuses a PostgreSQL archive in one sentence: Mail Archiver's database is never rewritten", async (t) => {
  const a = await cliArchive(t, 'postgres');
  await a.admin(); // Mail Archiver's schema, so that the archive exists
  for (const args of [['reparse'], ['reparse', '--dry-run', '--json']]) {
    const r = await a.cli(args);
    t.is(r.code, 1);
    fails(t, r, 'reparse works on a SQLite archive', 'never rewrites');
  }
});

test('Database:Path set to a postgres URL: the CLI works without --db, SentDate in Database:TimeZone', async (t) => {
  const a = await cliArchive(t, 'postgres');
  const env = { Database__Path: a.db, Database__TimeZone: 'America/New_York' };
  t.is(ok(t, await a.cli(['accounts', 'add', '--name', 'A', '--email', 'a@example.com'], { noDb: true, env })), '1\n');
  const eml = join(a.dir, 'qp-latin1.eml');
  cpSync(join(FIXTURES, 'qp-latin1.eml'), eml);
  t.like(json(t, await a.cli(['import', '1', eml, '--json'], { noDb: true, env })), { imported: 1 });
  // The fixture's Date is 2024-05-14 10:14:51 +0200: 08:14:51 UTC, 04:14:51 in New York (EDT).
  const [row] = await a.pgQuery<{ sent: string }>(
    'SELECT "SentDate"::text AS sent FROM mail_archiver."ArchivedEmails"',
  );
  t.is(row!.sent, '2024-05-14 04:14:51');
});

test('import on PostgreSQL: bodies, attachments de-duplicated by SHA-256, duplicates skipped, a deleted message imported again', async (t) => {
  const a = await cliArchive(t, 'postgres');
  ok(t, await a.cli(['accounts', 'add', '--name', 'Alice', '--email', 'alice@example.com']));
  const mbox = join(a.dir, 'mixed.mbox');
  cpSync(join(FIXTURES, 'mixed.mbox'), mbox);
  t.like(summary(t, await a.cli(['import', '1', mbox, '--json'])), { imported: 3, duplicates: 0, failed: 1 });
  const notes = await a.pgQuery<{ FileName: string; AttachmentContentId: number; Size: number }>(
    `SELECT "FileName", "AttachmentContentId", "Size"::int AS "Size" FROM mail_archiver."EmailAttachments"
      WHERE "FileName" LIKE 'notes%' ORDER BY "Id"`,
  );
  t.deepEqual(
    notes.map((n) => n.FileName),
    ['notes.txt', 'notes-copy.txt'],
  );
  t.is(notes[0]!.AttachmentContentId, notes[1]!.AttachmentContentId);
  const [content] = await a.pgQuery<{ Hash: string; Content: Buffer }>(
    'SELECT "Hash", "Content" FROM mail_archiver."AttachmentContents" WHERE "Id" = $1',
    [notes[0]!.AttachmentContentId],
  );
  t.is(content!.Content.toString(), 'line one\nline two\n');
  t.regex(content!.Hash, /^[0-9a-f]{64}$/);
  const flags = await a.pgQuery<{ n: number }>(
    `SELECT count(*)::int AS n FROM mail_archiver."ArchivedEmails" e
      WHERE e."HasAttachments" <> EXISTS (SELECT 1 FROM mail_archiver."EmailAttachments" x WHERE x."ArchivedEmailId" = e."Id")`,
  );
  t.is(flags[0]!.n, 0, 'HasAttachments matches the attachment rows');

  t.like(summary(t, await a.cli(['import', '1', mbox, '--json'])), { imported: 0, duplicates: 3 });
  await a.pgQuery(
    `DELETE FROM mail_archiver."ArchivedEmails" WHERE "Id" = (SELECT min("Id") FROM mail_archiver."ArchivedEmails")`,
  );
  t.like(
    summary(t, await a.cli(['import', '1', mbox, '--json'])),
    { imported: 1, duplicates: 2 },
    'a deleted message comes back',
  );
  t.is(await a.count('emails'), 3);
  const [last] = await a.pgQuery<{ LastSync: Date }>('SELECT "LastSync" FROM mail_archiver."MailAccounts"');
  t.true(last!.LastSync.getUTCFullYear() > 1970, 'an import sets LastSync');
});

test('the import writes each search document itself, the very one the catch-up builds from the stored row', async (t) => {
  const a = await cliArchive(t, 'postgres');
  ok(t, await a.cli(['accounts', 'add', '--name', 'Alice', '--email', 'alice@example.com']));
  const dir = join(a.dir, 'mail');
  cpSync(FIXTURES, dir, { recursive: true });
  // What the fixtures lack: a signature part (not a file), a type in capitals, a NUL in the subject.
  writeFileSync(
    join(dir, 'signed.eml'),
    [
      'From: Sig <sig@example.com>',
      'To: alice@example.com',
      'Subject: =?utf-8?B?U2lnbmVkACByZXBvcnQ=?=',
      'Message-ID: <signed@example.com>',
      'Content-Type: multipart/signed; boundary="b"; protocol="application/pgp-signature"',
      '',
      '--b',
      'Content-Type: text/plain',
      '',
      'quarterly budget numbers attached twice over',
      '--b',
      'Content-Type: text/plain; name="first part.txt"',
      'Content-Disposition: attachment; filename="first part.txt"',
      '',
      'one',
      '--b',
      'Content-Type: text/plain; name="second.txt"',
      'Content-Disposition: attachment; filename="second.txt"',
      '',
      'two',
      '--b',
      'Content-Type: APPLICATION/PGP-SIGNATURE; name="signature.asc"',
      '',
      '-----BEGIN PGP SIGNATURE-----',
      '--b--',
      '',
    ].join('\r\n'),
  );
  // Without attachment text, which would have the catch-up rebuild the documents of messages with files.
  const admin = await a.admin();
  // Parsed on a thread from the first message: the document is built there (prepare.ts).
  t.like(
    await importPaths(admin, [dir], { accountId: 1, attachmentText: false, parse: { threads: 1, inlineFirst: 0 } }),
    {
      failed: 1, // mixed.mbox's malformed entry
    },
  );
  const docs = async () =>
    new Map(
      (
        await a.pgQuery<{ id: number; doc: string }>(
          'SELECT email_id AS id, doc::text AS doc FROM mail_archive_gateway.search_docs ORDER BY email_id',
        )
      ).map((r) => [r.id, r.doc]),
    );
  const written = await docs();
  t.true(written.size >= 15);
  t.true([...written.values()].some((doc) => doc.includes("'N:txt second'") && doc.includes("'S:signed report'")));
  await a.pgQuery(
    `DELETE FROM mail_archive_gateway.search_docs;
     UPDATE mail_archive_gateway.search_state SET indexed_through = 0`,
  );
  ok(t, await a.cli(['index']));
  t.deepEqual(await docs(), written);
});

test('attachment text rebuilds only the documents it changes: a file without text keeps the one the import wrote', async (t) => {
  const a = await cliArchive(t, 'postgres');
  ok(t, await a.cli(['accounts', 'add', '--name', 'Alice', '--email', 'alice@example.com']));
  const dir = join(a.dir, 'mail');
  const message = (name: string, type: string, content: string) =>
    writeFileSync(
      join(dir, `${name}.eml`),
      [
        'From: Bob <bob@example.com>',
        'To: alice@example.com',
        `Subject: ${name}`,
        `Message-ID: <${name}@example.com>`,
        'Content-Type: multipart/mixed; boundary="b"',
        '',
        '--b',
        'Content-Type: text/plain',
        '',
        'see the file',
        '--b',
        `Content-Type: ${type}; name="${name}.bin"`,
        `Content-Disposition: attachment; filename="${name}.bin"`,
        'Content-Transfer-Encoding: base64',
        '',
        Buffer.from(content).toString('base64'),
        '--b--',
        '',
      ].join('\r\n'),
    );
  mkdirSync(dir);
  message('withtext', 'text/plain', 'quarterly zeppelin figures');
  message('notext', 'application/octet-stream', 'no text can be read from these bytes');
  const admin = await a.admin();
  t.like(await importPaths(admin, [dir], { accountId: 1 }), { imported: 2, failed: 0 });
  const rows = await a.pgQuery<{ subject: string; same: boolean; doc: string }>(
    `SELECT e."Subject" AS subject, d.xmin::text = e.xmin::text AS same, d.doc::text AS doc
       FROM mail_archive_gateway.search_docs d JOIN mail_archiver."ArchivedEmails" e ON e."Id" = d.email_id
      ORDER BY e."Subject"`,
  );
  t.deepEqual(
    rows.map((r) => [r.subject, r.same]),
    [
      ['notext', true], // written with the message, never rewritten
      ['withtext', false], // built again once its file's text was read
    ],
  );
  t.true(rows[1]!.doc.includes("'a:zeppelin'"), 'the text read from the file is in the document');
  t.false(rows[0]!.doc.includes("'a:"), 'no text, no attachment lexemes');
});

test('a search document is stored compressed with lz4 where the server has it (own migration 15)', async (t) => {
  const a = await cliArchive(t, 'postgres');
  ok(t, await a.cli(['accounts', 'add', '--name', 'Alice', '--email', 'alice@example.com']));
  const dir = join(a.dir, 'mail');
  mkdirSync(dir);
  // A few thousand distinct words: a document of tens of KB, compressed as it is stored.
  const words = Array.from({ length: 4000 }, (_, i) => `word${(i * 7919) % 5000}`).join(' ');
  writeFileSync(
    join(dir, 'long.eml'),
    `From: bob@example.com\r\nTo: alice@example.com\r\nSubject: Long\r\nMessage-ID: <long@example.com>\r\n\r\n${words}\r\n`,
  );
  t.like(await importPaths(await a.admin(), [dir], { accountId: 1 }), { imported: 1 });
  const [row] = await a.pgQuery<{ method: string | null; size: number }>(
    'SELECT pg_column_compression(doc) AS method, octet_length(doc::text) AS size FROM mail_archive_gateway.search_docs',
  );
  t.true(row!.size > 50_000, `a document of ${row!.size} characters as text`);
  // A server built without lz4 (the embedded PostgreSQL 14 of test:postgres14) keeps pglz.
  const lz4 = await a.pgQuery('CREATE TEMP TABLE probe (x text COMPRESSION lz4)').then(
    () => true,
    (err: { code?: string }) => (err.code === '0A000' ? false : Promise.reject(err)),
  );
  t.is(row!.method, lz4 ? 'lz4' : 'pglz');
});

test('PgArchiveWriter: the body policy into Body, BodyUntruncatedText and OriginalBodyText, read back by the gateway', async (t) => {
  const a = await cliArchive(t, 'postgres');
  const admin = await openAdmin(a.db, { create: true, timeZone: 'UTC' });
  t.teardown(() => admin.close());
  const accountId = (await admin.addAccount({ name: 'A', emailAddress: 'a@example.com' })).id;
  const email = (over: Partial<NewEmail>): NewEmail => ({
    accountId,
    folder: '/INBOX/',
    messageId: '<m@example.com>',
    subject: 'S',
    from: 'x@example.com',
    to: 'a@example.com',
    cc: '',
    bcc: '',
    sentDate: Date.parse('2024-01-02T03:04:05.678Z'),
    receivedDate: Date.parse('2024-01-02T03:05:00Z'),
    isOutgoing: false,
    textBody: 'plain',
    htmlBody: null,
    attachments: [],
    dedupKey: 'k',
    ...over,
  });
  const long = 'x'.repeat(STORED_BODY_LIMIT + 10);
  const withNul = 'before\0after';
  const ids = await admin
    .openWriter()
    .writeBatch([
      email({ dedupKey: 'plain' }),
      email({ dedupKey: 'long', textBody: long, htmlBody: '<p>hi</p>' }),
      email({ dedupKey: 'nul', textBody: withNul, subject: 'a\0b' }),
      email({ dedupKey: 'plain' }),
    ]);
  t.is(ids[3], null, 'the same key twice in one batch is a duplicate');
  const rows = await a.pgQuery<Record<string, unknown>>(
    `SELECT "Id", "Subject", length("Body") AS body_len, "HtmlBody", "BodyUntruncatedText" IS NOT NULL AS untruncated,
            "OriginalBodyText" IS NOT NULL AS original, "FolderName", "SentDate"::text AS sent, "ReceivedDate"::text AS received
       FROM mail_archiver."ArchivedEmails" ORDER BY "Id"`,
  );
  t.like(rows[0], {
    HtmlBody: '',
    untruncated: false,
    original: false,
    FolderName: 'INBOX',
    sent: '2024-01-02 03:04:05',
    received: '2024-01-02 03:05:00',
  });
  t.like(rows[1], { body_len: STORED_BODY_LIMIT, HtmlBody: '<p>hi</p>', untruncated: true, original: false });
  t.like(rows[2], { Subject: 'ab', untruncated: false, original: true });
  const store = await openStore({ path: a.db });
  t.teardown(() => store.close());
  const detail = (id: number) => store.run({ kind: 'detail', principal: ADMIN, id });
  t.is((await detail(ids[1]!))!.textBody, long);
  t.is((await detail(ids[2]!))!.textBody, withNul);
  t.is((await detail(ids[0]!))!.htmlBody, null, "'' reads back as no body");
});

test('demo on an empty PostgreSQL database: accounts, users that can sign in, keys, mail; a second run refuses', async (t) => {
  const a = await cliArchive(t, 'postgres');
  const out = json<{
    archive: string;
    messages: number;
    users: Array<{ username: string; password: string }>;
    keys: { admin: { key: string } };
  }>(t, await a.cli(['demo', '--messages', '40', '--json']));
  t.like(out, { messages: 40 });
  t.false(out.archive.includes('postgres://'), 'the archive is named without its URL');
  t.is(await a.count('emails'), 40);
  t.is(await a.count('accounts'), 3);
  const store = await openStore({ path: a.db });
  t.teardown(() => store.close());
  const alice = out.users.find((u) => u.username === 'alice')!;
  t.like(await store.run({ kind: 'login', username: 'alice', password: alice.password }), { username: 'alice' });
  t.like(await store.run({ kind: 'authenticate', keyHash: hashKey(out.keys.admin.key), now: Date.now() }), {
    ok: true,
  });
  const folders = await a.pgQuery<{ f: string }>(
    'SELECT DISTINCT "FolderName" AS f FROM mail_archiver."ArchivedEmails"',
  );
  t.true(folders.some((f) => f.f === 'INBOX/Projects/Apollo'));
  const again = await a.cli(['demo', '--messages', '40']);
  t.is(again.code, 1);
  t.is(
    again.stderr,
    'mail-archive: The archive is not empty (3 accounts, 3 users, 40 messages); the demo is only built into an empty database.\n',
  );
});

test('a role without the rights to write gets one sentence naming the refusal, exit 1', async (t) => {
  const a = await cliArchive(t, 'postgres');
  ok(t, await a.cli(['users', 'add', 'alice']));
  const role = `mag_ro_${process.pid}_${Date.now()}`;
  await a.pgQuery(`CREATE ROLE "${role}" LOGIN`);
  t.teardown(async () => {
    await a.pgQuery(`DROP OWNED BY "${role}"`);
    await a.pgQuery(`DROP ROLE "${role}"`);
  });
  await a.pgQuery(`GRANT USAGE ON SCHEMA mail_archiver, public, mail_archive_gateway TO "${role}";
    GRANT SELECT ON ALL TABLES IN SCHEMA mail_archiver, public, mail_archive_gateway TO "${role}";
    GRANT INSERT ON mail_archive_gateway.schema_version TO "${role}"`);
  // prepareSchema's CREATE SCHEMA / TABLE IF NOT EXISTS need CREATE even when they exist.
  await a.pgQuery(`GRANT CREATE ON SCHEMA mail_archive_gateway TO "${role}"`);
  const [{ db } = { db: '' }] = await a.pgQuery<{ db: string }>('SELECT current_database() AS db');
  await a.pgQuery(`GRANT CREATE ON DATABASE "${db}" TO "${role}"`);
  const url = new URL(a.db);
  url.username = role;
  url.password = 'not-needed-but-secret';
  const list = await runCli(['--db', url.toString(), 'users', 'list', '--json'], { cwd: a.dir });
  t.is(list.code, 0, list.stderr);
  t.is((JSON.parse(list.stdout) as unknown[]).length, 1, 'reading works');
  const add = await runCli(['--db', url.toString(), 'users', 'add', 'bob'], { cwd: a.dir });
  t.is(add.code, 1);
  const err = fails(t, add, '42501', 'permission denied');
  t.false(err.includes('not-needed-but-secret'));
  t.deepEqual(await a.usernames(), ['alice']);
});

test('afterBatch runs once per committed batch, after its commit', async (t) => {
  const a = await cliArchive(t, 'postgres');
  await a.admin();
  const { PgStore } = await import('../engine/postgres/store.js');
  const { PgArchiveWriter } = await import('../engine/postgres/writer.js');
  const store = new PgStore({ url: a.db, timeZone: 'UTC' });
  t.teardown(() => store.close());
  const [account] = await a.pgQuery<{ Id: number }>(
    `INSERT INTO mail_archiver."MailAccounts" ("Name", "EmailAddress", "UseSSL", "LastSync", "IsEnabled")
     VALUES ('A', 'a@example.com', true, '1970-01-01', true) RETURNING "Id"`,
  );
  const seen: number[] = [];
  const writer = new PgArchiveWriter(store, {
    // Another connection: it sees only what is committed.
    afterBatch: async () => {
      seen.push(await a.count('emails'));
    },
  });
  const email = (key: string): NewEmail => ({
    accountId: account!.Id,
    folder: 'INBOX',
    messageId: key,
    subject: key,
    from: 'x@example.com',
    to: 'a@example.com',
    cc: '',
    bcc: '',
    sentDate: 0,
    receivedDate: 0,
    isOutgoing: false,
    textBody: null,
    htmlBody: null,
    attachments: [],
    dedupKey: key,
  });
  await writer.writeBatch([email('a'), email('b')]);
  await writer.writeBatch([email('b'), email('c')]);
  t.deepEqual(seen, [2, 3]);
});

test('index on a database it has never indexed says how far it is and the time left', async (t) => {
  const a = await cliArchive(t, 'postgres');
  ok(t, await a.cli(['accounts', 'add', '--name', 'Work', '--email', 'work@example.com']));
  await a.pgQuery(
    `INSERT INTO mail_archiver."ArchivedEmails" ("MailAccountId", "MessageId", "Subject", "Body", "HtmlBody", "From",
       "To", "Cc", "Bcc", "SentDate", "ReceivedDate", "IsOutgoing", "HasAttachments", "FolderName")
     SELECT 1, '<' || i || '@example.com>', 'Subject ' || i, 'body words ' || i, '', 'a@example.com', 'b@example.com',
            '', '', now(), now(), false, false, 'INBOX' FROM generate_series(1, 3000) i`,
  );
  const run = await a.cli(['index']);
  t.is(run.code, 0, run.stderr);
  // No terminal: a line at each tenth of the way once 1,000 are done, in order.
  const lines = run.stderr.trim().split('\n');
  t.true(lines.length >= 5, run.stderr);
  const percents = lines.map((l) =>
    Number(/^indexed [\d,]+ messages, (\d+) %(, about \d+ (s|min) left)?$/.exec(l)?.[1]),
  );
  t.false(percents.some(Number.isNaN), run.stderr);
  t.deepEqual(
    percents,
    [...percents].sort((x, y) => x - y),
  );
  t.regex(run.stdout, /^Search index up to date: 3000 messages indexed/);
  t.is(progressOf(0.25, 20_000), '25 %, about 60 s left');
  t.is(progressOf(0.1, 60_000), '10 %, about 9 min left');
  t.is(progressOf(0.5, 1_000), '50 %');
});

test('index catches the search index up with mail Mail Archiver wrote itself, and drops deleted mail', async (t) => {
  const a = await cliArchive(t, 'postgres');
  t.is(ok(t, await a.cli(['accounts', 'add', '--name', 'Work', '--email', 'work@example.com'])), '1\n');
  const insert = (subject: string) =>
    a.pgQuery<{ Id: number }>(
      `INSERT INTO mail_archiver."ArchivedEmails" ("MailAccountId", "MessageId", "Subject", "Body", "HtmlBody", "From",
         "To", "Cc", "Bcc", "SentDate", "ReceivedDate", "IsOutgoing", "HasAttachments", "FolderName")
       VALUES (1, $1, $2, 'body', '', 'a@example.com', 'b@example.com', '', '', now(), now(), false, false, 'INBOX')
       RETURNING "Id"`,
      [`<${subject}@example.com>`, subject],
    );
  await insert('first');
  const [second] = await insert('second');
  const first = json<{ indexed: number; pruned: number; seconds: number }>(t, await a.cli(['index', '--json']));
  t.like(first, { indexed: 2, pruned: 0 });
  const [docs] = await a.pgQuery<{ n: number }>('SELECT count(*)::int AS n FROM mail_archive_gateway.search_docs');
  t.is(docs!.n, 2);
  // Documents as they were before own schema version 10 (no word pairs, the rewrite not done):
  // index gives them their pairs.
  await a.pgQuery(
    `ALTER TABLE mail_archive_gateway.search_docs DISABLE TRIGGER search_docs_pairs;
     UPDATE mail_archive_gateway.search_docs
        SET doc = ts_delete(doc, ARRAY(SELECT u.lexeme FROM unnest(doc) u WHERE u.lexeme !~ '^[a-z]:'));
     ALTER TABLE mail_archive_gateway.search_docs ENABLE TRIGGER search_docs_pairs;
     UPDATE mail_archive_gateway.search_state
        SET pairs_through = 0, pairs_goal = (SELECT max(email_id) FROM mail_archive_gateway.search_docs)`,
  );
  const paired = async () =>
    (
      await a.pgQuery<{ n: number; done: boolean }>(
        `SELECT (SELECT count(*)::int FROM mail_archive_gateway.search_docs WHERE doc @@ '''F:example com''') AS n,
                (SELECT pairs_through >= pairs_goal FROM mail_archive_gateway.search_state) AS done`,
      )
    )[0];
  t.like(await paired(), { n: 0, done: false });
  t.like(json<{ indexed: number }>(t, await a.cli(['index', '--json'])), { indexed: 0 });
  t.like(await paired(), { n: 2, done: true });
  await a.pgQuery('DELETE FROM mail_archiver."ArchivedEmails" WHERE "Id" = $1', [second!.Id]);
  t.regex(
    ok(t, await a.cli(['index'])),
    /^Search index up to date: 0 messages indexed, 1 entries of deleted messages removed \(\d+\.\d s\)\.\n$/,
  );
});
