// The PostgreSQL store saves its search index by default (ADR 23): in data/ under the working
// directory, one file per database (engine/pool/pool.ts defaultPostgresIndexFile), named in the
// ready line. Two services on two databases of one server, started in one directory, each keep
// and load their own file; a data/ that cannot be made costs one warning, and the service still
// answers searches from memory. Real server processes (dist/gateway/server.js), whose working
// directory is a temporary one of the test's.
import test, { type ExecutionContext } from 'ava';
import { existsSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { prepareArchive } from '../engine/archive.js';
import { defaultPostgresIndexFile } from '../engine/pool/pool.js';
import type { SearchIndexInfo } from '../shared/jobs.js';
import { tempDir, type Fixture } from './helpers/fixture.js';
import { addMessage, createSmallArchive, type SmallArchive } from './helpers/pg-mail-archiver.js';
import { createTestDatabase } from './helpers/postgres.js';
import { waitFor } from './helpers/redis.js';
import { startServerProcess, type ServerProcess } from './helpers/server-process.js';

/** A database in Mail Archiver's schema holding `messages` messages, dropped when the test ends. */
async function database(t: ExecutionContext, label: string, messages: number) {
  const db = await createTestDatabase(label);
  t.teardown(() => db.drop());
  const archive: SmallArchive = await createSmallArchive(db.url, messages);
  await prepareArchive({ path: db.url });
  return { url: db.url, archive };
}

/** The server with `dir` as its working directory (and no Engine:SearchIndexFile), stopped when the test ends. */
async function start(t: ExecutionContext, dir: string, url: string): Promise<ServerProcess> {
  const server = await startServerProcess({ dir, dbPath: url } as Fixture, { Mcp__Enabled: 'false' });
  t.teardown(() => stop(server));
  return server;
}

async function stop(server: ServerProcess): Promise<void> {
  if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGTERM');
  await server.exit;
}

const messages = (server: ServerProcess) => server.lines.map((l) => String(l.msg ?? ''));

/** Waits for the server's first log line that `match` accepts, and returns it. */
async function lineOf(server: ServerProcess, what: string, match: (msg: string) => boolean): Promise<string> {
  await waitFor(what, () => messages(server).some(match), 120_000);
  return messages(server).find(match)!;
}

const readyLine = (server: ServerProcess) =>
  lineOf(server, 'the ready line', (m) => m.startsWith('search index: ready'));

async function searchIndex(server: ServerProcess): Promise<SearchIndexInfo | undefined> {
  const body = (await (await fetch(`${server.url}/readyz`)).json()) as { checks: { searchIndex?: SearchIndexInfo } };
  return body.checks.searchIndex;
}

async function totalOf(server: ServerProcess, key: string, q: string): Promise<number> {
  const response = await fetch(`${server.url}/api/v1/emails?q=${encodeURIComponent(q)}`, {
    headers: { Authorization: `Bearer ${key}` },
  });
  if (response.status !== 200) throw new Error(`search answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { totalItems: number }).totalItems;
}

test('the default file: one per database, told apart by name, host and port, the default port or not', (t) => {
  const file = (url: string) => defaultPostgresIndexFile(url, '/srv/mag');
  t.regex(
    file('postgres://gw@db.example/mailarchiver'),
    /^\/srv\/mag\/data\/postgres-mailarchiver-[0-9a-f]{12}\.index$/,
  );
  t.not(file('postgres://gw@db.example/one'), file('postgres://gw@db.example/two'), 'two databases');
  t.not(file('postgres://gw@db.example:5432/x'), file('postgres://gw@db.example:5433/x'), 'two ports');
  t.not(file('postgres://gw@db1.example/x'), file('postgres://gw@db2.example/x'), 'two hosts');
  t.is(file('postgres://gw@localhost:5432/x'), file('postgres://gw@localhost/x'), 'the default port written or not');
  t.is(file('postgres://gw@LocalHost/x'), file('postgres://other:secret@localhost/x'), 'host case, credentials');
  // Only letters, digits, _ and - in the name, at most 40 of them; the hash still tells these apart.
  const odd = file('postgresql://gw@db.example/' + encodeURIComponent('Mail Archiver/ü'.repeat(5)));
  t.regex(odd, /\/postgres-Mail_Archiver__[A-Za-z0-9_-]{25}-[0-9a-f]{12}\.index$/);
  t.not(odd, file('postgresql://gw@db.example/' + encodeURIComponent('Mail Archiver/ü'.repeat(6))));
  // Resolved at start: absolute, whatever the working directory was given as.
  const url = 'postgres://gw@db.example/x';
  t.is(defaultPostgresIndexFile(url, 'relative'), join(process.cwd(), 'relative', 'data', basename(file(url))));
});

test('two services on two databases, one working directory: each saves its own file and loads it on restart', async (t) => {
  const { dir, cleanup } = tempDir('mag-pg-index-');
  t.teardown(cleanup);
  // Different sizes, so that a file loaded by the wrong service would show in its count.
  const dbs = [await database(t, 'default_index_one', 3), await database(t, 'default_index_two', 5)];
  const files = dbs.map((db) => defaultPostgresIndexFile(db.url, dir));
  t.not(files[0], files[1]);
  t.false(existsSync(join(dir, 'data')), 'no data/ before the first start');

  const first = await Promise.all(dbs.map((db) => start(t, dir, db.url)));
  for (const [i, server] of first.entries()) {
    const ready = await readyLine(server);
    t.true(ready.startsWith('search index: ready, built,'), ready);
    t.true(ready.endsWith(`; kept in ${files[i]}`), ready);
    await lineOf(server, `the save of ${files[i]}`, (m) => m.startsWith(`search index: saved ${files[i]} (`));
  }
  await Promise.all(first.map(stop));
  t.true(
    files.every((f) => existsSync(f)),
    'both files',
  );

  const again = await Promise.all(dbs.map((db) => start(t, dir, db.url)));
  for (const [i, server] of again.entries()) {
    const ready = await readyLine(server);
    t.regex(
      ready,
      new RegExp(`^search index: ready, (loaded|caught up) from the saved file, ${i === 0 ? 3 : 5} messages,`),
    );
    t.true(ready.endsWith(`; kept in ${files[i]}`), ready);
    t.true(
      messages(server).some((m) => m.startsWith(`search index: loaded ${files[i]} (`)),
      messages(server).join('\n'),
    );
    t.false(
      messages(server).some((m) => m.includes('ignored')),
      messages(server).join('\n'),
    );
    t.is(await totalOf(server, dbs[i]!.archive.key, 'quarterly'), i === 0 ? 3 : 5);
  }
});

test('a data/ that cannot be made: one warning, and searches are answered from memory all the same', async (t) => {
  const { dir, cleanup } = tempDir('mag-pg-index-');
  t.teardown(cleanup);
  // A file where the directory should be: mkdir fails even for root, whom no mode stops.
  writeFileSync(join(dir, 'data'), 'not a directory\n');
  const { url, archive } = await database(t, 'default_index_unwritable', 3);
  const file = defaultPostgresIndexFile(url, dir);
  const server = await start(t, dir, url);

  const ready = await readyLine(server);
  t.true(ready.startsWith('search index: ready, built,'), ready);
  t.true(ready.includes('not saved, so every start builds it again'), ready);
  t.is(await totalOf(server, archive.key, 'quarterly'), 3);

  // New mail: the refresh that indexes it would save again, and must neither save nor warn again.
  const id = await addMessage(url, archive.accountId, 'Quarterly report late');
  await waitFor(
    'the index to hold the new message',
    async () => ((await searchIndex(server))?.maxId ?? 0) >= id,
    60_000,
  );
  t.is(await totalOf(server, archive.key, 'quarterly'), 4);

  const warnings = server.lines.filter((l) => l.level === 40 && String(l.msg).startsWith('search index:'));
  t.is(warnings.length, 1, JSON.stringify(warnings));
  const warning = String(warnings[0]!.msg);
  t.true(warning.includes(file), warning);
  t.regex(warning, /EEXIST|ENOTDIR/);
  t.true(warning.includes('every start builds it again') && warning.includes('Engine:SearchIndexFile'), warning);
  t.false(
    messages(server).some((m) => m.includes('could not save') || m.startsWith('search index: saved')),
    messages(server).join('\n'),
  );
  t.is(server.child.exitCode, null, 'still running');
});
