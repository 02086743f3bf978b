// Reconstructions on Mail Archiver's PostgreSQL database (docs/postgres.md, "Originals and
// reconstructions"): it keeps no original, so GET /api/v1/emails/{id}/raw rebuilds each message
// from RawHeaders, the bodies and the attachments. Real mail imported through the importer, a
// message with folded and encoded headers, and one written as Mail Archiver writes it (no
// RawHeaders, an inline image with a ContentId) must each come back as a message that says it is
// a reconstruction, has a digest and ETag that match and hold still, and parses back to what the
// API says of the message: subject, addresses, date, bodies and attachments, byte for byte.
import test, { type ExecutionContext } from 'ava';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { simpleParser, type AddressObject, type ParsedMail } from 'mailparser';
import addressparser from 'nodemailer/lib/addressparser';
import pg from 'pg';
import supertest from 'supertest';
import { openAdmin, prepareArchive } from '../engine/archive.js';
import { importPaths } from '../engine/import/importer.js';
import { createGateway, type Gateway } from '../gateway/app.js';
import type { EmailDetailDto } from '../shared/dto.js';
import { apiSettings, bearer, rawBody, silentLogger } from './helpers/api.js';
import { tempDir } from './helpers/fixture.js';
import { createSmallArchive, type SmallArchive } from './helpers/pg-mail-archiver.js';
import { createTestDatabase, type TestDatabase } from './helpers/postgres.js';

const MAIL = new URL('../../test/fixtures/mail/', import.meta.url);
const ZONE = 'Europe/Berlin';
const PDF = Buffer.concat([Buffer.from('%PDF-1.4\n'), randomBytes(3000)]);
const CONTRACT = Buffer.concat([Buffer.from('%PDF-1.7\n'), randomBytes(2000)]);
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(500)]);

/** Folded, encoded headers and a Date with a zone, as real mail has them. */
const FOLDED = [
  'Received: from mx.example.net by mail.example.org;',
  ' Tue, 3 Mar 2026 09:15:02 +0100',
  'From: =?UTF-8?Q?J=C3=BCrgen_M=C3=BCller?= <juergen@example.de>',
  'To: "Doe, Jane" <jane@example.org>,',
  ' =?ISO-8859-1?Q?Ren=E9e?= <renee@example.fr>',
  'Cc: team@example.org',
  'Subject: =?UTF-8?B?w5xiZXJzaWNodCDDvGJlciBkaWUgUXVhcnRhbGU=?=',
  ' =?UTF-8?Q?_und_mehr?=',
  'Date: Tue, 3 Mar 2026 09:15:00 +0100',
  'Message-ID: <folded-1@example.de>',
  'MIME-Version: 1.0',
  'Content-Type: multipart/mixed; boundary="b1"',
  '',
  '--b1',
  'Content-Type: text/plain; charset=utf-8',
  'Content-Transfer-Encoding: 8bit',
  '',
  'Grüße aus München.',
  '--b1',
  'Content-Type: application/pdf; name="Bericht.pdf"',
  'Content-Disposition: attachment; filename="Bericht.pdf"',
  'Content-Transfer-Encoding: base64',
  '',
  ...PDF.toString('base64').match(/.{1,76}/g)!,
  '--b1--',
  '',
].join('\r\n');

interface Context {
  db: TestDatabase;
  archive: SmallArchive;
  gateway: Gateway;
  request: supertest.Agent;
  /** Every message id, and which one was written as Mail Archiver writes it. */
  ids: number[];
  written: number;
  folded: number;
  /** The files imported into INBOX. */
  files: string[];
}

test.before(async (t) => {
  const db = await createTestDatabase('pg_originals');
  const archive = await createSmallArchive(db.url, 0);
  const dir = tempDir('pg-originals');
  writeFileSync(join(dir.dir, 'folded.eml'), FOLDED);
  const files = [
    ...readdirSync(MAIL)
      .filter((f) => f.endsWith('.eml'))
      .map((f) => new URL(f, MAIL).pathname),
    join(dir.dir, 'folded.eml'),
  ];
  const admin = await openAdmin(db.url, { timeZone: ZONE });
  try {
    const summary = await importPaths(admin, files, { accountId: archive.accountId, folder: 'INBOX' });
    t.is(summary.imported, files.length);
  } finally {
    await admin.close();
  }
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  let written: number;
  let folded: number;
  try {
    // What mail imported before originals were kept, and all of Mail Archiver's own, gets: a
    // reconstruction (the last test covers the originals kept since).
    await client.query('DELETE FROM mail_archive_gateway.email_originals');
    // As Mail Archiver's own importer writes a message: no RawHeaders, the HTML referring to an
    // inline image by its ContentId (kept without brackets), a PDF beside it.
    written = (
      await client.query<{ Id: number }>(
        `INSERT INTO mail_archiver."ArchivedEmails"
           ("MailAccountId", "MessageId", "Subject", "Body", "HtmlBody", "From", "To", "Cc", "Bcc",
            "SentDate", "ReceivedDate", "IsOutgoing", "HasAttachments", "FolderName", "IsLocked", "RawHeaders")
         VALUES ($1, '<ma-written@example.org>', 'Logo und Vertrag für Zoë', $2, $3,
                 'Zoë Keller <zoe@example.org>', 'alice@example.org, "Smith, Bob" <bob@example.org>', 'carol@example.org', '',
                 '2025-07-01 14:00:00', '2025-07-01 12:00:05', false, true, 'INBOX', false, NULL)
         RETURNING "Id"`,
        [
          archive.accountId,
          'Hallo Alice,\n\nanbei der Vertrag.\n\nZoë',
          '<p>Hallo Alice,</p><p><img src="cid:logo.1@example.org"></p>',
        ],
      )
    ).rows[0]!.Id;
    for (const [name, type, bytes, cid] of [
      ['logo.png', 'image/png', PNG, 'logo.1@example.org'],
      ['Vertrag.pdf', 'application/pdf', CONTRACT, null],
    ] as const) {
      const content = await client.query<{ Id: number }>(
        `INSERT INTO mail_archiver."AttachmentContents" ("Hash", "Content", "Size") VALUES ($1, $2, $3) RETURNING "Id"`,
        [createHash('sha256').update(bytes).digest('hex'), bytes, bytes.length],
      );
      await client.query(
        `INSERT INTO mail_archiver."EmailAttachments" ("ArchivedEmailId", "FileName", "ContentType", "Size", "AttachmentContentId", "ContentId")
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [written, name, type, bytes.length, content.rows[0]!.Id, cid],
      );
    }
    folded = (
      await client.query<{ Id: number }>(
        `SELECT "Id" FROM mail_archiver."ArchivedEmails" WHERE "MessageId" = '<folded-1@example.de>'`,
      )
    ).rows[0]!.Id;
  } finally {
    await client.end();
  }
  dir.cleanup();
  await prepareArchive({ path: db.url, timeZone: ZONE });
  const gateway = createGateway(apiSettings(db.url, { Database: { Path: db.url, TimeZone: ZONE } }), {
    logger: silentLogger(),
  });
  const request = supertest.agent(gateway.app.callback());
  const page = await request.get('/api/v1/emails').query({ pageSize: 100 }).set(bearer(archive.key));
  const ids = (page.body.items as Array<{ id: number }>).map((i) => i.id).sort((a, b) => a - b);
  t.context = { db, archive, gateway, request, ids, written, folded, files } satisfies Context;
});

test.after.always(async (t) => {
  const { db, gateway } = t.context as Context;
  await gateway?.close();
  await db?.drop();
});

const ctx = (t: ExecutionContext) => t.context as Context;

async function raw(t: ExecutionContext, id: number) {
  const { request, archive } = ctx(t);
  return request.get(`/api/v1/emails/${id}/raw`).set(bearer(archive.key)).buffer(true).parse(rawBody);
}

/** Addresses as (name, address) pairs, from a parsed header or from the API's text. */
const pairs = (list: Array<{ name?: string; address?: string; group?: unknown[] }>): string[] =>
  list.flatMap((a) =>
    a.group ? pairs(a.group as typeof list) : [`${(a.name ?? '').trim()} <${(a.address ?? '').toLowerCase()}>`],
  );
const parsedPairs = (value: AddressObject | AddressObject[] | undefined): string[] =>
  value === undefined ? [] : (Array.isArray(value) ? value : [value]).flatMap((v) => pairs(v.value));
const apiPairs = (text: string): string[] => (text.trim() ? pairs(addressparser(text)) : []);

/** Line ends and the last line's end aside, the same text. */
const text = (s: string | null | undefined) => (s ?? '').replace(/\r\n/g, '\n').replace(/\s+$/, '');
const mimeType = (s: string) => s.split(';')[0]!.trim().toLowerCase();

test('every message: a reconstruction that says so, with a digest and an ETag that match and hold still', async (t) => {
  const { ids } = ctx(t);
  t.true(ids.length >= 11, 'the fixtures, the folded one and the one written by SQL');
  for (const id of ids) {
    const first = await raw(t, id);
    t.is(first.status, 200, `${id}`);
    t.is(first.headers['archive-copy'], 'reconstructed');
    t.is(first.headers['content-type'], 'message/rfc822');
    const bytes = first.body as Buffer;
    const digest = createHash('sha256').update(bytes).digest();
    t.is(first.headers['repr-digest'], `sha-256=:${digest.toString('base64')}:`);
    t.is(first.headers.etag, `"${digest.toString('hex')}"`);
    const again = await raw(t, id);
    t.is(again.headers.etag, first.headers.etag, 'the same ETag each time');
    t.true(Buffer.compare(again.body as Buffer, bytes) === 0, 'the same bytes each time');
    const head = bytes.toString('latin1').split('\r\n\r\n')[0]!;
    t.is(head.match(/^X-Mail-Archive-Reconstructed:/gim)?.length, 1, `${id}: names itself a reconstruction`);
    for (const name of ['From', 'To', 'Cc', 'Subject', 'Date', 'Message-ID', 'MIME-Version', 'Content-Type']) {
      t.true((head.match(new RegExp(`^${name}:`, 'gim'))?.length ?? 0) <= 1, `${id}: one ${name} header`);
    }
  }
});

test('every message parses back to what the API says of it, attachments byte for byte', async (t) => {
  const { ids, request, archive } = ctx(t);
  for (const id of ids) {
    const detail = (await request.get(`/api/v1/emails/${id}`).set(bearer(archive.key))).body as EmailDetailDto;
    const parsed: ParsedMail = await simpleParser((await raw(t, id)).body as Buffer, { keepCidLinks: true });
    const what = `${id} (${detail.subject})`;
    t.is(parsed.subject ?? '', detail.subject, `${what}: subject`);
    t.deepEqual(parsedPairs(parsed.from), apiPairs(detail.from), `${what}: from`);
    t.deepEqual(parsedPairs(parsed.to), apiPairs(detail.to), `${what}: to`);
    t.deepEqual(parsedPairs(parsed.cc), apiPairs(detail.cc), `${what}: cc`);
    t.is(
      parsed.date?.toISOString().replace(/\.\d{3}Z$/, ''),
      detail.sentDate.replace(/\.\d{3}Z$/, ''),
      `${what}: date`,
    );
    if (detail.textBody !== null) t.is(text(parsed.text), text(detail.textBody), `${what}: text body`);
    t.is(text(parsed.html || null), text(detail.htmlBody), `${what}: html body`);
    t.deepEqual(
      parsed.attachments.map((a) => [a.filename ?? '', mimeType(a.contentType)]),
      detail.attachments.map((a) => [a.fileName, mimeType(a.contentType)]),
      `${what}: attachments`,
    );
    for (const [i, a] of detail.attachments.entries()) {
      const download = await request
        .get(`/api/v1/emails/${id}/attachments/${a.id}`)
        .set(bearer(archive.key))
        .buffer(true)
        .parse(rawBody);
      t.is(download.status, 200);
      t.true(Buffer.compare(parsed.attachments[i]!.content, download.body as Buffer) === 0, `${what}: ${a.fileName}`);
    }
  }
});

test('RawHeaders folded and encoded: kept as received, nothing doubled, the zone kept', async (t) => {
  const { folded } = ctx(t);
  const head = ((await raw(t, folded)).body as Buffer).toString('latin1').split('\r\n\r\n')[0]!;
  t.true(head.includes('Subject: =?UTF-8?B?w5xiZXJzaWNodCDDvGJlciBkaWUgUXVhcnRhbGU=?=\r\n =?UTF-8?Q?_und_mehr?='));
  t.true(head.includes('To: "Doe, Jane" <jane@example.org>,\r\n =?ISO-8859-1?Q?Ren=E9e?= <renee@example.fr>'));
  t.true(head.includes('Date: Tue, 3 Mar 2026 09:15:00 +0100'));
  t.true(head.includes('Received: from mx.example.net by mail.example.org;\r\n Tue, 3 Mar 2026 09:15:02 +0100'));
  t.is(head.match(/^Message-ID:/gim)?.length, 1);
});

test('a message Mail Archiver wrote without RawHeaders: headers from its fields, the inline image by its Content-ID', async (t) => {
  const { written } = ctx(t);
  const bytes = (await raw(t, written)).body as Buffer;
  const parsed = await simpleParser(bytes, { keepCidLinks: true });
  t.is(parsed.messageId, '<ma-written@example.org>');
  // SentDate is wall-clock time in the display zone: 14:00 in Berlin in July is 12:00 UTC.
  t.is(parsed.date?.toISOString(), '2025-07-01T12:00:00.000Z');
  const logo = parsed.attachments.find((a) => a.filename === 'logo.png')!;
  t.is(logo.contentId, '<logo.1@example.org>');
  t.is(logo.contentDisposition, 'inline');
  t.true(parsed.html && parsed.html.includes('cid:logo.1@example.org'));
  const pdf = parsed.attachments.find((a) => a.filename === 'Vertrag.pdf')!;
  t.is(pdf.contentDisposition, 'attachment');
  t.true(Buffer.compare(pdf.content, CONTRACT) === 0);
});

test('an inline image imported here keeps its Content-ID, so the rebuilt HTML still shows it', async (t) => {
  const { request, archive, ids } = ctx(t);
  let found = false;
  for (const id of ids) {
    const parsed = await simpleParser((await raw(t, id)).body as Buffer, { keepCidLinks: true });
    const diagram = parsed.attachments.find((a) => a.filename === 'diagram.png');
    if (!diagram) continue;
    found = true;
    t.is(diagram.contentId, '<diagram@example.com>');
    t.is(diagram.contentDisposition, 'inline');
    t.true(String(parsed.html).includes('cid:diagram@example.com'));
    const detail = await request.get(`/api/v1/emails/${id}`).set(bearer(archive.key));
    t.true((detail.body as EmailDetailDto).attachments.some((a) => a.fileName === 'diagram.png'));
  }
  t.true(found, 'the nested-multipart fixture is there');
});

test('mail imported here is served as its original, byte for byte; a re-import completes mail stored without it', async (t) => {
  const { db, archive, request } = ctx(t);
  const files = ctx(t).files.filter((f) => f.startsWith(MAIL.pathname)); // the made-up one is gone
  const importInto = async (folder: string) => {
    const admin = await openAdmin(db.url, { timeZone: ZONE });
    try {
      return await importPaths(admin, files, { accountId: archive.accountId, folder });
    } finally {
      await admin.close();
    }
  };
  t.like(await importInto('Again'), { imported: files.length, originalsAttached: 0 });
  const page = await request.get('/api/v1/emails').query({ folder: 'Again', pageSize: 100 }).set(bearer(archive.key));
  const again = (page.body.items as Array<{ id: number }>).map((i) => i.id);
  t.is(again.length, files.length);
  const wanted = files.map((f) => readFileSync(f).toString('base64')).sort();
  const served = async (copy: string) => {
    const bodies: string[] = [];
    for (const id of again) {
      const res = await raw(t, id);
      t.is(res.status, 200);
      t.is(res.headers['archive-copy'], copy, `${id}`);
      const bytes = res.body as Buffer;
      t.is(res.headers.etag, `"${createHash('sha256').update(bytes).digest('hex')}"`);
      bodies.push(bytes.toString('base64'));
    }
    return bodies.sort();
  };
  t.deepEqual(await served('original'), wanted, 'every file, byte for byte');

  // Stored before originals were kept: reconstructions, until the same files are imported again.
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  t.teardown(() => client.end());
  await client.query('DELETE FROM mail_archive_gateway.email_originals WHERE email_id = ANY($1::int[])', [again]);
  await served('reconstructed');
  t.like(await importInto('Again'), { imported: 0, duplicates: files.length, originalsAttached: files.length });
  t.deepEqual(await served('original'), wanted);

  // Bytes changed at rest: a 409, never served as the original.
  await client.query(
    `UPDATE mail_archive_gateway.originals o SET sha256 = repeat('0', 64)
       FROM mail_archive_gateway.email_originals eo WHERE eo.original_id = o.id AND eo.email_id = $1`,
    [again[0]],
  );
  const damaged = await request.get(`/api/v1/emails/${again[0]}/raw`).set(bearer(archive.key));
  t.is(damaged.status, 409);
});
