// Compatibility by shape (docs/compat.md, engine/postgres/shape.ts): each Mail Archiver schema a user
// may run, built from our DDL fixtures, checked at start by the server and the CLI. 2608.1 and
// 2609.4 (with IsRead and the trigram index) are served; a future migration that adds an
// unrelated table is served with one log line naming it and the newest tested migration; one
// that renames, retypes or adds a column the service cannot live with is refused in one
// sentence naming the table and column.
import test, { type ExecutionContext } from 'ava';
import pg from 'pg';
import { prepareArchive } from '../engine/archive.js';
import { ArchiveOpenError } from '../shared/errors.js';
import { readdirSync, readFileSync } from 'node:fs';
import { KNOWN_MIGRATIONS, MAIL_ARCHIVER_TESTED } from '../engine/postgres/schema.js';
import { OPTIONAL_COLUMNS, USED_COLUMNS } from '../engine/postgres/shape.js';
import { runCli } from './helpers/cli.js';
import { tempDir, type Fixture } from './helpers/fixture.js';
import { PgStore } from '../engine/postgres/store.js';
import type { SearchQuery } from '../shared/jobs.js';
import {
  addMessage,
  createSmallArchive,
  loadMailArchiverSchema,
  type MailArchiverShape,
} from './helpers/pg-mail-archiver.js';
import { createTestDatabase } from './helpers/postgres.js';
import { startServerProcess } from './helpers/server-process.js';

const FUTURE = '20261020120000_MigrateV2610_1';

/** A fresh database in `shape`, then `change` (a future migration), dropped after the test. */
async function database(t: ExecutionContext, shape: MailArchiverShape, change?: string): Promise<string> {
  const db = await createTestDatabase(`shape_${shape}`);
  t.teardown(() => db.drop());
  await loadMailArchiverSchema(db.url, shape);
  if (change) await query(db.url, change);
  return db.url;
}

async function query<R extends pg.QueryResultRow>(url: string, text: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text)).rows;
  } finally {
    await client.end();
  }
}

/** prepareArchive as the server runs it: the notices it gives, or its ArchiveOpenError. */
async function start(url: string): Promise<{ notices: string[] } | { error: string }> {
  const notices: string[] = [];
  try {
    await prepareArchive({ path: url }, { onNotice: (line) => notices.push(line) });
    return { notices };
  } catch (err) {
    if (err instanceof ArchiveOpenError) return { error: err.message };
    throw err;
  }
}

const future = (ddl: string) => `${ddl}; INSERT INTO public."__EFMigrationsHistory" VALUES ('${FUTURE}', '10.0.12')`;

test('the known migration list runs from 2508.2 to 2609.4 and the CLI creates 2609.4', async (t) => {
  t.is(KNOWN_MIGRATIONS.length, 28);
  t.is(KNOWN_MIGRATIONS.at(-1), MAIL_ARCHIVER_TESTED);
  t.is(KNOWN_MIGRATIONS[23], '20260818120000_MigrateV2608_1');
});

test("every Mail Archiver name the PostgreSQL store's SQL quotes is in the checked list", (t) => {
  // A query that starts using a column must add it to USED_COLUMNS (engine/postgres/shape.ts), or the
  // service would start on a database without it and fail at that query instead of at start.
  const dir = new URL('../../engine/postgres/', import.meta.url);
  const known = new Set([
    ...Object.keys(USED_COLUMNS),
    ...Object.values(USED_COLUMNS).flatMap((c) => Object.keys(c)),
    ...Object.keys(OPTIONAL_COLUMNS.ArchivedEmails),
    'MigrationId', // public."__EFMigrationsHistory", read by schema.ts
  ]);
  const used = new Set<string>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts') && f !== 'shape.ts')) {
    const code = readFileSync(new URL(file, dir), 'utf8').replace(/^\s*(\/\/|\*|\/\*\*).*$/gm, '');
    for (const m of code.matchAll(/"([A-Z][A-Za-z]+)"/g)) used.add(m[1]!);
  }
  t.true(used.size > 50, "the scan finds the store's names");
  t.deepEqual(
    [...used].filter((n) => !known.has(n)),
    [],
  );
});

test('2608.1 is served without a notice', async (t) => {
  t.deepEqual(await start(await database(t, '2608.1')), { notices: [] });
});

test('2609.4 with IsRead and the trigram index is served without a notice', async (t) => {
  const url = await database(t, 'newest');
  t.deepEqual(await start(url), { notices: [] });
  const [shape] = await query<{ isread: string | null; folder: boolean; trgm: boolean; available: boolean }>(
    url,
    `SELECT (SELECT data_type FROM information_schema.columns WHERE table_schema = 'mail_archiver'
               AND table_name = 'ArchivedEmails' AND column_name = 'IsRead') AS isread,
            to_regclass('mail_archiver.ix_archivedemails_foldername_pattern') IS NOT NULL AS folder,
            to_regclass('mail_archiver.idx_archivedemails_trgm_search') IS NOT NULL AS trgm,
            EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm') AS available`,
  );
  t.is(shape!.isread, 'boolean');
  t.true(shape!.folder);
  // Built wherever the server has pg_trgm (both servers the suite runs on do); skipped, as
  // upstream skips it, where it cannot be created.
  t.is(shape!.trgm, shape!.available);
});

test('a future migration that adds an unrelated table is served, with one line naming it and the newest tested', async (t) => {
  const url = await database(
    t,
    'newest',
    future(`CREATE TABLE mail_archiver."RetentionReports" ("Id" integer PRIMARY KEY, "Created" timestamp NOT NULL)`),
  );
  const started = await start(url);
  t.true('notices' in started);
  const { notices } = started as { notices: string[] };
  t.is(notices.length, 1);
  t.regex(
    notices[0]!,
    new RegExp(`at migration ${FUTURE}, newer than ${MAIL_ARCHIVER_TESTED}, .* so it is served\\.$`),
  );
  t.false(notices[0]!.includes('\n'));
});

test('a future migration that renames a column the service reads is refused, naming the table and column', async (t) => {
  const url = await database(
    t,
    'newest',
    future(`ALTER TABLE mail_archiver."ArchivedEmails" RENAME COLUMN "FolderName" TO "Folder"`),
  );
  const started = await start(url);
  t.true('error' in started);
  const { error } = started as { error: string };
  t.regex(error, /has no column mail_archiver\."ArchivedEmails"\."FolderName", which this service uses/);
  t.regex(error, new RegExp(`tested with Mail Archiver up to migration ${MAIL_ARCHIVER_TESTED}`));
  t.is(error.split('\n').length, 1);
});

test('a column the service uses with another type is refused, naming it and both types', async (t) => {
  const url = await database(
    t,
    'newest',
    future(`ALTER TABLE mail_archiver."ApiKeys" ALTER COLUMN "KeyHash" TYPE text`),
  );
  const { error } = (await start(url)) as { error: string };
  t.regex(
    error,
    /has column mail_archiver\."ApiKeys"\."KeyHash" as text, where this service needs character varying\(64\)/,
  );
});

test('a wider limit is accepted, a narrower one refused', async (t) => {
  const wider = await database(
    t,
    '2609.4',
    future(`ALTER TABLE mail_archiver."Users" ALTER COLUMN "Email" TYPE character varying(320)`),
  );
  t.is(((await start(wider)) as { notices: string[] }).notices.length, 1);
  const narrower = await database(
    t,
    '2609.4',
    future(`ALTER TABLE mail_archiver."Users" ALTER COLUMN "Username" TYPE character varying(256)`),
  );
  t.regex(
    ((await start(narrower)) as { error: string }).error,
    /mail_archiver\."Users"\."Username" as character varying\(256\), where this service needs character varying\(320\)/,
  );
});

test('a new NOT NULL column without a default on a table the service adds rows to is refused, naming it', async (t) => {
  const url = await database(
    t,
    'newest',
    future(`ALTER TABLE mail_archiver."AccessLogs" ADD COLUMN "Source" text NOT NULL DEFAULT 'web';
            ALTER TABLE mail_archiver."AccessLogs" ALTER COLUMN "Source" DROP DEFAULT`),
  );
  t.regex(
    ((await start(url)) as { error: string }).error,
    /has column mail_archiver\."AccessLogs"\."Source" NOT NULL without a default, which this service does not write/,
  );
});

test('a missing table the service uses is refused, naming it', async (t) => {
  const url = await database(t, 'newest', future(`DROP TABLE mail_archiver."UserMailAccounts"`));
  t.regex(((await start(url)) as { error: string }).error, /has no table mail_archiver\."UserMailAccounts"/);
});

test('the server logs the newer-schema line and serves; on a renamed column it exits with the sentence', async (t) => {
  const newer = await database(t, 'newest', future(`CREATE TABLE mail_archiver."Unrelated" ("Id" integer)`));
  const { dir, cleanup } = tempDir('mag-shape-');
  t.teardown(cleanup);
  const server = await startServerProcess({ dir, dbPath: newer } as Fixture);
  t.teardown(() => {
    server.child.kill('SIGTERM');
  });
  const line = server.lines.find((l) => /newer than/.test(String(l.msg)));
  t.truthy(line);
  t.is(line!.level, 40); // warn
  t.regex(String(line!.msg), new RegExp(`${FUTURE}, newer than ${MAIL_ARCHIVER_TESTED}`));
  t.is((await fetch(`${server.url}/healthz`)).status, 200);

  const renamed = await database(
    t,
    'newest',
    future(`ALTER TABLE mail_archiver."MailAccounts" RENAME COLUMN "EmailAddress" TO "Address"`),
  );
  const refused = await t.throwsAsync(startServerProcess({ dir, dbPath: renamed } as Fixture));
  t.regex(
    refused!.message,
    /exited with 1: mail-archive-gateway: The Mail Archiver schema in .* has no column mail_archiver\."MailAccounts"\."EmailAddress"/,
  );
});

test('the CLI says the newer-schema line on stderr and works; on a renamed column it stops with the sentence', async (t) => {
  const newer = await database(t, 'newest', future(`CREATE TABLE mail_archiver."Unrelated" ("Id" integer)`));
  const listed = await runCli(['--db', newer, 'users', 'list', '--json']);
  t.is(listed.code, 0, listed.stderr);
  t.deepEqual(JSON.parse(listed.stdout), []);
  t.regex(listed.stderr, new RegExp(`^mail-archive: .*${FUTURE}, newer than ${MAIL_ARCHIVER_TESTED}.*\\n$`));

  const renamed = await database(
    t,
    'newest',
    future(`ALTER TABLE mail_archiver."ApiKeys" RENAME COLUMN "RevokedAt" TO "Revoked"`),
  );
  const refused = await runCli(['--db', renamed, 'keys', 'list']);
  t.is(refused.code, 1);
  t.is(refused.stdout, '');
  t.regex(refused.stderr, /has no column mail_archiver\."ApiKeys"\."RevokedAt", which this service uses/);
  t.is(refused.stderr.trim().split('\n').length, 1);
});

/** A small archive in `shape` with the service's schema, searched by its user through the store. */
async function searchable(t: ExecutionContext, label: string, messages: number, shape?: MailArchiverShape) {
  const db = await createTestDatabase(label);
  t.teardown(() => db.drop());
  const archive = await createSmallArchive(db.url, messages, shape);
  await prepareArchive({ path: db.url });
  const store = new PgStore({ url: db.url, timeZone: 'UTC', connections: 1 });
  t.teardown(() => store.close());
  const principal = {
    userId: archive.userId,
    username: 'alice',
    isAdmin: false,
    keyId: archive.keyId,
    keyPrefix: 'ma_',
  };
  const search = (query: Partial<SearchQuery>) =>
    store.run({
      kind: 'search',
      principal,
      query: { page: 1, pageSize: 10, sortBy: 'sentDate', sortOrder: 'desc', ...query },
    });
  return { url: db.url, archive, search };
}

test('a word longer than a PostgreSQL 14 lexeme is indexed cut to 2046 bytes, and found', async (t) => {
  // 14 refuses a lexeme of 2047 bytes in a tsvector and in a tsquery (15 takes it in a tsquery):
  // the side index would fail on such a message, and a search for the word be a 500.
  const { url, archive, search } = await searchable(t, 'shape_lexeme', 1);
  const word = 'x'.repeat(3000);
  const id = await addMessage(url, archive.accountId, `${word} tail`);
  const found = await search({ q: word });
  t.deepEqual(
    found.items.map((i) => i.id),
    [id],
  );
  t.is(found.items[0]!.isRead, false, 'the newest shape has the read flag');
});

for (const shape of ['2608.1', 'newest'] as const) {
  test(`a folder filter means that folder exactly, % and _ included, ${shape === '2608.1' ? 'without' : 'with'} the 2609 folder index`, async (t) => {
    const { url, archive, search } = await searchable(t, `shape_folder_${shape}`, 7, shape);
    // Names LIKE would confuse if its wildcards were not escaped, and one below the folder.
    const folders = ['a_b%c', 'aXbYc', 'a_b%cd', 'a_b%c/sub', 'A_B%C', 'a\\_b%c', '%'];
    await query(
      url,
      `UPDATE mail_archiver."ArchivedEmails" e SET "FolderName" = f.name
         FROM unnest(ARRAY[${archive.emailIds.join(',')}], ARRAY[${folders.map((f) => `'${f}'`).join(',')}]) AS f(id, name)
        WHERE e."Id" = f.id`,
    );
    const inFolder = async (folder: string) => (await search({ folder })).items.map((i) => i.folderName);
    for (const folder of folders) t.deepEqual(await inFolder(folder), [folder], folder);
    t.deepEqual(await inFolder('a_b'), []);
    // The index serves the filter where it exists (on so small a table only when told to).
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    t.teardown(() => client.end());
    await client.query('SET enable_seqscan = off; SET enable_bitmapscan = off');
    const explained = await client.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT count(*) FROM mail_archiver."ArchivedEmails" e WHERE e."FolderName" = 'a_b%c'`,
    );
    const plan = explained.rows.map((r) => r['QUERY PLAN']).join('\n');
    t.is(/ix_archivedemails_foldername_pattern/.test(plan), shape === 'newest', plan);
  });
}
