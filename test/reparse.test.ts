// `mail-archive reparse` (docs/reparse.md): the fixture mail is imported, then made to look as an
// older parser would have stored it (a wrong subject, a body cut short, a missing and a wrong
// attachment, lost References); reparse puts back exactly that from the kept originals and
// changes nothing else, a dry run reports the same and writes nothing, an interrupted pass
// resumes, messages without an original are counted and left alone, search and conversations
// follow. On the SQLite store, the one that keeps originals.
import test, { type ExecutionContext } from 'ava';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openArchive, type Db } from '../engine/sqlite/open.js';
import { addAccount } from '../engine/sqlite/accounts.js';
import { SqliteAdmin } from '../engine/sqlite/admin.js';
import { searchEmails } from '../engine/sqlite/emails.js';
import { buildSnapshot } from '../engine/sqlite/index-build.js';
import { describesArchive } from '../engine/sqlite/index-verify.js';
import { Snapshot } from '../engine/search/bitsets/snapshot.js';
import { importPaths } from '../engine/import/importer.js';
import { reparseArchive, type ReparseSummary } from '../engine/import/reparse.js';
import { parseSearchInput } from '../shared/search-input.js';
import { CLI, runCli } from './helpers/cli.js';
import { tempDir } from './helpers/fixture.js';

const FIXTURES = fileURLToPath(new URL('../../test/fixtures/mail/', import.meta.url));
const admin = { isAdmin: true, userId: 0 };

interface Archive {
  db: Db;
  path: string;
  archive: SqliteAdmin;
  /** Message ids by subject (the fixture subjects are unique where used). */
  bySubject: (subject: string) => number;
}

async function importedArchive(t: ExecutionContext): Promise<Archive> {
  const { dir, cleanup } = tempDir('mag-reparse-');
  const path = join(dir, 'archive.db');
  const db = openArchive(path);
  t.teardown(() => {
    if (db.open) db.close();
    cleanup();
  });
  const accountId = addAccount(db, { name: 'Alice', emailAddress: 'alice@example.com' }).id;
  const summary = await importPaths(db, [FIXTURES], { accountId });
  t.true(summary.imported >= 15, `the fixture mail is imported (${summary.imported})`);
  const bySubject = (subject: string) => {
    const ids = db.prepare('SELECT id FROM emails WHERE subject = ?').pluck().all(subject) as number[];
    if (ids.length !== 1) throw new Error(`${ids.length} messages with the subject ${subject}`);
    return ids[0]!;
  };
  return { db, path, archive: new SqliteAdmin(db, false), bySubject };
}

const hex = (v: unknown) => (Buffer.isBuffer(v) ? `x'${v.toString('hex')}'` : v);
const sorted = (rows: Array<Record<string, unknown>>) =>
  rows.map((r) => JSON.stringify(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, hex(v)])))).sort();

/**
 * Every row of every table, the full-text indexes by their words, with
 * attachment contents named by their SHA-256 instead of their row id and no extraction time.
 */
function dump(db: Db): Record<string, string[]> {
  const tables = db
    .prepare(
      `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'
          AND name NOT LIKE 'email_fts%' AND name NOT LIKE 'attachment_fts%'`,
    )
    .pluck()
    .all() as string[];
  const out: Record<string, string[]> = {};
  for (const table of tables) out[table] = sorted(db.prepare(`SELECT * FROM ${table}`).all() as never);
  const bySha = (sql: string) => sorted(db.prepare(sql).all() as never);
  out.attachments = bySha(
    `SELECT a.email_id, a.file_name, a.content_type, a.size, a.is_inline, c.sha256
       FROM attachments a JOIN attachment_contents c ON c.id = a.content_id`,
  );
  out.attachment_contents = bySha('SELECT sha256, size, chunks FROM attachment_contents');
  out.attachment_chunks = bySha(
    'SELECT c.sha256, k.seq, k.data FROM attachment_chunks k JOIN attachment_contents c ON c.id = k.content_id',
  );
  // The full-text indexes, word by word: every (word, message key, column, position) they hold.
  for (const fts of ['email_fts', 'attachment_fts']) {
    db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS temp.${fts}_words USING fts5vocab(main, ${fts}, 'instance')`);
    out[fts] = bySha(`SELECT term, doc, col, offset FROM temp.${fts}_words`);
  }
  out.attachment_texts = bySha(
    `SELECT c.sha256, t.status, t.text, t.chars, t.truncated
       FROM attachment_texts t JOIN attachment_contents c ON c.id = t.content_id`,
  );
  return out;
}

const state = (db: Db) =>
  db.prepare('SELECT generation, rewrites FROM archive_state WHERE id = 1').get() as {
    generation: number;
    rewrites: number;
  };

const found = (db: Db, q: string) =>
  searchEmails(db, admin, parseSearchInput({ q }, { defaultPageSize: 100, maxPageSize: 100 })).items.map((i) => i.id);

/** What an older parser would have stored, written over the imported mail. */
function olderParser(a: Archive) {
  const { db } = a;
  const ids = {
    subject: a.bySubject('About mbox files'),
    plan: a.bySubject('Project plan with diagram'),
    notes: a.bySubject('Notes attached'),
    reply: a.bySubject('Re: Project plan with diagram'),
    noOriginal: a.bySubject('Same notes again'),
  };
  // A subject cut at its last word (and the conversation subject derived from it).
  db.prepare("UPDATE emails SET subject = 'About mbox', thread_subject = 'about mbox' WHERE id = ?").run(ids.subject);
  // A text body cut short, and the CSV attachment never stored at all (its content with it).
  db.prepare('UPDATE email_bodies SET text_body = substr(body_text(text_body), 1, 10) WHERE email_id = ?').run(
    ids.plan,
  );
  const csv = db
    .prepare("SELECT id, content_id AS contentId FROM attachments WHERE email_id = ? AND file_name = 'figures.csv'")
    .get(ids.plan) as { id: number; contentId: number };
  db.prepare('DELETE FROM attachments WHERE id = ?').run(csv.id);
  db.prepare('DELETE FROM attachment_texts WHERE content_id = ?').run(csv.contentId);
  db.prepare('DELETE FROM attachment_chunks WHERE content_id = ?').run(csv.contentId);
  db.prepare('DELETE FROM attachment_contents WHERE id = ?').run(csv.contentId);
  // An attachment stored with the wrong bytes (a decoding bug), with text read from them.
  const junk = Number(
    db.prepare("INSERT INTO attachment_contents (sha256, size, chunks) VALUES ('0000junk', 4, 1)").run()
      .lastInsertRowid,
  );
  db.prepare("INSERT INTO attachment_chunks (content_id, seq, data) VALUES (?, 0, x'6a756e6b')").run(junk);
  db.prepare(
    "INSERT INTO attachment_texts (content_id, status, text, chars, extracted_at) VALUES (?, 'ok', 'junk', 4, 1)",
  ).run(junk);
  db.prepare('UPDATE attachments SET content_id = ?, size = 4 WHERE email_id = ?').run(junk, ids.notes);
  // References lost: the reply is in a conversation of its own, and so is the message it answers.
  const thread = db.prepare('SELECT thread_id FROM emails WHERE id = ?').pluck().get(ids.reply) as number;
  db.prepare('DELETE FROM email_refs WHERE email_id = ?').run(ids.reply);
  db.prepare('UPDATE emails SET thread_id = id WHERE thread_id = ?').run(thread);
  // A message archived before originals were kept, with a subject the current parser would fix.
  db.prepare('DELETE FROM email_originals WHERE email_id = ?').run(ids.noOriginal);
  db.prepare("UPDATE emails SET subject = 'Same notes' WHERE id = ?").run(ids.noOriginal);
  return ids;
}

const counts = (s: ReparseSummary) => {
  const { seconds: _s, dryRun: _d, attachmentTexts: _a, ...rest } = s;
  return rest;
};

test('reparse puts back what an older parser got wrong and changes nothing else', async (t) => {
  const a = await importedArchive(t);
  const pristine = dump(a.db);
  const ids = olderParser(a);
  const older = dump(a.db);
  t.notDeepEqual(older, pristine);
  t.false(found(a.db, 'budget').includes(ids.plan), 'the cut body no longer holds the word');
  const snapshot = new Snapshot(buildSnapshot(a.db));
  t.true(describesArchive(a.db, snapshot).ok);
  const before = state(a.db);

  const dry = await reparseArchive(a.archive, { dryRun: true, batchSize: 4 });
  t.deepEqual(dump(a.db), older, 'a dry run writes nothing');
  t.deepEqual(state(a.db), before);
  t.false(existsSync(`${a.path}.reparse.json`));
  t.true(dry.dryRun);
  t.is(dry.changed, 4);
  t.is(dry.withoutOriginal, 1);
  t.is(dry.failed + dry.damaged, 0);
  t.is(dry.examined, a.db.prepare('SELECT count(*) FROM emails').pluck().get() as number);
  t.is(dry.unchanged, dry.examined - 5);
  t.deepEqual(Object.fromEntries(Object.entries(dry.fields).filter(([, n]) => n > 0)), {
    subject: 1,
    textBody: 1,
    attachments: 2,
    threads: 1,
  });

  const run = await reparseArchive(a.archive, { batchSize: 4 });
  t.deepEqual(counts(run), counts(dry), 'the run finds what the dry run reported');
  t.true(run.complete);
  t.is(run.attachmentTexts, 1, 'the CSV content stored again has its text read');
  t.false(existsSync(`${a.path}.reparse.json`), 'a finished pass leaves no progress behind');

  // Exactly the imported state again, apart from the message that has no original.
  const expected = structuredClone(pristine);
  const noOriginalRow = (rows: string[], key: string) =>
    rows.filter((r) => (JSON.parse(r) as Record<string, unknown>)[key] !== ids.noOriginal);
  expected.email_originals = noOriginalRow(expected.email_originals!, 'email_id');
  expected.emails = expected.emails!.map((r) => {
    const row = JSON.parse(r) as Record<string, unknown>;
    return row.id === ids.noOriginal ? JSON.stringify({ ...row, subject: 'Same notes' }) : r;
  });
  const noOriginalKey = a.db.prepare('SELECT fts_key FROM emails WHERE id = ?').pluck().get(ids.noOriginal);
  expected.email_fts = expected.email_fts!.filter(
    (r) => r !== JSON.stringify({ term: 'again', doc: noOriginalKey, col: 'subject', offset: 2 }),
  );
  const after = dump(a.db);
  for (const table of Object.keys(pristine))
    if (table !== 'archive_state') t.deepEqual(after[table], expected[table], table);
  t.false(
    (a.db.prepare('SELECT sha256 FROM attachment_contents').pluck().all() as string[]).includes('0000junk'),
    'the content no attachment names any more is gone',
  );

  // The search index follows: the full-text index at once, the in-memory one and a saved copy
  // by the rewrite counter.
  t.true(found(a.db, 'budget').includes(ids.plan), 'the restored word is found');
  t.true(found(a.db, 'files').includes(ids.subject));
  t.false(found(a.db, 'junk').length > 0);
  const now = state(a.db);
  t.true(now.generation > before.generation);
  t.true(now.rewrites > before.rewrites);
  t.false(describesArchive(a.db, snapshot).ok, 'a saved index from before is rebuilt, not served');
  // Conversations follow: the reply is with the message it answers again.
  const threadOf = (id: number) => a.db.prepare('SELECT thread_id FROM emails WHERE id = ?').pluck().get(id);
  t.is(threadOf(ids.reply), threadOf(ids.plan));

  const again = await reparseArchive(a.archive, {});
  t.is(again.changed, 0, 'a second pass finds nothing to change');
  t.is(again.withoutOriginal, 1);
});

test('an interrupted pass resumes after its last batch; --restart starts over', async (t) => {
  const a = await importedArchive(t);
  a.db.prepare("UPDATE emails SET subject = subject || ' (old)'").run();
  const total = a.db.prepare('SELECT count(*) FROM emails').pluck().get() as number;
  const ids = a.db.prepare('SELECT id FROM emails ORDER BY id').pluck().all() as number[];
  const stale = () =>
    a.db.prepare("SELECT id FROM emails WHERE subject LIKE '% (old)' ORDER BY id").pluck().all() as number[];

  const first = await reparseArchive(a.archive, { batchSize: 1, limit: 3 });
  t.false(first.complete);
  t.is(first.examined, 3);
  t.is(first.changed, 3);
  t.deepEqual(stale(), ids.slice(3), 'the three batches done are committed, the rest untouched');
  t.true(existsSync(`${a.path}.reparse.json`));

  const second = await reparseArchive(a.archive, { batchSize: 5, limit: 2 });
  t.is(second.resumedAfter, ids[2]!, 'it continues after the last message done');
  t.is(second.examined, 5, 'the counts are the whole pass so far');
  t.deepEqual(stale(), ids.slice(5));

  // Starting over: the pass begins at the first message again (those done are unchanged now).
  const restarted = await reparseArchive(a.archive, { batchSize: 3, restart: true });
  t.is(restarted.resumedAfter, null);
  t.true(restarted.complete);
  t.is(restarted.examined, total);
  t.is(restarted.changed, total - 5);
  t.is(restarted.unchanged, 5);
  t.deepEqual(stale(), []);
  t.false(existsSync(`${a.path}.reparse.json`));
});

test('a damaged original and an account scope: counted, left alone', async (t) => {
  const a = await importedArchive(t);
  const plan = a.bySubject('Project plan with diagram');
  a.db.prepare("UPDATE emails SET subject = 'Project plan' WHERE id = ?").run(plan);
  a.db
    .prepare(
      "UPDATE originals SET data = x'00' WHERE id = (SELECT original_id FROM email_originals WHERE email_id = ?)",
    )
    .run(plan);
  const other = addAccount(a.db, { name: 'Bob', emailAddress: 'bob@example.com' }).id;
  const none = await reparseArchive(a.archive, { accountId: other });
  t.is(none.examined, 0, 'another account has none of this mail');
  const run = await reparseArchive(a.archive, {});
  t.is(run.damaged, 1);
  t.is(run.changed, 0);
  t.deepEqual(
    run.failures.map((f) => f.id),
    [plan],
  );
  t.regex(run.failures[0]!.reason, /integrity check/);
  t.is(a.db.prepare('SELECT subject FROM emails WHERE id = ?').pluck().get(plan), 'Project plan');
});

test('the CLI prints the summary, --json the counts, --limit stops and a rerun continues, --dry-run writes nothing', async (t) => {
  const a = await importedArchive(t);
  const notes = a.bySubject('Notes attached');
  a.db.prepare("UPDATE emails SET subject = subject || ' (old)'").run();
  const total = a.db.prepare('SELECT count(*) FROM emails').pluck().get() as number;
  const second = a.db.prepare('SELECT id FROM emails ORDER BY id LIMIT 1 OFFSET 1').pluck().get() as number;
  a.db.close();
  const cli = (args: string[]) => runCli(['--db', a.path, 'reparse', ...args], { cwd: join(a.path, '..') });

  const dry = await cli(['--dry-run']);
  t.is(dry.code, 0, dry.stderr);
  t.regex(
    dry.stdout,
    new RegExp(
      `^Dry run: Reparsed ${total} messages: ${total} messages would change \\(subject: ${total}\\); .*nothing was written`,
    ),
  );
  const first = await cli(['--limit', '2', '--batch-size', '1']);
  t.is(first.code, 0, first.stderr);
  t.regex(first.stdout, /^Reparsed 2 messages: 2 messages changed \(subject: 2\);/);
  t.regex(first.stdout, /Stopped before the last message; run reparse again to continue\.\n$/);
  t.regex(first.stderr, /^reparse: 1 of \d+ messages \(1 changed\)$/m, 'plain progress lines when not a terminal');
  const json = await cli(['--json', '--batch-size', '5']);
  t.is(json.code, 0, json.stderr);
  const summary = JSON.parse(json.stdout) as ReparseSummary;
  t.is(summary.resumedAfter, second, 'the rerun continues after the messages done');
  t.is(summary.changed, total, 'and counts the whole pass');
  t.is(summary.fields.subject, total);
  t.true(summary.complete);
  t.is(json.stderr, '', '--json prints nothing else');
  const text = await cli(['--account', '1']);
  t.is(text.code, 0, text.stderr);
  t.regex(text.stdout, /: 0 messages changed; \d+ unchanged, 0 without original/);
  const db = openArchive(a.path);
  t.is(db.prepare('SELECT subject FROM emails WHERE id = ?').pluck().get(notes), 'Notes attached');
  t.is(db.prepare("SELECT count(*) FROM emails WHERE subject LIKE '% (old)'").pluck().get(), 0);
  db.close();

  const bad = await cli(['--batch-size', '0']);
  t.is(bad.code, 2);
  t.regex(bad.stderr, /--batch-size/);
  const missing = await cli(['--account', '99']);
  t.is(missing.code, 1);
  t.regex(missing.stderr, /No mail account with id 99/);
});

test('a CLI run killed after its first batch leaves the archive whole, and the next run finishes the pass', async (t) => {
  const a = await importedArchive(t);
  a.db.prepare("UPDATE emails SET subject = subject || ' (old)'").run();
  const total = a.db.prepare('SELECT count(*) FROM emails').pluck().get() as number;
  a.db.close();
  const child = spawn(process.execPath, [CLI, '--db', a.path, 'reparse', '--batch-size', '1'], {
    env: { PATH: process.env.PATH, TZ: 'UTC' },
  });
  child.stdout.resume();
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  // The first progress line is written once the first batch is committed and its progress saved.
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (/^reparse: \d+ of \d+ messages/m.test(stderr)) resolve();
    });
    child.on('close', () => reject(new Error(`the run ended without a progress line: ${stderr}`)));
  });
  child.kill('SIGKILL');
  const { signal } = await ended;
  t.log(`ended by ${signal ?? 'exit'}`);

  const db = openArchive(a.path);
  t.is(db.pragma('quick_check', { simple: true }), 'ok');
  const fixed = db.prepare("SELECT count(*) FROM emails WHERE subject NOT LIKE '% (old)'").pluck().get() as number;
  t.true(fixed >= 1, 'the committed batches stay');
  db.close();
  const rerun = await runCli(['--db', a.path, 'reparse', '--json']);
  t.is(rerun.code, 0, rerun.stderr);
  const summary = JSON.parse(rerun.stdout) as ReparseSummary;
  t.true(summary.complete);
  t.is(summary.examined, total, 'the whole pass is counted');
  // Killed before the end (the usual case), the rerun continues after the last saved batch.
  if (signal === 'SIGKILL') t.not(summary.resumedAfter, null);
  const after = openArchive(a.path);
  t.is(after.prepare("SELECT count(*) FROM emails WHERE subject LIKE '% (old)'").pluck().get(), 0);
  after.close();
});
