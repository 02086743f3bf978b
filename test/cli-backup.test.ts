// `mail-archive backup`: a consistent, checked copy of a live archive (docs/operations.md).
import test from 'ava';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from '../engine/sqlite/driver.js';
import { runCli } from './helpers/cli.js';
import { createFixture } from './helpers/fixture.js';

const count = (path: string, sql: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare(sql).pluck().get() as number;
  } finally {
    db.close();
  }
};

test('backup copies a live archive, including what is still only in its write-ahead log', async (t) => {
  const f = createFixture();
  t.teardown(f.cleanup);
  // A writer that keeps the archive open: its committed rows sit in the -wal file, not yet in
  // the main file, which is what a plain file copy would miss.
  const writer = new Database(f.dbPath);
  t.teardown(() => writer.close());
  writer.pragma('wal_autocheckpoint = 0');
  writer
    .prepare("INSERT INTO mail_accounts (name, email_address, provider) VALUES ('late', 'late@example.com', 'IMAP')")
    .run();
  t.true(existsSync(`${f.dbPath}-wal`));
  const destination = join(f.dir, 'copy.db');
  const run = await runCli(['--db', f.dbPath, 'backup', destination, '--json']);
  t.is(run.code, 0, run.stderr);
  const summary = JSON.parse(run.stdout) as { destination: string; bytes: number; check: string };
  t.is(summary.destination, destination);
  t.is(summary.check, 'ok');
  t.true(summary.bytes > 0);
  for (const table of ['emails', 'attachments', 'api_keys', 'mail_accounts'])
    t.is(count(destination, `SELECT count(*) FROM ${table}`), count(f.dbPath, `SELECT count(*) FROM ${table}`), table);
  t.is(count(destination, "SELECT count(*) FROM mail_accounts WHERE name = 'late'"), 1);
  t.false(existsSync(`${destination}.partial`));
});

test('backup never overwrites a file unless told to, and says so in one line', async (t) => {
  const f = createFixture();
  t.teardown(f.cleanup);
  const destination = join(f.dir, 'exists.db');
  writeFileSync(destination, 'keep me');
  const refused = await runCli(['--db', f.dbPath, 'backup', destination]);
  t.is(refused.code, 2);
  t.regex(refused.stderr, /already exists.*--force/);
  t.is(refused.stderr.trim().split('\n').length, 1);
  const forced = await runCli(['--db', f.dbPath, 'backup', destination, '--force']);
  t.is(forced.code, 0, forced.stderr);
  t.regex(forced.stdout, /^Backed up the archive to .*quick_check ok\.\n$/);
  t.is(count(destination, 'SELECT count(*) FROM emails'), count(f.dbPath, 'SELECT count(*) FROM emails'));
  // A missing archive is refused rather than created and backed up empty.
  const missing = await runCli(['--db', join(f.dir, 'nope.db'), 'backup', join(f.dir, 'x.db')]);
  t.is(missing.code, 1);
  t.regex(missing.stderr, /There is no archive/);
});

test('backup into a folder that does not exist says so in one sentence, without a stack', async (t) => {
  const f = createFixture();
  t.teardown(f.cleanup);
  const folder = join(f.dir, 'no-such-folder');
  const run = await runCli(['--db', f.dbPath, 'backup', join(folder, 'b.db')]);
  t.is(run.code, 2);
  t.is(run.stdout, '');
  t.regex(run.stderr, /^mail-archive: [^\n]*no-such-folder does not exist[^\n]*\n$/);
  t.false(run.stderr.includes('TypeError'));
  t.false(/^\s+at /m.test(run.stderr), 'no stack trace');
  t.false(existsSync(folder));
});
