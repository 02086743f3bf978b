// Conversations (docs/decisions.md, ADR 14): threading at import from References and
// In-Reply-To, the subject fallback, GET /api/v1/emails/{id}/thread, MCP get_thread, thread:<id>
// in q and include=threadId, on the store this run tests (TEST_STORE: the PostgreSQL copy links
// the same messages from their RawHeaders, engine/postgres/threads.ts). The SQLite-only parts (the
// in-memory index, migration 4's backfill, re-import filling in headers) check the SQLite file.
import anyTest, { type TestFn } from 'ava';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from '../engine/sqlite/driver.js';
import { LATEST_VERSION, openArchive, type Db } from '../engine/sqlite/open.js';
import { migrations } from '../engine/sqlite/migrations.js';
import { importPaths } from '../engine/import/importer.js';
import { formatMboxEntry } from '../engine/import/mbox.js';
import { buildSnapshot } from '../engine/sqlite/index-build.js';
import { adoptSnapshot, currentSnapshot } from '../engine/sqlite/index-share.js';
import { Snapshot } from '../engine/search/bitsets/snapshot.js';
import { exactCount, searchEmails } from '../engine/sqlite/search.js';
import { getThread } from '../engine/sqlite/threads.js';
import { normaliseSubject, referencedIds, referencedIdsFromHeaders, subjectMatch } from '../engine/rules/threads.js';
import type { EmailSummaryDto, PagedResult } from '../shared/dto.js';
import { parseSearchInput } from '../shared/search-input.js';
import { parseQuery, QuerySyntaxError } from '../shared/query-language.js';
import { bearer, listen, startApi, type ApiHarness } from './helpers/api.js';
import { createFixture, tempDir, type Fixture } from './helpers/fixture.js';
import { call, connectClient, jsonOf } from './helpers/mcp.js';
import { changeArchive, readAccessLog, servedKeys, TEST_STORE, withAdmin } from './helpers/store.js';

interface Mail {
  id: string;
  subject: string;
  date: string;
  from?: string;
  inReplyTo?: string;
  references?: string[];
}

/** A mailing-list conversation and its neighbours, in file order (ids are given in this order). */
const LIST: Mail[] = [
  { id: 'a@list', subject: '[dev-list] Release plan', date: '2024-05-01T10:00:00Z' },
  {
    id: 'b@list',
    subject: 'Re: [dev-list] Release plan',
    date: '2024-05-01T11:00:00Z',
    inReplyTo: 'a@list',
    references: ['a@list'],
  },
  // A child archived before its parent: linked only by References (the subjects differ).
  {
    id: 'x2@list',
    subject: 'Re: Build broken on ARM',
    date: '2024-05-02T09:00:00Z',
    inReplyTo: 'x1@list',
    references: ['x1@list'],
  },
  {
    id: 'c@list',
    subject: 'AW: Re: [dev-list] Release plan',
    date: '2024-05-02T10:00:00Z',
    inReplyTo: 'b@list',
    references: ['a@list', 'b@list'],
  },
  { id: 'x1@list', subject: 'Build broken', date: '2024-05-02T08:00:00Z' },
  // A broken chain: a client that dropped References and In-Reply-To; joined by subject.
  { id: 'f@list', subject: 'RE: [dev-list] Release plan', date: '2024-05-04T10:00:00Z' },
  // The same subject, far outside the subject window: a conversation of its own.
  { id: 'h@list', subject: 'Re: [dev-list] Release plan', date: '2024-09-01T10:00:00Z' },
  // Two unrelated mails with the same subject and no reply prefix never merge.
  { id: 'g1@else', subject: 'Hello', date: '2024-05-01T10:00:00Z', from: 'one@else.example' },
  { id: 'g2@else', subject: 'Hello', date: '2024-05-02T10:00:00Z', from: 'two@else.example' },
  // Two conversations and a message that references both: they merge into the smaller id.
  { id: 'y1@list', subject: 'Topic Y', date: '2024-06-01T10:00:00Z' },
  { id: 'z1@list', subject: 'Topic Z', date: '2024-06-01T11:00:00Z' },
  {
    id: 'w@list',
    subject: 'Re: Topic Y and Topic Z',
    date: '2024-06-02T10:00:00Z',
    inReplyTo: 'z1@list',
    references: ['y1@list'],
  },
];

/** Another account's copy of a reply in the list conversation: threads never cross accounts. */
const PERSONAL: Mail[] = [
  {
    id: 'p@home',
    subject: 'Re: [dev-list] Release plan',
    date: '2024-05-01T12:00:00Z',
    inReplyTo: 'a@list',
    references: ['a@list'],
  },
];

function raw(m: Mail): Buffer {
  const lines = [
    `From: ${m.from ?? 'dev@list.example'}`,
    'To: dev-list@list.example',
    `Subject: ${m.subject}`,
    `Date: ${new Date(m.date).toUTCString()}`,
    `Message-ID: <${m.id}>`,
    ...(m.inReplyTo ? [`In-Reply-To: <${m.inReplyTo}>`] : []),
    // Folded over lines, as list software writes long chains.
    ...(m.references ? [`References: ${m.references.map((r) => `<${r}>`).join('\r\n\t')}`] : []),
    'Content-Type: text/plain; charset=utf-8',
    '',
    `Body of ${m.id}.`,
    '',
  ];
  return Buffer.from(lines.join('\r\n'));
}

function writeMbox(path: string, mails: Mail[]): void {
  writeFileSync(path, Buffer.concat(mails.map((m) => formatMboxEntry(raw(m), 'dev@list.example', new Date(m.date)))));
}

/** Ids by Message-ID (without brackets), read from the SQLite file. */
function idsByMessageId(db: Db): Record<string, number> {
  const rows = db.prepare('SELECT id, message_id FROM emails').all() as Array<{ id: number; message_id: string }>;
  return Object.fromEntries(rows.map((r) => [r.message_id.replace(/^<|>$/g, ''), r.id]));
}

interface Ctx {
  fixture: Fixture;
  api: ApiHarness;
  /** Ids by Message-ID: list mail in the work account, p@home in the personal one. */
  ids: Record<string, number>;
  /** The personal account's copy (a separate dict: same keys would clash). */
  personal: number;
}
const test = anyTest as TestFn<Ctx>;

test.before(async (t) => {
  const fixture = createFixture();
  writeMbox(join(fixture.dir, 'list.mbox'), LIST);
  writeMbox(join(fixture.dir, 'personal.mbox'), PERSONAL);
  const db = openArchive(fixture.dbPath);
  try {
    const summary = await importPaths(db, [join(fixture.dir, 'list.mbox')], {
      accountId: fixture.accounts.work,
      folder: 'Lists/dev',
    });
    if (summary.imported !== LIST.length) throw new Error(`imported ${summary.imported} of ${LIST.length}`);
    await importPaths(db, [join(fixture.dir, 'personal.mbox')], { accountId: fixture.accounts.personal });
  } finally {
    db.close();
  }
  const check = new Database(fixture.dbPath, { readonly: true });
  const all = idsByMessageId(check);
  const personal = check.prepare("SELECT id FROM emails WHERE message_id = '<p@home>'").pluck().get() as number;
  check.close();
  const api = await startApi({ Mcp: { Enabled: true, RateLimitPerMinute: 1_000_000 } }, { useFixture: fixture });
  t.context = { fixture, api, ids: all, personal };
});

test.after.always(async (t) => {
  await t.context.api?.close();
  t.context.fixture?.cleanup();
});

const getThread_ = async (t: { context: Ctx }, id: number, key: string, status = 200) =>
  (await t.context.api.request.get(`/api/v1/emails/${id}/thread`).set(bearer(key)).expect(status)).body as
    EmailSummaryDto[] | Record<string, unknown>;

const idsOf = (items: EmailSummaryDto[]) => items.map((i) => i.id);

test('the threading rules: subjects, reference lists, raw headers', (t) => {
  t.deepEqual(normaliseSubject('Re: AW: [dev-list]  Fwd:   Release   PLAN'), { key: 'release plan', reply: true });
  t.deepEqual(normaliseSubject('[dev-list] Release plan'), { key: 'release plan', reply: false });
  t.deepEqual(normaliseSubject('SV: Vs: Antw: Réf: TR: WG: Fw: Re[2]: x'), { key: 'x', reply: true });
  t.deepEqual(normaliseSubject('回复：答复: 转发: 会议'), { key: '会议', reply: true });
  t.deepEqual(normaliseSubject('Re:'), { key: '', reply: true }, 'nothing left: never groups');
  t.deepEqual(normaliseSubject('Regarding the plan'), { key: 'regarding the plan', reply: false });
  t.deepEqual(referencedIds(['<a@x>', '<b@x>'], '<b@x>', '<self@x>'), ['a@x', 'b@x']);
  t.deepEqual(referencedIds('<a@x> <self@x>', undefined, '<self@x>'), ['a@x'], 'never itself');
  t.deepEqual(
    referencedIdsFromHeaders('Subject: x\r\nReferences: <a@x>\r\n\t<b@x>\r\nIn-Reply-To: <c@x> (comment)\r\n'),
    ['a@x', 'b@x', 'c@x'],
  );
  t.deepEqual(referencedIdsFromHeaders(null), []);
  // The subject fallback: a reply joins the message before it, else the one after it; a message
  // without a prefix joins only a later reply.
  const at = (day: number) => Date.parse('2024-05-01T00:00:00Z') + day * 86_400_000;
  const c = (threadId: number, day: number, subject: string) => ({ threadId, sentDate: at(day), subject });
  const pool = [c(1, 0, 'Weekly report'), c(2, 2, 'Re: Weekly report'), c(3, 7, 'Weekly report')];
  t.is(subjectMatch({ subject: 'RE: weekly  report', sentDate: at(3) }, pool), 2, 'nearest earlier');
  t.is(subjectMatch({ subject: 'Re: Weekly report', sentDate: at(-1) }, pool), 1, 'none earlier: nearest later');
  t.is(subjectMatch({ subject: 'Weekly report', sentDate: at(1) }, pool), 2, 'an original: its later reply');
  t.is(subjectMatch({ subject: 'Weekly report', sentDate: at(14) }, pool), null, 'a new occurrence stays apart');
  t.is(subjectMatch({ subject: 'Re: Weekly report', sentDate: at(40) }, pool), null, 'outside 30 days');
  t.is(subjectMatch({ subject: 'Re: Monthly report', sentDate: at(3) }, pool), null, 'another subject');
  const known = [{ ...c(2, 2, 'Re: Weekly report'), hasRefs: true }];
  t.is(subjectMatch({ subject: 'Weekly report', sentDate: at(1) }, known), null, 'a reply whose parent is known');
});

test('thread: in q is a node; a non-integer id is a syntax error that says what to write', (t) => {
  t.deepEqual(parseQuery('thread:42'), { type: 'thread', id: 42 });
  t.deepEqual(parseQuery('budget thread:7'), {
    type: 'and',
    children: [
      { type: 'text', field: null, text: 'budget', words: ['budget'], prefix: false },
      { type: 'thread', id: 7 },
    ],
  });
  const err = t.throws(() => parseQuery('thread:abc'), { instanceOf: QuerySyntaxError });
  t.regex(err!.message, /thread:abc is not a message id.*thread:42/);
  t.throws(() => parseQuery('thread:0'), { instanceOf: QuerySyntaxError });
  t.throws(() => parseQuery('thread:99999999999'), { instanceOf: QuerySyntaxError });
});

test('a mailing-list thread: References chains, a broken chain joined by subject, oldest first', async (t) => {
  const { ids, fixture } = t.context;
  const thread = (await getThread_(t, ids['c@list']!, fixture.keys.admin)) as EmailSummaryDto[];
  t.deepEqual(idsOf(thread), [ids['a@list'], ids['b@list'], ids['c@list'], ids['f@list']]);
  t.is(thread[0]!.subject, '[dev-list] Release plan');
  t.deepEqual(
    thread.map((i) => i.sentDate),
    [...thread.map((i) => i.sentDate)].sort(),
    'oldest first',
  );
  // Any member gives the same conversation.
  t.deepEqual(idsOf((await getThread_(t, ids['f@list']!, fixture.keys.admin)) as EmailSummaryDto[]), idsOf(thread));
  // The summaries are EmailSummaryDto exactly: no threadId unless asked for.
  t.deepEqual(
    Object.keys(thread[0]!).sort(),
    servedKeys(['accountId', 'folderName', 'from', 'hasAttachments', 'id', 'isOutgoing', 'sentDate', 'subject', 'to']),
  );
});

test('a child archived before its parent joins it when the parent arrives', async (t) => {
  const { ids, fixture } = t.context;
  t.true(ids['x2@list']! < ids['x1@list']!, 'the reply was imported first');
  const thread = (await getThread_(t, ids['x2@list']!, fixture.keys.admin)) as EmailSummaryDto[];
  t.deepEqual(idsOf(thread), [ids['x1@list'], ids['x2@list']], 'parent first: it was sent first');
});

test('unrelated mail with the same subject, and a reply outside the window, stay apart', async (t) => {
  const { ids, fixture } = t.context;
  t.deepEqual(idsOf((await getThread_(t, ids['g1@else']!, fixture.keys.admin)) as EmailSummaryDto[]), [ids['g1@else']]);
  t.deepEqual(idsOf((await getThread_(t, ids['g2@else']!, fixture.keys.admin)) as EmailSummaryDto[]), [ids['g2@else']]);
  t.deepEqual(idsOf((await getThread_(t, ids['h@list']!, fixture.keys.admin)) as EmailSummaryDto[]), [ids['h@list']]);
});

test('a message referencing two conversations merges them; the smaller id names the result', async (t) => {
  const { ids, fixture, api } = t.context;
  const thread = (await getThread_(t, ids['z1@list']!, fixture.keys.admin)) as EmailSummaryDto[];
  t.deepEqual(idsOf(thread), [ids['y1@list'], ids['z1@list'], ids['w@list']]);
  const res = await api.request
    .get('/api/v1/emails')
    .query({ q: `thread:${ids['z1@list']}`, include: 'threadId' })
    .set(bearer(fixture.keys.admin))
    .expect(200);
  const page = res.body as PagedResult<EmailSummaryDto>;
  t.is(page.totalItems, 3, 'thread: accepts any member id, also one that no longer names the conversation');
  t.true(page.items.every((i) => i.threadId === ids['y1@list']));
});

test("threads are per account: a restricted key never sees another account's member", async (t) => {
  const { ids, fixture, personal } = t.context;
  // bob sees only the personal account: its copy of the reply is alone there.
  t.deepEqual(idsOf((await getThread_(t, personal, fixture.keys.bob)) as EmailSummaryDto[]), [personal]);
  // The admin sees both accounts; the work conversation still holds no personal message.
  const work = (await getThread_(t, ids['a@list']!, fixture.keys.admin)) as EmailSummaryDto[];
  t.false(idsOf(work).includes(personal));
  t.true(work.every((i) => i.accountId === fixture.accounts.work));
  // thread:<a work message> through bob's key finds nothing; through alice's the work messages.
  const bob = await t.context.api.request
    .get('/api/v1/emails')
    .query({ q: `thread:${ids['a@list']}` })
    .set(bearer(fixture.keys.bob))
    .expect(200);
  t.is(bob.body.totalItems, 0);
  const alice = await t.context.api.request
    .get('/api/v1/emails')
    .query({ q: `thread:${ids['a@list']}`, sortBy: 'sentDate', sortOrder: 'asc' })
    .set(bearer(fixture.keys.alice))
    .expect(200);
  t.deepEqual(idsOf(alice.body.items as EmailSummaryDto[]), [
    ids['a@list'],
    ids['b@list'],
    ids['c@list'],
    ids['f@list'],
  ]);
});

test('404 for a missing message and for one the key may not see; 400 for a bad id', async (t) => {
  const { ids, fixture } = t.context;
  const missing = (await getThread_(t, 99_999_999, fixture.keys.admin, 404)) as Record<string, unknown>;
  const hidden = (await getThread_(t, ids['a@list']!, fixture.keys.bob, 404)) as Record<string, unknown>;
  t.is(missing.status, 404);
  t.is(hidden.status, 404);
  t.regex(String(hidden.detail), /does not exist/);
  await getThread_(t, ids['a@list']!, fixture.keys.carol, 404);
  const bad = await t.context.api.request.get('/api/v1/emails/abc/thread').set(bearer(fixture.keys.admin)).expect(400);
  t.is(bad.type, 'application/problem+json');
  await t.context.api.request.get(`/api/v1/emails/${ids['a@list']}/thread`).expect(401);
});

test('include=threadId adds threadId to search items; without it items are unchanged', async (t) => {
  const { ids, fixture, api } = t.context;
  const plain = await api.request
    .get('/api/v1/emails')
    .query({ q: 'release', accountId: fixture.accounts.work })
    .set(bearer(fixture.keys.admin))
    .expect(200);
  t.true((plain.body.items as EmailSummaryDto[]).length >= 4);
  t.true((plain.body.items as EmailSummaryDto[]).every((i) => !('threadId' in i)));
  const withThread = await api.request
    .get('/api/v1/emails?include=threadId')
    .query({ q: 'release', accountId: fixture.accounts.work })
    .set(bearer(fixture.keys.admin))
    .expect(200);
  const byId = new Map((withThread.body.items as EmailSummaryDto[]).map((i) => [i.id, i.threadId]));
  t.is(byId.get(ids['c@list']!), ids['a@list']);
  t.is(byId.get(ids['f@list']!), ids['a@list']);
  t.is(byId.get(ids['h@list']!), ids['h@list']);
  const bad = await api.request
    .get('/api/v1/emails?include=threadid,color')
    .set(bearer(fixture.keys.admin))
    .expect(400);
  t.regex(bad.body.detail as string, /include may name threadId, not "color"/);
  const badQ = await api.request.get('/api/v1/emails?q=thread:x').set(bearer(fixture.keys.admin)).expect(400);
  t.regex(badQ.body.detail as string, /q: thread:x is not a message id/);
});

test('thread:<id> combines with words and other terms', async (t) => {
  const { ids, fixture, api } = t.context;
  const only = async (q: string) =>
    idsOf(
      (await api.request.get('/api/v1/emails').query({ q }).set(bearer(fixture.keys.admin)).expect(200)).body
        .items as EmailSummaryDto[],
    ).sort((a, b) => a - b);
  t.deepEqual(await only(`thread:${ids['a@list']} subject:aw`), [ids['c@list']]);
  t.deepEqual(
    await only(`thread:${ids['x1@list']} OR thread:${ids['g1@else']}`),
    [ids['x2@list'], ids['x1@list'], ids['g1@else']].sort((a, b) => a! - b!) as number[],
  );
  t.deepEqual(await only(`thread:${ids['a@list']} -thread:${ids['b@list']}`), []);
  t.deepEqual(await only('thread:99999999'), [], 'a missing message: no conversation');
});

// Serial: ava runs serial tests before the others, so no other read is logged meanwhile.
test.serial('the access log records a thread read as a Search with the message id', async (t) => {
  const { ids, fixture, api } = t.context;
  await getThread_(t, ids['b@list']!, fixture.keys.alice);
  await api.gateway.accessLog.flush();
  const rows = await readAccessLog(api.settings.Database.Path);
  const entry = rows.findLast((r) => r.search_params && 'thread' in r.search_params);
  t.truthy(entry);
  t.is(entry!.type, 'Search');
  t.deepEqual(entry!.search_params, { thread: ids['b@list'] });
  t.is(entry!.source, 'api');
  t.is(entry!.account_id, fixture.accounts.work);
  // A 404 is not logged as a read, nor is a HEAD (it shows no content).
  const before = rows.length;
  await getThread_(t, ids['a@list']!, fixture.keys.bob, 404);
  await api.request.head(`/api/v1/emails/${ids['a@list']}/thread`).set(bearer(fixture.keys.admin)).expect(200);
  await api.gateway.accessLog.flush();
  t.is((await readAccessLog(api.settings.Database.Path)).length, before);
});

test('MCP get_thread returns the conversation, null for a hidden message; search_emails takes include', async (t) => {
  const { ids, fixture, api } = t.context;
  const server = await listen(api.gateway);
  try {
    const alice = await connectClient(`${server.url}/mcp`, fixture.keys.alice);
    const bob = await connectClient(`${server.url}/mcp`, fixture.keys.bob);
    try {
      const tools = (await alice.listTools()).tools;
      const tool = tools.find((x) => x.name === 'get_thread');
      t.truthy(tool);
      t.regex(tool!.description ?? '', /oldest first/);
      const result = await call(alice, 'get_thread', { id: ids['b@list']! });
      t.falsy(result.isError);
      const items = jsonOf<EmailSummaryDto[]>(result);
      t.deepEqual(idsOf(items), [ids['a@list'], ids['b@list'], ids['c@list'], ids['f@list']]);
      t.deepEqual((result.structuredContent as { items: EmailSummaryDto[] }).items, items);
      const hidden = await call(bob, 'get_thread', { id: ids['b@list']! });
      t.falsy(hidden.isError);
      t.is(hidden.content[0]?.type === 'text' ? hidden.content[0].text : '', 'null');
      t.deepEqual(hidden.structuredContent, { items: null });
      t.regex(JSON.stringify(hidden.content[1]), /no email \d+ that this key may read/);
      const search = await call(alice, 'search_emails', { q: `thread:${ids['x1@list']}`, include: 'threadId' });
      const page = search.structuredContent as unknown as PagedResult<EmailSummaryDto>;
      t.is(page.totalItems, 2);
      t.true(page.items.every((i) => i.threadId === ids['x2@list']));
      const arrayForm = await call(alice, 'search_emails', { q: `thread:${ids['x1@list']}`, include: ['threadId'] });
      t.is((arrayForm.structuredContent as unknown as PagedResult<EmailSummaryDto>).items[0]!.threadId, ids['x2@list']);
      const plain = await call(alice, 'search_emails', { q: `thread:${ids['x1@list']}` });
      t.false('threadId' in (plain.structuredContent as unknown as PagedResult<EmailSummaryDto>).items[0]!);
      await api.gateway.accessLog.flush();
      const rows = await readAccessLog(api.settings.Database.Path);
      t.true(rows.some((r) => r.source === 'mcp' && r.type === 'Search' && r.search_params?.thread === ids['b@list']));
    } finally {
      await alice.close();
      await bob.close();
    }
  } finally {
    await server.close();
  }
});

test('an import into the served archive links as it writes (PostgreSQL: RawHeaders and the catch-up)', async (t) => {
  const { fixture, api } = t.context;
  const mails: Mail[] = [
    // The reply first, then its parent; subjects differ, so only the headers link them.
    { id: 'q2@imp', subject: 'Re: Quote for the roof', date: '2024-07-02T10:00:00Z', references: ['q1@imp'] },
    { id: 'q1@imp', subject: 'Roofing quote', date: '2024-07-01T10:00:00Z' },
    { id: 'q3@imp', subject: 'Re: Roofing quote', date: '2024-07-03T10:00:00Z', inReplyTo: 'q1@imp' },
  ];
  const file = join(fixture.dir, 'imported.mbox');
  writeMbox(file, mails);
  const summary = await withAdmin(api.settings.Database.Path, (admin) =>
    importPaths(admin, [file], { accountId: fixture.accounts.shared, folder: 'Quotes' }),
  );
  t.is(summary.imported, 3);
  const found = await api.request
    .get('/api/v1/emails')
    .query({ folder: 'Quotes', include: 'threadId', sortBy: 'sentDate', sortOrder: 'asc' })
    .set(bearer(fixture.keys.alice))
    .expect(200);
  const items = found.body.items as EmailSummaryDto[];
  t.deepEqual(
    items.map((i) => i.subject),
    ['Roofing quote', 'Re: Quote for the roof', 'Re: Roofing quote'],
  );
  const q2 = items[1]!.id;
  t.true(
    items.every((i) => i.threadId === q2),
    'named by the reply, imported first',
  );
  const thread = (await getThread_(t, items[0]!.id, fixture.keys.alice)) as EmailSummaryDto[];
  t.deepEqual(idsOf(thread), idsOf(items));
  await getThread_(t, q2, fixture.keys.bob, 404);
});

test('re-importing mail stored without its headers links it (PostgreSQL: fills RawHeaders)', async (t) => {
  const { fixture, api } = t.context;
  const mails: Mail[] = [
    { id: 'o1@old', subject: 'Invoice 7', date: '2024-08-01T10:00:00Z' },
    { id: 'o2@old', subject: 'Payment sent', date: '2024-08-02T10:00:00Z', inReplyTo: 'o1@old' },
  ];
  const file = join(fixture.dir, 'old.mbox');
  writeMbox(file, mails);
  const path = api.settings.Database.Path;
  const load = () =>
    withAdmin(path, (admin) => importPaths(admin, [file], { accountId: fixture.accounts.shared, folder: 'Old' }));
  t.is((await load()).imported, 2);
  // As an archive written before conversations: no headers kept, each message on its own.
  await changeArchive(path, {
    sqlite: (db) => {
      db.exec(`DELETE FROM email_refs WHERE email_id IN (SELECT id FROM emails WHERE folder = 'Old');
               UPDATE emails SET thread_id = id WHERE folder = 'Old'`);
    },
    postgres: async (client) => {
      const old = `SELECT "Id" FROM mail_archiver."ArchivedEmails" WHERE "FolderName" = 'Old'`;
      await client.query(`UPDATE mail_archiver."ArchivedEmails" SET "RawHeaders" = NULL WHERE "FolderName" = 'Old'`);
      await client.query(`DELETE FROM mail_archive_gateway.thread_refs WHERE email_id IN (${old})`);
      await client.query(`UPDATE mail_archive_gateway.threads SET thread_id = email_id WHERE email_id IN (${old})`);
    },
  });
  const ids = async () =>
    idsOf(
      (
        await api.request
          .get('/api/v1/emails')
          .query({ folder: 'Old', sortBy: 'sentDate', sortOrder: 'asc' })
          .set(bearer(fixture.keys.admin))
          .expect(200)
      ).body.items as EmailSummaryDto[],
    );
  const [o1, o2] = await ids();
  t.deepEqual(idsOf((await getThread_(t, o2!, fixture.keys.admin)) as EmailSummaryDto[]), [o2]);
  const again = await load();
  t.is(again.imported, 0);
  t.is(again.duplicates, 2);
  t.deepEqual(idsOf((await getThread_(t, o2!, fixture.keys.admin)) as EmailSummaryDto[]), [o1, o2]);
});

// ---------------------------------------------------------------------------------------------
// SQLite only: the in-memory index, migration 4, re-import filling in headers.

if (TEST_STORE === 'sqlite') {
  test('thread: counts the same with the in-memory index current and with SQL; a merge needs no rebuild', async (t) => {
    const { dir, cleanup } = tempDir();
    const db = openArchive(join(dir, 'a.db'));
    try {
      const account = Number(
        db.prepare("INSERT INTO mail_accounts (name, email_address) VALUES ('L', 'l@x')").run().lastInsertRowid,
      );
      writeMbox(join(dir, 'one.mbox'), LIST.slice(0, 9));
      await importPaths(db, [join(dir, 'one.mbox')], { accountId: account });
      const ids = idsByMessageId(db);
      adoptSnapshot(db, new Snapshot(buildSnapshot(db, { minDocs: 1 })));
      t.truthy(currentSnapshot(db));
      const admin = { isAdmin: true, userId: 0 };
      const query = (q: string) => parseSearchInput({ q, sortOrder: 'asc' }, { defaultPageSize: 50, maxPageSize: 100 });
      for (const q of [`thread:${ids['b@list']}`, `release thread:${ids['a@list']}`, `-thread:${ids['a@list']}`]) {
        const indexed = searchEmails(db, admin, query(q));
        t.is(indexed.totalItems, exactCount(db, admin, query(q)), q);
        t.deepEqual(idsOf(indexed.items), idsOf(searchEmails(db, admin, query(q), { reference: true }).items), q);
      }
      t.is(searchEmails(db, admin, query(`thread:${ids['a@list']}`)).totalItems, 4);
      // Y, Z and W arrive: new mail, so the index steps aside until rebuilt; rebuilt, it answers
      // thread: for the merged conversation from the emails table.
      writeMbox(join(dir, 'two.mbox'), LIST.slice(9));
      await importPaths(db, [join(dir, 'two.mbox')], { accountId: account });
      const after = idsByMessageId(db);
      adoptSnapshot(db, new Snapshot(buildSnapshot(db, { minDocs: 1 })));
      t.truthy(currentSnapshot(db));
      t.is(searchEmails(db, admin, query(`thread:${after['z1@list']}`)).totalItems, 3);
      // A merge touches thread_id only: no rewrite trigger fires, the snapshot stays current,
      // and thread: sees the merged conversation at once.
      const rewrites = db.prepare('SELECT rewrites FROM archive_state').pluck().get();
      db.prepare('UPDATE emails SET thread_id = ? WHERE thread_id = ?').run(after['a@list'], after['x2@list']);
      t.is(db.prepare('SELECT rewrites FROM archive_state').pluck().get(), rewrites);
      t.truthy(currentSnapshot(db));
      t.is(searchEmails(db, admin, query(`thread:${after['x1@list']}`)).totalItems, 6);
      t.is(exactCount(db, admin, query(`thread:${after['x1@list']}`)), 6);
    } finally {
      db.close();
      cleanup();
    }
  });

  test('migration 4 backfills conversations by Message-ID and subject; re-importing fills in the headers', async (t) => {
    const { dir, cleanup } = tempDir();
    try {
      const path = join(dir, 'old.db');
      // An archive at schema version 3, written before conversations existed.
      const old = new Database(path);
      for (const m of migrations.filter((m) => m.version <= 3)) old.exec(m.sql);
      old.pragma('user_version = 3');
      old.prepare("INSERT INTO mail_accounts (id, name, email_address) VALUES (1, 'L', 'l@x')").run();
      const insert = old.prepare(
        `INSERT INTO emails (account_id, folder, message_id, subject, sent_date, received_date, dedup_key, fts_key)
         VALUES (1, ?, ?, ?, ?, ?, ?, ?)`,
      );
      LIST.forEach((m, i) => {
        const sent = Date.parse(m.date);
        insert.run('Lists/dev', `<${m.id}>`, m.subject, sent, sent, `mid:<${m.id}>`, i + 1);
      });
      // The same message in a second folder: one conversation with its first copy.
      insert.run('Archive', '<x1@list>', 'Build broken', Date.parse('2024-05-02T08:00:00Z'), 0, 'mid:<x1@list>', 100);
      old.close();

      const db = openArchive(path); // runs migration 4 (and every later one)
      try {
        t.is(db.pragma('user_version', { simple: true }), LATEST_VERSION);
        const ids = idsByMessageId(db);
        const admin = { isAdmin: true, userId: 0 };
        const threadOf = (id: number) => idsOf(getThread(db, admin, id)!);
        const byFolder = db
          .prepare("SELECT id FROM emails WHERE message_id = '<x1@list>' ORDER BY id")
          .pluck()
          .all() as number[];
        t.is(byFolder.length, 2);
        // Subject: a, b, c and f are one conversation (f was within 30 days of c); h is not.
        t.deepEqual(threadOf(ids['b@list']!), [ids['a@list'], ids['b@list'], ids['c@list'], ids['f@list']]);
        t.deepEqual(threadOf(ids['h@list']!), [ids['h@list']]);
        t.deepEqual(threadOf(ids['g2@else']!), [ids['g2@else']]);
        // Message-ID: both copies of x1; but x2 (another subject) is not linked: no References stored.
        t.deepEqual(threadOf(byFolder[0]!).sort(), [...byFolder].sort());
        t.false(threadOf(ids['x2@list']!).includes(byFolder[0]!));
        t.is(
          db.prepare("SELECT thread_subject FROM emails WHERE message_id = '<c@list>'").pluck().get(),
          'release plan',
        );
        t.is(db.prepare('SELECT count(*) FROM emails WHERE thread_id IS NULL').pluck().get(), 0);

        // Re-importing the original mbox: every message is a duplicate, and its References are
        // recorded on the stored copy, linking x2 to x1 and w to y1 and z1.
        writeMbox(join(dir, 'list.mbox'), LIST);
        const again = await importPaths(db, [join(dir, 'list.mbox')], { accountId: 1, folder: 'Lists/dev' });
        t.is(again.imported, 0);
        t.is(again.duplicates, LIST.length);
        t.true(threadOf(ids['x2@list']!).includes(ids['x1@list']!));
        t.true(threadOf(ids['x2@list']!).includes(byFolder[1]!), 'the other folder’s copy comes along');
        t.deepEqual(threadOf(ids['w@list']!), [ids['y1@list'], ids['z1@list'], ids['w@list']]);
        t.is(
          db.prepare('SELECT thread_id FROM emails WHERE id = ?').pluck().get(ids['w@list']),
          ids['y1@list'],
          'named by the smallest id',
        );
        t.true((db.prepare('SELECT count(*) FROM email_refs').pluck().get() as number) > 0);
        // A second re-import changes nothing more.
        const generation = db.prepare('SELECT rewrites FROM archive_state').pluck().get();
        await importPaths(db, [join(dir, 'list.mbox')], { accountId: 1, folder: 'Lists/dev' });
        t.is(db.prepare('SELECT rewrites FROM archive_state').pluck().get(), generation, 'no search rewrite');
      } finally {
        db.close();
      }
    } finally {
      cleanup();
    }
  });
}
