// Acceptance of the PostgreSQL store against a database in Mail Archiver's own shape: the schema
// file loaded into a fresh database, rows inserted the way Mail Archiver inserts them (an account,
// a user and its assignment, messages whose attachment bytes sit in AttachmentContents, one legacy
// attachment with inline bytes, a key row with its prefix and hash), then the service started on
// it. Every REST endpoint and MCP tool answers with that key, dates come back in UTC from the
// display zone, and each read lands in AccessLogs with Mail Archiver's type codes.
import anyTest, { type TestFn } from 'ava';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import supertest from 'supertest';
import { prepareArchive } from '../engine/archive.js';
import { ArchiveOpenError } from '../shared/errors.js';
import { MAIL_ARCHIVER_DDL } from '../engine/postgres/schema.js';
import { createGateway, type Gateway } from '../gateway/app.js';
import type { EmailDetailDto, EmailSummaryDto, PagedResult } from '../shared/dto.js';
import { apiSettings, bearer, rawBody, silentLogger } from './helpers/api.js';
import { call, connectClient, jsonOf } from './helpers/mcp.js';
import { loadMailArchiverSchema } from './helpers/pg-mail-archiver.js';
import { createTestDatabase, loadSqlFile, type TestDatabase } from './helpers/postgres.js';

const ZONE = 'Europe/Berlin';
const KEY = `ma_${Buffer.alloc(32, 7).toString('base64url')}`;
const sha256hex = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

interface Ctx {
  db: TestDatabase;
  client: pg.Client;
  gateway: Gateway;
  server: Server;
  base: string;
  request: supertest.Agent;
  mcp: Client;
  ids: { account: number; hidden: number; budget: number; legacy: number; pdf: number; old: number; user: number };
}
const test = anyTest as TestFn<Ctx>;

/** Inserts rows as Mail Archiver's code does: naive timestamps, SentDate in its display zone. */
async function seed(client: pg.Client): Promise<Ctx['ids']> {
  const one = async (text: string, values: unknown[] = []) =>
    (await client.query(text, values)).rows[0] as { Id: number };
  const user = await one(
    `INSERT INTO mail_archiver."Users" ("Username", "Email", "PasswordHash", "IsAdmin", "IsActive", "CreatedAt")
     VALUES ('Erika', 'erika@example.org', NULL, false, true, '2025-01-01 08:00:00') RETURNING "Id"`,
  );
  const account = await one(
    `INSERT INTO mail_archiver."MailAccounts" ("Name", "EmailAddress", "UseSSL", "LastSync", "IsEnabled", "Provider", "ImapServer", "Password")
     VALUES ('Erika at work', 'erika@example.org', true, '2025-06-01 12:00:00', true, 'IMAP', 'imap.example.org', 'imap-secret')
     RETURNING "Id"`,
  );
  const hidden = await one(
    `INSERT INTO mail_archiver."MailAccounts" ("Name", "EmailAddress", "UseSSL", "LastSync", "IsEnabled")
     VALUES ('Not Erika''s', 'boss@example.org', true, '1970-01-01 00:00:00', true) RETURNING "Id"`,
  );
  await client.query('INSERT INTO mail_archiver."UserMailAccounts" ("UserId", "MailAccountId") VALUES ($1, $2)', [
    user.Id,
    account.Id,
  ]);
  const email = (
    accountId: number,
    folder: string,
    subject: string,
    sent: string,
    extra: Record<string, unknown> = {},
  ) =>
    one(
      `INSERT INTO mail_archiver."ArchivedEmails"
         ("MailAccountId", "MessageId", "Subject", "Body", "HtmlBody", "From", "To", "Cc", "Bcc", "SentDate",
          "ReceivedDate", "IsOutgoing", "HasAttachments", "FolderName", "OriginalBodyText")
       VALUES ($1, $2, $3, $4, $5, 'anna@example.org', 'erika@example.org', '', '', $6, '2025-06-01 10:00:00',
               false, $7, $8, $9) RETURNING "Id"`,
      [
        accountId,
        `<${subject.replace(/\W+/g, '.')}@example.org>`,
        subject,
        extra.body ?? 'plain body',
        extra.html ?? '',
        sent,
        extra.attachments ?? false,
        folder,
        extra.original ?? null,
      ],
    );
  // 10:30 in Berlin (CET, +01:00) is 09:30 UTC.
  const budget = await email(account.Id, 'INBOX', 'Budget 2025', '2025-03-05 10:30:00', {
    attachments: true,
    body: 'cut body',
    original: Buffer.from('the whole original body, with\u0000a NUL', 'utf8'),
  });
  const legacy = await email(account.Id, 'INBOX/Projects', 'Legacy attachment', '2025-07-01 14:00:00', {
    attachments: true,
    html: '<p>html</p>',
  });
  const old = await email(account.Id, 'INBOX', 'Older message', '2024-12-31 23:30:00');
  await email(hidden.Id, 'INBOX', 'Secret plans', '2025-03-06 10:00:00');
  // Attachment bytes in AttachmentContents (de-duplicated by hash), referenced by id.
  const pdfBytes = Buffer.from('%PDF-1.4 not really a pdf\n'.repeat(100));
  const content = await one(
    `INSERT INTO mail_archiver."AttachmentContents" ("Hash", "Content", "Size") VALUES ($1, $2, $3) RETURNING "Id"`,
    [sha256hex(pdfBytes), pdfBytes, pdfBytes.length],
  );
  const pdf = await one(
    `INSERT INTO mail_archiver."EmailAttachments" ("ArchivedEmailId", "FileName", "ContentType", "Size", "AttachmentContentId")
     VALUES ($1, 'budget.pdf', 'application/pdf', $2, $3) RETURNING "Id"`,
    [budget.Id, pdfBytes.length, content.Id],
  );
  // A row from before content de-duplication: the bytes still inline.
  await client.query(
    `INSERT INTO mail_archiver."EmailAttachments" ("ArchivedEmailId", "FileName", "ContentType", "Size", "Content")
     VALUES ($1, 'notes.txt', 'text/plain', 5, $2)`,
    [legacy.Id, Buffer.from('hello')],
  );
  await client.query(
    `INSERT INTO mail_archiver."ApiKeys" ("UserId", "Name", "KeyPrefix", "KeyHash", "CreatedAt")
     VALUES ($1, 'made in Mail Archiver', $2, $3, '2025-06-01 09:00:00')`,
    [user.Id, KEY.slice(0, 11), sha256hex(KEY)],
  );
  return {
    account: account.Id,
    hidden: hidden.Id,
    budget: budget.Id,
    legacy: legacy.Id,
    pdf: pdf.Id,
    old: old.Id,
    user: user.Id,
  };
}

test.before(async (t) => {
  const db = await createTestDatabase('ma_accept');
  await loadMailArchiverSchema(db.url);
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  const ids = await seed(client);
  await prepareArchive({ path: db.url, timeZone: ZONE });
  const settings = apiSettings(db.url, { Database: { Path: db.url, TimeZone: ZONE }, Mcp: { Enabled: true } });
  const gateway = createGateway(settings, { logger: silentLogger() });
  const server = createServer(gateway.app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const mcp = await connectClient(`${base}/mcp`, KEY);
  t.context = { db, client, gateway, server, base, request: supertest.agent(base), mcp, ids };
});

test.after.always(async (t) => {
  const { db, client, gateway, server, mcp } = t.context;
  await mcp?.close();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await gateway?.close();
  await client?.end();
  await db?.drop();
});

test.serial(
  'REST: every endpoint answers with a key made by Mail Archiver, within what its owner may see',
  async (t) => {
    const { request, ids } = t.context;
    const accounts = await request.get('/api/v1/accounts').set(bearer(KEY));
    t.is(accounts.status, 200);
    t.deepEqual(accounts.body, [
      {
        id: ids.account,
        name: 'Erika at work',
        emailAddress: 'erika@example.org',
        provider: 'IMAP',
        isEnabled: true,
        lastSync: '2025-06-01T12:00:00.000Z',
      },
    ]);
    t.false(JSON.stringify(accounts.body).includes('imap-secret'), 'credentials are never serialized');

    const folders = await request.get(`/api/v1/accounts/${ids.account}/folders`).set(bearer(KEY));
    t.is(folders.status, 200);
    t.deepEqual(
      (folders.body as Array<{ fullPath: string; totalCount: number; children: Array<{ fullPath: string }> }>).map(
        (f) => [f.fullPath, f.totalCount, f.children.map((c) => c.fullPath)],
      ),
      [['INBOX', 2, ['INBOX/Projects']]],
    );
    t.is((await request.get(`/api/v1/accounts/${ids.hidden}/folders`).set(bearer(KEY))).status, 404);

    const all = await request.get('/api/v1/emails').set(bearer(KEY));
    t.is(all.status, 200);
    const page = all.body as PagedResult<EmailSummaryDto>;
    t.is(page.totalItems, 3, 'the other account stays invisible');
    t.deepEqual(
      page.items.map((e) => [e.subject, e.sentDate]),
      [
        ['Legacy attachment', '2025-07-01T12:00:00.000Z'], // CEST, +02:00
        ['Budget 2025', '2025-03-05T09:30:00.000Z'], // CET, +01:00
        ['Older message', '2024-12-31T22:30:00.000Z'],
      ],
    );
    // Filter bounds are instants: converted to the display zone before comparing with SentDate.
    const range = await request
      .get('/api/v1/emails')
      .query({ from: '2025-03-05T09:30:00Z', to: '2025-03-05T09:30:00Z' })
      .set(bearer(KEY));
    t.deepEqual(
      (range.body as PagedResult<EmailSummaryDto>).items.map((e) => e.id),
      [ids.budget],
    );
    // 23:30 on 31 December in Berlin is 22:30 UTC.
    const before = await request.get('/api/v1/emails').query({ to: '2024-12-31T22:29:59Z' }).set(bearer(KEY));
    t.is((before.body as PagedResult<EmailSummaryDto>).totalItems, 0);
    const at = await request.get('/api/v1/emails').query({ to: '2024-12-31T22:30:00Z' }).set(bearer(KEY));
    t.deepEqual(
      (at.body as PagedResult<EmailSummaryDto>).items.map((e) => e.id),
      [ids.old],
    );

    const detail = await request.get(`/api/v1/emails/${ids.budget}`).set(bearer(KEY));
    t.is(detail.status, 200);
    const d = detail.body as EmailDetailDto;
    t.is(d.receivedDate, '2025-06-01T10:00:00.000Z');
    t.is(d.textBody, 'the whole original body, with\u0000a NUL', 'OriginalBodyText wins over Body');
    t.is(d.htmlBody, null, "Mail Archiver's '' means no HTML body");
    t.deepEqual(d.attachments, [{ id: ids.pdf, fileName: 'budget.pdf', contentType: 'application/pdf', size: 2600 }]);
    t.is((await request.get(`/api/v1/emails/${ids.legacy}`).set(bearer(KEY))).body.htmlBody, '<p>html</p>');

    const download = await request
      .get(`/api/v1/emails/${ids.budget}/attachments/${ids.pdf}`)
      .set(bearer(KEY))
      .buffer(true)
      .parse(rawBody);
    t.is(download.status, 200);
    t.is((download.body as Buffer).toString(), '%PDF-1.4 not really a pdf\n'.repeat(100));
    const legacyDetail = (await request.get(`/api/v1/emails/${ids.legacy}`).set(bearer(KEY))).body as EmailDetailDto;
    const legacyFile = await request
      .get(`/api/v1/emails/${ids.legacy}/attachments/${legacyDetail.attachments[0]!.id}`)
      .set(bearer(KEY))
      .buffer(true)
      .parse(rawBody);
    t.is((legacyFile.body as Buffer).toString(), 'hello', 'legacy inline bytes are served too');

    const stats = await request.get('/api/v1/stats').set(bearer(KEY));
    t.deepEqual(stats.body, { emails: 3, accounts: 1, attachments: 2, databaseSizeInMB: '' });
  },
);

test.serial('MCP: every tool answers with the same key', async (t) => {
  const { mcp, ids } = t.context;
  const accounts = jsonOf<Array<{ id: number }>>(await call(mcp, 'list_accounts'));
  t.deepEqual(
    accounts.map((a) => a.id),
    [ids.account],
  );
  const folders = jsonOf<Array<{ fullPath: string }>>(await call(mcp, 'list_folders', { accountId: ids.account }));
  t.deepEqual(
    folders.map((f) => f.fullPath),
    ['INBOX'],
  );
  const found = jsonOf<PagedResult<EmailSummaryDto>>(await call(mcp, 'search_emails', { folder: 'INBOX/Projects' }));
  t.deepEqual(
    found.items.map((e) => e.id),
    [ids.legacy],
  );
  const email = jsonOf<EmailDetailDto>(await call(mcp, 'get_email', { id: ids.old }));
  t.is(email.sentDate, '2024-12-31T22:30:00.000Z');
  const file = jsonOf<{ base64Data: string; size: number }>(
    await call(mcp, 'get_attachment', { id: ids.budget, attachmentId: ids.pdf }),
  );
  t.is(file.size, 2600);
  t.is(Buffer.from(file.base64Data, 'base64').toString().slice(0, 8), '%PDF-1.4');
  // The other account's message does not exist for this key.
  const secret = (
    await t.context.client.query(`SELECT "Id" FROM mail_archiver."ArchivedEmails" WHERE "Subject" = 'Secret plans'`)
  ).rows[0] as { Id: number };
  t.deepEqual((await call(mcp, 'get_email', { id: secret.Id })).structuredContent, { email: null });
});

test.serial("reads appear in Mail Archiver's AccessLogs with its type codes; LastUsedAt is set", async (t) => {
  const { gateway, client, ids } = t.context;
  await gateway.accessLog.flush();
  const { rows } = await client.query<{
    Username: string;
    Type: number;
    EmailId: number | null;
    EmailSubject: string | null;
    EmailFrom: string | null;
    SearchParameters: string | null;
    MailAccountId: number | null;
    fresh: boolean;
  }>(
    `SELECT "Username", "Type", "EmailId", "EmailSubject", "EmailFrom", "SearchParameters", "MailAccountId",
            "Timestamp" > (now() AT TIME ZONE 'UTC') - interval '5 minutes' AS fresh
       FROM mail_archiver."AccessLogs" ORDER BY "Id"`,
  );
  t.true(rows.length >= 8);
  t.true(rows.every((r) => r.Username === 'Erika' && r.fresh && r.MailAccountId === null));
  const types = new Set(rows.map((r) => r.Type));
  t.deepEqual([...types].sort(), [2, 3, 4], 'Search 2, Open 3, Download 4 and nothing else');
  const open = rows.find((r) => r.Type === 3 && r.EmailId === ids.budget)!;
  t.like(open, { EmailSubject: 'Budget 2025', EmailFrom: 'anna@example.org', SearchParameters: null });
  const download = rows.find((r) => r.Type === 4)!;
  t.is(download.EmailId, ids.budget, 'a download names the message, not the attachment');
  const search = rows.find((r) => r.Type === 2 && r.SearchParameters?.includes('from='))!;
  t.regex(search.SearchParameters!, /^from=2025-03-05T09:30:00Z; to=2025-03-05T09:30:00Z/);
  const key = await client.query<{ used: boolean }>(
    `SELECT "LastUsedAt" > (now() AT TIME ZONE 'UTC') - interval '5 minutes' AS used FROM mail_archiver."ApiKeys"`,
  );
  t.true(key.rows[0]!.used);
});

test.serial('a key created here is stored as Mail Archiver checks it: 11-character prefix, hex SHA-256', async (t) => {
  const { gateway, client, ids } = t.context;
  const created = await gateway.engine.run({
    kind: 'createKeyFor',
    actorId: ids.user,
    maxActive: 100,
    name: 'made here',
    expiresAt: null,
    now: Date.now(),
  });
  if (!created.ok) return t.fail(created.message);
  const { rows } = await client.query<{ ok: boolean; prefix: string }>(
    `SELECT "KeyHash" = encode(sha256(convert_to($1, 'UTF8')), 'hex') AS ok, "KeyPrefix" AS prefix
       FROM mail_archiver."ApiKeys" WHERE "Id" = $2`,
    [created.value.key, created.value.row.id],
  );
  t.true(rows[0]!.ok);
  t.is(rows[0]!.prefix, created.value.key.slice(0, 11));
  t.is((await t.context.request.get('/api/v1/accounts').set(bearer(created.value.key))).status, 200);
});

test('start-up refuses an older and an empty Mail Archiver schema with one sentence, serves a newer one', async (t) => {
  const older = await createTestDatabase('ma_older');
  const empty = await createTestDatabase('ma_empty');
  t.teardown(() => Promise.all([older.drop(), empty.drop()]));
  await loadSqlFile(older.url, MAIL_ARCHIVER_DDL);
  const c = new pg.Client({ connectionString: older.url });
  await c.connect();
  await c.query(`DELETE FROM public."__EFMigrationsHistory" WHERE "MigrationId" LIKE '202608%'`);
  const olderError = await t.throwsAsync(prepareArchive({ path: older.url }), { instanceOf: ArchiveOpenError });
  t.regex(olderError!.message, /older than 20260818120000_MigrateV2608_1.*start Mail Archiver once/);
  // A newer history whose shape leaves every column the service uses intact is served, with one
  // line (test/pg-compat-shapes.test.ts has each shape).
  await c.query(`INSERT INTO public."__EFMigrationsHistory" VALUES ('20991231000000_Future', '11.0.0')`);
  const notices: string[] = [];
  await prepareArchive({ path: older.url }, { onNotice: (line) => notices.push(line) });
  t.is(notices.length, 1);
  t.regex(notices[0]!, /20991231000000_Future, newer than 20260929120000_MigrateV2609_4/);
  await c.end();
  const emptyError = await t.throwsAsync(prepareArchive({ path: empty.url }), { instanceOf: ArchiveOpenError });
  t.regex(emptyError!.message, /holds no Mail Archiver schema/);
  for (const e of [olderError!, emptyError!]) t.is(e.message.split('\n').length, 1);
  // The CLI's path: an empty database gets the whole schema, history included.
  await prepareArchive({ path: empty.url }, { createIfEmpty: true });
  const check = new pg.Client({ connectionString: empty.url });
  await check.connect();
  const history = await check.query('SELECT count(*)::int AS n FROM public."__EFMigrationsHistory"');
  await check.end();
  t.is(history.rows[0].n, 28);
});

test('an unreachable server or refused credentials: one sentence naming Database:Path, never the password', async (t) => {
  const refused = await t.throwsAsync(prepareArchive({ path: 'postgres://someone:s3cret-pw@127.0.0.1:1/nowhere' }), {
    instanceOf: ArchiveOpenError,
  });
  t.regex(refused!.message, /^Cannot use the PostgreSQL database 127\.0\.0\.1:1\/nowhere named by Database:Path: /);
  t.false(refused!.message.includes('s3cret-pw'));
  const missing = await t.throwsAsync(prepareArchive({ path: 'postgres://postgres@127.0.0.1:5432/mag_no_such_db_x' }), {
    instanceOf: ArchiveOpenError,
  });
  t.regex(missing!.message, /the database does not exist/);
});

test.serial('a large compressed attachment is served whole and intact, chunk by chunk', async (t) => {
  const { client, request, ids } = t.context;
  // Compressible text: PostgreSQL stores it compressed, which slicing would decompress again and
  // again (engine/postgres/handlers.ts, WHOLE_READ_LIMIT).
  const bytes = Buffer.from(
    Array.from({ length: 60_000 }, (_, i) => `line ${i}: the quarterly numbers, again\n`).join(''),
  );
  const hash = sha256hex(bytes);
  const content = (
    await client.query<{ Id: number }>(
      `INSERT INTO mail_archiver."AttachmentContents" ("Hash", "Content", "Size") VALUES ($1, $2, $3)
       RETURNING "Id"`,
      [hash, bytes, bytes.length],
    )
  ).rows[0]!;
  const stored = await client.query<{ compressed: boolean }>(
    `SELECT pg_column_compression("Content") IS NOT NULL AS compressed FROM mail_archiver."AttachmentContents" WHERE "Id" = $1`,
    [content.Id],
  );
  t.true(stored.rows[0]!.compressed, 'PostgreSQL stored the value compressed');
  const attachment = (
    await client.query<{ Id: number }>(
      `INSERT INTO mail_archiver."EmailAttachments" ("ArchivedEmailId", "FileName", "ContentType", "Size", "AttachmentContentId")
       VALUES ($1, 'numbers.txt', 'text/plain', $2, $3) RETURNING "Id"`,
      [ids.legacy, bytes.length, content.Id],
    )
  ).rows[0]!;
  for (let i = 0; i < 2; i++) {
    const res = await request
      .get(`/api/v1/emails/${ids.legacy}/attachments/${attachment.Id}`)
      .set(bearer(KEY))
      .buffer(true)
      .parse(rawBody);
    t.is(res.status, 200);
    t.is(Number(res.headers['content-length']), bytes.length);
    t.is(sha256hex(res.body as Buffer), hash, `download ${i + 1} intact`);
  }
});
