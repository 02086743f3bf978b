// The mail importer (engine/import), the demo archive (engine/demo) and their CLI commands.
// Fixtures in test/fixtures/mail are hand-written real-world MIME; every test copies what it
// needs into its own temp dir and imports into a fresh archive.
import test, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { STORED_BODY_LIMIT } from '../engine/rules/body.js';
import { openArchive, type Db } from '../engine/sqlite/open.js';
import { DEMO_ACCOUNTS } from '../engine/demo/corpus.js';
import { demoMail } from '../engine/demo/generate.js';
import { buildMessage } from '../engine/demo/mime.js';
import { importPaths, type ImportOptions } from '../engine/import/importer.js';
import { parseMailDate } from '../engine/import/mail-date.js';
import { decodeMailboxName } from '../engine/import/maildir.js';
import { formatMboxEntry, readMbox } from '../engine/import/mbox.js';
import { addAccount, getAccount } from '../engine/sqlite/accounts.js';
import { StoreError } from '../shared/errors.js';
import { hashKey, KEY_PATTERN } from '../engine/rules/keys.js';
import { findUser, passwordHashOf } from '../engine/sqlite/users.js';
import { verifyPassword } from '../engine/rules/password-hash.js';
import { ATTACHMENT_CHUNK_BYTES } from '../engine/rules/new-email.js';
import { runCli } from './helpers/cli.js';
import { cliArchive, STORE_KINDS, type CliArchive, type StoreKind } from './helpers/cli-archive.js';
import { tempDir } from './helpers/fixture.js';

const FIXTURES = fileURLToPath(new URL('../../test/fixtures/mail/', import.meta.url));
const PNG_1X1 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const ms = (iso: string) => Date.parse(iso);

interface Env {
  dir: string;
  dbPath: string;
  db: Db;
  accountId: number;
  /** Copies fixtures (files or directories) into the temp dir; returns their new paths. */
  copy: (...names: string[]) => string[];
  run: (
    paths: string[],
    options?: Partial<ImportOptions> & { folder?: string },
  ) => Promise<{ summary: Awaited<ReturnType<typeof importPaths>>; warnings: string[] }>;
}

function setup(t: ExecutionContext): Env {
  const { dir, cleanup } = tempDir('mag-import-');
  const dbPath = join(dir, 'archive.db');
  const db = openArchive(dbPath);
  t.teardown(() => {
    db.close();
    cleanup();
  });
  const accountId = addAccount(db, { name: 'Alice', emailAddress: 'alice@example.com' }).id;
  return {
    dir,
    dbPath,
    db,
    accountId,
    copy: (...names) =>
      names.map((n) => {
        const to = join(dir, 'in', n);
        cpSync(join(FIXTURES, n), to, { recursive: true });
        return to;
      }),
    run: async (paths, options = {}) => {
      const warnings: string[] = [];
      const summary = await importPaths(db, paths, { accountId, onWarning: (w) => warnings.push(w), ...options });
      return { summary, warnings };
    },
  };
}

interface Row {
  id: number;
  folder: string;
  subject: string;
  from_addr: string;
  to_addr: string;
  cc_addr: string;
  bcc_addr: string;
  message_id: string;
  sent_date: number;
  received_date: number;
  is_outgoing: number;
  has_attachments: number;
  text_body: string | null;
  html_body: string | null;
  text_untruncated: string | null;
}

function rows(db: Db): Row[] {
  return db
    .prepare(
      'SELECT e.*, body_text(b.text_body) AS text_body, body_text(b.html_body) AS html_body, b.text_untruncated FROM emails e JOIN email_bodies b ON b.email_id = e.id ORDER BY e.id',
    )
    .all() as Row[];
}

const bySubject = (db: Db, subject: string) => rows(db).find((r) => r.subject === subject);

interface AttachmentRow {
  id: number;
  file_name: string;
  content_type: string;
  size: number;
  is_inline: number;
  content_id: number;
}

function attachmentsOf(db: Db, emailId: number): AttachmentRow[] {
  return db
    .prepare(
      'SELECT id, file_name, content_type, size, is_inline, content_id FROM attachments WHERE email_id = ? ORDER BY id',
    )
    .all(emailId) as AttachmentRow[];
}

/** Attachment bytes as a download would see them: the content's chunks in seq order. */
function attachmentBytes(db: Db, contentId: number): Buffer {
  const chunks = db
    .prepare('SELECT data FROM attachment_chunks WHERE content_id = ? ORDER BY seq')
    .pluck()
    .all(contentId) as Buffer[];
  return Buffer.concat(chunks);
}

test('ISO-8859-1 quoted-printable, windows-1252 base64 and ISO-2022-JP messages decode to the same Unicode text', async (t) => {
  const env = setup(t);
  const { summary } = await env.run(env.copy('qp-latin1.eml', 'cp1252-base64.eml', 'iso-2022-jp.eml'));
  t.like(summary, { imported: 3, duplicates: 0, failed: 0 });

  const de = bySubject(env.db, 'Grüße aus München');
  t.truthy(de, 'RFC 2047 Q-encoded ISO-8859-1 subject');
  t.is(de!.from_addr, 'Jürgen Müller <juergen@example.de>');
  t.is(de!.to_addr, 'Alice Example <alice@example.com>');
  // The soft line break (=\r\n) joins "wieder ge=F6ffnet".
  t.true(de!.text_body!.includes('schöne Grüße aus München! Das Café am Marienplatz ist wieder geöffnet.'));
  t.is(de!.message_id, '<20240514081451.GA1234@example.de>');

  const fr = bySubject(env.db, 'Réunion : ordre du jour – “urgent”');
  t.truthy(fr, 'B-encoded windows-1252 subject with typographic quotes');
  t.is(fr!.from_addr, 'Françoise Dupont <francoise@example.fr>');
  t.true(fr!.text_body!.includes('1 200 € (hors taxes)'));
  t.true(fr!.text_body!.includes('« Merci » — Françoise'));

  const ja = bySubject(env.db, '会議の議事録について');
  t.truthy(ja, 'ISO-2022-JP encoded subject');
  t.is(ja!.from_addr, '山田 太郎 <taro@example.jp>');
  t.true(ja!.text_body!.includes('添付の議事録をご確認ください。'));
});

test('mixed > alternative > related: text and HTML bodies, an inline image and attachments with exact bytes', async (t) => {
  const env = setup(t);
  const { summary } = await env.run(env.copy('nested-multipart.eml'));
  t.is(summary.imported, 1);
  const [mail] = rows(env.db);
  t.is(mail!.to_addr, 'alice@example.com, "Doe, John" <john@example.com>', 'a name with a comma stays quoted');
  t.is(mail!.cc_addr, 'Priya <priya@example.com>');
  t.true(mail!.text_body!.includes('Budget: 12 000 €.'));
  t.true(
    mail!.html_body!.includes('<img src="cid:diagram@example.com"'),
    'cid links are kept, not inlined as data: URIs',
  );
  t.false(mail!.html_body!.includes('data:image'));
  t.is(mail!.has_attachments, 1);

  const atts = attachmentsOf(env.db, mail!.id);
  t.deepEqual(
    atts.map((a) => [a.file_name, a.content_type, a.is_inline]),
    [
      ['diagram.png', 'image/png', 1],
      ['Rechnung März.pdf', 'application/pdf', 0],
      ['figures.csv', 'text/csv', 0],
    ],
  );
  t.deepEqual(attachmentBytes(env.db, atts[0]!.content_id), PNG_1X1);
  t.is(atts[0]!.size, PNG_1X1.length);
  const pdf = attachmentBytes(env.db, atts[1]!.content_id);
  t.true(pdf.subarray(0, 8).equals(Buffer.from('%PDF-1.4')));
  t.is(atts[1]!.size, pdf.length);
  t.is(attachmentBytes(env.db, atts[2]!.content_id).toString(), 'Item,Amount\r\nLicence,1200');
});

test('an HTML-only message gets a readable text body derived from its HTML', async (t) => {
  const env = setup(t);
  await env.run(env.copy('html-only.eml'));
  const mail = bySubject(env.db, '📰 Your weekly digest');
  t.truthy(mail, 'emoji subject decoded');
  t.true(mail!.html_body!.startsWith('<!DOCTYPE html>'));
  t.is(mail!.text_body, 'Weekly digest\n\nCafé opening & more – schön!\n\n * Read more [https://example.com/a]');
});

test('dates: Date for sent, the topmost Received for received, then Received, then the file time', async (t) => {
  const env = setup(t);
  const [twoReceived, noDate, badDate] = env.copy('two-received.eml', 'no-date.eml', 'bad-date.eml');
  utimesSync(badDate!, new Date('2021-02-03T04:05:06Z'), new Date('2021-02-03T04:05:06Z'));
  const { summary } = await env.run([twoReceived!, noDate!, badDate!]);
  t.like(summary, { imported: 3, failed: 0 });
  t.like(bySubject(env.db, 'Happy new year'), {
    sent_date: ms('2024-01-02T02:59:30Z'),
    received_date: ms('2024-01-02T03:04:05Z'),
  });
  t.like(bySubject(env.db, 'Disk usage report'), {
    sent_date: ms('2024-03-09T12:00:00Z'),
    received_date: ms('2024-03-09T12:00:00Z'),
  });
  t.like(bySubject(env.db, 'Nightly job finished'), {
    sent_date: ms('2021-02-03T04:05:06Z'),
    received_date: ms('2021-02-03T04:05:06Z'),
  });
  // Without Received, received equals sent.
  await env.run(env.copy('qp-latin1.eml'));
  t.is(bySubject(env.db, 'Grüße aus München')!.received_date, ms('2024-05-14T08:15:02Z'));
});

test('a message from the account address is outgoing, whatever its case; others are incoming', async (t) => {
  const env = setup(t);
  await env.run(env.copy('outgoing.eml', 'two-received.eml'));
  t.like(bySubject(env.db, 'Re: Project plan with diagram'), { is_outgoing: 1, bcc_addr: 'records@example.com' });
  t.is(bySubject(env.db, 'Happy new year')!.is_outgoing, 0);
});

test('mbox: From_ separators, mboxrd unescaping, and a malformed entry skipped with a warning naming file and offset', async (t) => {
  const env = setup(t);
  const [mbox] = env.copy('mixed.mbox');
  const { summary, warnings } = await env.run([mbox!]);
  t.like(summary, { imported: 3, duplicates: 0, failed: 1 });
  const offset = readFileSync(mbox!).indexOf('From MAILER-DAEMON');
  t.true(offset > 0);
  t.deepEqual(warnings, [`Skipped the message in ${mbox} at byte ${offset}: it does not start with a header field.`]);

  const body = bySubject(env.db, 'About mbox files')!.text_body!;
  t.true(body.includes('\nFrom the start, this line began with "From " and was escaped.\n'));
  t.true(body.includes('\n>From here, this one began with ">From ".\n'));
  t.true(
    body.includes('\nFrom inside a paragraph is not a separator.\n'),
    'a From line after a non-blank line stays in the body',
  );
  t.true(body.endsWith('Bye\n'), 'the separator blank line is not part of the message');
  t.deepEqual(
    rows(env.db).map((r) => r.folder),
    ['INBOX', 'INBOX', 'INBOX'],
  );
});

test('re-importing the same messages into the same folder adds nothing and reports them as duplicates', async (t) => {
  const env = setup(t);
  const paths = env.copy('mixed.mbox', 'qp-latin1.eml', 'bad-date.eml');
  const first = await env.run(paths);
  t.like(first.summary, { imported: 5, duplicates: 0, failed: 1 });
  const second = await env.run(paths);
  t.like(second.summary, { imported: 0, duplicates: 5, failed: 1 }, 'with or without Message-ID');
  t.is(rows(env.db).length, 5);
  // Another folder is another place: the same message may be filed there too.
  const third = await env.run([paths[1]!], { folder: 'Archive' });
  t.like(third.summary, { imported: 1, duplicates: 0 });
});

test('identical attachment content in different messages is stored once', async (t) => {
  const env = setup(t);
  await env.run(env.copy('mixed.mbox'));
  const notes = env.db
    .prepare("SELECT file_name, content_id FROM attachments WHERE file_name LIKE 'notes%' ORDER BY id")
    .all() as AttachmentRow[];
  t.deepEqual(
    notes.map((n) => n.file_name),
    ['notes.txt', 'notes-copy.txt'],
  );
  t.is(notes[0]!.content_id, notes[1]!.content_id);
  t.is(env.db.prepare('SELECT count(*) FROM attachment_contents').pluck().get(), 1);
  t.is(attachmentBytes(env.db, notes[0]!.content_id).toString(), 'line one\nline two\n');
});

test('Maildir: the root is INBOX, Maildir++ and nested sub-folders become /-paths, tmp and dot-files are ignored', async (t) => {
  const env = setup(t);
  const { summary } = await env.run(env.copy('maildir'));
  t.like(summary, { imported: 6, failed: 0 });
  const folders = Object.fromEntries(rows(env.db).map((r) => [r.subject, r.folder]));
  t.deepEqual(folders, {
    'Inbox, already read': 'INBOX',
    'Inbox, just delivered': 'INBOX',
    'Sent by Alice': 'Sent',
    'Archived in 2023': 'Archive/2023',
    'Draft in a folder with an umlaut': 'Entwürfe',
    'Nested project folder': 'Projects/Alpha',
  });
  t.is(bySubject(env.db, 'Sent by Alice')!.is_outgoing, 1);
});

test('--folder: an mbox goes into that folder, a Maildir keeps its sub-folders beneath it', async (t) => {
  const env = setup(t);
  const [maildir, mbox] = env.copy('maildir', 'mixed.mbox');
  await env.run([maildir!], { folder: 'Old Mail' });
  await env.run([mbox!], { folder: '/Imports/2024/' });
  const folders = [...new Set(rows(env.db).map((r) => r.folder))].sort();
  t.deepEqual(folders, [
    'Imports/2024',
    'Old Mail',
    'Old Mail/Archive/2023',
    'Old Mail/Entwürfe',
    'Old Mail/Projects/Alpha',
    'Old Mail/Sent',
  ]);
});

test('a directory of .eml files imports every .eml (any case) and nothing else', async (t) => {
  const env = setup(t);
  const [dir] = env.copy('eml-dir');
  const { summary } = await env.run([dir!]);
  t.like(summary, { imported: 2, failed: 0 });
  // Nothing is left out silently: the note beside the messages is listed, with the reason.
  t.deepEqual(summary.ignored, [
    { path: join(dir!, 'readme.txt'), reason: 'not a mail message (its first line is not a header field)' },
  ]);
  t.deepEqual(
    rows(env.db).map((r) => [r.subject, r.folder]),
    [
      ['Hello from a directory', 'INBOX'],
      ['Upper-case extension', 'INBOX'],
    ],
  );
});

test('an unknown account or a missing path fails before anything is written', async (t) => {
  const env = setup(t);
  const [eml] = env.copy('qp-latin1.eml');
  const missing = join(env.dir, 'nope.mbox');
  await t.throwsAsync(importPaths(env.db, [eml!], { accountId: 999 }), {
    instanceOf: StoreError,
    message: 'No mail account with id 999.',
  });
  await t.throwsAsync(importPaths(env.db, [eml!, missing], { accountId: env.accountId }), {
    instanceOf: StoreError,
    message: `Cannot import ${missing}: no such file or directory.`,
  });
  const plain = join(env.dir, 'plain');
  mkdirSync(plain);
  const empty = join(env.dir, 'empty');
  mkdirSync(empty);
  await t.throwsAsync(importPaths(env.db, [empty], { accountId: env.accountId }), {
    instanceOf: StoreError,
    message: `Cannot import ${empty}: the directory holds no files.`,
  });
  writeFileSync(join(plain, 'notes.txt'), 'not mail');
  const notes = await importPaths(env.db, [plain], { accountId: env.accountId, touchLastSync: false });
  t.like(notes, { imported: 0, failed: 0 });
  t.deepEqual(notes.ignored, [
    { path: join(plain, 'notes.txt'), reason: 'not a mail message (its first line is not a header field)' },
  ]);
  t.is(rows(env.db).length, 0);
  t.is(getAccount(env.db, env.accountId)!.lastSync, null);
});

test('an import sets the account lastSync and reports progress up to the total size', async (t) => {
  const env = setup(t);
  const paths = env.copy('mixed.mbox', 'qp-latin1.eml');
  const before = Date.now();
  let last = { bytesDone: 0, bytesTotal: -1, messages: 0 };
  await env.run(paths, { onProgress: (p) => (last = { ...p }) });
  const total = paths.reduce((n, p) => n + readFileSync(p).length, 0);
  t.deepEqual(last, { ...last, bytesDone: total, bytesTotal: total, messages: 5 });
  t.true(Date.parse(getAccount(env.db, env.accountId)!.lastSync!) >= before);
});

test('the mbox reader finds the same entries whatever the chunk size, with LF or CRLF lines', async (t) => {
  const env = setup(t);
  const [mbox] = env.copy('mixed.mbox');
  const collect = async (path: string, chunk?: number) => {
    const out: Array<{ offset: number; raw: string; length: number }> = [];
    for await (const e of readMbox(path, chunk))
      out.push({ offset: e.offset, raw: e.raw.toString('latin1'), length: e.length });
    return out;
  };
  const whole = await collect(mbox!);
  t.is(whole.length, 4);
  t.is(
    whole.reduce((n, e) => n + e.length, 0),
    readFileSync(mbox!).length,
    'entries cover the file',
  );
  for (const size of [1, 5, 7, 64]) t.deepEqual(await collect(mbox!, size), whole, `chunk size ${size}`);

  const crlf = join(env.dir, 'crlf.mbox');
  writeFileSync(crlf, readFileSync(mbox!, 'latin1').replace(/\n/g, '\r\n'), 'latin1');
  const entries = await collect(crlf, 3);
  t.deepEqual(
    entries.map((e) => e.raw.replace(/\r\n/g, '\n')),
    whole.map((e) => e.raw),
  );
});

test('formatMboxEntry escapes what readMbox unescapes: a round trip keeps the message', async (t) => {
  const env = setup(t);
  const raw = Buffer.from('Subject: x\r\n\r\nFrom the top\r\n>From quoted\r\n\r\nFrom after a blank line\r\nend\r\n');
  const path = join(env.dir, 'round.mbox');
  writeFileSync(
    path,
    Buffer.concat([
      formatMboxEntry(raw, 'a@example.com', new Date('1996-01-03T01:05:34Z')),
      formatMboxEntry(raw, 'b@example.com', new Date()),
    ]),
  );
  t.true(
    readFileSync(path, 'latin1').startsWith(
      'From a@example.com Wed Jan  3 01:05:34 1996\nSubject: x\n\n>From the top\n>>From quoted\n',
    ),
  );
  const entries = [];
  for await (const e of readMbox(path)) entries.push(e.raw.toString('latin1'));
  t.deepEqual(entries, [raw.toString('latin1').replace(/\r\n/g, '\n'), raw.toString('latin1').replace(/\r\n/g, '\n')]);
});

test('a large attachment is split into chunks that reassemble to the original bytes', async (t) => {
  const env = setup(t);
  const big = Buffer.alloc(ATTACHMENT_CHUNK_BYTES * 2 + 1234);
  for (let i = 0; i < big.length; i++) big[i] = (i * 7919) % 251;
  const path = join(env.dir, 'big.eml');
  writeFileSync(
    path,
    buildMessage({
      from: { address: 'x@example.com' },
      to: [{ address: 'alice@example.com' }],
      subject: 'Big',
      date: new Date('2024-01-01T00:00:00Z'),
      messageId: 'big@example.com',
      text: 'see attachment',
      attachments: [{ fileName: 'data.bin', contentType: 'application/octet-stream', content: big }],
    }),
  );
  await env.run([path]);
  const [att] = attachmentsOf(env.db, rows(env.db)[0]!.id);
  t.is(att!.size, big.length);
  t.is(env.db.prepare('SELECT chunks FROM attachment_contents WHERE id = ?').pluck().get(att!.content_id), 3);
  t.true(attachmentBytes(env.db, att!.content_id).equals(big));
});

test('parseMailDate reads RFC 5322 dates and their obsolete forms, and refuses anything else', (t) => {
  t.is(parseMailDate('Tue, 1 Jul 2003 10:52:37 +0200 (CEST)'), ms('2003-07-01T08:52:37Z'));
  t.is(parseMailDate('1 Jul 03 10:52 EST'), ms('2003-07-01T15:52:00Z'));
  t.is(parseMailDate('Thu, 13 Feb 1969 23:32:54 -0330'), ms('1969-02-14T03:02:54Z'));
  t.is(parseMailDate('Tue, 01 Jul 2003 10:52:37'), ms('2003-07-01T10:52:37Z'), 'no zone: UTC, not local time');
  t.is(parseMailDate('2024-05-06T07:08:09+02:00'), ms('2024-05-06T05:08:09Z'));
  for (const bad of ['12345', 'sometime last week', '31 Feb 2024 10:00:00 +0000', '', null])
    t.is(parseMailDate(bad), null, String(bad));
});

test('Maildir++ folder names are decoded from IMAP modified UTF-7', (t) => {
  t.is(decodeMailboxName('Entw&APw-rfe'), 'Entwürfe');
  t.is(decodeMailboxName('&ZeVnLIqe-'), '日本語');
  t.is(decodeMailboxName('R&-D'), 'R&D');
});

const cli = (dbPath: string, args: string[]) => runCli(['--db', dbPath, ...args]);

/** The CLI import tests run on a SQLite file and on a fresh PostgreSQL database. */
interface CliEnv {
  archive: CliArchive;
  dbPath: string;
  dir: string;
  accountId: number;
  copy: (...names: string[]) => string[];
}

async function cliEnv(t: ExecutionContext, kind: StoreKind): Promise<CliEnv> {
  const archive = await cliArchive(t, kind);
  const accountId = (await (await archive.admin()).addAccount({ name: 'Alice', emailAddress: 'alice@example.com' })).id;
  return {
    archive,
    dbPath: archive.db,
    dir: archive.dir,
    accountId,
    copy: (...names) =>
      names.map((n) => {
        const to = join(archive.dir, 'in', n);
        cpSync(join(FIXTURES, n), to, { recursive: true });
        return to;
      }),
  };
}

function eachStore(title: string, body: (t: ExecutionContext, env: CliEnv) => Promise<void>): void {
  for (const kind of STORE_KINDS) test(`[${kind}] ${title}`, async (t) => body(t, await cliEnv(t, kind)));
}

eachStore(
  'CLI import: JSON summary, a human summary line, warnings on stderr, duplicates on the second run',
  async (t, env) => {
    const [mbox, eml] = env.copy('mixed.mbox', 'qp-latin1.eml');
    const account = String(env.accountId);
    const first = await cli(env.dbPath, ['import', account, mbox!, eml!, '--json']);
    t.is(first.code, 1, 'a failed message makes the import exit 1, after its summary');
    const json = JSON.parse(first.stdout) as Record<string, unknown> & { seconds: number };
    t.deepEqual(Object.keys(json), [
      'imported',
      'duplicates',
      'failed',
      'tooLarge',
      'ignored',
      'ignoredFiles',
      'sameIdDifferentContent',
      'repaired',
      'dryRun',
      'seconds',
    ]);
    t.like(json, { ignored: 0, ignoredFiles: [], dryRun: false });
    t.like(json, { imported: 4, duplicates: 0, failed: 1 });
    t.true(json.seconds! >= 0);
    t.regex(
      first.stderr,
      /^mail-archive: warning: Skipped the message in .*mixed\.mbox at byte \d+: it does not start with a header field\.\n$/,
    );

    const second = await cli(env.dbPath, ['import', account, mbox!, eml!, '--folder', 'INBOX']);
    t.is(second.code, 1, second.stderr);
    t.regex(
      second.stdout,
      /^Imported 0 messages into account 1 \(4 duplicates, 1 failed, 0 ignored\) in \d+\.\d s\.\n$/,
    );
    t.is(await env.archive.count('emails'), 4);
  },
);

eachStore(
  'CLI import: exit 1 when a message failed or nothing was read, 0 for a clean import and its re-import; --help says so',
  async (t, env) => {
    const account = String(env.accountId);
    const [eml] = env.copy('qp-latin1.eml');
    const clean = await cli(env.dbPath, ['import', account, eml!]);
    t.is(clean.code, 0, clean.stderr);
    const again = await cli(env.dbPath, ['import', account, eml!]);
    t.is(again.code, 0, 'duplicates alone are no failure');
    t.regex(again.stdout, /^Imported 0 messages into account 1 \(1 duplicate, 0 failed, 0 ignored\)/);

    // 4,000 bytes that are not mail: refused, never archived with a list of repairs.
    const noise = join(env.dir, 'noise.eml');
    // Random but for its first bytes, which would otherwise now and then read as UTF-16.
    const bytes = randomBytes(4000);
    bytes.set([0x8f, 0x21, 0xd3, 0x5a]);
    writeFileSync(noise, bytes);
    const refused = await cli(env.dbPath, ['import', account, noise, '--json']);
    t.is(refused.code, 1);
    t.like(JSON.parse(refused.stdout), { imported: 0, failed: 1, repaired: {} });
    t.regex(refused.stderr, /Skipped the message in .*noise\.eml: it does not start with a header field\./);
    t.is(await env.archive.count('emails'), 1);

    // A directory holding no mail at all: nothing was read, which a script must see.
    const notes = join(env.dir, 'notes');
    mkdirSync(notes);
    writeFileSync(join(notes, 'README.txt'), 'Not mail, only a note.\n');
    const nothing = await cli(env.dbPath, ['import', account, notes]);
    t.is(nothing.code, 1);
    t.regex(nothing.stdout, /^Imported 0 messages into account 1 \(0 duplicates, 0 failed, 1 ignored\)/);

    const help = await cli(env.dbPath, ['import', '--help']);
    t.is(help.code, 0);
    t.regex(help.stdout.replace(/\s+/g, ' '), /exits 1 when any message failed/);
  },
);

eachStore('CLI import: an mbox whose last message looks cut short is imported with a warning', async (t, env) => {
  const account = String(env.accountId);
  const whole = [
    'From alice@example.com Mon May  6 10:00:00 2024',
    'From: Alice <alice@example.com>',
    'Subject: complete',
    'Message-ID: <complete@example.com>',
    '',
    'All of it.',
    '',
    '',
  ].join('\n');
  const multipart = [
    'From bob@example.com Mon May  6 11:00:00 2024',
    'From: Bob <bob@example.com>',
    'Subject: cut at a line end',
    'Message-ID: <cut-multipart@example.com>',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed;',
    ' boundary="b1"',
    '',
    '--b1',
    'Content-Type: text/plain',
    '',
    'The first part arrived.',
    '--b1',
    'Content-Type: application/pdf',
    'Content-Transfer-Encoding: base64',
    '',
    'JVBERi0xLjQK',
    '',
  ].join('\n');
  const midLine =
    whole +
    'From carol@example.com Mon May  6 12:00:00 2024\nFrom: carol@example.com\nSubject: cut\n\nThe text stops in the mid';
  const files = { 'mid-line.mbox': midLine, 'multipart.mbox': whole.replace('complete', 'complete too') + multipart };
  const cutAt = (name: string) => Buffer.from(files[name as keyof typeof files]).lastIndexOf('\nFrom ') + 1;
  for (const [name, text] of Object.entries(files)) {
    const path = join(env.dir, name);
    writeFileSync(path, text);
    const run = await cli(env.dbPath, ['import', account, path, '--folder', name]);
    t.is(run.code, 0, run.stderr);
    t.regex(run.stdout, /^Imported 2 messages/);
    const warnings = run.stderr.trim().split('\n');
    t.is(warnings.length, 1, run.stderr);
    t.true(
      warnings[0]!.startsWith(
        `mail-archive: warning: The last message in ${path} at byte ${cutAt(name)} looks cut short: `,
      ),
      warnings[0],
    );
  }
  t.regex(
    (await cli(env.dbPath, ['import', account, join(env.dir, 'multipart.mbox'), '--dry-run'])).stderr,
    /no closing boundary \("--b1--"\)/,
  );
  // A whole mbox says nothing.
  const path = join(env.dir, 'whole.mbox');
  writeFileSync(path, whole.replace('complete', 'whole'));
  const run = await cli(env.dbPath, ['import', account, path]);
  t.is(run.code, 0);
  t.is(run.stderr, '');
});

eachStore(
  'CLI import: an unknown account, a missing path or a bad id is one sentence on stderr and a non-zero exit',
  async (t, env) => {
    const [eml] = env.copy('qp-latin1.eml');
    const unknown = await cli(env.dbPath, ['import', '42', eml!]);
    t.is(unknown.code, 1, unknown.stderr);
    t.is(unknown.stderr, 'mail-archive: No mail account with id 42.\n');
    t.is(unknown.stdout, '');
    const missing = await cli(env.dbPath, ['import', String(env.accountId), join(env.dir, 'missing.mbox')]);
    t.is(missing.code, 1, missing.stderr);
    t.is(missing.stderr, `mail-archive: Cannot import ${join(env.dir, 'missing.mbox')}: no such file or directory.\n`);
    const badId = await cli(env.dbPath, ['import', 'first', eml!]);
    t.is(badId.code, 2, badId.stderr);
    t.is(badId.stderr, 'mail-archive: <accountId> must be a positive whole number, not "first".\n');
    t.is(await env.archive.count('emails'), 0);
  },
);

test('CLI demo: builds accounts, users, folders and mail of every kind, prints keys once, refuses a second run', async (t) => {
  const { dir, cleanup } = tempDir('mag-demo-');
  t.teardown(cleanup);
  const dbPath = join(dir, 'demo.db');
  const run = await cli(dbPath, ['demo', '--messages', '40', '--json']);
  t.is(run.code, 0, run.stderr);
  t.is(run.stderr, '');
  const out = JSON.parse(run.stdout) as {
    messages: number;
    failed: number;
    accounts: Array<{ id: number; messages: number }>;
    users: Array<{ username: string; isAdmin: boolean; accountIds: number[]; password: string }>;
    keys: {
      admin: { key: string; username: string };
      restricted: { key: string; username: string; accountIds: number[] };
    };
  };
  t.like(out, { messages: 40, failed: 0 });
  t.deepEqual(
    out.accounts.map((a) => a.messages),
    [20, 12, 8],
  );
  t.deepEqual(
    out.users.map((u) => [u.username, u.isAdmin, u.accountIds]),
    [
      ['admin', true, []],
      ['alice', false, [1, 2]],
      ['bob', false, [3]],
    ],
  );
  t.regex(out.keys.admin.key, KEY_PATTERN);
  t.regex(out.keys.restricted.key, KEY_PATTERN);
  t.like(out.keys, { admin: { username: 'admin' }, restricted: { username: 'alice', accountIds: [1, 2] } });

  const db = openArchive(dbPath);
  t.teardown(() => db.close());
  const alice = out.users.find((u) => u.username === 'alice')!;
  t.true(
    await verifyPassword(alice.password, passwordHashOf(db, findUser(db, 'alice')!.id)),
    'the printed password is the stored one',
  );
  const stored = JSON.stringify(db.prepare('SELECT * FROM api_keys').all());
  t.false(stored.includes(out.keys.admin.key), 'plaintext keys are not stored');
  t.true(stored.includes(hashKey(out.keys.admin.key)));

  const mail = rows(db);
  const folders = new Set(mail.map((m) => m.folder));
  for (const f of ['INBOX', 'INBOX/Projects/Apollo', 'Sent', 'Newsletters', 'Travel']) t.true(folders.has(f), f);
  t.true(mail.some((m) => m.is_outgoing === 1) && mail.some((m) => m.is_outgoing === 0));
  t.true(
    mail.some((m) => m.html_body !== null && m.text_body !== null && m.folder === 'Newsletters'),
    'HTML-only mail has a derived text body',
  );
  for (const s of [
    'Angebot für die Überarbeitung der Website',
    '会議の議事録について',
    '🎉 Party on Saturday!',
    'Votre réservation à Genève est confirmée',
  ]) {
    t.truthy(
      mail.find((m) => m.subject === s),
      s,
    );
  }
  t.true(mail.some((m) => m.from_addr === 'Jürgen Müller <juergen.mueller@beispiel.example>'));
  const long = mail.find((m) => m.text_untruncated !== null)!;
  t.is(long.text_body!.length, STORED_BODY_LIMIT);
  t.true(long.text_untruncated!.length > STORED_BODY_LIMIT);
  const types = db.prepare('SELECT DISTINCT content_type FROM attachments ORDER BY 1').pluck().all();
  t.deepEqual(types, ['application/pdf', 'image/png', 'text/csv', 'text/plain']);
  const years = new Set(mail.map((m) => new Date(m.sent_date).getUTCFullYear()));
  t.true(years.size >= 2, `dates spread over years: ${[...years].join(', ')}`);

  const again = await cli(dbPath, ['demo', '--messages', '40']);
  t.is(again.code, 1, again.stderr);
  t.is(
    again.stderr,
    'mail-archive: The archive is not empty (3 accounts, 3 users, 40 messages); the demo is only built into an empty archive file.\n',
  );
  const tooFew = await cli(join(dir, 'other.db'), ['demo', '--messages', '5']);
  t.is(tooFew.code, 2, tooFew.stderr);
  t.regex(tooFew.stderr, /^mail-archive: --messages must be between 20 and \d+, not 5\.\n$/);
});

test('the demo mail is the same for the same seed and differs for another', (t) => {
  const generate = (seed: number) =>
    DEMO_ACCOUNTS.flatMap((a) => [...demoMail(a, 15, seed)].map((m) => [m.folder, m.raw.toString('base64')]));
  const first = generate(7);
  t.is(first.length, 45);
  t.deepEqual(generate(7), first);
  t.notDeepEqual(generate(8), first);
});
