// The narrowest grants the service needs on a Mail Archiver database (docs/postgres.md,
// "Privileges"; docs/security.md, "Mail shaped by an attacker", item 11): once this service's schema exists, the gateway starts and
// serves every read as a role without CREATE on the database, with SELECT on Mail Archiver's
// tables, INSERT on AccessLogs (and its sequence), UPDATE ("LastUsedAt") on ApiKeys, and read and
// write on its own schema's tables. A role that may not read the key that signs the saved search
// index (ADR 31) still searches from the index in memory.
import test, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import supertest from 'supertest';
import { prepareArchive } from '../engine/archive.js';
import { createGateway } from '../gateway/app.js';
import { apiSettings, bearer, capturingLogger, silentLogger } from './helpers/api.js';
import { current } from './helpers/index-archive.js';
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

/**
 * The standard fixture in PostgreSQL and a new login role holding READ_GRANTS (then `more`):
 * the role's connection URL; the role and the database are dropped after the test.
 */
async function servedAsRole(t: ExecutionContext, prefix: string, more = '') {
  const fixture = createFixture();
  t.teardown(() => fixture.cleanup());
  const served = await serveArchive(fixture.dbPath, 'postgres');
  const role = `${prefix}_${randomBytes(4).toString('hex')}`;
  t.teardown(async () => {
    await sql(served.path, `DROP OWNED BY ${role}`).catch(() => {});
    await served.drop();
    const admin = new URL(served.path);
    admin.pathname = '/postgres';
    await sql(admin.toString(), `DROP ROLE IF EXISTS ${role}`);
  });
  await sql(served.path, `CREATE ROLE ${role} LOGIN; ${READ_GRANTS(role)} ${more.replaceAll('$ROLE', role)}`);
  const url = new URL(served.path);
  url.username = role;
  return { fixture, served, url };
}

test('the gateway starts and serves reads as a role without CREATE, with the documented grants only', async (t) => {
  const { fixture, served, url } = await servedAsRole(t, 'mag_reader');
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

test('a role that may not read the key that signs the saved index searches from memory and saves no file, with one warning', async (t) => {
  // Granted before an upgrade made the table: every other table of the schema, not this one.
  const { fixture, url } = await servedAsRole(
    t,
    'mag_nokey',
    'REVOKE SELECT ON mail_archive_gateway.search_index_key FROM $ROLE;',
  );
  const file = join(fixture.dir, 'search.index');
  const { logger, lines } = capturingLogger();
  const gateway = createGateway(apiSettings(url.toString(), { Engine: { SearchIndexFile: file } }), { logger });
  t.teardown(() => gateway.close());
  const index = await current(gateway.engine);
  t.false(index.fromFile);
  const search = await supertest(gateway.app.callback())
    .get('/api/v1/emails')
    .query({ q: 'budget' })
    .set(bearer(fixture.keys.alice));
  t.is(search.status, 200, search.text);
  t.true(search.body.totalItems > 0);
  const warnings = lines.filter((l) => l.level === 40 && String(l.msg).startsWith('search index:'));
  t.is(warnings.length, 1, JSON.stringify(warnings));
  t.regex(String(warnings[0]?.msg), /may not read mail_archive_gateway\.search_index_key/);
  t.false(existsSync(file), 'nothing saved that could not be signed');
});
