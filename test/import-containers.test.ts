// What the importer reads from files and directories as other mail programs leave them, and that
// nothing under an import path is left out silently (docs/import.md, "What is read" and "mbox
// separators"). Every fixture is written here, at test time, in the shape the named program
// writes; each test asserts the exact messages, folders and summary.
import test, { type ExecutionContext } from 'ava';
import { mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openArchive, type Db } from '../engine/sqlite/open.js';
import { importPaths, type ImportSummary } from '../engine/import/importer.js';
import { addAccount } from '../engine/sqlite/accounts.js';
import { cliArchive, STORE_KINDS } from './helpers/cli-archive.js';
import { tempDir } from './helpers/fixture.js';

const BOM = '\ufeff';

/** A small message; `extra` headers first, then the usual ones. */
function message(subject: string, body = `Body of ${subject}.`, extra = ''): string {
  return (
    `${extra}From: Sender <sender@example.com>\nTo: alice@example.com\nSubject: ${subject}\n` +
    `Date: Mon, 06 May 2024 10:00:00 +0000\nMessage-ID: <${subject.replace(/\W+/g, '-')}@example.com>\n\n${body}\n`
  );
}

interface Env {
  dir: string;
  db: Db;
  accountId: number;
  write: (path: string, content: string | Buffer) => string;
  run: (paths: string[]) => Promise<{ summary: ImportSummary; warnings: string[] }>;
  rows: () => Array<{ folder: string; subject: string; text_body: string }>;
}

function setup(t: ExecutionContext): Env {
  const { dir, cleanup } = tempDir('mag-containers-');
  const db = openArchive(join(dir, 'archive.db'));
  t.teardown(() => {
    db.close();
    cleanup();
  });
  const accountId = addAccount(db, { name: 'Alice', emailAddress: 'alice@example.com' }).id;
  return {
    dir,
    db,
    accountId,
    write: (path, content) => {
      const full = join(dir, 'in', path);
      mkdirSync(join(full, '..'), { recursive: true });
      writeFileSync(full, content);
      return full;
    },
    run: async (paths) => {
      const warnings: string[] = [];
      const summary = await importPaths(db, paths, { accountId, onWarning: (w) => warnings.push(w) });
      return { summary, warnings };
    },
    rows: () =>
      db
        .prepare(
          'SELECT e.folder, e.subject, body_text(b.text_body) AS text_body FROM emails e JOIN email_bodies b ON b.email_id = e.id ORDER BY e.folder, e.subject',
        )
        .all() as ReturnType<Env['rows']>,
  };
}

const subjects = (env: Env) => env.rows().map((r) => [r.folder, r.subject]);

test('a UTF-8 byte-order mark is stripped from an .eml and an mbox; UTF-16 is refused in one sentence', async (t) => {
  const env = setup(t);
  const eml = env.write('bom.eml', BOM + message('Saved by a Windows tool'));
  const mbox = env.write(
    'bom.mbox',
    `${BOM}From sender@example.com Mon May  6 10:00:00 2024\n${message('First in BOM mbox')}\nFrom sender@example.com Mon May  6 10:01:00 2024\n${message('Second in BOM mbox')}`,
  );
  const utf16 = env.write('utf16.eml', Buffer.from(`\ufeff${message('Wide')}`, 'utf16le'));
  const { summary, warnings } = await env.run([eml, mbox, utf16]);
  t.like(summary, { imported: 3, duplicates: 0, failed: 1, ignored: [] });
  t.deepEqual(subjects(env), [
    ['INBOX', 'First in BOM mbox'],
    ['INBOX', 'Saved by a Windows tool'],
    ['INBOX', 'Second in BOM mbox'],
  ]);
  t.deepEqual(warnings, [
    `Skipped the message in ${utf16}: it is UTF-16 text, which mail never is; save it as UTF-8 (or ASCII) and import it again.`,
  ]);
});

test('a Maildir with plain sub-directories and stray files: every file is imported, failed or listed as ignored', async (t) => {
  const env = setup(t);
  const root = join(env.dir, 'in', 'Mail');
  env.write('Mail/cur/1714989600.M1P1.host:2,S', message('In cur'));
  env.write('Mail/new/1714989601.M2P1.host', message('In new'));
  env.write('Mail/tmp/1714989602.M3P1.host', 'From: half');
  env.write('Mail/.Sent/cur/1714989603.M4P1.host:2,S', message('Sent via Maildir++'));
  env.write('Mail/beside-cur.eml', message('Beside cur and new'));
  env.write('Mail/Projects/notes-1', message('Plain sub-directory, no extension'));
  env.write('Mail/Projects/2024/7', message('Nested plain sub-directory'));
  env.write('Mail/Projects/broken.eml', 'Subject without a colon line\n');
  env.write('Mail/dovecot-uidlist', '3 V1 N4\n');
  env.write('Mail/.DS_Store', Buffer.from([0, 0, 0, 1, 66, 117, 100, 49]));
  env.write('Mail/Projects/photo.jpg', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 74, 70, 73, 70]));
  env.write('Mail/Projects/README', 'These are my project mails.\n');
  const { summary, warnings } = await env.run([root]);
  t.deepEqual(subjects(env), [
    ['INBOX', 'Beside cur and new'],
    ['INBOX', 'In cur'],
    ['INBOX', 'In new'],
    ['Projects', 'Plain sub-directory, no extension'],
    ['Projects/2024', 'Nested plain sub-directory'],
    ['Sent', 'Sent via Maildir++'],
  ]);
  t.is(summary.imported, 6);
  t.is(summary.failed, 1);
  t.deepEqual(warnings, [
    `Skipped the message in ${join(root, 'Projects/broken.eml')}: it does not start with a header field.`,
  ]);
  t.deepEqual(summary.ignored, [
    { path: join(root, '.DS_Store'), reason: 'hidden file' },
    { path: join(root, 'dovecot-uidlist'), reason: 'Dovecot index or list, not mail' },
    { path: join(root, 'Projects/photo.jpg'), reason: 'binary file, not a mail message' },
    { path: join(root, 'Projects/README'), reason: 'not a mail message (its first line is not a header field)' },
    { path: join(root, 'tmp/1714989602.M3P1.host'), reason: 'unfinished delivery (Maildir tmp/)' },
  ]);
  // Every one of the 12 files is accounted for.
  t.is(summary.imported + summary.duplicates + summary.failed + summary.ignored.length, 12);
});

test('an MH folder (numbered files, .mh_sequences) and an export of extensionless files', async (t) => {
  const env = setup(t);
  const mh = join(env.dir, 'in', 'mh');
  env.write('mh/inbox/1', message('MH one'));
  env.write('mh/inbox/2', message('MH two'));
  env.write('mh/inbox/10', message('MH ten'));
  env.write('mh/inbox/.mh_sequences', 'unseen: 2 10\n');
  env.write('mh/inbox/work/3', message('MH sub-folder'));
  const exported = join(env.dir, 'in', 'export');
  env.write('export/Re_ budget', message('Re: budget'));
  env.write('export/invoice March', message('Invoice March'));
  symlinkSync(join(exported, 'Re_ budget'), join(exported, 'link-to-budget'));
  const { summary } = await env.run([mh, exported]);
  t.deepEqual(subjects(env), [
    ['INBOX', 'Invoice March'],
    ['INBOX', 'Re: budget'],
    ['inbox', 'MH one'],
    ['inbox', 'MH ten'],
    ['inbox', 'MH two'],
    ['inbox/work', 'MH sub-folder'],
  ]);
  t.like(summary, { imported: 6, duplicates: 1, failed: 0 }, 'the link is the same message again');
  t.deepEqual(summary.ignored, [{ path: join(mh, 'inbox/.mh_sequences'), reason: 'hidden file' }]);
});

test('Netscape and Mozilla mbox: separators without a blank line, and Content-Length honoured when consistent', async (t) => {
  const env = setup(t);
  // Netscape 4: "From - <date>" straight after the previous message's last line; X-Mozilla-Status.
  const netscape = env.write(
    'Inbox-netscape',
    [
      'From - Mon May 06 10:00:00 2024',
      message('Netscape one', 'First body line.', 'X-Mozilla-Status: 0001\n').trimEnd(),
      'From - Mon May 06 10:01:00 2024',
      message(
        'Netscape two',
        'Second body.\nFrom here on, a body line that starts with From.',
        'X-Mozilla-Status: 0001\n',
      ).trimEnd(),
      'From - Mon May 06 10:02:00 2024',
      message('Netscape three', 'Third body.', 'X-Mozilla-Status: 0001\n'),
    ].join('\n'),
  );
  // Content-Length: body lines that look like separators (unescaped, even followed by a header-like
  // line) stay in the body; one message with a wrong length falls back to the separator rules.
  const body =
    'Quoted mbox inside:\n\nFrom someone@example.com Mon May  6 09:00:00 2024\nSubject: not a new message\n\nend.\n';
  const withLength = (subject: string, text: string, length = Buffer.byteLength(text)) =>
    `From sender@example.com Mon May  6 10:00:00 2024\n${message(subject, '', `Content-Length: ${length}\n`).replace(/\n\n\n$/, '\n\n')}${text}`;
  const cl = env.write(
    'content-length.mbox',
    withLength('Length one', body) +
      '\n' +
      withLength('Length two', 'Short body.\n') +
      withLength('Length wrong', 'Says 5 bytes, is longer.\n', 5) +
      '\n' +
      withLength('Length last', body),
  );
  const { summary, warnings } = await env.run([netscape, cl]);
  t.deepEqual(warnings, []);
  t.is(summary.imported, 7);
  const rows = env.rows();
  t.deepEqual(
    rows.map((r) => r.subject),
    ['Length last', 'Length one', 'Length two', 'Length wrong', 'Netscape one', 'Netscape three', 'Netscape two'],
  );
  const text = (s: string) => rows.find((r) => r.subject === s)!.text_body.trim();
  t.is(text('Netscape two'), 'Second body.\nFrom here on, a body line that starts with From.');
  t.is(text('Length one'), body.trim(), 'the From line inside the counted body is body');
  t.is(text('Length last'), body.trim());
  t.is(text('Length wrong'), 'Says 5 bytes, is longer.');
});

test('a Thunderbird profile: mbox files as folders, .sbd sub-folders, .msf indexes ignored, >From unescaped', async (t) => {
  const env = setup(t);
  const profile = join(env.dir, 'in', 'Local Folders');
  const tb = (subject: string, body = `Body of ${subject}.`) =>
    `From - Mon May 06 10:00:00 2024\n${message(subject, body, 'X-Mozilla-Status: 0001\nX-Mozilla-Status2: 00000000\n')}\n`;
  env.write('Local Folders/Inbox', tb('TB inbox one', 'Line\n>From the escaped line.') + tb('TB inbox two'));
  env.write('Local Folders/Inbox.msf', '// <!-- <mdb:mork:z v="1.4"/> -->');
  env.write('Local Folders/Inbox.sbd/Work', tb('TB work'));
  env.write('Local Folders/Inbox.sbd/Work.msf', '// mork');
  env.write('Local Folders/Sent', tb('TB sent'));
  const { summary } = await env.run([profile]);
  t.deepEqual(subjects(env), [
    ['Inbox', 'TB inbox one'],
    ['Inbox', 'TB inbox two'],
    ['Inbox/Work', 'TB work'],
    ['Sent', 'TB sent'],
  ]);
  t.is(
    env
      .rows()
      .find((r) => r.subject === 'TB inbox one')!
      .text_body.trim(),
    'Line\nFrom the escaped line.',
  );
  t.deepEqual(
    summary.ignored.map((i) => [i.path.slice(profile.length + 1), i.reason]),
    [
      ['Inbox.msf', 'Thunderbird folder index (.msf), not mail'],
      ['Inbox.sbd/Work.msf', 'Thunderbird folder index (.msf), not mail'],
    ],
  );
});

test('a single message that starts with a From_ line is the same one message named alone or in a directory', async (t) => {
  const raw =
    'From sender@example.com Mon May  6 10:00:00 2024\n' +
    message(
      'Forwarded with an envelope line',
      'See below.\n\nFrom the archive of last year: the figures.\n\n--\nAttached text follows.',
    );
  const alone = setup(t);
  const file = alone.write('single.eml', raw);
  const a = await alone.run([file]);
  const inDir = setup(t);
  inDir.write('dir/single.eml', raw);
  const b = await inDir.run([join(inDir.dir, 'in', 'dir')]);
  t.like(a.summary, { imported: 1, failed: 0 });
  t.like(b.summary, { imported: 1, failed: 0 });
  t.deepEqual(alone.rows(), inDir.rows());
  t.is(
    alone.rows()[0]!.text_body.trim(),
    'See below.\n\nFrom the archive of last year: the figures.\n\n--\nAttached text follows.',
  );
});

for (const kind of STORE_KINDS) {
  test(`[${kind}] import --dry-run counts what would be imported, duplicates, failures and ignored files, and writes nothing`, async (t) => {
    const archive = await cliArchive(t, kind);
    const accountId = (await (await archive.admin()).addAccount({ name: 'Alice', emailAddress: 'alice@example.com' }))
      .id;
    const dir = join(archive.dir, 'export');
    mkdirSync(dir);
    writeFileSync(join(dir, 'a.eml'), message('Dry one'));
    writeFileSync(join(dir, 'b.eml'), message('Dry two'));
    writeFileSync(join(dir, 'b-again.eml'), message('Dry two'));
    writeFileSync(join(dir, 'bad.eml'), 'no header here\n');
    writeFileSync(join(dir, 'index.dat'), 'x');
    const dry = await archive.cli(['import', String(accountId), dir, '--dry-run', '--json']);
    t.is(dry.code, 1, 'a dry run exits as the import would: 1, for bad.eml');
    const first = JSON.parse(dry.stdout) as Record<string, unknown>;
    t.like(first, { imported: 2, duplicates: 1, failed: 1, ignored: 1, dryRun: true });
    t.deepEqual(first.ignoredFiles, [{ path: join(dir, 'index.dat'), reason: 'index or database file, not mail' }]);
    t.is(await archive.count('emails'), 0, 'nothing written');
    const size = kind === 'sqlite' ? statSync(archive.db).size : 0;

    // A real import, then the dry run again: everything is now a duplicate.
    const real = await archive.cli(['import', String(accountId), join(dir, 'a.eml')]);
    t.is(real.code, 0, real.stderr);
    const second = await archive.cli(['import', String(accountId), dir, '--dry-run']);
    t.is(second.code, 1, second.stderr);
    t.regex(
      second.stdout,
      /^Dry run: would import 1 message into account \d+ \(2 duplicates, 1 failed, 1 ignored\); nothing was written \(\d+\.\d s\)\.\n$/,
    );
    t.regex(second.stderr, /mail-archive: ignored .*index\.dat: index or database file, not mail\./);
    t.is(await archive.count('emails'), 1);
    if (kind === 'sqlite') t.true(statSync(archive.db).size >= size);
    t.truthy(readFileSync(join(dir, 'a.eml')).length);
  });
}
