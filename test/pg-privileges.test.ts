// The narrowest grants the service needs on a Mail Archiver database (docs/postgres.md,
// "Privileges"; docs/security.md, "Mail shaped by an attacker", item 11): once this service's schema exists, the gateway starts and
// serves every read as a role without CREATE on the database, with SELECT on Mail Archiver's
// tables, INSERT on AccessLogs (and its sequence), UPDATE ("LastUsedAt") on ApiKeys, and read and
// write on its own schema's tables.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import supertest from 'supertest';
import { prepareArchive } from '../engine/archive.js';
import { createGateway } from '../gateway/app.js';
import { apiSettings, bearer, silentLogger } from './helpers/api.js';
import { createFixture } from './helpers/fixture.js';
import { runSql } from './helpers/postgres.js';
import { readAccessLog, serveArchive } from './helpers/store.js';

/** The grants docs/postgres.md lists, for `role`. */
const READ_GRANTS = (role: string) => `
  GRANT SELECT ON public."__EFMigrationsHistory" TO ${role};
  GRANT USAGE ON SCHEMA mail_archiver TO ${role};
  GRANT SELECT ON ALL TABLES IN SCHEMA mail_archiver TO ${role};
  GRANT INSERT ON mail_archiver."AccessLogs" TO ${role};
  GRANT USAGE ON SEQUENCE mail_archiver."AccessLogs_Id_seq" TO ${role};
  GRANT UPDATE ("LastUsedAt") ON mail_archiver."ApiKeys" TO ${role};
  GRANT USAGE ON SCHEMA mail_archive_gateway TO ${role};
  GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA mail_archive_gateway TO ${role};
  GRANT USAGE ON ALL SEQUENCES IN SCHEMA mail_archive_gateway TO ${role};`;

const sql = runSql;

test('the gateway starts and serves reads as a role without CREATE, with the documented grants only', async (t) => {
  const fixture = createFixture();
  t.teardown(() => fixture.cleanup());
  const served = await serveArchive(fixture.dbPath, 'postgres');
  const role = `mag_reader_${randomBytes(4).toString('hex')}`;
  t.teardown(async () => {
    await sql(served.path, `DROP OWNED BY ${role}`).catch(() => {});
    await served.drop();
    const admin = new URL(served.path);
    admin.pathname = '/postgres';
    await sql(admin.toString(), `DROP ROLE IF EXISTS ${role}`);
  });
  await sql(served.path, `CREATE ROLE ${role} LOGIN; ${READ_GRANTS(role)}`);
  const url = new URL(served.path);
  url.username = role;
  // It may not create anything: the database refuses it CREATE.
  await t.throwsAsync(() => sql(url.toString(), 'CREATE SCHEMA anything_at_all'), { message: /permission denied/ });

  // What the server does at start (gateway/server.ts): with the schema current, no DDL at all.
  await t.notThrowsAsync(() => prepareArchive({ path: url.toString() }));
  const gateway = createGateway(apiSettings(url.toString(), { Mcp: { Enabled: true } }), { logger: silentLogger() });
  t.teardown(() => gateway.close());
  const request = supertest(gateway.app.callback());
  const key = bearer(fixture.keys.alice);
  const search = await request.get('/api/v1/emails').query({ q: 'budget' }).set(key);
  t.is(search.status, 200, search.text);
  t.true(search.body.totalItems > 0);
  const detail = await request.get(`/api/v1/emails/${fixture.emails.budget}`).set(key);
  t.is(detail.status, 200);
  const download = await request
    .get(`/api/v1/emails/${fixture.emails.budget}/attachments/${fixture.attachments['budget:notes.txt']}`)
    .set(key);
  t.is(download.status, 200);
  t.is((await request.get('/api/v1/accounts').set(key)).status, 200);
  t.is((await request.get('/readyz')).status, 200);
  await gateway.accessLog.flush();
  const logged = (await readAccessLog(served.path)).map((r) => r.type);
  t.deepEqual(logged, ['Search', 'Open', 'Download']);
});
