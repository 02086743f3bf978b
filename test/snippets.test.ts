// Snippets (docs/search.md, "Snippets"): the window chosen, what is marked and escaped, and the
// REST parameter and MCP argument on the real gateway, on this run's store (TEST_STORE).
import anyTest, { type TestFn } from 'ava';
import {
  ATTACHMENT_SCAN_CHARS,
  attachmentSnippetTerms,
  makeSnippet,
  snippetTermsOf,
  withAttachmentSnippets,
  type SnippetTerms,
} from '../engine/search/snippet.js';
import { parseQuery } from '../shared/query-language.js';
import { scanTokens, tokenize, type TokenVisitor } from '../engine/search/unicode61.js';
import type { EmailSummaryDto, PagedResult } from '../shared/dto.js';
import { bearer, startApi, type ApiHarness } from './helpers/api.js';
import { call, connectClient, startMcpGateway, type McpHarness } from './helpers/mcp.js';

const test = anyTest as TestFn<{ api: ApiHarness; mcp: McpHarness }>;
const terms = (q: string): SnippetTerms => snippetTermsOf(q)!;

test.before(async (t) => {
  t.context.api = await startApi();
  t.context.mcp = await startMcpGateway();
});
test.after.always(async (t) => {
  await t.context.api?.close();
  await t.context.mcp?.close();
});

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
  ]);
  const out = withAttachmentSnippets(
    [
      { id: 1, subject: 's' },
      { id: 2, subject: 's' },
      { id: 3, subject: 's', snippet: 'the <mark>budget</mark>' },
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
});
