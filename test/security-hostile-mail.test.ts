// Hardening (docs/security.md, "Mail shaped by an attacker"): mail shaped by an attacker must not fill the disk, stall the importer or
// the sync, or slow everyone else. Every bound here is a setting (Import:*, shared/config.ts),
// shown with small values so that the tests stay small: attachment text per message and per
// pass (characters and time), text saved in small batches, files taken out of a winmail.dat,
// and the largest message archived.
import test, { type ExecutionContext } from 'ava';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { TextBudget } from '../engine/attachments/budget.js';
import { Extractor } from '../engine/attachments/extractor.js';
import { indexNewMessages, reindexAttachments } from '../engine/attachments/index-texts.js';
import type { AttachmentTextStore } from '../engine/rules/attachment-text.js';
import { importPaths, type ImportOptions } from '../engine/import/importer.js';
import { DEFAULT_IMPORT_LIMITS } from '../engine/import/limits.js';
import { readSources } from '../engine/import/sources.js';
import type { ArchiveAdmin } from '../engine/store-contract.js';
import { line } from '../engine/cli/commands/sync.js';
import { noTextReason } from '../gateway/archive-service.js';
import { archiveFolder, fetchWindows } from '../engine/sync/imap.js';
import { syncPass } from '../engine/sync/pass.js';
import { docx, eml, pdf } from './helpers/attachment-mail.js';
import { cliArchive, STORE_KINDS, type CliArchive } from './helpers/cli-archive.js';
import { tnef } from './helpers/tnef.js';

interface TextRow {
  status: string;
  chars: number;
  truncated: boolean;
}

/** Every stored attachment-text outcome, on either store. */
async function texts(a: CliArchive, admin: ArchiveAdmin): Promise<TextRow[]> {
  if (a.kind === 'postgres')
    return a.pgQuery<TextRow>(
      'SELECT status, chars, truncated FROM mail_archive_gateway.attachment_texts ORDER BY content_id',
    );
  const db = (admin as unknown as { db: import('../engine/sqlite/open.js').Db }).db;
  return (
    db.prepare('SELECT status, chars, truncated FROM attachment_texts ORDER BY content_id').all() as Array<
      Omit<TextRow, 'truncated'> & { truncated: number }
    >
  ).map((r) => ({ ...r, truncated: r.truncated === 1 }));
}

async function archiveWithAccount(t: ExecutionContext, kind: 'sqlite' | 'postgres') {
  const a = await cliArchive(t, kind);
  const admin = await a.admin();
  const account = await admin.addAccount({ name: 'Work', emailAddress: 'alice@work.example' });
  const importFiles = (files: Record<string, string | Buffer>, options: Partial<ImportOptions> = {}) => {
    const dir = join(a.dir, `mail-${Math.random().toString(36).slice(2)}`);
    mkdirSync(dir);
    for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
    return importPaths(admin, [dir], { accountId: account.id, ...options });
  };
  return { a, admin, account, importFiles };
}

const text = (chars: Partial<typeof DEFAULT_IMPORT_LIMITS.text>) => ({
  text: { ...DEFAULT_IMPORT_LIMITS.text, ...chars },
});

// ---------------------------------------------------------------------------------------------
// Item 1: one small message must not grow the archive hundreds of times.

for (const kind of STORE_KINDS) {
  test(`[${kind}] a message of DOCX files that expand keeps at most Import:AttachmentTextPerMessage characters`, async (t) => {
    const { a, admin, importFiles } = await archiveWithAccount(t, kind);
    // Twelve distinct DOCX files of a few KB, each expanding to about 60,000 characters.
    const files = await Promise.all(
      Array.from({ length: 12 }, (_, i) => docx(`zq${i} ${'lorem ipsum '.repeat(5_000)}`)),
    );
    t.true(
      files.every((f) => f.length < 20_000),
      'small files',
    );
    const message = eml(
      'Expanding documents',
      'See attached.',
      files.map((data, i) => ({
        name: `doc${i}.docx`,
        type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
        data,
      })),
    );
    const summary = await importFiles({ 'a.eml': message }, { limits: text({ charsPerMessage: 120_000 }) });
    t.is(summary.imported, 1);
    const rows = await texts(a, admin);
    t.is(rows.length, 12, 'every content has an outcome');
    const kept = rows.reduce((sum, r) => sum + r.chars, 0);
    t.true(kept <= 120_000, `${kept} characters kept`);
    t.true(kept >= 100_000, 'the budget is used, not wasted');
    t.true(
      rows.some((r) => r.status === 'ok' && r.truncated),
      'the attachment the budget cut is marked truncated',
    );
    t.is(rows.filter((r) => r.status === 'over budget').length, 10, 'the rest are recorded as over budget');
    t.regex(noTextReason('over budget'), /^it was not read: its message had spent the attachment-text budget/);
  });
}

test('a small message keeps at most Import:AttachmentTextPerMessageByte characters per byte of it (floor 100,000)', async (t) => {
  const { a, admin, importFiles } = await archiveWithAccount(t, 'sqlite');
  const files = await Promise.all(Array.from({ length: 4 }, (_, i) => docx(`zz${i} ${'dolor sit '.repeat(6_000)}`)));
  const message = eml(
    'Small but wordy',
    'x',
    files.map((data, i) => ({ name: `d${i}.docx`, type: 'application/octet-stream', data })),
  );
  // Default per-message bound (2,000,000), 1 character per byte: the floor, 100,000, decides.
  await importFiles({ 'a.eml': message }, { limits: text({ charsPerByte: 1 }) });
  const kept = (await texts(a, admin)).reduce((sum, r) => sum + r.chars, 0);
  t.true(kept <= 100_000 && kept > 90_000, `${kept} characters kept`);
});

test('attachment text is saved in small batches, not all at the end', async (t) => {
  const contents = Array.from({ length: 60 }, (_, i) => ({
    contentId: i + 1,
    cursor: i + 1,
    size: 20,
    contentType: 'text/plain',
    fileName: `f${i}.txt`,
  }));
  const saved = new Set<number>();
  const saves: number[] = [];
  const store: AttachmentTextStore = {
    pending: async (_limit, options) =>
      options?.emailIds?.includes(1)
        ? contents.filter((c) => !saved.has(c.contentId)).map((c) => ({ ...c, emailId: 1 }))
        : [],
    countPending: async () => 0,
    content: async (c) => Buffer.from(`words of ${c.contentId}`),
    save: async (results) => {
      saves.push(results.length);
      for (const r of results) saved.add(r.contentId);
    },
  };
  const extractor = new Extractor();
  t.teardown(() => extractor.close());
  const summary = await indexNewMessages(store, extractor, [1, 2]);
  t.is(summary.contents, 60);
  t.is(saved.size, 60);
  t.true(saves.length >= 3, `saved in ${saves.length} steps: ${saves.join(', ')}`);
  t.true(Math.max(...saves) <= 25, 'at most 25 outcomes per save');
});

for (const kind of STORE_KINDS) {
  test(`[${kind}] a batch's new contents are asked for in one statement, each read once, for the first message holding it`, async (t) => {
    const { a, admin, importFiles } = await archiveWithAccount(t, kind);
    const file = (name: string, words: string) => ({ name, type: 'text/plain', data: Buffer.from(words) });
    const summary = await importFiles(
      {
        'a.eml': eml('First', 'x', [file('a.txt', 'shared words'), file('b.txt', 'first only')]),
        'b.eml': eml('Second', 'x', [file('again.txt', 'shared words'), file('c.txt', 'second only')]),
        'c.eml': eml('Third', 'no files', []),
      },
      { attachmentText: false },
    );
    t.is(summary.imported, 3);
    const store = admin.attachmentTexts();
    const asked: Array<readonly number[] | undefined> = [];
    const read: string[] = [];
    const counting: AttachmentTextStore = {
      pending: (n, options) => {
        asked.push(options?.emailIds);
        return store.pending(n, options);
      },
      countPending: () => store.countPending(),
      content: (c) => {
        read.push(c.fileName);
        return store.content(c);
      },
      save: (results, ids) => store.save(results, ids),
    };
    const extractor = new Extractor();
    t.teardown(() => extractor.close());
    const done = await indexNewMessages(counting, extractor, [1, 2, 3]);
    t.deepEqual(asked, [[1, 2, 3]], 'one statement for the three messages');
    t.deepEqual(read, ['a.txt', 'b.txt', 'c.txt'], 'the shared content read once, as the first message names it');
    t.is(done.contents, 3);
    t.deepEqual(
      (await texts(a, admin)).map((r) => r.status),
      ['ok', 'ok', 'ok'],
    );
  });
}

test('past the pass text budget the rest is left for reindex --attachments, and counted', async (t) => {
  const { a, admin, importFiles } = await archiveWithAccount(t, 'sqlite');
  const long = (word: string) => Buffer.from(`${word} `.repeat(12_000));
  const summary = await importFiles(
    {
      'a.eml': eml('First', 'x', [{ name: 'a.txt', type: 'text/plain', data: long('alpha') }]),
      'b.eml': eml('Second', 'x', [{ name: 'b.txt', type: 'text/plain', data: long('bravo') }]),
    },
    { limits: text({ charsPerPass: 50_000 }) },
  );
  t.is(summary.imported, 2);
  t.is(summary.textDeferred, 1);
  const rows = await texts(a, admin);
  t.is(rows.length, 1, 'one content read');
  t.is(rows[0]!.chars, 50_000);
  t.true(rows[0]!.truncated);
  // The deferred one is what reindex --attachments reads.
  const extractor = new Extractor();
  t.teardown(() => extractor.close());
  const later = await reindexAttachments(admin.attachmentTexts(), extractor);
  t.is(later.contents, 1);
  t.is((await texts(a, admin)).length, 2);
});

// ---------------------------------------------------------------------------------------------
// Item 4: slow attachments are bounded per message and per pass, not only one by one.

test('a message of slow PDFs spends at most Import:AttachmentTextSecondsPerMessage on them', async (t) => {
  const { a, admin, importFiles } = await archiveWithAccount(t, 'sqlite');
  // Without a page bound 3,000 pages take well over the 300 ms allowed to each attachment;
  // six distinct copies (a comment after %%EOF), so none is read once for all.
  const slow = await pdf(Array.from({ length: 3_000 }, (_, i) => `Slow page ${i}`));
  const copies = Array.from({ length: 6 }, (_, i) => Buffer.concat([slow, Buffer.from(`\n%copy ${i}\n`)]));
  const message = eml(
    'Slow documents',
    'x',
    copies.map((data, i) => ({ name: `s${i}.pdf`, type: 'application/pdf', data })),
  );
  await importFiles(
    { 'a.eml': message },
    {
      attachmentText: { timeoutMs: 300, maxPages: 1_000_000 },
      limits: text({ msPerMessage: 1_000 }),
    },
  );
  const rows = await texts(a, admin);
  t.is(rows.length, 6);
  const timeouts = rows.filter((r) => r.status === 'timeout').length;
  // Each read that runs into its bound takes at least 300 ms of the message's 1,000: at most four start.
  t.true(timeouts <= 4, `${timeouts} timeouts`);
  t.true(rows.filter((r) => r.status === 'over budget').length >= 2, 'the rest are not read');
});

test('a pass budget: past its time nothing more is read; a message budget never exceeds what is left of it', (t) => {
  let clock = 0;
  const budget = new TextBudget(
    { charsPerMessage: 1_000, charsPerByte: 0, charsPerPass: 10_000, msPerMessage: 5_000, msPerPass: 8_000 },
    () => clock,
  );
  const first = budget.message();
  t.deepEqual(first.next({ maxChars: 600, timeoutMs: 5_000 }), { maxChars: 600, timeoutMs: 5_000 });
  first.charge(600);
  t.deepEqual(first.next({ maxChars: 600, timeoutMs: 5_000 }), { maxChars: 400, timeoutMs: 5_000 });
  first.charge(400);
  t.is(first.next({ maxChars: 600, timeoutMs: 5_000 }), null, 'characters spent');
  clock = 6_000;
  const second = budget.message();
  t.deepEqual(second.next({ maxChars: 600, timeoutMs: 5_000 }), { maxChars: 600, timeoutMs: 2_000 });
  t.false(budget.spent);
  clock = 8_000;
  t.true(budget.spent);
  t.is(second.next({ maxChars: 600, timeoutMs: 5_000 }), null);
});

// ---------------------------------------------------------------------------------------------
// Item 3: a winmail.dat of thousands of files.

test('a winmail.dat of 300 files gives Import:MaxTnefFiles attachments besides the original, which is kept whole', async (t) => {
  const { a, admin, importFiles } = await archiveWithAccount(t, 'sqlite');
  const winmail = tnef(Array.from({ length: 300 }, (_, i) => ({ name: `f${i}.txt`, data: Buffer.from(`file ${i}`) })));
  const message = eml('Outlook', 'x', [{ name: 'winmail.dat', type: 'application/ms-tnef', data: winmail }]);
  await importFiles({ 'a.eml': message }, { limits: { maxTnefFiles: 20 }, attachmentText: false });
  const db = (admin as unknown as { db: import('../engine/sqlite/open.js').Db }).db;
  const names = db.prepare('SELECT file_name FROM attachments ORDER BY id').pluck().all() as string[];
  t.is(names.length, 21);
  t.is(names[0], 'winmail.dat');
  t.deepEqual(names.slice(1, 3), ['f0.txt', 'f1.txt']);
  t.is(names.at(-1), 'f19.txt');
  const size = db.prepare("SELECT size FROM attachments WHERE file_name = 'winmail.dat'").pluck().get() as number;
  t.is(size, winmail.length, 'the original keeps every file');
  void a;
});

// ---------------------------------------------------------------------------------------------
// Item 5 (files): the largest message archived.

test('a message file above the limit is refused from its size, never read', async (t) => {
  const all = async (size: number) => {
    const out = [];
    // The path does not exist: opening it gives a read error instead of the size.
    const source = { kind: 'message' as const, path: '/nonexistent/huge.eml', folder: 'INBOX', size, mtime: 0 };
    for await (const m of readSources([source], 100_000)) out.push(m);
    return out;
  };
  const [over, ...more] = await all(5e9);
  t.is(more.length, 0);
  t.like(over, { bytes: 5e9, origin: '/nonexistent/huge.eml' });
  t.is(over!.raw.length, 0);
  t.is(over!.readError, undefined, 'not opened');
  // Below the limit the same file is opened, and its error says why it was not imported.
  const [under] = await all(10);
  t.regex(under!.readError!, /cannot be read \(ENOENT\)/);
});

test('a message above Import:MaxMessageBytes is skipped, counted and named with its size', async (t) => {
  const { a, admin, importFiles } = await archiveWithAccount(t, 'sqlite');
  const big = eml('Big', 'y'.repeat(300_000), []);
  const warnings: string[] = [];
  const summary = await importFiles(
    { 'big.eml': big, 'small.eml': eml('Small', 'fine', []) },
    { limits: { maxMessageBytes: 100_000 }, onWarning: (w) => warnings.push(w) },
  );
  t.like(summary, { imported: 1, tooLarge: 1, failed: 0 });
  t.is(warnings.length, 1);
  t.regex(warnings[0]!, /big\.eml: it is 0\.3 MB \(\d+ bytes\), above Import:MaxMessageBytes \(0\.1 MB\)/);
  // The setting reaches the CLI, whose summary says so.
  writeFileSync(join(a.dir, 'big2.eml'), eml('Big again', 'z'.repeat(300_000), []));
  const r = await a.cli(['import', '1', join(a.dir, 'big2.eml'), '--json'], {
    env: { Import__MaxMessageBytes: '100000' },
  });
  t.is(r.code, 1, 'a message left out as too large makes the import exit 1');
  t.like(JSON.parse(r.stdout), { imported: 0, tooLarge: 1 });
  t.regex(r.stderr, /above Import:MaxMessageBytes/);
  void admin;
});

// ---------------------------------------------------------------------------------------------
// Item 5 (sync): FETCH windows are cut by bytes as well as by count.

test('fetch windows: at most the window bytes each, a larger message alone, one above the maximum in none', (t) => {
  const limits = { count: 3, bytes: 1_000, maxMessageBytes: 5_000 };
  const sized = (sizes: number[]) => sizes.map((size, i) => ({ uid: i + 1, size }));
  t.deepEqual(fetchWindows(sized([100, 100, 100, 100]), limits), [[1, 2, 3], [4]], 'by count');
  t.deepEqual(fetchWindows(sized([600, 600, 300, 100]), limits), [[1], [2, 3, 4]], 'by bytes');
  t.deepEqual(fetchWindows(sized([100, 3_000, 100]), limits), [[1], [2], [3]], 'a large one alone');
  t.deepEqual(fetchWindows(sized([100, 9_000, 100]), limits), [[1, 3]], 'too large: not fetched');
});

// ---------------------------------------------------------------------------------------------
// Item 7: what a hostile IMAP server says never reaches the operator's terminal raw.

test('sync output escapes control characters from the server; stored folder names have none', (t) => {
  const printed = line({
    accountId: 1,
    name: 'Work',
    status: 'failed',
    reason: 'the IMAP session with h:143 failed: \u001b]0;owned\u0007 \u001b[2J',
    folders: 0,
    imported: 0,
    duplicates: 0,
    failed: 0,
    tooLarge: 0,
    seconds: 1,
  });
  t.false(/[\u0000-\u001f\u007f-\u009f]/.test(printed), JSON.stringify(printed));
  t.true(printed.includes('\\u{1b}]0;owned\\u{7}'));
  t.is(archiveFolder({ path: 'INBOX.Evil\u001b[31mRed\u202e', delimiter: '.' }), 'INBOX/Evil\uFFFD[31mRed\uFFFD');
  t.is(archiveFolder({ path: 'Plain/März', delimiter: '/' }), 'Plain/März');
});

// ---------------------------------------------------------------------------------------------
// Item 8: a password sent in clear text is said so.

for (const kind of STORE_KINDS) {
  test(`[${kind}] accounts add and set warn when the IMAP password would travel in clear text`, async (t) => {
    const a = await cliArchive(t, kind);
    const env = { Sync__SecretKey: Buffer.alloc(32, 7).toString('base64') };
    const base = ['--name', 'W', '--email', 'w@example.com', '--imap-host', 'imap.example', '--password-stdin'];
    const added = await a.cli(['accounts', 'add', ...base, '--imap-security', 'starttls'], { input: 'pw\n', env });
    t.is(added.code, 0, added.stderr);
    t.is(added.stderr, '', 'no warning for starttls');
    const none = await a.cli(['accounts', 'set', '1', '--imap-security', 'none'], { env });
    t.is(none.code, 0, none.stderr);
    t.regex(
      none.stderr,
      /^mail-archive: warning: account 1: its IMAP password is sent in clear text to imap\.example:143 \(IMAP security none\)[^\n]*\n$/,
    );
    const second = await a.cli(['accounts', 'add', ...base, '--imap-security', 'none'], { input: 'pw\n', env });
    t.regex(second.stderr, /account 2: its IMAP password is sent in clear text/);
    const renamed = await a.cli(['accounts', 'set', '1', '--name', 'Renamed'], { env });
    t.is(renamed.stderr, '', 'only when IMAP settings change');
  });
}

// ---------------------------------------------------------------------------------------------
// Item 9: a server that lists folders without end cannot hold a pass (or its memory) forever.

test('an endless folder list is cut off at the pass time bound (Sync:PassMinutes); the account fails alone', async (t) => {
  let listed = 0;
  const server = createServer((socket) => {
    socket.on('error', () => {});
    socket.write('* OK [CAPABILITY IMAP4rev1] fake server ready\r\n');
    let buffered = '';
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      let at: number;
      while ((at = buffered.indexOf('\r\n')) >= 0) {
        const line = buffered.slice(0, at);
        buffered = buffered.slice(at + 2);
        const [tag, command = ''] = line.split(' ');
        if (/^(X?LIST|LSUB)$/i.test(command)) {
          // Folder after folder, never the tagged end.
          const more = () => {
            while (!socket.destroyed && socket.write(`* LIST () "/" "folder${listed++}"\r\n`));
            if (!socket.destroyed) socket.once('drain', more);
          };
          more();
        } else if (/^CAPABILITY$/i.test(command)) socket.write(`* CAPABILITY IMAP4rev1\r\n${tag} OK done\r\n`);
        else if (/^LOGOUT$/i.test(command)) socket.end(`* BYE\r\n${tag} OK bye\r\n`);
        else socket.write(`${tag} OK done\r\n`);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  const a = await cliArchive(t, 'sqlite');
  const admin = await a.admin();
  await admin.addImapAccount({
    name: 'Hostile',
    emailAddress: 'h@example.test',
    imap: { host: '127.0.0.1', port, security: 'none', user: 'h', password: 'pw' },
  });
  const started = performance.now();
  const [summary] = await syncPass(admin, admin.sync(), { holder: 'test', passMs: 1_000 });
  t.is(summary!.status, 'failed');
  t.regex(summary!.reason!, /time bound \(Sync:PassMinutes, 1 s\)/);
  t.true(listed > 0, 'the server did list');
  // The bound plus its grace for the message in hand (as long again here), whatever the load.
  t.true(performance.now() - started < 60_000);
});

// ---------------------------------------------------------------------------------------------
// Info: the archive holds all the mail and the password hashes.

test('a new SQLite archive and its WAL are created readable by their owner only (0600)', async (t) => {
  const a = await cliArchive(t, 'sqlite');
  const admin = await a.admin();
  await admin.addAccount({ name: 'W', emailAddress: 'w@example.com' });
  t.is(statSync(a.db).mode & 0o777, 0o600);
  t.is(statSync(`${a.db}-wal`).mode & 0o777, 0o600);
});
