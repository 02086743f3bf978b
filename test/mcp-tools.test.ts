// Acceptance tests of the MCP tools (SPEC.md, “MCP server”): discovery, every tool for an
// administrator's and restricted users' keys, search parameters and page-size clamping, and
// argument errors, through the SDK's own Client against the real gateway on a real port.
import anyTest, { type TestFn } from 'ava';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { readFileSync } from 'node:fs';
import type { EmailDetailDto, EmailSummaryDto, FolderNodeDto, MailAccountDto, PagedResult } from '../shared/dto.js';
import {
  call,
  connectClient,
  jsonOf,
  startMcpGateway,
  textOf,
  TOOL_NAMES_SORTED,
  type McpHarness,
} from './helpers/mcp.js';
import { HAS_READ_FLAG, servedKeys } from './helpers/store.js';

const test = anyTest as TestFn<{ h: McpHarness; admin: Client; alice: Client; bob: Client; carol: Client }>;

test.before(async (t) => {
  const h = await startMcpGateway();
  const [admin, alice, bob, carol] = await Promise.all(
    [h.fixture.keys.admin, h.fixture.keys.alice, h.fixture.keys.bob, h.fixture.keys.carol].map((key) =>
      connectClient(h.url, key),
    ),
  );
  t.context = { h, admin: admin!, alice: alice!, bob: bob!, carol: carol! };
});

test.after.always(async (t) => {
  const { h, admin, alice, bob, carol } = t.context;
  await Promise.all([admin, alice, bob, carol].map((c) => c?.close()));
  await h?.close();
});

type Page = PagedResult<EmailSummaryDto>;
const search = async (c: Client, args: Record<string, unknown>) => jsonOf<Page>(await call(c, 'search_emails', args));
const ids = (page: Page) => page.items.map((e) => e.id).sort((a, b) => a - b);

test('initialize names this product, its package version and gives instructions on paging', (t) => {
  const { admin } = t.context;
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  t.like(admin.getServerVersion(), { name: 'mail-archive-gateway', version: pkg.version });
  const instructions = admin.getInstructions() ?? '';
  t.regex(instructions, /read-only/i);
  t.regex(instructions, /page \+ 1/);
  t.is(instructions.split(/(?<=\.)\s+/).length, 2, 'two sentences');
});

test('tools/list offers the five tools of SPEC.md, get_thread and aggregate_emails, with parameters, required flags and annotations', async (t) => {
  const { tools } = await t.context.admin.listTools();
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  t.deepEqual([...byName.keys()].sort(), TOOL_NAMES_SORTED);

  const params = (name: string) => byName.get(name)!.inputSchema;
  t.deepEqual(Object.keys(params('list_accounts').properties ?? {}), []);
  t.deepEqual(params('list_folders').required, ['accountId']);
  t.deepEqual(params('get_email').required, ['id']);
  t.deepEqual(params('get_thread').required, ['id']);
  t.deepEqual(params('get_attachment').required?.sort(), ['attachmentId', 'id']);
  const searchSchema = params('search_emails');
  t.deepEqual(Object.keys(searchSchema.properties ?? {}).sort(), [
    'accountId',
    'direction',
    'folder',
    'from',
    'include',
    'page',
    'pageSize',
    'q',
    'snippets',
    'sortBy',
    'sortOrder',
    'to',
  ]);
  t.falsy(searchSchema.required?.length, 'every search parameter is optional');
  const prop = (name: string) =>
    (searchSchema.properties as Record<string, { type?: string; enum?: string[]; description?: string }>)[name]!;
  for (const p of ['accountId', 'page', 'pageSize']) t.is(prop(p).type, 'integer', p);
  for (const p of ['q', 'from', 'to', 'folder']) t.is(prop(p).type, 'string', p);
  t.deepEqual(prop('direction').enum, ['incoming', 'outgoing']);
  t.deepEqual(prop('sortOrder').enum, ['asc', 'desc']);
  for (const key of ['sentdate', 'sentDate', 'receiveddate', 'receivedDate', 'subject', 'from', 'to'])
    t.true(prop('sortBy').enum!.includes(key), key);
  t.regex(prop('pageSize').description!, /1\.\.100.*0 means 20/);

  for (const tool of tools) {
    t.like(
      tool.annotations,
      { readOnlyHint: true, openWorldHint: false, idempotentHint: true, destructiveHint: false },
      tool.name,
    );
    t.true((tool.description ?? '').length > 80, `${tool.name} has a description an agent can act on`);
    t.is(tool.outputSchema?.type, 'object', `${tool.name} declares an object output schema`);
    for (const [name, schema] of Object.entries(tool.inputSchema.properties ?? {})) {
      t.truthy((schema as { description?: string }).description, `${tool.name}.${name} is described`);
    }
  }
});

test('list_accounts returns the accounts each key may read, as a JSON array and as structuredContent items', async (t) => {
  const { admin, alice, bob, carol, h } = t.context;
  const result = await call(admin, 'list_accounts');
  t.falsy(result.isError);
  const accounts = jsonOf<MailAccountDto[]>(result);
  t.deepEqual(accounts.map((a) => a.name).sort(), ['Personal', 'Shared', 'Work']);
  t.deepEqual(result.structuredContent, { items: accounts });
  t.deepEqual(Object.keys(accounts[0]!).sort(), ['emailAddress', 'id', 'isEnabled', 'lastSync', 'name', 'provider']);

  const { work, personal, shared } = h.fixture.accounts;
  t.deepEqual(
    jsonOf<MailAccountDto[]>(await call(alice, 'list_accounts'))
      .map((a) => a.id)
      .sort(),
    [work, shared].sort(),
  );
  t.deepEqual(
    jsonOf<MailAccountDto[]>(await call(bob, 'list_accounts')).map((a) => a.id),
    [personal],
  );
  t.deepEqual(jsonOf(await call(carol, 'list_accounts')), []);
});

test('list_folders returns the nested tree, and an empty list for a hidden or missing account', async (t) => {
  const { admin, bob, h } = t.context;
  const result = await call(admin, 'list_folders', { accountId: h.fixture.accounts.work });
  const tree = jsonOf<FolderNodeDto[]>(result);
  t.deepEqual(result.structuredContent, { items: tree });
  const inbox = tree.find((f) => f.fullPath === 'INBOX');
  t.like(inbox, { name: 'INBOX', level: 0 });
  t.deepEqual(
    inbox!.children.map((c) => [c.fullPath, c.level, c.totalCount]),
    [['INBOX/Invoices', 1, 1]],
  );
  const q4 = tree.find((f) => f.name === 'Archive')?.children[0]?.children[0];
  t.like(q4, { fullPath: 'Archive/2023/Q4', level: 2, totalCount: 1 });

  for (const [client, accountId] of [
    [bob, h.fixture.accounts.work],
    [admin, 987654],
  ] as const) {
    const empty = await call(client, 'list_folders', { accountId });
    t.falsy(empty.isError);
    t.is(textOf(empty), '[]');
    t.deepEqual(empty.structuredContent, { items: [] });
  }
});

test('search_emails finds only what the key may read, with the pagination envelope', async (t) => {
  const { admin, alice, bob, carol, h } = t.context;
  const { budget, sent, family } = h.fixture.emails;
  const result = await call(admin, 'search_emails', { q: 'budget' });
  const page = jsonOf<Page>(result);
  t.deepEqual(result.structuredContent, page, 'structuredContent is the same object as the text');
  t.like(page, { page: 1, pageSize: 20, totalItems: 3, totalPages: 1 });
  t.deepEqual(
    ids(page),
    [budget!, sent!, family!].sort((a, b) => a - b),
  );
  t.deepEqual(
    Object.keys(page.items[0]!).sort(),
    servedKeys(['accountId', 'folderName', 'from', 'hasAttachments', 'id', 'isOutgoing', 'sentDate', 'subject', 'to']),
  );

  t.deepEqual(
    ids(await search(alice, { q: 'budget' })),
    [budget!, sent!].sort((a, b) => a - b),
  );
  t.deepEqual(ids(await search(bob, { q: 'budget' })), [family!]);
  t.like(await search(carol, { q: 'budget' }), { totalItems: 0, items: [] });
  // An account the key may not read gives nothing rather than an error, as in REST.
  t.like(await search(bob, { accountId: h.fixture.accounts.work }), { totalItems: 0 });
});

test('search_emails filters, sorts and pages like GET /api/v1/emails', async (t) => {
  const { admin, h } = t.context;
  const { work } = h.fixture.accounts;
  const cases: Array<Record<string, string | number>> = [
    { direction: 'outgoing' },
    { accountId: work, folder: 'INBOX/Invoices' },
    { from: '2024-03-01', to: '2024-03-06' },
    { from: '2024-03-05T09:30:00Z', to: '2024-03-06T09:59:59Z' },
    { sortBy: 'subject', sortOrder: 'asc' },
    { sortBy: 'receivedDate', sortOrder: 'asc', pageSize: 3, page: 2 },
    { q: 'subject:budget' },
  ];
  for (const args of cases) {
    const rest = await fetch(
      `${h.base}/api/v1/emails?${new URLSearchParams(Object.entries(args).map(([k, v]): [string, string] => [k, String(v)]))}`,
      {
        headers: { Authorization: `Bearer ${h.fixture.keys.admin}` },
      },
    );
    t.is(rest.status, 200, JSON.stringify(args));
    t.deepEqual(await search(admin, args), (await rest.json()) as Page, JSON.stringify(args));
  }
  // The date rules: a date-only upper bound covers its whole day; a date-time is exact.
  t.true(ids(await search(admin, { to: '2024-03-06' })).includes(h.fixture.emails.sent!));
  t.false(ids(await search(admin, { to: '2024-03-06T09:00:00Z' })).includes(h.fixture.emails.sent!));
});

test('search_emails accepts sortBy in SPEC.md and REST spelling, and pages past the end are empty', async (t) => {
  const { admin } = t.context;
  for (const [lower, camel] of [
    ['sentdate', 'sentDate'],
    ['receiveddate', 'receivedDate'],
  ]) {
    const a = await search(admin, { sortBy: lower, sortOrder: 'asc' });
    const b = await search(admin, { sortBy: camel, sortOrder: 'asc' });
    t.deepEqual(a, b);
    t.is(a.items.length, 8);
  }
  const dates = (await search(admin, {})).items.map((e) => e.sentDate);
  t.deepEqual(dates, [...dates].sort().reverse(), 'default: sentDate, newest first');
  t.like(await search(admin, { page: 99 }), { page: 99, totalItems: 8, totalPages: 1, items: [] });
});

test('invalid arguments are tool errors that name the argument and what it accepts', async (t) => {
  const { admin } = t.context;
  const cases: Array<[tool: string, args: Record<string, unknown>, expected: RegExp[]]> = [
    ['search_emails', { sortBy: 'date' }, [/sortBy/, /sentdate/, /receiveddate/, /subject/]],
    ['search_emails', { sortOrder: 'up' }, [/sortOrder/, /asc, desc/]],
    ['search_emails', { direction: 'sideways' }, [/direction/, /incoming, outgoing/]],
    ['search_emails', { from: 'yesterday' }, [/from/, /YYYY-MM-DD/, /ISO 8601/]],
    ['search_emails', { to: '2024-02-30' }, [/\bto\b/, /YYYY-MM-DD/]],
    ['search_emails', { from: '2024-03-02', to: '2024-03-01' }, [/from is after to/]],
    ['search_emails', { page: 0 }, [/page is 1-based/]],
    ['search_emails', { page: 'two' }, [/page must be a whole number/]],
    ['search_emails', { pageSize: 2.5 }, [/pageSize must be a whole number/]],
    ['search_emails', { q: 42 }, [/q must be a string/]],
    ['search_emails', { q: 'budget)' }, [/Invalid argument: q: /, /"\)" without a matching "\("/]],
    // A query left open was searched as a guess and answered an empty page.
    ['search_emails', { q: 'from:(' }, [/Invalid argument: q: /, /from: must be followed by a word/]],
    ['search_emails', { q: '"unterminated' }, [/Invalid argument: q: /, /without its closing '"'/]],
    [
      'aggregate_emails',
      { groupBy: 'month', q: '(budget' },
      [/Invalid argument: q: /, /"\(" without its closing "\)"/],
    ],
    ['get_email', {}, [/id is required/, /search_emails/]],
    ['get_email', { id: '12' }, [/id must be a whole number/]],
    ['list_folders', { accountId: 2 ** 40 }, [/accountId must be a whole number \(32-bit integer\)/]],
    ['get_attachment', { id: 1 }, [/attachmentId is required/, /get_email/]],
  ];
  for (const [tool, args, expected] of cases) {
    const result = await call(admin, tool, args);
    const label = `${tool} ${JSON.stringify(args)}`;
    t.true(result.isError, label);
    t.falsy(result.structuredContent, label);
    for (const pattern of expected) t.regex(textOf(result), pattern, label);
  }
});

test('get_email returns the full message, and null (not an error) when hidden or missing', async (t) => {
  const { admin, alice, h } = t.context;
  const { budget, family } = h.fixture.emails;
  const result = await call(admin, 'get_email', { id: budget });
  const email = jsonOf<EmailDetailDto>(result);
  t.deepEqual(result.structuredContent, { email });
  t.like(email, {
    id: budget,
    accountId: h.fixture.accounts.work,
    subject: 'Quarterly budget review',
    cc: 'boss@work.example',
    bcc: '',
    receivedDate: '2024-03-05T09:31:00.000Z',
    textBody: 'Please review the attached budget spreadsheet.',
    htmlBody: '<p>Please review the attached <b>budget</b> spreadsheet.</p>',
    hasAttachments: true,
  });
  t.truthy(email.messageId);
  t.deepEqual(
    email.attachments.map((a) => [a.fileName, a.contentType, a.size]),
    [
      ['budget "Q1" €.xlsx', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 15],
      ['notes.txt', 'text/plain', 18],
    ],
  );

  for (const [client, id] of [
    [alice, family],
    [admin, 987654],
  ] as const) {
    const none = await call(client, 'get_email', { id });
    t.falsy(none.isError);
    t.deepEqual(none.structuredContent, { email: null });
    // The result block is null; a second block explains it to a model that reads only text.
    t.deepEqual(
      none.content.map((c) => (c.type === 'text' ? c.text : c.type)),
      [
        'null',
        `There is no email ${id} that this key may read: it does not exist, or its account is not visible to this key.`,
      ],
    );
  }
});

test('get_attachment returns the bytes as base64 with their metadata', async (t) => {
  const { admin, alice, h } = t.context;
  const emailId = h.fixture.emails.budget!;
  const attachmentId = h.fixture.attachments['budget:notes.txt']!;
  for (const client of [admin, alice]) {
    const result = await call(client, 'get_attachment', { id: emailId, attachmentId });
    t.falsy(result.isError);
    const body = jsonOf<Record<string, unknown>>(result);
    // The bytes are sent once: in the text block's JSON, not again in structuredContent.
    const { base64Data: _bytes, ...metadata } = body;
    t.deepEqual(result.structuredContent, metadata);
    t.deepEqual(body, {
      id: attachmentId,
      emailId,
      fileName: 'notes.txt',
      contentType: 'text/plain',
      size: 18,
      base64Data: Buffer.from('line one\nline two\n').toString('base64'),
    });
  }
});

test('get_attachment says "not found" in the same words for a hidden and a missing attachment', async (t) => {
  const { bob, h } = t.context;
  const hiddenAttachment = h.fixture.attachments['budget:notes.txt']!;
  const hidden = await call(bob, 'get_attachment', { id: h.fixture.emails.budget, attachmentId: hiddenAttachment });
  // Bob may read this email, but it has no attachment with that id.
  const missing = await call(bob, 'get_attachment', { id: h.fixture.emails.family, attachmentId: hiddenAttachment });
  t.true(hidden.isError);
  t.true(missing.isError);
  t.regex(textOf(hidden), /was not found; check both ids with get_email/);
  t.is(textOf(hidden).replace(/\d+/g, 'N'), textOf(missing).replace(/\d+/g, 'N'));
});

test('search_emails with is:read: an invalid argument where the archive has no read flag; isRead on items where it has', async (t) => {
  const { admin } = t.context;
  const result = await call(admin, 'search_emails', { q: 'is:unread' });
  if (!HAS_READ_FLAG) {
    t.true(result.isError);
    t.regex(textOf(result), /^Invalid argument: is:read and is:unread need the read flag of Mail Archiver/);
    return;
  }
  t.falsy(result.isError);
  const page = jsonOf<Page>(result);
  t.true(page.totalItems > 0);
  t.true(page.items.every((i) => i.isRead === false));
  t.is((await search(admin, { q: 'is:read' })).totalItems, 0, 'nothing was read in the fixture');
  const detail = jsonOf<EmailDetailDto>(await call(admin, 'get_email', { id: page.items[0]!.id }));
  t.is(detail.isRead, false);
});
