// Text inside attachments (docs/import.md, "Attachment text"): real files generated here (PDF
// with pdfkit, DOCX with docx), imported as .eml through the importer, then searched with
// attachment:, read over REST and MCP, and re-read with reindex --attachments. Under
// TEST_STORE=postgres the REST and search tests run on a PostgreSQL copy of the archive, whose
// text arrives the way Mail Archiver's own mail gets it: through reindex --attachments.
import test from 'ava';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Extractor } from '../engine/attachments/extractor.js';
import { extractText } from '../engine/attachments/extract.js';
import { reindexAttachments } from '../engine/attachments/index-texts.js';
import type { AttachmentTextStore } from '../engine/rules/attachment-text.js';
import { openArchive } from '../engine/sqlite/open.js';
import { importPaths } from '../engine/import/importer.js';
import { buildSnapshot } from '../engine/sqlite/index-build.js';
import { adoptSnapshot, currentSnapshot } from '../engine/sqlite/index-share.js';
import { Snapshot } from '../engine/search/bitsets/snapshot.js';
import { searchEmails } from '../engine/sqlite/search.js';
import { saveAttachmentTexts } from '../engine/sqlite/attachment-text.js';
import { parseSearchInput } from '../shared/search-input.js';
import { bearer, startApi, type ApiHarness } from './helpers/api.js';
import { docx, eml, pdf, type Part } from './helpers/attachment-mail.js';
import { createFixture, type Fixture } from './helpers/fixture.js';
import { cliArchive, json, ok, STORE_KINDS } from './helpers/cli-archive.js';
import { accessLogRows, call, connectClient, jsonOf, startMcpGateway, type McpHarness } from './helpers/mcp.js';
import { queryArchive, readAccessLog, TEST_STORE, withAdmin } from './helpers/store.js';

const run = promisify(execFile);
const CLI = join(process.cwd(), 'dist/engine/cli/main.js');

// ---------------------------------------------------------------------------------------------
// Files

/**
 * The time bound has a test of its own (below). Elsewhere a machine busy with the rest of the
 * suite must not turn a slow read (200 pages of the 3,000-page PDF) into a timeout.
 */
const UNHURRIED = { timeoutMs: 120_000 };

const PDF_SENTENCE = 'The zymurgical forecast predicts quixotic revenue for the third quarter.';
const LONG_TEXT = Array.from({ length: 3000 }, (_, i) => `Line ${i} of the long ledger, word${i}.`).join('\n');

interface Archive {
  fixture: Fixture;
  emails: Record<string, number>;
  importSeconds: { thousands: number };
}

/** The standard fixture plus one message per kind of attachment, imported through the importer. */
async function buildArchive(): Promise<Archive> {
  const fixture = createFixture();
  const files = {
    pdf: await pdf([PDF_SENTENCE]),
    encrypted: await pdf(['Secret zeppelin plans'], { userPassword: 'hunter2', ownerPassword: 'owner' }),
    corrupt: Buffer.concat([(await pdf(['Broken xylograph']))!.subarray(0, 300), Buffer.from('garbage')]),
    thousands: await pdf(Array.from({ length: 3000 }, (_, i) => `Page ${i + 1} of the enormous manuscript.`)),
    docx: await docx('The kerfuffle protocol governs onboarding.'),
    html: Buffer.from('<html><body><h1>Minutes</h1><p>The <b>flibbertigibbet</b> committee met.</p></body></html>'),
    // Windows-1252: "café" with é as 0xE9, not valid UTF-8.
    text: Buffer.concat([
      Buffer.from('Order a '),
      Buffer.from([0x63, 0x61, 0x66, 0xe9]),
      Buffer.from(' gazpacho now.\n'),
    ]),
    long: Buffer.from(LONG_TEXT),
    rfc822: Buffer.from(
      [
        'From: Inner Sender <inner@example.com>',
        'To: someone@example.com',
        'Subject: Forwarded hullabaloo',
        'Date: Mon, 01 Jul 2024 09:00:00 +0000',
        '',
        'The inner message mentions a snollygoster.',
        '',
      ].join('\r\n'),
    ),
  };
  const messages: Record<string, { account: 'work' | 'personal'; parts: Part[]; body?: string }> = {
    pdf: { account: 'work', parts: [{ name: 'forecast.pdf', type: 'application/pdf', data: files.pdf }] },
    encrypted: { account: 'work', parts: [{ name: 'locked.pdf', type: 'application/pdf', data: files.encrypted }] },
    corrupt: { account: 'work', parts: [{ name: 'broken.pdf', type: 'application/pdf', data: files.corrupt }] },
    docx: {
      account: 'work',
      parts: [
        {
          name: 'policy.docx',
          type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
          data: files.docx,
        },
      ],
    },
    html: { account: 'work', parts: [{ name: 'minutes.html', type: 'text/html', data: files.html }] },
    text: { account: 'work', parts: [{ name: 'order.txt', type: 'text/plain', data: files.text }] },
    long: { account: 'work', parts: [{ name: 'ledger.txt', type: 'text/plain', data: files.long }] },
    rfc822: {
      account: 'work',
      parts: [{ name: 'forwarded.eml', type: 'message/rfc822', data: files.rfc822, raw: true }],
    },
    image: {
      account: 'work',
      parts: [{ name: 'photo.png', type: 'image/png', data: Buffer.from('not really a png zymurgical') }],
    },
    // The same PDF again, in an account only bob sees: its text is read once (one content).
    hidden: {
      account: 'personal',
      parts: [{ name: 'forecast-copy.pdf', type: 'application/pdf', data: files.pdf }],
      body: 'A copy for bob.',
    },
    thousands: {
      account: 'work',
      parts: [{ name: 'manuscript.pdf', type: 'application/pdf', data: files.thousands }],
    },
  };
  const db = openArchive(fixture.dbPath);
  const emails: Record<string, number> = {};
  let thousands = 0;
  try {
    for (const [key, m] of Object.entries(messages)) {
      const path = join(fixture.dir, `${key}.eml`);
      writeFileSync(path, eml(`Attachment test ${key}`, m.body ?? `Message with the ${key} attachment.`, m.parts, key));
      const summary = await importPaths(db, [path], {
        accountId: fixture.accounts[m.account],
        attachmentText: UNHURRIED,
      });
      if (key === 'thousands') thousands = summary.seconds;
      emails[key] = db.prepare('SELECT id FROM emails WHERE message_id = ?').pluck().get(`<${key}@test>`) as number;
    }
  } finally {
    db.close();
  }
  // The fixture's own attachments were written without the importer: give them text too, so
  // every content has an outcome from here on.
  const extractor = new Extractor(UNHURRIED);
  await withAdmin(fixture.dbPath, (admin) => reindexAttachments(admin.attachmentTexts(), extractor));
  await extractor.close();
  return { fixture, emails, importSeconds: { thousands } };
}

const archive = buildArchive();
test.after.always(async () => (await archive).fixture.cleanup());

const attachmentOf = (a: Archive, key: string): number => {
  const db = openArchive(a.fixture.dbPath);
  try {
    return db.prepare('SELECT id FROM attachments WHERE email_id = ?').pluck().get(a.emails[key]) as number;
  } finally {
    db.close();
  }
};

// ---------------------------------------------------------------------------------------------
// Extraction at import (SQLite: the importer reads the text)

if (TEST_STORE === 'sqlite') {
  test('import records text or a status for every attachment content, once per content', async (t) => {
    const a = await archive;
    const db = openArchive(a.fixture.dbPath);
    t.teardown(() => db.close());
    const status = (key: string) =>
      db
        .prepare(
          `SELECT t.status, t.text, t.truncated, t.chars FROM attachments x JOIN attachment_texts t ON t.content_id = x.content_id
            WHERE x.email_id = ?`,
        )
        .get(a.emails[key]) as { status: string; text: string; truncated: number; chars: number };
    t.is(status('pdf').status, 'ok');
    t.true(status('pdf').text.includes(PDF_SENTENCE));
    t.is(status('encrypted').status, 'encrypted');
    t.regex(status('corrupt').status, /^failed: .*PDF/);
    t.is(status('docx').text, 'The kerfuffle protocol governs onboarding.');
    t.true(status('html').text.includes('The flibbertigibbet committee met.'));
    t.false(status('html').text.includes('<b>'));
    t.is(status('text').text, 'Order a café gazpacho now.');
    t.true(status('rfc822').text.includes('Subject: Forwarded hullabaloo'));
    t.true(status('rfc822').text.includes('snollygoster'));
    t.is(status('image').status, 'unsupported');
    // 3,000 pages: the first 200 are read, and the cut is recorded.
    const big = status('thousands');
    t.is(big.status, 'ok');
    t.is(big.truncated, 1);
    t.true(big.text.includes('Page 200 of the enormous manuscript.'));
    t.false(big.text.includes('Page 201 of'));
    t.is(big.chars, big.text.length);
    // Bounded, so the import of that one message stays quick (generous for a shared machine).
    t.true(a.importSeconds.thousands < 30, `imported in ${a.importSeconds.thousands} s`);
    // The PDF attached twice (two accounts) is one content with one text row.
    t.is(
      db.prepare('SELECT content_id FROM attachments WHERE email_id = ?').pluck().get(a.emails.pdf),
      db.prepare('SELECT content_id FROM attachments WHERE email_id = ?').pluck().get(a.emails.hidden),
    );
    t.is(
      db
        .prepare(
          'SELECT count(*) FROM attachment_contents c LEFT JOIN attachment_texts t ON t.content_id = c.id WHERE t.status IS NULL',
        )
        .pluck()
        .get(),
      0,
    );
  });

  test('the time bound ends a thread that takes too long, and the next attachment gets a fresh one', async (t) => {
    // No page bound, so 12,000 pages take far longer than the 1.5 s allowed (2,000 take about
    // 0.6 to 0.9 s here since pdf.js decodes in JavaScript, extract-worker.ts).
    const extractor = new Extractor({ timeoutMs: 1_500, maxPages: 1_000_000 });
    t.teardown(() => extractor.close());
    const pages = await pdf(Array.from({ length: 12_000 }, (_, i) => `Slow page ${i}`));
    // The thread loads its readers first (seconds on a busy machine): start it before the clock
    // does, with a text file, which nothing can make take the 1.5 s.
    t.is((await extractor.extract(Buffer.from('warm words'), 'text/plain', 'warm.txt')).status, 'ok');
    const started = performance.now();
    const slow = await extractor.extract(pages, 'application/pdf', 'slow.pdf');
    t.is(slow.status, 'timeout');
    t.true(performance.now() - started < 5_000, 'stopped at the bound, not when pdf.js finished');
    // The same extractor goes on with a new thread.
    t.deepEqual(await extractor.extract(Buffer.from('fine words'), 'text/plain', 'a.txt'), {
      status: 'ok',
      text: 'fine words',
      truncated: false,
    });
    t.is(
      (await extractText(Buffer.alloc(10), 'application/pdf', 'x.pdf', { ...extractor.limits, maxBytes: 5 })).status,
      'too large',
    );
    t.regex((await extractor.extract(Buffer.from('plain junk'), 'application/pdf', 'x.pdf')).status, /^failed: .*%PDF/);
  });
}

// ---------------------------------------------------------------------------------------------
// Search and REST (both stores)

async function api(overrides: Parameters<typeof startApi>[0] = {}): Promise<{ h: ApiHarness; a: Archive }> {
  const a = await archive;
  const h = await startApi(overrides, { useFixture: a.fixture });
  if (TEST_STORE === 'postgres') {
    // A PostgreSQL copy has no text yet, as mail Mail Archiver archived itself: reindex reads it.
    const extractor = new Extractor(UNHURRIED);
    await withAdmin(h.settings.Database.Path, (admin) => reindexAttachments(admin.attachmentTexts(), extractor));
    await extractor.close();
  }
  return { h, a };
}

const search = async (h: ApiHarness, key: string, q: string) => {
  const res = await h.request.get('/api/v1/emails').query({ q, pageSize: 100 }).set(bearer(key));
  if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return (res.body as { items: Array<{ id: number }>; totalItems: number }).items.map((e) => e.id).sort();
};

test.serial('snippets=true shows the words found inside an attachment, and names the file', async (t) => {
  const { h, a } = await api();
  t.teardown(() => h.close());
  type Item = { id: number; snippet?: string; snippetAttachment?: { id: number; fileName: string } };
  const items = async (q: string, snippets = true) => {
    const res = await h.request
      .get('/api/v1/emails')
      .query({ q, pageSize: 100, ...(snippets ? { snippets: 'true' } : {}) })
      .set(bearer(a.fixture.keys.admin));
    return res.body.items as Item[];
  };
  const pdfItem = (await items('attachment:zymurgical')).find((i) => i.id === a.emails.pdf)!;
  t.regex(pdfItem.snippet!, /<mark>zymurgical<\/mark>/i);
  t.deepEqual(pdfItem.snippetAttachment, { id: attachmentOf(a, 'pdf'), fileName: 'forecast.pdf' });
  const docxItem = (await items('attachment:kerfuf*')).find((i) => i.id === a.emails.docx)!;
  t.regex(docxItem.snippet!, /<mark>kerfuf\w*<\/mark>/i);
  t.is(docxItem.snippetAttachment?.fileName, 'policy.docx');
  // The body holds a word of the query: its snippet stays the body's.
  const mixed = (await items('attachment:zymurgical bob')).find((i) => i.id === a.emails.hidden)!;
  t.regex(mixed.snippet!, /<mark>bob<\/mark>/i);
  t.is(mixed.snippetAttachment, undefined);
  // Without snippets=true, items are as SPEC.md shows them.
  for (const item of await items('attachment:zymurgical', false)) {
    t.false('snippet' in item);
    t.false('snippetAttachment' in item);
  }
});

test.serial('attachment: finds words only inside attachments; plain words do not', async (t) => {
  const { h, a } = await api();
  t.teardown(() => h.close());
  const admin = a.fixture.keys.admin;
  t.deepEqual(await search(h, admin, 'attachment:zymurgical'), [a.emails.pdf!, a.emails.hidden!].sort());
  t.deepEqual(await search(h, admin, 'zymurgical'), [], 'a plain word searches subject, body and addresses only');
  t.deepEqual(await search(h, admin, 'attachment:"quixotic revenue"'), [a.emails.pdf!, a.emails.hidden!].sort());
  t.deepEqual(await search(h, admin, 'attachment:"revenue quixotic"'), []);
  t.deepEqual(await search(h, admin, 'attachment:kerfuf*'), [a.emails.docx!]);
  t.deepEqual(
    await search(h, admin, 'attachment:cafe'),
    [a.emails.text!],
    'accent-insensitive, and Windows-1252 decoded',
  );
  t.deepEqual(await search(h, admin, 'attachment:snollygoster'), [a.emails.rfc822!]);
  t.deepEqual(await search(h, admin, 'attachment:zeppelin'), [], 'an encrypted PDF has no text');
  // Combined with the rest of the language.
  t.deepEqual(await search(h, admin, 'attachment:zymurgical bob'), [a.emails.hidden!]);
  t.deepEqual(await search(h, admin, 'attachment:zymurgical -bob'), [a.emails.pdf!]);
  t.deepEqual(
    await search(h, admin, 'attachment:kerfuffle OR attachment:flibbertigibbet'),
    [a.emails.docx!, a.emails.html!].sort(),
  );
  // A restricted key never sees attachment text of an account it cannot see.
  t.deepEqual(await search(h, a.fixture.keys.alice, 'attachment:zymurgical'), [a.emails.pdf!]);
  t.deepEqual(await search(h, a.fixture.keys.bob, 'attachment:zymurgical'), [a.emails.hidden!]);
  t.deepEqual(await search(h, a.fixture.keys.carol, 'attachment:zymurgical'), []);
  // attachment: with nothing searchable is a term like any other: nothing matches.
  t.deepEqual(await search(h, admin, 'attachment:""'), []);
  // A quote left open is a 400 that says so, as for any field (docs/search.md).
  const open = await h.request.get('/api/v1/emails').query({ q: 'attachment:"' }).set(bearer(admin));
  t.is(open.status, 400);
  t.regex(open.body.detail, /quote/);
});

test.serial(
  'GET .../text returns the text as text/plain; 404 for none, missing or hidden; logged as Download',
  async (t) => {
    const { h, a } = await api();
    t.teardown(() => h.close());
    const url = (key: string, attachmentId = attachmentOf(a, key)) =>
      `/api/v1/emails/${a.emails[key]}/attachments/${attachmentId}/text`;
    const res = await h.request.get(url('pdf')).set(bearer(a.fixture.keys.alice));
    t.is(res.status, 200);
    t.is(res.headers['content-type'], 'text/plain; charset=utf-8');
    t.is(res.headers['x-text-truncated'], 'false');
    t.true(res.text.includes(PDF_SENTENCE));
    const big = await h.request.get(url('thousands')).set(bearer(a.fixture.keys.admin));
    t.is(big.status, 200);
    t.is(big.headers['x-text-truncated'], 'true');
    const text = await h.request.get(url('text')).set(bearer(a.fixture.keys.admin));
    t.is(text.text, 'Order a café gazpacho now.');

    const notFound = async (path: string, key: string, detail: RegExp) => {
      const r = await h.request.get(path).set(bearer(key));
      t.is(r.status, 404, path);
      t.is(r.headers['content-type'], 'application/problem+json');
      t.regex((r.body as { detail: string }).detail, detail);
    };
    await notFound(url('encrypted'), a.fixture.keys.admin, /has no text \(it is encrypted\)/);
    await notFound(url('image'), a.fixture.keys.admin, /has no text/);
    await notFound(url('corrupt'), a.fixture.keys.admin, /reading it failed/);
    await notFound(url('pdf', 999_999), a.fixture.keys.admin, /does not exist/);
    // bob cannot see the work account: the same 404 as for a missing attachment.
    await notFound(url('pdf'), a.fixture.keys.bob, /does not exist/);
    await notFound(url('hidden'), a.fixture.keys.alice, /does not exist/);

    await h.gateway.accessLog.flush();
    const log = (await readAccessLog(h.settings.Database.Path)).filter((r) => r.type === 'Download');
    // Three texts went out (pdf, thousands, text); refusals and texts that do not exist are not downloads.
    t.deepEqual(
      log.map((r) => [r.email_id, r.account_id, r.source]),
      [
        [a.emails.pdf, a.fixture.accounts.work, 'api'],
        [a.emails.thousands, a.fixture.accounts.work, 'api'],
        [a.emails.text, a.fixture.accounts.work, 'api'],
      ],
    );
  },
);

test.serial('GET .../text is 403 when attachment downloads are disabled, as for the bytes', async (t) => {
  const { h, a } = await api({ Api: { AllowAttachmentDownloads: false } });
  t.teardown(() => h.close());
  const res = await h.request
    .get(`/api/v1/emails/${a.emails.pdf}/attachments/${attachmentOf(a, 'pdf')}/text`)
    .set(bearer(a.fixture.keys.admin));
  t.is(res.status, 403);
  t.regex((res.body as { detail: string }).detail, /AllowAttachmentDownloads/);
});

// ---------------------------------------------------------------------------------------------
// MCP (SQLite: the harness serves the fixture file as it is)

if (TEST_STORE === 'sqlite') {
  test.serial('MCP get_attachment format text pages through a long text; base64 is unchanged', async (t) => {
    const a = await archive;
    const h: McpHarness = await startMcpGateway({ Mcp: { MaxAttachmentBytes: 56_000 } }, { useFixture: a.fixture });
    t.teardown(() => h.close());
    const client = await connectClient(h.url, a.fixture.keys.alice);
    t.teardown(() => client.close());
    const id = a.emails.long!;
    const attachmentId = attachmentOf(a, 'long');
    let offset = 0;
    let text = '';
    let pages = 0;
    for (;;) {
      const r = await call(client, 'get_attachment', { id, attachmentId, format: 'text', offset, maxChars: 50_000 });
      t.falsy(r.isError);
      const s = r.structuredContent as { text: string; offset: number; totalChars: number; nextOffset: number | null };
      t.is(s.offset, offset);
      t.is(s.totalChars, LONG_TEXT.length);
      t.is(r.content[0]!.type === 'text' && r.content[0]!.text, s.text);
      text += s.text;
      pages++;
      if (s.nextOffset === null) break;
      offset = s.nextOffset;
    }
    t.is(text, LONG_TEXT);
    t.is(pages, Math.ceil(LONG_TEXT.length / 50_000));
    // The default page.
    const first = await call(client, 'get_attachment', { id, attachmentId, format: 'text' });
    t.is((first.structuredContent as { text: string }).text.length, 20_000);
    // The largest page asked for is cut to the answer bound (Mcp:MaxResultChars, 80,000), and says where to go on.
    const most = await call(client, 'get_attachment', { id, attachmentId, format: 'text', maxChars: 100_000 });
    const shown = most.structuredContent as { text: string; nextOffset: number };
    t.is(shown.text, LONG_TEXT.slice(0, shown.text.length));
    t.true(shown.text.length <= 80_000 - 600 && shown.text.length > 70_000, `${shown.text.length}`);
    t.is(shown.nextOffset, shown.text.length);
    // Bounds and refusals.
    const tooMany = await call(client, 'get_attachment', { id, attachmentId, format: 'text', maxChars: 100_001 });
    t.true(tooMany.isError);
    t.regex(JSON.stringify(tooMany.content), /maxChars/);
    const hidden = await call(client, 'get_attachment', {
      id: a.emails.hidden,
      attachmentId: attachmentOf(a, 'hidden'),
      format: 'text',
    });
    t.true(hidden.isError);
    t.regex(JSON.stringify(hidden.content), /was not found/);
    const locked = await call(client, 'get_attachment', {
      id: a.emails.encrypted,
      attachmentId: attachmentOf(a, 'encrypted'),
      format: 'text',
    });
    t.true(locked.isError);
    t.regex(JSON.stringify(locked.content), /encrypted/);
    // base64 stays the default; this file is above Mcp:MaxAttachmentBytes (56,000 here), so it comes in
    // pages when asked for them (test/mcp-bounds.test.ts), and whole when the limit allows.
    const refused = await call(client, 'get_attachment', { id, attachmentId });
    t.regex(JSON.stringify(refused.content), /Mcp:MaxAttachmentBytes/);
    const parts: string[] = [];
    for (let offset: number | null = 0; offset !== null;) {
      const page: { base64Data: string; nextOffset: number | null } = jsonOf(
        await call(client, 'get_attachment', { id, attachmentId, offset }),
      );
      parts.push(page.base64Data);
      offset = page.nextOffset;
    }
    t.is(Buffer.concat(parts.map((p) => Buffer.from(p, 'base64'))).toString(), LONG_TEXT);
    const downloads = (await accessLogRows(h)).filter((r) => r.type === 'Download' && r.source === 'mcp');
    t.is(
      downloads.length,
      pages + 2 + 1,
      'each text page (two read alone) and the bytes (once, with their first page), not the refusals',
    );
    t.true(downloads.every((r) => r.email_id === id && r.account_id === a.fixture.accounts.work));
  });

  test.serial('MCP get_attachment format text respects Mcp:AllowAttachmentDownloads', async (t) => {
    const a = await archive;
    const h = await startMcpGateway({ Mcp: { AllowAttachmentDownloads: false } }, { useFixture: a.fixture });
    t.teardown(() => h.close());
    const client = await connectClient(h.url, a.fixture.keys.admin);
    t.teardown(() => client.close());
    const r = await call(client, 'get_attachment', {
      id: a.emails.pdf,
      attachmentId: attachmentOf(a, 'pdf'),
      format: 'text',
    });
    t.true(r.isError);
    t.regex(JSON.stringify(r.content), /AllowAttachmentDownloads=false/);
  });

  test.serial('reindex --attachments reads what has no text, resumes after an interruption, and reports', async (t) => {
    const a = await archive;
    const db = openArchive(a.fixture.dbPath);
    t.teardown(() => db.close());
    const before = db.prepare('SELECT content_id, status, text FROM attachment_texts ORDER BY content_id').all();
    // An archive imported without text (or before the feature).
    db.exec('DELETE FROM attachment_texts; DELETE FROM attachment_fts;');
    const hits = () =>
      db.prepare("SELECT count(*) FROM attachment_fts WHERE attachment_fts MATCH 'zymurgical'").pluck().get();
    t.is(hits(), 0);

    // Interrupted after its first batch of 3.
    const extractor = new Extractor(UNHURRIED);
    t.teardown(() => extractor.close());
    await withAdmin(a.fixture.dbPath, async (admin) => {
      const store = admin.attachmentTexts();
      let saves = 0;
      const failing: AttachmentTextStore = {
        pending: (n, options) => store.pending(n, options),
        countPending: () => store.countPending(),
        content: (c) => store.content(c),
        save: async (results, ids) => {
          if (saves++ === 1) throw new Error('power cut');
          await store.save(results, ids);
        },
      };
      await t.throwsAsync(reindexAttachments(failing, extractor, { batchSize: 3 }), { message: 'power cut' });
    });
    t.is(db.prepare('SELECT count(*) FROM attachment_texts').pluck().get(), 3);

    // A time limit that is no number of seconds is refused before anything is read.
    const reindex = (...args: string[]) =>
      run(process.execPath, [CLI, '--db', a.fixture.dbPath, 'reindex', '--attachments', ...args]);
    const refused = await reindex('--time-limit', 'soon').catch((err: { code: number; stderr: string }) => err);
    t.is((refused as { code: number }).code, 2);
    t.regex((refused as { stderr: string }).stderr, /--time-limit must be a number of seconds/);
    t.is(db.prepare('SELECT count(*) FROM attachment_texts').pluck().get(), 3);

    // The command continues with the rest (with the tests' unhurried bound: see UNHURRIED).
    const { stdout } = await reindex('--time-limit', String(UNHURRIED.timeoutMs / 1000), '--json');
    const summary = JSON.parse(stdout) as { contents: number; byStatus: Record<string, number>; truncated: number };
    t.is(summary.contents, before.length - 3);
    t.is(summary.truncated >= 0, true);
    t.deepEqual(db.prepare('SELECT content_id, status, text FROM attachment_texts ORDER BY content_id').all(), before);
    t.is(hits(), 2);
    // A second run has nothing left to do.
    const again = await reindex();
    t.regex(again.stdout, /^Read 0 attachments in /);
    // Without --attachments there is nothing to reindex: a usage error.
    const bare = await run(process.execPath, [CLI, '--db', a.fixture.dbPath, 'reindex']).catch(
      (e: { stderr: string }) => e,
    );
    t.regex((bare as { stderr: string }).stderr, /reindex needs --attachments/);
  });
}

if (TEST_STORE === 'sqlite') {
  test.serial(
    'the in-memory index answers attachment: as SQL does, and sees text that arrives later without a rebuild',
    async (t) => {
      const a = await archive;
      const db = openArchive(a.fixture.dbPath);
      t.teardown(() => {
        adoptSnapshot(db, undefined);
        db.close();
      });
      const admin = { isAdmin: true, userId: 0 };
      const alice = { isAdmin: false, userId: a.fixture.users.alice };
      const docxContent = db
        .prepare('SELECT content_id FROM attachments WHERE email_id = ?')
        .pluck()
        .get(a.emails.docx) as number;
      const saved = db
        .prepare('SELECT status, text, truncated FROM attachment_texts WHERE content_id = ?')
        .get(docxContent) as {
        status: 'ok';
        text: string;
        truncated: number;
      };
      // As if the DOCX had not been read yet.
      db.prepare('DELETE FROM attachment_texts WHERE content_id = ?').run(docxContent);
      db.prepare('DELETE FROM attachment_fts WHERE rowid = (SELECT fts_key FROM emails WHERE id = ?)').run(
        a.emails.docx,
      );

      const snap = new Snapshot(buildSnapshot(db, { minDocs: 1 }));
      adoptSnapshot(db, snap);
      const queries = [
        'attachment:zymurgical',
        'attachment:"quixotic revenue" OR subject:minutes',
        'attachment:kerfuffle',
        '-attachment:zymurgical',
        'attachment:manuscript* test',
      ];
      for (const viewer of [admin, alice])
        for (const q of queries) {
          const query = parseSearchInput({ q, sortBy: 'subject' }, { defaultPageSize: 20, maxPageSize: 100 });
          t.truthy(currentSnapshot(db));
          const fast = searchEmails(db, viewer, query);
          const slow = searchEmails(db, viewer, query, { reference: true });
          t.is(fast.totalItems, slow.totalItems, q);
          t.deepEqual(
            fast.items.map((i) => i.id),
            slow.items.map((i) => i.id),
            q,
          );
        }
      const kerfuffle = parseSearchInput({ q: 'attachment:kerfuffle' }, { defaultPageSize: 20, maxPageSize: 100 });
      t.is(searchEmails(db, admin, kerfuffle).totalItems, 0);
      // The text arrives (reindex): the snapshot stays current, and the next search finds it.
      saveAttachmentTexts(db, [{ contentId: docxContent, result: { ...saved, truncated: saved.truncated === 1 } }]);
      t.is(currentSnapshot(db), snap, 'no rebuild of the in-memory index');
      t.is(searchEmails(db, admin, kerfuffle).totalItems, 1);
      t.is(searchEmails(db, alice, kerfuffle).items[0]?.id, a.emails.docx);
    },
  );
}

// ---------------------------------------------------------------------------------------------
// The command line on both stores: import reads the text, reindex --attachments fills a gap.

if (TEST_STORE === 'sqlite') {
  for (const kind of STORE_KINDS) {
    test(`${kind}: mail-archive import reads attachment text; reindex --attachments fills what is missing`, async (t) => {
      const a = await cliArchive(t, kind);
      const id = json<{ id: number }>(
        t,
        await a.cli(['accounts', 'add', '--name', 'Docs', '--email', 'docs@example.com', '--json']),
      ).id;
      const file = join(a.dir, 'forecast.eml');
      writeFileSync(
        file,
        eml('Quarterly', 'See the attached forecast.', [
          { name: 'forecast.pdf', type: 'application/pdf', data: await pdf([PDF_SENTENCE]) },
        ]),
      );
      ok(t, await a.cli(['import', String(id), file]));
      const found =
        kind === 'sqlite'
          ? async () =>
              (
                await queryArchive<{ n: number }>(a.db, {
                  sqlite: "SELECT count(*) AS n FROM attachment_fts WHERE attachment_fts MATCH 'zymurgical'",
                  postgres: '',
                })
              )[0]!.n
          : async () =>
              (
                await a.pgQuery<{ n: number }>(
                  `SELECT count(*)::int AS n FROM mail_archive_gateway.search_docs WHERE doc @@ '''a:zymurgical'''::tsquery`,
                )
              )[0]!.n;
      t.is(await found(), 1, 'searchable right after the import');
      t.is(json<{ contents: number }>(t, await a.cli(['reindex', '--attachments', '--json'])).contents, 0);
      // Text missing (imported before the feature, or by Mail Archiver): reindex reads it.
      await queryArchive(a.db, {
        sqlite: 'DELETE FROM attachment_texts',
        postgres: 'DELETE FROM mail_archive_gateway.attachment_texts',
      });
      await queryArchive(a.db, {
        sqlite: 'DELETE FROM attachment_fts',
        postgres: 'DELETE FROM mail_archive_gateway.search_docs',
      });
      t.is(await found(), 0);
      const again = json<{ contents: number; byStatus: Record<string, number> }>(
        t,
        await a.cli(['reindex', '--attachments', '--json']),
      );
      t.is(again.contents, 1);
      t.deepEqual(again.byStatus, { ok: 1 });
      t.is(await found(), 1);
    });
  }
}
