// Answers that fit the model that asked (docs/mcp.md, "Answers that fit the model"; ADR 20): every
// tool result's text stays within Mcp:MaxResultChars, and what does not fit is paged, never cut
// without a word. On this run's store (TEST_STORE), through the SDK client on the real gateway.
import anyTest, { type TestFn } from 'ava';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createHash } from 'node:crypto';
import { openArchive } from '../engine/sqlite/open.js';
import { ArchiveWriter } from '../engine/sqlite/writer.js';
import type { EmailDetailDto, EmailSummaryDto, PagedResult } from '../shared/dto.js';
import { writeBigAttachment } from './helpers/api.js';
import { createFixture, email, type Fixture } from './helpers/fixture.js';
import {
  accessLogRows,
  call,
  connectClient,
  jsonOf,
  noteOf,
  startMcpGateway,
  textOf,
  type McpHarness,
} from './helpers/mcp.js';

interface Context {
  fixture: Fixture;
  /** Default settings but MaxAttachmentBytes 56,000, the setting docs/mcp.md gives for chat connectors. */
  wide: McpHarness;
  /** MaxResultChars 4,000, MaxAttachmentBytes 56,000, MaxPagedAttachmentBytes 50,000. */
  narrow: McpHarness;
  ids: {
    long: number;
    hostile: number;
    thread: number[];
    big: { emailId: number; attachmentId: number; sha256: string };
  };
  clients: Client[];
}
const test = anyTest as TestFn<Context>;

const LONG_TEXT = Array.from({ length: 30_000 }, (_, i) => `Zeile ${i} Grüße 😀 "quoted"`).join('\n');
const LONG_HTML = `<html><body>${Array.from({ length: 8_000 }, (_, i) => `<p class="x">Absatz ${i} 😀</p>`).join('')}</body></html>`;
const HOSTILE_TO = Array.from({ length: 12_000 }, (_, i) => `user${i}@example.com`).join(', ');

test.before(async (t) => {
  const fixture = createFixture();
  const db = openArchive(fixture.dbPath);
  let ids: Omit<Context['ids'], 'big'>;
  try {
    const writer = new ArchiveWriter(db);
    const accountId = fixture.accounts.work;
    ids = writer.batch(() => {
      const long = writer.add(
        email({ accountId, subject: 'A very long letter', textBody: LONG_TEXT, htmlBody: LONG_HTML }),
      )!;
      const hostile = writer.add(email({ accountId, subject: 'Mass mail', to: HOSTILE_TO, textBody: 'short' }))!;
      const root = '<root-of-thread@test>';
      const thread: number[] = [];
      for (let i = 0; i < 60; i++) {
        thread.push(
          writer.add(
            email({
              accountId,
              messageId: i === 0 ? root : `<reply-${i}@test>`,
              ...(i === 0 ? {} : { refs: [root.slice(1, -1)] }),
              subject: i === 0 ? 'Boundsword planning' : 'Re: Boundsword planning',
              sentDate: Date.parse('2024-05-01T00:00:00Z') + i * 60_000,
              textBody: `Reply number ${i} about boundsword. ${'Lorem ipsum dolor sit amet. '.repeat(40)}`,
            }),
          )!,
        );
      }
      // A folder tree too large for a 4,000-character answer: one root with 120 sub-folders.
      for (let i = 0; i < 40; i++)
        for (const leaf of ['Invoices', 'Contracts', 'Letters'])
          writer.add(email({ accountId, folder: `Clients/Client number ${i}/${leaf}`, subject: 'x', textBody: 'x' }));
      return { long, hostile, thread };
    });
  } finally {
    db.close();
  }
  const big = await writeBigAttachment(fixture.dbPath, fixture.accounts.work, 100_000);
  const [wide, narrow] = await Promise.all([
    startMcpGateway({ Mcp: { MaxAttachmentBytes: 56_000 } }, { useFixture: fixture }),
    startMcpGateway(
      { Mcp: { MaxResultChars: 4_000, MaxAttachmentBytes: 56_000, MaxPagedAttachmentBytes: 50_000 } },
      { useFixture: fixture },
    ),
  ]);
  t.context = { fixture, wide, narrow, ids: { ...ids, big }, clients: [] };
});

test.after.always(async (t) => {
  await Promise.all(t.context.clients.map((c) => c.close()));
  await Promise.all([t.context.wide?.close(), t.context.narrow?.close()]);
  t.context.fixture?.cleanup();
});

async function admin(t: { context: Context }, h: McpHarness): Promise<Client> {
  const c = await connectClient(h.url, h.fixture.keys.admin);
  t.context.clients.push(c);
  return c;
}

/** All the text a model is handed: every text block. */
const textSize = (r: CallToolResult) => r.content.reduce((n, b) => n + (b.type === 'text' ? b.text.length : 0), 0);

type Page = EmailDetailDto & {
  bodyTruncated?: boolean;
  bodyOffset?: number;
  textBodyLength?: number;
  htmlBodyLength?: number;
  nextOffset?: number | null;
};

test('get_email cuts a long body at the bound, says so, and offset reads it on to the end, every character once', async (t) => {
  const { wide, ids } = t.context;
  const c = await admin(t, wide);
  const first = await call(c, 'get_email', { id: ids.long });
  t.falsy(first.isError);
  t.true(textSize(first) <= 80_000, `${textSize(first)} characters`);
  const page = jsonOf<Page>(first);
  t.true(page.bodyTruncated);
  t.is(page.bodyOffset, 0);
  t.is(page.textBodyLength, LONG_TEXT.length);
  t.is(page.htmlBodyLength, LONG_HTML.length);
  t.is(typeof page.nextOffset, 'number');
  t.regex(noteOf(first)!, new RegExp(`call get_email with id ${ids.long} and offset ${page.nextOffset} to read on`));
  t.deepEqual((first.structuredContent as { email: Page }).email, page);

  let text = page.textBody!;
  let html = page.htmlBody!;
  let next = page.nextOffset;
  let calls = 1;
  while (next !== null && next !== undefined) {
    const r = await call(c, 'get_email', { id: ids.long, offset: next });
    t.true(textSize(r) <= 80_000);
    const p = jsonOf<Page>(r);
    t.is(p.bodyOffset, next);
    text += p.textBody!;
    html += p.htmlBody!;
    next = p.nextOffset;
    calls++;
  }
  t.is(text, LONG_TEXT, 'the text body, whole, surrogate pairs intact');
  t.is(html, LONG_HTML);
  t.true(calls > 5, `${calls} calls`);

  // maxChars asks for less; a short message is unchanged (no paging fields, no note).
  const small = jsonOf<Page>(await call(c, 'get_email', { id: ids.long, offset: 10, maxChars: 100 }));
  t.is(small.textBody, LONG_TEXT.slice(10, 110));
  t.is(small.nextOffset, 110);
  const plain = await call(c, 'get_email', { id: wide.fixture.emails.budget! });
  t.is(plain.content.length, 1);
  t.false('bodyTruncated' in jsonOf<Page>(plain));
  const bad = await call(c, 'get_email', { id: ids.long, offset: -1 });
  t.true(bad.isError);
  t.regex(textOf(bad), /offset must be 0 or more/);
});

test('a header too long for any answer is cut, marked, and the note names it', async (t) => {
  const { wide, ids } = t.context;
  const c = await admin(t, wide);
  const r = await call(c, 'get_email', { id: ids.hostile });
  t.true(textSize(r) <= 80_000, `${textSize(r)}`);
  const e = jsonOf<Page>(r);
  t.true(e.to.endsWith('…'));
  t.true(HOSTILE_TO.startsWith(e.to.slice(0, -1)));
  t.regex(noteOf(r)!, new RegExp(`to \\(${HOSTILE_TO.length.toLocaleString('en')} characters\\)`));
  // In a search page too: the page still fits.
  const s = await call(c, 'search_emails', { q: 'subject:mass', pageSize: 100 });
  t.true(textSize(s) <= 80_000, `${textSize(s)}`);
});

test('get_thread gives summaries with excerpts, in pages that fit, and says how to go on and how to open each', async (t) => {
  const { narrow, ids } = t.context;
  const c = await admin(t, narrow);
  const seen: number[] = [];
  let offset: number | null = 0;
  let pages = 0;
  while (offset !== null) {
    const r = await call(c, 'get_thread', { id: ids.thread[5]!, offset });
    t.true(textSize(r) <= 4_000, `${textSize(r)}`);
    const items = jsonOf<Array<EmailSummaryDto & { excerpt: string }>>(r);
    const s = r.structuredContent as { items: unknown[]; total: number; offset: number; nextOffset: number | null };
    t.deepEqual(s.items, items);
    t.is(s.total, 60);
    t.is(s.offset, offset);
    t.true(items.length > 0);
    for (const item of items) {
      t.regex(item.excerpt, /^Reply number \d+ about boundsword\. Lorem/);
      t.true(item.excerpt.length <= 170);
    }
    t.regex(noteOf(r)!, /Open a message with get_email and its id\./);
    if (s.nextOffset !== null)
      t.regex(noteOf(r)!, new RegExp(`call get_thread with id ${ids.thread[5]} and offset ${s.nextOffset}`));
    seen.push(...items.map((i) => i.id));
    offset = s.nextOffset;
    pages++;
  }
  t.deepEqual(seen, ids.thread, 'every message once, oldest first');
  t.true(pages > 3);
});

test('search_emails: a page that does not fit becomes a smaller page of the same search, and paging at that size sees every match once', async (t) => {
  const { narrow, ids } = t.context;
  const c = await admin(t, narrow);
  type P = PagedResult<EmailSummaryDto & { snippet?: string }>;
  const first = await call(c, 'search_emails', {
    q: 'boundsword',
    pageSize: 20,
    page: 2,
    snippets: true,
    sortOrder: 'asc',
  });
  t.true(textSize(first) <= 4_000, `${textSize(first)}`);
  const p = jsonOf<P>(first);
  t.true(p.pageSize < 20 && 20 % p.pageSize === 0, `pageSize ${p.pageSize}`);
  t.is(p.page, 20 / p.pageSize + 1, 'the first item of page 2 at size 20');
  t.is(p.totalItems, 60);
  t.is(p.totalPages, Math.ceil(60 / p.pageSize));
  t.is(p.items[0]!.id, ids.thread[20]!);
  t.regex(noteOf(first)!, new RegExp(`page ${p.page + 1} and pageSize ${p.pageSize} for the next`));
  const all: number[] = [];
  for (let page = 1; page <= p.totalPages; page++) {
    const r = jsonOf<P>(
      await call(c, 'search_emails', { q: 'boundsword', pageSize: p.pageSize, page, snippets: true, sortOrder: 'asc' }),
    );
    t.is(r.pageSize, p.pageSize);
    all.push(...r.items.map((i) => i.id));
  }
  t.deepEqual(all, ids.thread);
});

test('search_emails with snippets at the default bound: the largest page fits', async (t) => {
  const { wide } = t.context;
  const c = await admin(t, wide);
  const r = await call(c, 'search_emails', { q: 'boundsword OR zeile OR absatz', pageSize: 100, snippets: true });
  t.true(textSize(r) <= 80_000, `${textSize(r)}`);
  const p = jsonOf<PagedResult<EmailSummaryDto>>(r);
  t.is(p.items.length, p.totalItems, 'all 61 fit one page');
});

test('get_attachment: a file above MaxAttachmentBytes is refused with the ways to get it; pages rebuild it, logged once', async (t) => {
  const { wide, ids } = t.context;
  const { emailId, attachmentId, sha256 } = ids.big;
  const c = await admin(t, wide);
  const whole = await call(c, 'get_attachment', { id: emailId, attachmentId });
  t.true(whole.isError, 'a v1 client asking for the file never gets part of it');
  const why = textOf(whole);
  t.regex(why, /is 100000 bytes, above this server's limit of 56000 bytes \(Mcp:MaxAttachmentBytes\)/);
  t.regex(why, /call get_attachment with offset 0 and maxBytes \d+/);
  t.regex(why, /format "text"/);
  t.regex(why, new RegExp(`GET /api/v1/emails/${emailId}/attachments/${attachmentId}`));

  const before = (await accessLogRows(wide)).filter((r) => r.type === 'Download').length;
  const parts: Buffer[] = [];
  let offset: number | null = 0;
  while (offset !== null) {
    const r = await call(c, 'get_attachment', { id: emailId, attachmentId, offset });
    t.falsy(r.isError);
    t.true(textSize(r) <= 80_000, `${textSize(r)}`);
    const page = jsonOf<{ base64Data: string; offset: number; nextOffset: number | null; size: number }>(r);
    t.is(page.offset, offset);
    t.is(page.size, 100_000);
    t.false('base64Data' in (r.structuredContent ?? {}));
    t.is((r.structuredContent as { nextOffset: unknown }).nextOffset, page.nextOffset);
    t.regex(
      noteOf(r)!,
      page.nextOffset === null ? /the end of the file/ : new RegExp(`offset ${page.nextOffset} for the next page`),
    );
    parts.push(Buffer.from(page.base64Data, 'base64'));
    offset = page.nextOffset;
  }
  t.is(parts.length, 2);
  t.is(createHash('sha256').update(Buffer.concat(parts)).digest('hex'), sha256);
  const after = (await accessLogRows(wide)).filter((r) => r.type === 'Download').length;
  t.is(after - before, 1, 'one download, logged with its first page');

  const bad = await call(c, 'get_attachment', { id: emailId, attachmentId, offset: 100_001 });
  t.regex(textOf(bad), /past the end of the attachment, which is 100000 bytes/);
  const tooMany = await call(c, 'get_attachment', { id: emailId, attachmentId, maxBytes: 10_000_000 });
  t.regex(textOf(tooMany), /maxBytes must be between 1 and \d+/);
  const some = jsonOf<{ base64Data: string; nextOffset: number }>(
    await call(c, 'get_attachment', { id: emailId, attachmentId, offset: 10, maxBytes: 5 }),
  );
  t.is(Buffer.from(some.base64Data, 'base64').length, 5);
  t.is(some.nextOffset, 15);
});

test('get_attachment: above Mcp:MaxPagedAttachmentBytes pages are refused too, and the error says what is left', async (t) => {
  const { narrow, ids } = t.context;
  const c = await admin(t, narrow);
  const r = await call(c, 'get_attachment', { id: ids.big.emailId, attachmentId: ids.big.attachmentId, offset: 0 });
  t.true(r.isError);
  t.regex(textOf(r), /above this server's limit of 50000 bytes \(Mcp:MaxPagedAttachmentBytes\) for reading in pages/);
  t.regex(textOf(r), /format "text"/);
  t.regex(textOf(r), /GET \/api\/v1\/emails\//);
  const whole = await call(c, 'get_attachment', { id: ids.big.emailId, attachmentId: ids.big.attachmentId });
  t.regex(textOf(whole), /above the limit for reading in pages/);
});

test('every tool description and input schema says how to page', async (t) => {
  const c = await admin(t, t.context.wide);
  const { tools } = await c.listTools();
  const by = new Map(tools.map((x) => [x.name, x]));
  t.deepEqual(Object.keys(by.get('get_email')!.inputSchema.properties ?? {}).sort(), ['id', 'maxChars', 'offset']);
  t.deepEqual(Object.keys(by.get('get_thread')!.inputSchema.properties ?? {}).sort(), ['id', 'offset']);
  t.true(Object.keys(by.get('get_attachment')!.inputSchema.properties ?? {}).includes('maxBytes'));
  t.regex(by.get('get_email')!.description!, /nextOffset/);
  t.regex(by.get('get_thread')!.description!, /nextOffset/);
  for (const tool of tools) t.truthy(tool.outputSchema, tool.name);
});

test('list_folders: a tree too large for one answer comes in parts, and a root too large alone loses its deepest levels, said so', async (t) => {
  const { narrow, fixture } = t.context;
  const c = await admin(t, narrow);
  const accountId = fixture.accounts.work;
  const roots: string[] = [];
  let offset: number | null = 0;
  let pruned = false;
  while (offset !== null) {
    const r = await call(c, 'list_folders', { accountId, offset });
    t.falsy(r.isError);
    t.true(textSize(r) <= 4_000, `${textSize(r)}`);
    const items = jsonOf<Array<{ fullPath: string; children: unknown[] }>>(r);
    const s = r.structuredContent as { items: unknown[]; total: number; offset: number; nextOffset: number | null };
    t.deepEqual(s.items, items);
    t.is(s.offset, offset);
    if (/Clients has more sub-folders than fit one answer/.test(noteOf(r) ?? '')) pruned = true;
    roots.push(...items.map((i) => i.fullPath));
    offset = s.nextOffset;
  }
  t.true(pruned, 'the Clients tree was cut, and the note said so');
  const whole = await call(await admin(t, t.context.wide), 'list_folders', { accountId });
  t.is(whole.content.length, 1, 'at the default bound the tree fits, unchanged');
  t.deepEqual(
    roots,
    jsonOf<Array<{ fullPath: string }>>(whole).map((f) => f.fullPath),
    'every top-level folder once, in order',
  );
});
