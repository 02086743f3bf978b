// Snippets (docs/search.md, "Snippets"): the window chosen, what is marked and escaped, and the
// REST parameter and MCP argument on the real gateway, on this run's store (TEST_STORE).
import anyTest, { type TestFn } from 'ava';
import {
  ATTACHMENT_SCAN_CHARS,
  SNIPPET_FILE_NAME_CHARS,
  attachmentSnippetTerms,
  makeSnippet,
  snippetTermsOf,
  withAttachmentSnippets,
  type SnippetTerms,
} from '../engine/search/snippet.js';
import { parseQuery } from '../shared/query-language.js';
import { scanTokens, tokenize, type TokenVisitor } from '../engine/search/unicode61.js';
import type { EmailSummaryDto, PagedResult } from '../shared/dto.js';
import { openArchive } from '../engine/sqlite/open.js';
import { ArchiveWriter } from '../engine/sqlite/writer.js';
import supertest from 'supertest';
import { bearer, startApi, type ApiHarness } from './helpers/api.js';
import { createFixture, email, type Fixture } from './helpers/fixture.js';
import { call, connectClient, startMcpGateway, type McpHarness } from './helpers/mcp.js';
import { changeArchive, TEST_STORE, withAdmin } from './helpers/store.js';
import { attachmentTextsOf as sqliteTextsOf } from '../engine/sqlite/attachment-text.js';
import { attachmentTextsOf as pgTextsOf } from '../engine/postgres/attachment-text.js';
import type { PgContext } from '../engine/postgres/context.js';
import type { Sql } from '../engine/postgres/sql.js';
import type { AttachmentText } from '../engine/search/snippet.js';

/** The standard fixture plus messages whose attachments hold text, served on this run's store. */
interface Attached {
  fixture: Fixture;
  h: McpHarness;
  emails: Record<string, number>;
  /** Attachment ids by "message:file name", as both stores number them. */
  attachments: Record<string, number>;
}

const test = anyTest as TestFn<{ api: ApiHarness; mcp: McpHarness; attached: Attached }>;
const terms = (q: string): SnippetTerms => snippetTermsOf(q)!;

/** A file name a page must escape: it is the archive's data, returned as it is. */
const HOSTILE_NAME = `<img src=x onerror="alert('x')">&amp;.txt`;

test.before(async (t) => {
  t.context.api = await startApi();
  t.context.mcp = await startMcpGateway();
  t.context.attached = await startAttached();
});
test.after.always(async (t) => {
  await t.context.api?.close();
  await t.context.mcp?.close();
  await t.context.attached?.h.close();
  t.context.attached?.fixture.cleanup();
});

/**
 * Messages with attachments, then their text stored through the served store's own interface
 * (what the importer and reindex --attachments write): here each file's bytes are its text, so
 * the text sits exactly where a test needs it (test/attachment-text.test.ts reads real files).
 */
async function startAttached(): Promise<Attached> {
  const fixture = createFixture();
  const file = (fileName: string, text: string, contentType = 'text/plain') => ({
    fileName,
    contentType,
    content: Buffer.from(text),
  });
  const filler = (chars: number) => 'lorem '.repeat(chars / 6);
  const parts = (n: number, needleAt: number) =>
    Array.from({ length: n }, (_, i) =>
      file(`part${String(i + 1).padStart(2, '0')}.txt`, i + 1 === needleAt ? 'the quokka is here' : 'lorem ipsum'),
    );
  const messages: Record<string, { subject: string; textBody: string; attachments: ReturnType<typeof file>[] }> = {
    trip: {
      subject: 'Travel plans',
      textBody: 'See the attached itinerary.',
      attachments: [
        file('intro.txt', 'Nothing to see in this one.'),
        file('trip.pdf', 'Day 3: the <b>zanzibar</b> ferry leaves at noon & returns at six.', 'application/pdf'),
      ],
    },
    hostile: { subject: 'Report', textBody: 'hello', attachments: [file(HOSTILE_NAME, 'The wombat report.')] },
    // 150,000 characters without the word, then it at 189,996 (within) or 210,000 (beyond) of
    // the message's attachment text; one file of 210,000 characters before it; the 20th and 21st file.
    within: {
      subject: 'Bound',
      textBody: 'hello',
      attachments: [file('a.txt', filler(150_000)), file('b-within.txt', `${filler(39_996)}quokka`)],
    },
    beyond: {
      subject: 'Bound',
      textBody: 'hello',
      attachments: [file('a.txt', filler(150_000)), file('b-beyond.txt', `${filler(60_000)}quokka`)],
    },
    single: { subject: 'Bound', textBody: 'hello', attachments: [file('c.txt', `${filler(210_000)}quokka`)] },
    files20: { subject: 'Bound', textBody: 'hello', attachments: parts(20, 20) },
    files21: { subject: 'Bound', textBody: 'hello', attachments: parts(21, 21) },
  };
  const emails: Record<string, number> = {};
  const attachments: Record<string, number> = {};
  const db = openArchive(fixture.dbPath);
  try {
    const writer = new ArchiveWriter(db);
    writer.batch(() => {
      for (const [key, m] of Object.entries(messages))
        emails[key] = writer.add(email({ accountId: fixture.accounts.work, ...m }))!;
    });
    for (const [key, id] of Object.entries(emails))
      for (const a of db.prepare('SELECT id, file_name FROM attachments WHERE email_id = ?').all(id) as Array<{
        id: number;
        file_name: string;
      }>)
        attachments[`${key}:${a.file_name}`] = a.id;
  } finally {
    db.close();
  }
  const h = await startMcpGateway({}, { useFixture: fixture });
  await withAdmin(h.settings.Database.Path, async (admin) => {
    const texts = admin.attachmentTexts();
    const pending = await texts.pending(10_000);
    const results = [];
    for (const c of pending)
      results.push({
        contentId: c.contentId,
        result: { status: 'ok' as const, text: (await texts.content(c)).toString('utf8'), truncated: false },
      });
    await texts.save(results);
  });
  return { fixture, h, emails, attachments };
}

test('scanTokens visits the tokens of tokenize, each at the offsets of its text, and stops when told', (t) => {
  const samples = [
    'Schöne Grüße aus MÜNCHEN, e-mail alice@x.com',
    'a\u0000b \ud800c 😀word😀 日本語テキスト',
    'ﬁne Ǆ İstanbul ǅ x\u0301y',
    '',
    '   ',
  ];
  for (const text of samples) {
    const spans: Array<{ token: string; start: number; end: number }> = [];
    const visit: TokenVisitor = (token, start, end) => void spans.push({ token, start, end });
    scanTokens(text, text.length, visit);
    t.deepEqual(
      spans.map((s) => s.token),
      tokenize(text),
      text,
    );
    for (const s of spans) t.deepEqual(tokenize(text.slice(s.start, s.end)), [s.token], `${text} ${s.token}`);
  }
  // Every BMP code unit beside ASCII and non-ASCII letters: the fast ASCII runs and the table agree
  // with tokenize() (which test/unicode61.test.ts checks against SQLite itself).
  const differing: string[] = [];
  for (let c = 0; c < 0x10000; c++) {
    for (const text of [`a${String.fromCharCode(c)}B`, `Ä${String.fromCharCode(c)}9`]) {
      const tokens: string[] = [];
      scanTokens(text, text.length, (token) => void tokens.push(token));
      if (tokens.join('|') !== tokenize(text).join('|')) differing.push(c.toString(16));
    }
  }
  t.deepEqual(differing, []);
  const seen: string[] = [];
  scanTokens('one two three', 13, (token) => seen.push(token) >= 2);
  t.deepEqual(seen, ['one', 'two']);
  const cut: string[] = [];
  scanTokens('alpha beta', 8, (token) => void cut.push(token));
  t.deepEqual(cut, ['alpha', 'be']);
});

test('a snippet marks the matched words, accent- and case-insensitively, and escapes the rest', (t) => {
  t.is(
    makeSnippet('s', 'Schöne Grüße <b>aus</b> MÜNCHEN & Köln', terms('munchen')),
    'Schöne Grüße &lt;b&gt;aus&lt;/b&gt; <mark>MÜNCHEN</mark> &amp; Köln',
  );
  t.is(
    makeSnippet('s', 'the invoices and an invoice', terms('invoice*')),
    'the <mark>invoices</mark> and an <mark>invoice</mark>',
  );
  // Words under NOT are not why a message matched; a phrase marks its words.
  t.is(makeSnippet('s', 'budget and spam', terms('budget -spam')), '<mark>budget</mark> and spam');
  t.is(
    makeSnippet('s', 'the new ramen place', terms('"ramen place"')),
    'the new <mark>ramen</mark> <mark>place</mark>',
  );
});

test('a snippet is the window of about 200 characters holding the most query words, cut at word ends', (t) => {
  const filler = (n: number) => Array.from({ length: n }, (_, i) => `word${i}`).join(' ');
  const body = `${filler(100)} budget alone here. ${filler(100)} the budget for the trip was approved ${filler(100)}`;
  const snippet = makeSnippet('s', body, terms('budget trip'));
  t.true(snippet.includes('<mark>budget</mark> for the <mark>trip</mark>'), snippet);
  t.false(snippet.includes('alone'));
  t.true(snippet.startsWith('…') && snippet.endsWith('…'));
  const visible = snippet.replaceAll(/<\/?mark>/g, '').replaceAll('…', '');
  t.true(visible.length <= 200, `${visible.length} characters`);
  for (const piece of visible.trim().split(' ')) t.regex(piece, /^(word\d+|the|budget|for|trip|was|approved)$/);
  // Whitespace runs collapse; a window reaching the end carries no trailing ellipsis.
  t.is(makeSnippet('s', 'one\n\n  budget\ttwo', terms('budget')), 'one <mark>budget</mark> two');
});

test('a snippet never splits a surrogate pair and finds matches deep in a long body', (t) => {
  const body = `${'😀'.repeat(300)} needle ${'😀'.repeat(300)}`;
  const snippet = makeSnippet('s', body, terms('needle'));
  t.true(snippet.includes('<mark>needle</mark>'));
  t.notRegex(snippet, /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
  const deep = `${'lorem ipsum '.repeat(15_000)}needle`;
  t.true(makeSnippet('s', deep, terms('needle')).endsWith('<mark>needle</mark>'));
});

test('without a body match the subject is the snippet; a match elsewhere shows the body start, unmarked', (t) => {
  t.is(
    makeSnippet('Quarterly budget review', 'Looks good to me.', terms('quarterly')),
    '<mark>Quarterly</mark> budget review',
  );
  t.is(makeSnippet('Hello', 'Body text here.', terms('alice')), 'Body text here.');
  t.is(makeSnippet('Hello', null, terms('alice')), 'Hello');
  // Queries with nothing for subject or body ask for no snippets at all.
  for (const q of ['-budget', 'from:alice@work.example', 'filename:notes', 'has:attachment', '  '])
    t.is(snippetTermsOf(q), null, q);
});

test('GET /api/v1/emails?snippets=true adds a snippet to each item; without it items are as SPEC.md shows', async (t) => {
  const { api } = t.context;
  const key = api.fixture.keys.admin;
  const plain = await api.request.get('/api/v1/emails').query({ q: 'budget' }).set(bearer(key));
  t.is(plain.status, 200);
  t.true((plain.body as PagedResult<EmailSummaryDto>).items.every((i) => !('snippet' in i)));

  const res = await api.request.get('/api/v1/emails').query({ q: 'budget', snippets: 'true' }).set(bearer(key));
  t.is(res.status, 200);
  const items = (res.body as PagedResult<EmailSummaryDto>).items;
  t.deepEqual(
    items.map((i) => i.id),
    (plain.body as PagedResult<EmailSummaryDto>).items.map((i) => i.id),
  );
  const byId = new Map(items.map((i) => [i.id, i.snippet]));
  t.is(byId.get(api.fixture.emails.budget!), 'Please review the attached <mark>budget</mark> spreadsheet.');
  t.is(byId.get(api.fixture.emails.family!), 'The reunion is on the 12th. Bring the <mark>budget</mark> for the trip.');
  // The reply matched on its subject only.
  t.is(byId.get(api.fixture.emails.sent!), 'Re: Quarterly <mark>budget</mark> review');

  // snippets=false, and a query without words, add nothing.
  const off = await api.request.get('/api/v1/emails').query({ q: 'budget', snippets: 'FALSE' }).set(bearer(key));
  t.true((off.body as PagedResult<EmailSummaryDto>).items.every((i) => !('snippet' in i)));
  const noWords = await api.request.get('/api/v1/emails').query({ snippets: '1' }).set(bearer(key));
  t.true((noWords.body as PagedResult<EmailSummaryDto>).items.every((i) => !('snippet' in i)));
});

test('snippets follow visibility, and a bad value is a 400 naming the parameter', async (t) => {
  const { api } = t.context;
  const res = await api.request
    .get('/api/v1/emails')
    .query({ q: 'budget', snippets: 'true' })
    .set(bearer(api.fixture.keys.bob));
  t.is(res.status, 200);
  // Bob reads only the personal account: the work account's budget mail is no item and no snippet.
  t.deepEqual(
    (res.body as PagedResult<EmailSummaryDto>).items.map((i) => [i.id, i.snippet]),
    [[api.fixture.emails.family!, 'The reunion is on the 12th. Bring the <mark>budget</mark> for the trip.']],
  );
  const bad = await api.request.get('/api/v1/emails').query({ snippets: 'yes' }).set(bearer(api.fixture.keys.admin));
  t.is(bad.status, 400);
  t.is(bad.type, 'application/problem+json');
  t.regex(bad.body.detail, /snippets must be true or false/);
});

test('MCP search_emails takes snippets: true', async (t) => {
  const { mcp } = t.context;
  const client = await connectClient(mcp.url, mcp.fixture.keys.alice);
  try {
    const result = await call(client, 'search_emails', { q: 'ramen', snippets: true });
    t.falsy(result.isError);
    const page = result.structuredContent as unknown as PagedResult<EmailSummaryDto>;
    t.deepEqual(
      page.items.map((i) => i.snippet),
      ['Shall we try the new <mark>ramen</mark> place?'],
    );
    const invalid = await call(client, 'search_emails', { q: 'ramen', snippets: 'yes' });
    t.true(invalid.isError);
  } finally {
    await client.close();
  }
});

test('an attachment snippet: the attachment: terms, marked and escaped, within the first 200,000 characters of text', (t) => {
  const attached = attachmentSnippetTerms(
    parseQuery('budget attachment:"net 30" -attachment:draft attachment:quart*'),
  )!;
  t.deepEqual([...attached.words].sort(), ['30', 'net']);
  t.deepEqual(attached.prefixes, ['quart']);
  t.is(attachmentSnippetTerms(parseQuery('budget -attachment:draft')), null);
  const texts = new Map([
    [
      1,
      [
        { id: 10, fileName: 'empty.txt', text: 'nothing here' },
        { id: 11, fileName: '<b>terms</b>.pdf', text: 'Payment <due> net 30 days & quarterly review.' },
      ],
    ],
    [2, [{ id: 20, fileName: 'long.txt', text: `${'x '.repeat(ATTACHMENT_SCAN_CHARS / 2)} net 30` }]],
    // The window is chosen over all the files, as over a body: the most different words (not the
    // first file with a match), then the most matches, then the earlier file.
    [
      4,
      [
        { id: 40, fileName: 'cover.txt', text: 'net amounts net net net' },
        { id: 41, fileName: 'invoice.pdf', text: 'Pay net 30.' },
        { id: 42, fileName: 'copy.pdf', text: 'Pay net 30 net 30.' },
      ],
    ],
    [
      5,
      [
        { id: 50, fileName: 'first.txt', text: 'net 30' },
        { id: 51, fileName: 'second.txt', text: 'net 30' },
      ],
    ],
  ]);
  const out = withAttachmentSnippets(
    [
      { id: 1, subject: 's' },
      { id: 2, subject: 's' },
      { id: 3, subject: 's', snippet: 'the <mark>budget</mark>' },
      { id: 4, subject: 's' },
      { id: 5, subject: 's' },
    ],
    attached,
    texts,
  );
  t.is(
    out[0]!.snippet,
    'Payment &lt;due&gt; <mark>net</mark> <mark>30</mark> days &amp; <mark>quarterly</mark> review.',
  );
  t.deepEqual(out[0]!.snippetAttachment, { id: 11, fileName: '<b>terms</b>.pdf' }, 'the file name is data');
  t.deepEqual(out[1], { id: 2, subject: 's' }, 'a match past the first 200,000 characters is not looked for');
  t.deepEqual(out[2], { id: 3, subject: 's', snippet: 'the <mark>budget</mark>' }, 'a body snippet with marks stays');
  t.deepEqual(out[3]!.snippetAttachment, { id: 42, fileName: 'copy.pdf' });
  t.is(out[3]!.snippet, 'Pay <mark>net</mark> <mark>30</mark> <mark>net</mark> <mark>30</mark>.');
  t.deepEqual(out[4]!.snippetAttachment, { id: 50, fileName: 'first.txt' });
});

type Item = EmailSummaryDto & { snippetAttachment?: { id: number; fileName: string } };

/** GET /api/v1/emails on the attachment archive as the admin: its items by message id. */
async function itemsOf(a: Attached, q: string, extra: Record<string, string> = { snippets: 'true' }) {
  const res = await supertest(a.h.base)
    .get('/api/v1/emails')
    .query({ q, pageSize: 100, ...extra })
    .set(bearer(a.fixture.keys.admin));
  if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return new Map((res.body as PagedResult<Item>).items.map((i) => [i.id, i]));
}

test('snippets=true on an attachment: query shows the window of the attachment that holds the words, and names it', async (t) => {
  const a = t.context.attached;
  const items = await itemsOf(a, 'attachment:zanzibar');
  t.deepEqual([...items.keys()], [a.emails.trip]);
  const trip = items.get(a.emails.trip!)!;
  // The second file holds the word: the first one's text is passed over.
  t.is(trip.snippet, 'Day 3: the &lt;b&gt;<mark>zanzibar</mark>&lt;/b&gt; ferry leaves at noon &amp; returns at six.');
  t.deepEqual(trip.snippetAttachment, { id: a.attachments['trip:trip.pdf']!, fileName: 'trip.pdf' });
  // A prefix marks what it matched, in the same window.
  t.is(
    (await itemsOf(a, 'attachment:zanz*')).get(a.emails.trip!)!.snippet,
    'Day 3: the &lt;b&gt;<mark>zanzibar</mark>&lt;/b&gt; ferry leaves at noon &amp; returns at six.',
  );

  // The MCP tool returns the same items: its output schema (shared/dto.ts) carries the field.
  const client = await connectClient(a.h.url, a.fixture.keys.admin);
  try {
    const result = await call(client, 'search_emails', { q: 'attachment:zanzibar', snippets: true });
    t.falsy(result.isError);
    const page = result.structuredContent as unknown as PagedResult<Item>;
    t.deepEqual(
      page.items.map((i) => [i.snippet, i.snippetAttachment]),
      [[trip.snippet, { id: a.attachments['trip:trip.pdf']!, fileName: 'trip.pdf' }]],
    );
  } finally {
    await client.close();
  }
});

test('a body or subject holding a word of the query keeps its snippet; one holding none gets the attachment window', async (t) => {
  const a = t.context.attached;
  const both = (await itemsOf(a, 'itinerary attachment:zanzibar')).get(a.emails.trip!)!;
  t.is(both.snippet, 'See the attached <mark>itinerary</mark>.');
  t.false('snippetAttachment' in both);
  const subject = (await itemsOf(a, 'travel attachment:zanzibar')).get(a.emails.trip!)!;
  t.is(subject.snippet, '<mark>Travel</mark> plans');
  t.false('snippetAttachment' in subject);
  // `rcpt` matched only in the address (rcpt@example.com): the body shows none of the words.
  const address = (await itemsOf(a, 'rcpt attachment:zanzibar')).get(a.emails.trip!)!;
  t.regex(address.snippet!, /<mark>zanzibar<\/mark>/);
  t.is(address.snippetAttachment?.fileName, 'trip.pdf');
  // One page, each item from its own place.
  const mixed = await itemsOf(a, 'itinerary OR attachment:wombat');
  t.is(mixed.get(a.emails.trip!)!.snippet, 'See the attached <mark>itinerary</mark>.');
  t.false('snippetAttachment' in mixed.get(a.emails.trip!)!);
  t.is(mixed.get(a.emails.hostile!)!.snippet, 'The <mark>wombat</mark> report.');
  t.is(mixed.get(a.emails.hostile!)!.snippetAttachment?.fileName, HOSTILE_NAME);
  // A negated attachment: term is not why a message matched.
  const negated = (await itemsOf(a, 'itinerary -attachment:wombat')).get(a.emails.trip!)!;
  t.false('snippetAttachment' in negated);
});

test('without snippets=true an attachment: search adds neither snippet nor snippetAttachment', async (t) => {
  const a = t.context.attached;
  for (const extra of [{}, { snippets: 'false' }] as Array<Record<string, string>>) {
    const items = await itemsOf(a, 'attachment:zanzibar OR attachment:wombat', extra);
    t.deepEqual([...items.keys()].sort(), [a.emails.trip!, a.emails.hostile!].sort());
    for (const item of items.values()) {
      t.false('snippet' in item);
      t.false('snippetAttachment' in item);
    }
  }
});

test('a hostile file name is returned as data, unescaped, while the snippet is escaped', async (t) => {
  const a = t.context.attached;
  const item = (await itemsOf(a, 'attachment:wombat')).get(a.emails.hostile!)!;
  t.is(item.snippet, 'The <mark>wombat</mark> report.');
  t.deepEqual(item.snippetAttachment, { id: a.attachments[`hostile:${HOSTILE_NAME}`]!, fileName: HOSTILE_NAME });
});

test("only the first 200,000 characters of a message's attachment text, in its first 20 files, are looked through", async (t) => {
  const a = t.context.attached;
  const items = await itemsOf(a, 'attachment:quokka');
  // Every one of them matches (the index holds all the text); only the windows are bounded.
  t.deepEqual(
    [...items.keys()].sort(),
    [a.emails.within!, a.emails.beyond!, a.emails.single!, a.emails.files20!, a.emails.files21!].sort(),
  );
  const within = items.get(a.emails.within!)!;
  t.regex(within.snippet!, /^…(lorem )+<mark>quokka<\/mark>$/);
  t.deepEqual(within.snippetAttachment, { id: a.attachments['within:b-within.txt']!, fileName: 'b-within.txt' });
  t.deepEqual(items.get(a.emails.files20!)!.snippetAttachment, {
    id: a.attachments['files20:part20.txt']!,
    fileName: 'part20.txt',
  });
  t.is(items.get(a.emails.files20!)!.snippet, 'the <mark>quokka</mark> is here');
  for (const key of ['beyond', 'single', 'files21']) {
    const item = items.get(a.emails[key]!)!;
    t.false('snippet' in item, key);
    t.false('snippetAttachment' in item, key);
  }
});

test("each store reads at most the first 20 files and 200,000 characters of a message's attachment text", async (t) => {
  const a = t.context.attached;
  const ids = ['within', 'beyond', 'single', 'files21'].map((k) => a.emails[k]!);
  // The store's own read, not the snippet's: the bound holds in SQL, before any text reaches the
  // thread. A PostgreSQL context needs only `read` here.
  let texts = new Map<number, AttachmentText[]>();
  await changeArchive(a.h.settings.Database.Path, {
    sqlite: (db) => void (texts = sqliteTextsOf(db, ids)),
    postgres: async (client) => {
      const read = async (q: Sql) => (await client.query(q.toQuery())).rows;
      texts = await pgTextsOf({ read } as unknown as PgContext, ids);
    },
  });
  const shape = (key: string) => texts.get(a.emails[key]!)!.map((f) => [f.fileName, f.text.length]);
  t.deepEqual(shape('within'), [
    ['a.txt', 150_000],
    ['b-within.txt', 40_002],
  ]);
  t.deepEqual(shape('beyond'), [
    ['a.txt', 150_000],
    ['b-beyond.txt', 50_000],
  ]);
  t.deepEqual(shape('single'), [['c.txt', 200_000]]);
  t.deepEqual(
    shape('files21'),
    Array.from({ length: 20 }, (_, i) => [`part${String(i + 1).padStart(2, '0')}.txt`, 11]),
  );
  t.is(TEST_STORE === 'postgres', /^postgres/.test(a.h.settings.Database.Path), 'read from the store this run serves');
});

test('the file name a snippet names is cut at 1,000 characters; the id still names the file', (t) => {
  const long = `${'n'.repeat(5_000)}.pdf`;
  const [item] = withAttachmentSnippets(
    [{ id: 1, subject: 's' }],
    attachmentSnippetTerms(parseQuery('attachment:zeppelin'))!,
    new Map([[1, [{ id: 9, fileName: long, text: 'by zeppelin' }]]]),
  );
  t.is(item!.snippetAttachment!.id, 9);
  t.is(item!.snippetAttachment!.fileName.length, SNIPPET_FILE_NAME_CHARS);
  t.true(item!.snippetAttachment!.fileName.endsWith('n…'));
});
