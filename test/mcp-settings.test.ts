// The Mcp settings that shape tool results (page size, attachment size and downloads), the
// access log the tools write, and what a failing engine looks like to an agent.
import anyTest, { type TestFn } from 'ava';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { EnginePool } from '../engine/pool/pool.js';
import type { EmailDetailDto, EmailSummaryDto, PagedResult } from '../shared/dto.js';
import type { JobKind } from '../shared/jobs.js';
import { capturingLogger } from './helpers/api.js';
import { accessLogRows, call, connectClient, jsonOf, startMcpGateway, textOf, type McpHarness } from './helpers/mcp.js';

interface Context {
  /** MaxResults 3, DefaultPageSize 2, MaxAttachmentBytes 16 */
  small: McpHarness;
  /** Mcp:AllowAttachmentDownloads false (REST downloads stay on) */
  noDownloads: McpHarness;
  logLines: Array<Record<string, unknown>>;
  clients: Client[];
}
const test = anyTest as TestFn<Context>;

test.before(async (t) => {
  const { logger, lines } = capturingLogger();
  const [small, noDownloads] = await Promise.all([
    startMcpGateway({ Mcp: { MaxResults: 3, DefaultPageSize: 2, MaxAttachmentBytes: 16 } }, { logger }),
    startMcpGateway({ Mcp: { AllowAttachmentDownloads: false } }),
  ]);
  t.context = { small, noDownloads, logLines: lines, clients: [] };
});

test.after.always(async (t) => {
  await Promise.all(t.context.clients.map((c) => c.close()));
  await Promise.all([t.context.small?.close(), t.context.noDownloads?.close()]);
});

async function client(t: { context: Context }, h: McpHarness, key: string): Promise<Client> {
  const c = await connectClient(h.url, key);
  t.context.clients.push(c);
  return c;
}

/** Records the kind of every job the gateway sends to its engine from now on. */
function spyOnEngine(engine: EnginePool): { kinds: JobKind[]; restore(): void } {
  const kinds: JobKind[] = [];
  const original = engine.run.bind(engine);
  engine.run = ((job: { kind: JobKind }) => {
    kinds.push(job.kind);
    return original(job as never);
  }) as EnginePool['run'];
  return { kinds, restore: () => void (engine.run = original) };
}

type Page = PagedResult<EmailSummaryDto>;

test('pageSize is clamped to [1, Mcp:MaxResults], and omitted or 0 means Mcp:DefaultPageSize', async (t) => {
  const { small } = t.context;
  const admin = await client(t, small, small.fixture.keys.admin);
  const cases: Array<[pageSize: number | undefined, expected: number]> = [
    [undefined, 2],
    [0, 2],
    [1, 1],
    [3, 3],
    [100, 3],
    [-5, 1],
  ];
  for (const [pageSize, expected] of cases) {
    const page = jsonOf<Page>(await call(admin, 'search_emails', pageSize === undefined ? {} : { pageSize }));
    t.is(page.pageSize, expected, `pageSize ${pageSize}`);
    t.is(page.items.length, expected, `pageSize ${pageSize}`);
    t.is(page.totalPages, Math.ceil(8 / expected));
  }
  const { tools } = await admin.listTools();
  const pageSize = (
    tools.find((x) => x.name === 'search_emails')!.inputSchema.properties as Record<string, { description: string }>
  ).pageSize!;
  t.regex(pageSize.description, /clamped to 1\.\.3; omitted or 0 means 2/);
});

test.serial(
  'an attachment above Mcp:MaxAttachmentBytes is refused by its size before any byte is read, and not logged',
  async (t) => {
    const { small } = t.context;
    const { budget } = small.fixture.emails;
    const admin = await client(t, small, small.fixture.keys.admin);
    const spy = spyOnEngine(small.gateway.engine);
    try {
      const tooBig = await call(admin, 'get_attachment', {
        id: budget,
        attachmentId: small.fixture.attachments['budget:notes.txt'],
      });
      t.true(tooBig.isError);
      t.regex(textOf(tooBig), /is 18 bytes, above this server's limit of 16 bytes \(Mcp:MaxAttachmentBytes\)/);
      t.false(spy.kinds.includes('attachmentChunk'), 'no content was read');

      const fits = await call(admin, 'get_attachment', {
        id: budget,
        attachmentId: small.fixture.attachments['budget:budget "Q1" €.xlsx'],
      });
      t.falsy(fits.isError);
      t.is(Buffer.from(jsonOf<{ base64Data: string }>(fits).base64Data, 'base64').toString(), 'fake xlsx bytes');
      t.true(spy.kinds.includes('attachmentChunk'));
    } finally {
      spy.restore();
    }
    const downloads = (await accessLogRows(small)).filter(
      (r) => r.type === 'Download' && r.user_id === small.fixture.users.admin,
    );
    t.is(downloads.length, 1, 'only the attachment that was returned is logged');
  },
);

test('with Mcp:AllowAttachmentDownloads false, get_attachment is an error without touching the archive; get_email still lists attachments', async (t) => {
  const { noDownloads: h } = t.context;
  const admin = await client(t, h, h.fixture.keys.admin);
  const result = await call(admin, 'get_attachment', {
    id: h.fixture.emails.budget,
    attachmentId: h.fixture.attachments['budget:notes.txt'],
  });
  t.true(result.isError);
  t.regex(textOf(result), /disabled by this server's settings \(Mcp:AllowAttachmentDownloads=false\)/);
  t.falsy(result.structuredContent);

  const email = jsonOf<EmailDetailDto>(await call(admin, 'get_email', { id: h.fixture.emails.budget }));
  t.deepEqual(
    email.attachments.map((a) => a.fileName),
    ['budget "Q1" €.xlsx', 'notes.txt'],
  );
  const { tools } = await admin.listTools();
  t.regex(tools.find((x) => x.name === 'get_attachment')!.description!, /downloads are disabled on this server/);

  // The REST switch is a separate setting.
  const rest = await fetch(
    `${h.base}/api/v1/emails/${h.fixture.emails.budget}/attachments/${h.fixture.attachments['budget:notes.txt']}`,
    {
      headers: { Authorization: `Bearer ${h.fixture.keys.admin}` },
    },
  );
  t.is(rest.status, 200);
  t.false((await accessLogRows(h)).some((r) => r.type === 'Download' && r.source === 'mcp'));
});

test('the tools write Search, Open and Download to the access log for the key owner, exactly as REST does', async (t) => {
  const { small: h } = t.context;
  const { budget, family } = h.fixture.emails;
  const xlsx = h.fixture.attachments['budget:budget "Q1" €.xlsx'];
  const alice = await client(t, h, h.fixture.keys.alice);
  await call(alice, 'list_accounts');
  await call(alice, 'list_folders', { accountId: h.fixture.accounts.work });
  await call(alice, 'search_emails', { q: 'budget', accountId: h.fixture.accounts.work });
  await call(alice, 'get_email', { id: budget });
  t.deepEqual((await call(alice, 'get_email', { id: family })).structuredContent, { email: null });
  await call(alice, 'get_attachment', { id: budget, attachmentId: xlsx });

  const auth = { headers: { Authorization: `Bearer ${h.fixture.keys.alice}` } };
  for (const path of [
    `/api/v1/emails?q=budget&accountId=${h.fixture.accounts.work}`,
    `/api/v1/emails/${budget}`,
    `/api/v1/emails/${family}`,
    `/api/v1/emails/${budget}/attachments/${xlsx}`,
  ]) {
    const res = await fetch(h.base + path, auth);
    await res.arrayBuffer();
  }

  const rows = (await accessLogRows(h)).filter((r) => r.user_id === h.fixture.users.alice);
  const view = (source: string) =>
    rows.filter((r) => r.source === source).map((r) => ({ type: r.type, email: r.email_id, account: r.account_id }));
  const expected = [
    { type: 'Search', email: null, account: h.fixture.accounts.work },
    { type: 'Open', email: budget, account: h.fixture.accounts.work },
    { type: 'Download', email: budget, account: h.fixture.accounts.work },
  ];
  t.deepEqual(view('mcp'), expected);
  t.deepEqual(view('api'), expected);
  const mcpSearch = rows.find((r) => r.source === 'mcp' && r.type === 'Search')!;
  t.like(mcpSearch.search_params, { q: 'budget', accountId: h.fixture.accounts.work });
  t.is(mcpSearch.key_prefix, h.fixture.keys.alice.slice(0, mcpSearch.key_prefix!.length));
});

test.serial('an engine failure is a tool error that reveals nothing, never a JSON-RPC error', async (t) => {
  const { small: h, logLines } = t.context;
  const admin = await client(t, h, h.fixture.keys.admin);
  const original = h.gateway.engine.run.bind(h.gateway.engine);
  h.gateway.engine.run = ((job: { kind: JobKind }) =>
    job.kind === 'search'
      ? Promise.reject(new Error('SQLITE_CORRUPT: secret internals'))
      : original(job as never)) as EnginePool['run'];
  try {
    const result = await call(admin, 'search_emails', { q: 'budget' });
    t.true(result.isError);
    t.is(textOf(result), 'search_emails failed because of a server error, which has been logged; try again later.');
    t.true(logLines.some((l) => l.msg === 'MCP tool call failed' && l.tool === 'search_emails'));
  } finally {
    h.gateway.engine.run = original;
  }
});
