// The web's message page job (JobMap.messageView) through the real worker pool, on both stores:
// SQLite files and Mail Archiver's PostgreSQL (the local server, test/helpers/postgres.ts). Real
// mail is imported through the importer (a fixture .eml and a few written here): an inline image's
// cid: link becomes the part URL of the attachment whose Content-ID it names (exactly, else
// ignoring case), a cid: that names nothing keeps no src, a remote image is removed and counted
// unless asked for, a message's size moves the job off the interactive lane as `detail`'s does, and
// a user who may not see the account gets null. The Outlook file-name fallback is met where it
// is needed: SQLite mail stored before migration 10, whose attachments have no Content-ID until a
// reparse gives them theirs, and Mail Archiver rows without a ContentId.
import test from 'ava';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import Database from '../engine/sqlite/driver.js';
import { openAdmin, prepareArchive } from '../engine/archive.js';
import { importPaths } from '../engine/import/importer.js';
import { reparseArchive } from '../engine/import/reparse.js';
import { EnginePool } from '../engine/pool/pool.js';
import { attachmentForCid, messageView } from '../engine/rules/mail-view.js';
import { migrations } from '../engine/sqlite/migrations.js';
import { LATEST_VERSION, migrate, openArchive, schemaVersion } from '../engine/sqlite/open.js';
import type { EmailDetailDto } from '../shared/dto.js';
import type { MessageView, Principal } from '../shared/jobs.js';
import { createFixture, tempDir } from './helpers/fixture.js';
import { createSmallArchive } from './helpers/pg-mail-archiver.js';
import { createTestDatabase, type TestDatabase } from './helpers/postgres.js';

const NESTED = fileURLToPath(new URL('../../test/fixtures/mail/nested-multipart.eml', import.meta.url));
/** A 1x1 PNG. */
const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const OUTLOOK_CID = 'image001.png@01D9C0DE.5A3B2C10';
const TRACKER = 'https://tracker.example.net/pixel.gif?u=alice';

const eml = (headers: string[], body: string[]) => [...headers, 'MIME-Version: 1.0', ...body, ''].join('\r\n');
const imagePart = (name: string, cid: string | null) => [
  `Content-Type: image/png; name="${name}"`,
  'Content-Transfer-Encoding: base64',
  ...(cid === null ? [] : [`Content-ID: <${cid}>`]),
  `Content-Disposition: inline; filename="${name}"`,
  '',
  PNG_BASE64,
];

/** Outlook's way: the image's Content-ID is its file name and a stamp; a cid: naming nothing; a web beacon. */
const OUTLOOK = eml(
  [
    'From: Grace Hopper <grace@example.com>',
    'To: alice@example.com',
    'Subject: Signature with a logo',
    'Date: Thu, 6 Jun 2024 10:00:00 +0000',
    'Message-ID: <outlook-1@example.com>',
    'Content-Type: multipart/related; boundary="rel"; type="text/html"',
  ],
  [
    '',
    '--rel',
    'Content-Type: text/html; charset=utf-8',
    '',
    `<html><body><p>Regards</p><img src="cid:${OUTLOOK_CID}" width="120"><img src="cid:nowhere@example.com" alt="gone">`,
    `<img src="${TRACKER}" width="1" height="1"></body></html>`,
    '--rel',
    ...imagePart('image001.png', OUTLOOK_CID),
    '--rel--',
  ],
);

/** The link's case differs from the header's; another inline part beside it. */
const CASE = eml(
  [
    'From: Dan Okafor <dan@example.com>',
    'To: alice@example.com',
    'Subject: Logo in another case',
    'Date: Fri, 7 Jun 2024 10:00:00 +0000',
    'Message-ID: <case-1@example.com>',
    'Content-Type: multipart/related; boundary="rel"; type="text/html"',
  ],
  [
    '',
    '--rel',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<p>Logo: <img src="cid:LOGO@Example.Com"></p>',
    '--rel',
    ...imagePart('banner.png', 'banner@example.com'),
    '--rel',
    ...imagePart('logo.png', 'logo@example.com'),
    '--rel--',
  ],
);

const PLAIN = eml(
  [
    'From: Dan Okafor <dan@example.com>',
    'To: alice@example.com',
    'Subject: Only text',
    'Date: Sat, 8 Jun 2024 10:00:00 +0000',
    'Message-ID: <plain-1@example.com>',
    'Content-Type: text/plain; charset=utf-8',
  ],
  ['', 'No HTML here.'],
);

/** Bodies over the interactive lane's limit (engine/rules/large-detail.ts), the image first. */
const LARGE = eml(
  [
    'From: Dan Okafor <dan@example.com>',
    'To: alice@example.com',
    'Subject: A long newsletter',
    'Date: Sun, 9 Jun 2024 10:00:00 +0000',
    'Message-ID: <large-1@example.com>',
    'Content-Type: multipart/related; boundary="rel"; type="text/html"',
  ],
  [
    '',
    '--rel',
    'Content-Type: text/html; charset=utf-8',
    'Content-Transfer-Encoding: base64',
    '',
    ...Buffer.from(`<p><img src="cid:masthead@example.com"></p><p>${'lorem ipsum dolor '.repeat(20_000)}</p>`)
      .toString('base64')
      .match(/.{1,76}/g)!,
    '--rel',
    ...imagePart('masthead.png', 'masthead@example.com'),
    '--rel--',
  ],
);

/** Every `src` of every img, in order. */
const srcs = (html: string): string[] =>
  [...html.matchAll(/<img\b[^>]*?\ssrc\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/gi)].map((m) => m[1] ?? m[2] ?? m[3]!);

const principal = (userId: number, isAdmin: boolean): Principal => ({
  userId,
  username: `user${userId}`,
  isAdmin,
  keyId: 0,
  keyPrefix: 'ma_test0000',
});

const partUrl = (id: number) => `/web/mail/${id}/parts/{attachmentId}`;
const part = (id: number, attachmentId: number) => `/web/mail/${id}/parts/${attachmentId}`;
const attachmentId = (email: EmailDetailDto, fileName: string): number => {
  const found = email.attachments.find((a) => a.fileName === fileName);
  if (!found) throw new Error(`no attachment ${fileName} in ${email.attachments.map((a) => a.fileName).join(', ')}`);
  return found.id;
};

interface Served {
  pool: EnginePool;
  /** Message ids by subject. */
  ids: Record<string, number>;
  admin: Principal;
  /** A non-administrator assigned to the account, and one who is not. */
  member: Principal;
  outsider: Principal;
  /** PostgreSQL: a message written as Mail Archiver writes it, its image without a ContentId. */
  unkeyed?: number;
  close(): Promise<void>;
}

function writeMail(dir: string): string[] {
  const files = { 'outlook.eml': OUTLOOK, 'case.eml': CASE, 'plain.eml': PLAIN, 'large.eml': LARGE };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return [NESTED, ...Object.keys(files).map((name) => join(dir, name))];
}

async function sqliteArchive(): Promise<Served> {
  const f = createFixture();
  const mail = tempDir('mag-message-view-');
  try {
    const db = openArchive(f.dbPath);
    try {
      const summary = await importPaths(db, writeMail(mail.dir), { accountId: f.accounts.work, folder: 'Web' });
      if (summary.imported !== 5) throw new Error(`imported ${summary.imported} of 5`);
      const ids = Object.fromEntries(
        (
          db.prepare("SELECT subject, id FROM emails WHERE folder = 'Web'").all() as Array<{
            subject: string;
            id: number;
          }>
        ).map((r) => [r.subject, r.id]),
      );
      const pool = new EnginePool({ dbPath: f.dbPath, threads: 1, searchMemoryBytes: 0 });
      return {
        pool,
        ids,
        admin: principal(f.users.admin, true),
        member: principal(f.users.alice, false), // work and shared
        outsider: principal(f.users.bob, false), // personal only
        close: async () => {
          await pool.close();
          f.cleanup();
        },
      };
    } finally {
      db.close();
    }
  } finally {
    mail.cleanup();
  }
}

async function postgresArchive(): Promise<Served> {
  const database: TestDatabase = await createTestDatabase('message_view');
  const mail = tempDir('mag-message-view-');
  try {
    const archive = await createSmallArchive(database.url, 0);
    const admin = await openAdmin(database.url);
    try {
      const summary = await importPaths(admin, writeMail(mail.dir), { accountId: archive.accountId, folder: 'Web' });
      if (summary.imported !== 5) throw new Error(`imported ${summary.imported} of 5`);
    } finally {
      await admin.close();
    }
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    let ids: Record<string, number>;
    let unkeyed: number;
    let outsider: number;
    try {
      ids = Object.fromEntries(
        (
          await client.query<{ subject: string; id: number }>(
            `SELECT "Subject" AS subject, "Id" AS id FROM mail_archiver."ArchivedEmails" WHERE "FolderName" = 'Web'`,
          )
        ).rows.map((r) => [r.subject, r.id]),
      );
      // As Mail Archiver wrote mail before its ContentId column: the image has a name, no ContentId.
      unkeyed = (
        await client.query<{ Id: number }>(
          `INSERT INTO mail_archiver."ArchivedEmails"
             ("MailAccountId", "MessageId", "Subject", "Body", "HtmlBody", "From", "To", "Cc", "Bcc",
              "SentDate", "ReceivedDate", "IsOutgoing", "HasAttachments", "FolderName", "IsLocked", "RawHeaders")
           VALUES ($1, '<unkeyed@example.org>', 'Written by Mail Archiver', '', $2,
                   'grace@example.com', 'alice@example.org', '', '',
                   '2024-06-10 10:00:00', '2024-06-10 10:00:05', false, true, 'INBOX', false, NULL)
           RETURNING "Id"`,
          [archive.accountId, `<p>Regards</p><img src="cid:${OUTLOOK_CID}">`],
        )
      ).rows[0]!.Id;
      for (const [name, cid] of [
        ['photo.png', 'photo@example.org'],
        ['image001.png', null],
      ] as const) {
        const bytes = Buffer.from(PNG_BASE64, 'base64');
        const content = await client.query<{ Id: number }>(
          `INSERT INTO mail_archiver."AttachmentContents" ("Hash", "Content", "Size") VALUES ($1, $2, $3)
           ON CONFLICT ("Hash") DO UPDATE SET "Size" = EXCLUDED."Size" RETURNING "Id"`,
          [createHash('sha256').update(bytes).digest('hex'), bytes, bytes.length],
        );
        await client.query(
          `INSERT INTO mail_archiver."EmailAttachments" ("ArchivedEmailId", "FileName", "ContentType", "Size", "AttachmentContentId", "ContentId")
           VALUES ($1, $2, 'image/png', $3, $4, $5)`,
          [unkeyed, name, bytes.length, content.rows[0]!.Id, cid],
        );
      }
      outsider = (
        await client.query<{ Id: number }>(
          `INSERT INTO mail_archiver."Users" ("Username", "Email", "IsAdmin", "IsActive", "CreatedAt")
           VALUES ('mallory', 'mallory@example.org', false, true, (now() AT TIME ZONE 'UTC')) RETURNING "Id"`,
        )
      ).rows[0]!.Id;
    } finally {
      await client.end();
    }
    await prepareArchive({ path: database.url });
    const pool = new EnginePool({ dbPath: database.url, threads: 1, searchMemoryBytes: 0 });
    return {
      pool,
      ids,
      admin: principal(archive.userId, true),
      member: principal(archive.userId, false),
      outsider: principal(outsider, false),
      unkeyed,
      close: async () => {
        await pool.close();
        await database.drop();
      },
    };
  } catch (err) {
    await database.drop();
    throw err;
  } finally {
    mail.cleanup();
  }
}

const stores = { sqlite: sqliteArchive, postgres: postgresArchive };
type StoreName = keyof typeof stores;
const opened = new Map<StoreName, Promise<Served>>();
const served = (store: StoreName) => {
  if (!opened.has(store)) opened.set(store, stores[store]());
  return opened.get(store)!;
};
test.after.always(async () => {
  for (const archive of opened.values()) await (await archive.catch(() => undefined))?.close();
});

async function view(
  s: Served,
  subject: string,
  options: { remoteImages?: boolean; as?: Principal } = {},
): Promise<MessageView | null> {
  const id = s.ids[subject];
  if (id === undefined) throw new Error(`no message ${subject}`);
  return s.pool.run({
    kind: 'messageView',
    principal: options.as ?? s.admin,
    id,
    remoteImages: options.remoteImages ?? false,
    partUrl: partUrl(id),
  });
}

for (const store of Object.keys(stores) as StoreName[]) {
  test(`${store}: a real message's inline image points at its attachment; email is the detail`, async (t) => {
    const s = await served(store);
    const id = s.ids['Project plan with diagram']!;
    const shown = await view(s, 'Project plan with diagram');
    t.truthy(shown?.html);
    const detail = await s.pool.run({ kind: 'detail', principal: s.admin, id });
    t.deepEqual(shown!.email, detail);
    t.deepEqual(srcs(shown!.html!.html), [part(id, attachmentId(detail!, 'diagram.png'))]);
    t.false(shown!.html!.html.includes('cid:'));
    t.true(shown!.html!.html.includes('the diagram is below'));
  });

  test(`${store}: a Content-ID is matched exactly, then ignoring case; a cid: naming nothing keeps no src`, async (t) => {
    const s = await served(store);
    const outlook = await view(s, 'Signature with a logo');
    const id = s.ids['Signature with a logo']!;
    // The web beacon is removed (remoteImages false), the unknown cid: loses its src.
    t.deepEqual(srcs(outlook!.html!.html), [part(id, attachmentId(outlook!.email, 'image001.png'))]);
    t.false(outlook!.html!.html.includes('nowhere@example.com'));
    const cased = await view(s, 'Logo in another case');
    const caseId = s.ids['Logo in another case']!;
    t.deepEqual(srcs(cased!.html!.html), [part(caseId, attachmentId(cased!.email, 'logo.png'))]);
  });

  test(`${store}: remote images are removed and counted unless asked for`, async (t) => {
    const s = await served(store);
    const blocked = await view(s, 'Signature with a logo', { remoteImages: false });
    t.is(blocked!.html!.remoteBlocked, 1);
    t.false(blocked!.html!.html.includes('tracker.example.net'));
    const shown = await view(s, 'Signature with a logo', { remoteImages: true });
    t.is(shown!.html!.remoteBlocked, 0);
    t.true(srcs(shown!.html!.html).some((src) => src.startsWith('https://tracker.example.net/pixel.gif')));
  });

  test(`${store}: a message without HTML has none; a large one is read on the query lane`, async (t) => {
    const s = await served(store);
    const plain = await view(s, 'Only text');
    t.is(plain!.html, null);
    t.is(plain!.email.textBody?.trim(), 'No HTML here.');
    const moved = s.pool.movedDetails;
    const large = await view(s, 'A long newsletter');
    t.is(s.pool.movedDetails, moved + 1, 'sized as detail is');
    const id = s.ids['A long newsletter']!;
    t.is(srcs(large!.html!.html)[0], part(id, attachmentId(large!.email, 'masthead.png')));
  });

  test(`${store}: a user who may not see the account gets null, one who may gets the view`, async (t) => {
    const s = await served(store);
    t.is(await view(s, 'Project plan with diagram', { as: s.outsider }), null);
    const member = await view(s, 'Project plan with diagram', { as: s.member });
    t.is(member?.email.id, s.ids['Project plan with diagram']);
    t.is(
      await s.pool.run({
        kind: 'messageView',
        principal: s.admin,
        id: 2_000_000_000,
        remoteImages: false,
        partUrl: '/{attachmentId}',
      }),
      null,
    );
  });
}

test('postgres: a Mail Archiver row without ContentId finds its image by the file name Outlook put in the cid', async (t) => {
  const s = await served('postgres');
  const id = s.unkeyed!;
  const shown = await s.pool.run({
    kind: 'messageView',
    principal: s.admin,
    id,
    remoteImages: false,
    partUrl: partUrl(id),
  });
  t.deepEqual(srcs(shown!.html!.html), [part(id, attachmentId(shown!.email, 'image001.png'))]);
});

test('sqlite: mail stored before migration 10 has no Content-IDs, finds Outlook images by name, and reparse fills them', async (t) => {
  const { dir, cleanup } = tempDir('mag-message-view-old-');
  t.teardown(cleanup);
  const path = join(dir, 'archive.db');
  const files = writeMail(dir).filter((f) => f === NESTED || f.endsWith('outlook.eml'));
  const db = openArchive(path);
  db.prepare("INSERT INTO mail_accounts (id, name, email_address) VALUES (1, 'Alice', 'alice@example.com')").run();
  t.is((await importPaths(db, files, { accountId: 1 })).imported, 2);
  /** Each attachment's id and Content-ID, by file name (unique in these two messages). */
  const cids = (on: InstanceType<typeof Database>) =>
    Object.fromEntries(
      (
        on.prepare('SELECT id, file_name, mime_content_id FROM attachments ORDER BY id').all() as Array<{
          id: number;
          file_name: string;
          mime_content_id: string | null;
        }>
      ).map((r) => [r.file_name, [r.id, r.mime_content_id] as const]),
    );
  const written = cids(db);
  t.is(Object.keys(written).length, 4);
  // The writer keeps each part's Content-ID, brackets removed; a part without one has none.
  t.deepEqual(written['diagram.png']![1], 'diagram@example.com');
  t.deepEqual(written['image001.png']![1], OUTLOOK_CID);
  t.is(written['figures.csv']![1], null);
  const ids = Object.fromEntries(
    (db.prepare('SELECT subject, id FROM emails').all() as Array<{ subject: string; id: number }>).map((r) => [
      r.subject,
      r.id,
    ]),
  );

  // The same archive as version 9 left it: the column is not there, nor what later migrations
  // made. Its table is then exactly what migrations 1 to 9 create.
  db.exec('ALTER TABLE attachments DROP COLUMN mime_content_id; DROP TABLE search_index_key');
  db.pragma('user_version = 9');
  db.close();
  const v9 = new Database(join(dir, 'v9.db'));
  for (const m of migrations.filter((m) => m.version <= 9)) {
    v9.exec(m.sql);
    m.run?.(v9);
  }
  const columns = (d: InstanceType<typeof Database>) =>
    d.prepare("SELECT * FROM pragma_table_info('attachments')").all();
  const old = new Database(path);
  t.deepEqual(columns(old), columns(v9));
  v9.close();
  t.deepEqual(migrate(old), [10, 11, 12]);
  t.is(schemaVersion(old), LATEST_VERSION);
  old.close();

  const migrated = openArchive(path);
  t.teardown(() => migrated.open && migrated.close());
  t.deepEqual(
    cids(migrated),
    Object.fromEntries(Object.entries(written).map(([name, [id]]) => [name, [id, null]])),
    'the rows are kept, without Content-IDs',
  );

  const shownWith = async (pool: EnginePool, subject: string) => {
    const id = ids[subject]!;
    const shown = await pool.run({
      kind: 'messageView',
      principal: principal(0, true),
      id,
      remoteImages: false,
      partUrl: partUrl(id),
    });
    return srcs(shown!.html!.html);
  };
  const diagram = part(ids['Project plan with diagram']!, written['diagram.png']![0]);
  const logo = part(ids['Signature with a logo']!, written['image001.png']![0]);
  let pool = new EnginePool({ dbPath: path, threads: 1, searchMemoryBytes: 0 });
  try {
    // No Content-IDs: Outlook's cid names its file; the diagram's ("diagram@example.com") names none.
    t.deepEqual(await shownWith(pool, 'Signature with a logo'), [logo]);
    t.deepEqual(await shownWith(pool, 'Project plan with diagram'), []);
  } finally {
    await pool.close();
  }

  const admin = await openAdmin(path);
  try {
    const summary = await reparseArchive(admin, {});
    t.is(summary.changed, 2);
    t.is(summary.fields.attachments, 2);
    t.is(summary.fields.htmlBody, 0, 'nothing else differs');
    const again = await reparseArchive(admin, {});
    t.is(again.changed, 0, 'a second pass finds nothing to change');
  } finally {
    await admin.close();
  }
  t.deepEqual(cids(migrated), written, 'the Content-IDs are back, the attachments keep their ids');

  pool = new EnginePool({ dbPath: path, threads: 1, searchMemoryBytes: 0 });
  try {
    t.deepEqual(await shownWith(pool, 'Project plan with diagram'), [diagram]);
    t.deepEqual(await shownWith(pool, 'Signature with a logo'), [logo]);
  } finally {
    await pool.close();
  }
});

test('the cid: rule: Content-ID exactly, then ignoring case, then the file name before @; else nothing', (t) => {
  const attachments = [
    { id: 1, fileName: 'Logo.png', contentType: 'image/png', size: 1 },
    { id: 2, fileName: 'logo.png', contentType: 'image/png', size: 1 },
    { id: 3, fileName: 'image001.png', contentType: 'image/png', size: 1 },
    { id: 4, fileName: 'other.png', contentType: 'image/png', size: 1 },
  ];
  const parts = [
    { attachmentId: 1, cid: 'Logo@x' },
    { attachmentId: 2, cid: 'logo@x' },
    { attachmentId: 3, cid: null },
    { attachmentId: 4, cid: 'image002.png@01D9' },
  ];
  t.is(attachmentForCid('logo@x', parts, attachments), 2, 'an exact match before a case-folded one');
  t.is(attachmentForCid('Logo@x', parts, attachments), 1);
  t.is(attachmentForCid('LOGO@X', parts, attachments), 1, 'ignoring case, the first');
  t.is(attachmentForCid('image001.png@01D9C0DE', parts, attachments), 3, 'by file name');
  t.is(attachmentForCid('IMAGE002.PNG@01d9', parts, attachments), 4, 'a Content-ID before a file name');
  t.is(attachmentForCid('other.png', parts, attachments), 4, 'a cid without @ is all file name');
  t.is(attachmentForCid('@01D9', parts, attachments), null);
  t.is(attachmentForCid('nothing@x', parts, attachments), null);
  t.is(attachmentForCid('image001.png@01D9C0DE', [], []), null);
});

test('the view of a message without an HTML body is its detail and no HTML', (t) => {
  const email = { htmlBody: '', attachments: [] } as unknown as EmailDetailDto;
  const shown = messageView(email, [], { remoteImages: false, partUrl: '/{attachmentId}' });
  t.is(shown.email, email);
  t.is(shown.html, null);
  t.is(messageView({ ...email, htmlBody: null }, [], { remoteImages: true, partUrl: '/{attachmentId}' }).html, null);
});
