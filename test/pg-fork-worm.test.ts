// The GoBD fork of Mail Archiver (docs/compat.md, "The GoBD fork's archive_worm"): a Mail Archiver
// database with the fork's archive_worm schema (test/fixtures/mail-archiver-gobd-worm.sql), served
// by the real gateway. A kept original is served byte for byte as the original; one whose bytes
// no longer match their SHA-256 is a 409; a message without one is a reconstruction. Access-log
// entries go to archive_worm."AccessLogs", where the fork's trigger chains them, and nowhere else;
// a moved access log with a chain and no trigger to keep it is refused at start.
import test, { type ExecutionContext } from 'ava';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import supertest from 'supertest';
import { openAdmin, prepareArchive } from '../engine/archive.js';
import { createGateway, type Gateway } from '../gateway/app.js';
import { ArchiveOpenError } from '../shared/errors.js';
import { apiSettings, bearer, capturingLogger, rawBody } from './helpers/api.js';
import { createSmallArchive, loadMailArchiverSchema, type SmallArchive } from './helpers/pg-mail-archiver.js';
import { createTestDatabase, loadSqlFile, runSql, type TestDatabase } from './helpers/postgres.js';

const WORM_DDL = new URL('../../test/fixtures/mail-archiver-gobd-worm.sql', import.meta.url);
const ORIGINAL = readFileSync(new URL('../../test/fixtures/mail/nested-multipart.eml', import.meta.url));
const OTHER = readFileSync(new URL('../../test/fixtures/mail/qp-latin1.eml', import.meta.url));
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

interface Context {
  db: TestDatabase;
  archive: SmallArchive;
  gateway: Gateway;
  request: supertest.Agent;
  lines: Array<Record<string, unknown>>;
}

async function rows<R extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

const keep = (url: string, emailId: number, bytes: Buffer, hash = sha256(bytes)) =>
  rows(
    url,
    `INSERT INTO archive_worm."ArchivedEmailSources" ("ArchivedEmailId", "RawMime", "Size", "Sha256", "Source", "RetainUntil")
     VALUES ($1, $2, 0, $3, 'eml-import', now())`,
    [emailId, bytes, hash],
  );

test.before(async (t) => {
  const db = await createTestDatabase('fork_worm');
  const archive = await createSmallArchive(db.url, 3);
  await loadSqlFile(db.url, WORM_DDL);
  const [kept, damaged] = archive.emailIds;
  await keep(db.url, kept!, ORIGINAL);
  await keep(db.url, damaged!, OTHER);
  // Damage at rest, behind the triggers' back (a restored backup, a disk, a superuser's UPDATE).
  await runSql(
    db.url,
    `SET session_replication_role = replica;
     UPDATE archive_worm."ArchivedEmailSources" SET "RawMime" = "RawMime" || '\\x0a'::bytea WHERE "ArchivedEmailId" = ${damaged};`,
  );
  await prepareArchive({ path: db.url });
  const { logger, lines } = capturingLogger();
  const gateway = createGateway(apiSettings(db.url, { Database: { Path: db.url } }), { logger });
  t.context = { db, archive, gateway, request: supertest.agent(gateway.app.callback()), lines };
});

test.after.always(async (t) => {
  const { db, gateway } = t.context as Context;
  await gateway?.close();
  await db?.drop();
});

const ctx = (t: ExecutionContext) => t.context as Context;

test.serial('a kept original is served byte for byte as the original, its digest checked', async (t) => {
  const { request, archive } = ctx(t);
  const id = archive.emailIds[0]!;
  const res = await request.get(`/api/v1/emails/${id}/raw`).set(bearer(archive.key)).buffer(true).parse(rawBody);
  t.is(res.status, 200);
  t.is(res.headers['archive-copy'], 'original');
  t.is(res.headers['content-type'], 'message/rfc822');
  t.true(Buffer.compare(res.body as Buffer, ORIGINAL) === 0, 'the very bytes kept');
  t.is(res.headers['repr-digest'], `sha-256=:${createHash('sha256').update(ORIGINAL).digest('base64')}:`);
  t.is(res.headers.etag, `"${sha256(ORIGINAL)}"`);
  t.false((res.body as Buffer).toString('latin1').includes('X-Mail-Archive-Reconstructed'));
});

test.serial('a kept original whose bytes no longer match their SHA-256 is a 409, never served', async (t) => {
  const { request, archive } = ctx(t);
  const id = archive.emailIds[1]!;
  const res = await request.get(`/api/v1/emails/${id}/raw`).set(bearer(archive.key));
  t.is(res.status, 409);
  t.regex(String(res.body.detail ?? res.text), /SHA-256/);
  t.false(res.text.includes('Content-Transfer-Encoding'), 'no message in the answer');
});

test.serial('a message without a kept original is a reconstruction', async (t) => {
  const { request, archive } = ctx(t);
  const id = archive.emailIds[2]!;
  const res = await request.get(`/api/v1/emails/${id}/raw`).set(bearer(archive.key)).buffer(true).parse(rawBody);
  t.is(res.status, 200);
  t.is(res.headers['archive-copy'], 'reconstructed');
  t.true((res.body as Buffer).toString('utf8').includes('X-Mail-Archive-Reconstructed:'));
});

test.serial("access-log entries land in archive_worm's chained AccessLogs and nowhere else", async (t) => {
  const { request, archive, gateway, db, lines } = ctx(t);
  for (const id of archive.emailIds) await request.get(`/api/v1/emails/${id}`).set(bearer(archive.key)).expect(200);
  await request.get('/api/v1/emails').query({ q: 'Quarterly' }).set(bearer(archive.key)).expect(200);
  await gateway.accessLog.flush();
  const logged = await rows<{ Id: number; Type: number; EmailId: number | null; ChainSeq: string; Hash: string }>(
    db.url,
    `SELECT "Id", "Type", "EmailId", "ChainSeq", "Hash" FROM archive_worm."AccessLogs" ORDER BY "ChainSeq"`,
  );
  // Two downloads (the original, the reconstruction; a 409 logs nothing), three opens, a search.
  t.deepEqual(logged.map((r) => r.Type).sort(), [2, 3, 3, 3, 4, 4]);
  t.deepEqual(
    logged.map((r) => Number(r.ChainSeq)),
    [1, 2, 3, 4, 5, 6],
    'the trigger numbered every entry',
  );
  t.true(logged.every((r) => /^[0-9a-f]{64}$/.test(r.Hash)));
  const [chain] = await rows<{ checked: string; first_broken_seq: string | null }>(
    db.url,
    'SELECT * FROM archive_worm.verify_access_log()',
  );
  t.deepEqual(chain, { checked: '6', first_broken_seq: null }, 'the chain holds');
  const [where] = await rows<{ moved: string | null; details: string }>(
    db.url,
    `SELECT to_regclass('mail_archiver."AccessLogs"')::text AS moved,
            (SELECT count(*) FROM mail_archive_gateway.access_log_details d
              JOIN archive_worm."AccessLogs" l ON l."Id" = d.access_log_id)::text AS details`,
  );
  t.deepEqual(where, { moved: null, details: '6' }, 'no table made up; our details keyed by the chained rows');
  t.deepEqual(
    lines.filter((l) => Number(l.level) >= 50),
    [],
    'nothing failed',
  );

  // The operator's access-log listing reads the same table.
  const admin = await openAdmin(db.url);
  t.teardown(() => admin.close());
  const listed = await admin.listAccessLog();
  t.deepEqual(
    listed.map((r) => [r.id, r.type]),
    [...logged].sort((a, b) => b.Id - a.Id).map((r) => [r.Id, ['Search', 'Open', 'Download'][r.Type - 2]]),
  );
  t.true(listed.every((r) => r.source === 'api' && r.userId === archive.userId));
});

test('the fork variant with text content and a "Hash" column is recognised by its columns', async (t) => {
  const db = await createTestDatabase('fork_variant');
  t.teardown(() => db.drop());
  const archive = await createSmallArchive(db.url, 1);
  await runSql(
    db.url,
    `CREATE SCHEMA archive_worm;
     CREATE TABLE archive_worm."ArchivedEmailSources" (
       "Id" serial PRIMARY KEY,
       "ArchivedEmailId" integer NOT NULL REFERENCES mail_archiver."ArchivedEmails" ("Id"),
       "Content" text NOT NULL, "Hash" varchar(64) NOT NULL, "CreatedAt" timestamptz NOT NULL DEFAULT now());`,
  );
  const text = ORIGINAL.toString('utf8');
  await rows(
    db.url,
    `INSERT INTO archive_worm."ArchivedEmailSources" ("ArchivedEmailId", "Content", "Hash") VALUES ($1, $2, $3)`,
    [archive.emailIds[0], text, sha256(Buffer.from(text, 'utf8')).toUpperCase()],
  );
  await prepareArchive({ path: db.url });
  const gateway = createGateway(apiSettings(db.url, { Database: { Path: db.url } }), {
    logger: capturingLogger().logger,
  });
  t.teardown(() => gateway.close());
  const res = await supertest(gateway.app.callback())
    .get(`/api/v1/emails/${archive.emailIds[0]}/raw`)
    .set(bearer(archive.key))
    .buffer(true)
    .parse(rawBody);
  t.is(res.status, 200);
  t.is(res.headers['archive-copy'], 'original');
  t.is((res.body as Buffer).toString('utf8'), text);
  await gateway.accessLog.flush();
  const [logged] = await rows<{ n: string }>(db.url, `SELECT count(*)::text AS n FROM mail_archiver."AccessLogs"`);
  t.is(logged!.n, '1', "with no moved access log, Mail Archiver's own is written");
});

test('a moved access log with a chain and no trigger to keep it is refused at start, in one sentence', async (t) => {
  const db = await createTestDatabase('fork_unchained');
  t.teardown(() => db.drop());
  await loadMailArchiverSchema(db.url);
  await runSql(
    db.url,
    `CREATE SCHEMA archive_worm;
     ALTER TABLE mail_archiver."AccessLogs" SET SCHEMA archive_worm;
     ALTER TABLE archive_worm."AccessLogs" ADD COLUMN "PrevHash" character(64), ADD COLUMN "Hash" character(64);`,
  );
  const error = await t.throwsAsync(prepareArchive({ path: db.url }), { instanceOf: ArchiveOpenError });
  t.regex(
    error!.message,
    /has archive_worm\."AccessLogs" with columns this service does not write \("PrevHash", "Hash"\) and no BEFORE INSERT trigger/,
  );
  t.is(error!.message.split(/\.\s/).length, 1, 'one sentence');

  // With the table in neither schema, the sentence names both.
  await runSql(db.url, 'DROP TABLE archive_worm."AccessLogs"');
  const gone = await t.throwsAsync(prepareArchive({ path: db.url }), { instanceOf: ArchiveOpenError });
  t.regex(gone!.message, /has no table mail_archiver\."AccessLogs" \(nor archive_worm\."AccessLogs"/);
});
