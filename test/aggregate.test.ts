// Aggregates (docs/search.md, "Aggregates"): the key rules, the in-memory path
// against plain SQL GROUP BY on generated queries (SQLite), and the REST route and MCP tool on
// this run's store (TEST_STORE), checked against the messages a search lists.
import anyTest, { type TestFn } from 'ava';
import fc from 'fast-check';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { compareCodePoints, dayKey, dayOf, fromAddress, toAddresses } from '../engine/rules/aggregate.js';
import { openArchive, type Db } from '../engine/sqlite/open.js';
import { aggregateEmails, aggregateFromIndex } from '../engine/sqlite/aggregate.js';
import { buildSnapshot } from '../engine/sqlite/index-build.js';
import { extendSnapshot } from '../engine/sqlite/index-extend.js';
import { adoptSnapshot, currentSnapshot } from '../engine/sqlite/index-share.js';
import {
  ColumnPoster,
  COLUMN_KINDS,
  columnFor,
  followColumns,
  type Column,
} from '../engine/sqlite/aggregate-columns.js';
import { Snapshot } from '../engine/search/bitsets/snapshot.js';
import { addAccount } from '../engine/sqlite/accounts.js';
import { addUser, assignAccount } from '../engine/sqlite/users.js';
import { ArchiveWriter } from '../engine/sqlite/writer.js';
import type { AggregateResultDto, EmailSummaryDto, PagedResult } from '../shared/dto.js';
import { GROUP_BY, type GroupBy } from '../shared/jobs.js';
import { parseAggregateInput } from '../shared/search-input.js';
import { bearer, startApi, type ApiHarness } from './helpers/api.js';
import { email, tempDir } from './helpers/fixture.js';
import { readAccessLog } from './helpers/store.js';
import { waitFor } from './helpers/redis.js';
import { call, connectClient, jsonOf, noteOf, startMcpGateway, textOf, type McpHarness } from './helpers/mcp.js';

const test = anyTest as TestFn<{ api: ApiHarness; mcp: McpHarness; client: Client }>;

const isShared = (col: Column) => col.of.buffer instanceof SharedArrayBuffer;

test('the key rules: sender address, recipients, domains, ISO weeks in UTC, code point order', (t) => {
  t.is(fromAddress('Alice Weber <Alice.Weber@Example.COM>'), 'alice.weber@example.com');
  t.is(fromAddress('"bob@old.example" <bob@new.example>'), 'bob@new.example', 'the angle address wins');
  t.is(fromAddress('carol@x.org'), 'carol@x.org');
  t.is(fromAddress('Ünïcode <ÄBC@x.org>'), 'Äbc@x.org', 'ASCII letters only are lower-cased');
  t.is(fromAddress('Mailer Daemon'), null);
  t.is(fromAddress(''), null);
  t.deepEqual(toAddresses('A <a@x.org>, b@Y.org; "c" <A@X.org>, nobody'), ['a@x.org', 'b@y.org']);
  t.deepEqual(toAddresses(''), []);
  const week = (iso: string) => dayKey('week', dayOf(Date.parse(iso)));
  t.is(week('2024-12-30T00:00:00Z'), '2025-W01');
  t.is(week('2021-01-03T23:59:59Z'), '2020-W53');
  t.is(week('2024-03-04T00:00:00Z'), '2024-W10');
  t.is(week('2024-03-03T23:59:59Z'), '2024-W09');
  t.is(dayKey('month', dayOf(Date.parse('2024-02-29T12:00:00Z'))), '2024-02');
  t.is(dayKey('year', dayOf(Date.parse('1999-12-31T23:59:59Z'))), '1999');
  // U+FF01 sorts before an astral character in code point order (and after it in UTF-16 units).
  t.true(compareCodePoints('\uff01', '\u{1f600}') < 0);
  t.true(compareCodePoints('a', 'b') < 0);
  t.is(compareCodePoints('same', 'same'), 0);
});

// ---- In-memory index against plain SQL --------------------------------------------------------

const WORDS = ['alpha', 'beta', 'gamma', 'invoice', 'report', 'müller'];
const SENDERS = ['Ann <ann@x.com>', 'BOB@X.com', '"eve@evil.org" <eve@y.org>', 'Mailer Daemon', 'cy@sub.x.com', ''];
const RECIPIENTS = ['dee@y.org', 'Dee <DEE@y.org>, fay@z.net', 'fay@z.net; gus@z.net, dee@y.org', 'undisclosed', ''];
const FOLDERS = ['INBOX', 'Sent', 'Archive/2020'];
const DAY = 86_400_000;
const START = Date.parse('2019-12-20T00:00:00Z');

function addMessages(db: Db, accounts: number[], count: number, seed: number): void {
  let s = seed;
  const rnd = () => (s = (s * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const writer = new ArchiveWriter(db);
  writer.batch(() => {
    for (let i = 0; i < count; i++) {
      writer.add(
        email({
          accountId: pick(accounts),
          folder: pick(FOLDERS),
          subject: `${pick(WORDS)} ${pick(WORDS)}`,
          from: pick(SENDERS),
          to: pick(RECIPIENTS),
          textBody: Array.from({ length: 2 + Math.floor(rnd() * 5) }, () => pick(WORDS)).join(' '),
          sentDate: START + Math.floor(rnd() * 800) * DAY + Math.floor((rnd() * DAY) / 1000) * 1000,
          isOutgoing: rnd() < 0.3,
          attachments:
            rnd() < 0.2 ? [{ fileName: 'a.pdf', contentType: 'application/pdf', content: Buffer.from('x') }] : [],
        }),
      );
    }
  });
}

const queryText = fc
  .array(
    fc.constantFrom(
      ...WORDS,
      'OR',
      '-beta',
      'from:ann@x.com',
      'to:dee@y.org',
      'subject:alpha',
      'has:attachment',
      'rep*',
      '"alpha beta"',
      '(gamma OR invoice)',
    ),
    { maxLength: 4 },
  )
  .map((parts) => parts.join(' '));

const aggregateArgs = fc.record(
  {
    q: queryText,
    groupBy: fc.constantFrom(...GROUP_BY),
    accountId: fc.constantFrom(1, 2, 3),
    folder: fc.constantFrom(...FOLDERS),
    direction: fc.constantFrom('incoming', 'outgoing'),
    from: fc.constantFrom('2020-01-01', '2020-06-15T12:00:00Z'),
    to: fc.constantFrom('2020-12-31', '2021-03-01T00:00:00+02:00'),
    limit: fc.integer({ min: 1, max: 100 }),
  },
  { requiredKeys: ['groupBy'] },
);

test('with the in-memory index, every aggregate equals plain SQL GROUP BY (200 generated queries, then after appended mail)', (t) => {
  const { dir, cleanup } = tempDir();
  const db = openArchive(`${dir}/a.db`);
  try {
    const accounts = [1, 2, 3].map((i) => addAccount(db, { name: `acct${i}`, emailAddress: `acct${i}@x.com` }).id);
    const admin = addUser(db, { username: 'root', isAdmin: true }).id;
    const user = addUser(db, { username: 'u' }).id;
    assignAccount(db, 'u', accounts[1]!);
    addMessages(db, accounts, 600, 7);
    let snap = new Snapshot(buildSnapshot(db, { minDocs: 3 }));
    adoptSnapshot(db, snap);
    const viewers = [
      { isAdmin: true, userId: admin },
      { isAdmin: false, userId: user },
    ];
    let compared = 0;
    let nonEmpty = 0;
    const check = (args: Record<string, unknown>, viewerIndex: number) => {
      const aggregate = parseAggregateInput(args);
      const viewer = viewers[viewerIndex]!;
      const current = currentSnapshot(db);
      const fast = current && aggregateFromIndex(db, current, viewer, aggregate);
      if (!fast) return t.fail(`the index did not answer ${JSON.stringify(args)}`);
      const sql = aggregateEmails(db, viewer, aggregate, { reference: true });
      compared++;
      if (sql.groups.length > 0) nonEmpty++;
      return JSON.stringify(fast) === JSON.stringify(sql) || (t.deepEqual(fast, sql, JSON.stringify(args)), false);
    };
    fc.assert(
      fc.property(aggregateArgs, fc.integer({ min: 0, max: 1 }), (args, v) => check(args, v)),
      { numRuns: 200, seed: 2711 },
    );
    // Every grouping over the whole archive, then again after mail is appended (the columns grow).
    for (const groupBy of GROUP_BY) t.true(check({ groupBy, limit: 100 }, 0), groupBy);
    addMessages(db, accounts, 50, 99);
    snap = new Snapshot(extendSnapshot(db, snap)!);
    adoptSnapshot(db, snap);
    for (const groupBy of GROUP_BY) t.true(check({ groupBy, limit: 100 }, 0), `${groupBy} after appending`);
    const all = aggregateEmails(db, viewers[0]!, parseAggregateInput({ groupBy: 'to', limit: 100 }));
    t.is(all.total, 650);
    t.deepEqual(all.groups.map((g) => g.key).sort(), ['dee@y.org', 'fay@z.net', 'gus@z.net']);
    t.true(compared >= 218 && nonEmpty > 50, `${compared} compared, ${nonEmpty} with groups`);
  } finally {
    adoptSnapshot(db, undefined);
    db.close();
    cleanup();
  }
});

test('the builder posts the group columns in shared memory: a thread uses them from its first aggregate, and extends a copy', async (t) => {
  const { dir, cleanup } = tempDir();
  const db = openArchive(`${dir}/a.db`);
  const reader = openArchive(`${dir}/a.db`);
  const channel = `columns-test-${process.pid}-${Date.now()}`;
  const poster = new ColumnPoster(db, channel);
  try {
    const accounts = [1, 2].map((i) => addAccount(db, { name: `acct${i}`, emailAddress: `acct${i}@x.com` }).id);
    const admin = { isAdmin: true, userId: addUser(db, { username: 'root', isAdmin: true }).id };
    addMessages(db, accounts, 300, 5);
    let snap = new Snapshot(buildSnapshot(db, { minDocs: 3 }));
    adoptSnapshot(reader, snap);
    followColumns(reader, channel);
    poster.post(snap);
    // Posted on a channel: delivered to the reader's side once this thread's event loop turns.
    await waitFor('the posted columns', async () =>
      COLUMN_KINDS.every(
        (k) => columnFor(reader, snap, k).maxId === snap.maxId && isShared(columnFor(reader, snap, k)),
      ),
    );
    const equal = (stage: string) => {
      for (const groupBy of GROUP_BY) {
        const aggregate = parseAggregateInput({ groupBy, limit: 100 });
        t.deepEqual(
          aggregateFromIndex(reader, snap, admin, aggregate),
          aggregateEmails(reader, admin, aggregate, { reference: true }),
          `${groupBy}, ${stage}`,
        );
      }
    };
    equal('from the posted columns');
    // Mail appended, the snapshot extended, the columns not posted again yet: this thread
    // extends a private copy (the shared one is left as it was), then takes the next posted one.
    const before = columnFor(reader, snap, 'from');
    const sharedOf = Int32Array.from(before.of);
    addMessages(db, accounts, 40, 77);
    snap = new Snapshot(extendSnapshot(db, snap)!);
    adoptSnapshot(reader, snap);
    const extended = columnFor(reader, snap, 'from');
    t.false(isShared(extended));
    t.is(extended.maxId, snap.maxId);
    t.deepEqual(Int32Array.from(before.of), sharedOf, 'the shared column is untouched');
    equal('extended by this thread');
    poster.post(snap);
    await waitFor('the columns posted again', async () => isShared(columnFor(reader, snap, 'to')));
    equal('from the columns posted again');
  } finally {
    poster.close();
    adoptSnapshot(reader, undefined);
    reader.close();
    db.close();
    cleanup();
  }
});

// ---- REST and MCP, on this run's store ----------------------------------------------------------

test.before(async (t) => {
  const api = await startApi();
  const mcp = await startMcpGateway({}, { useFixture: api.fixture });
  const client = await connectClient(mcp.url, api.fixture.keys.admin);
  t.context = { api, mcp, client };
});
test.after.always(async (t) => {
  await t.context.client?.close();
  await t.context.mcp?.close();
  await t.context.api?.close();
});

type Page = PagedResult<EmailSummaryDto>;

/** What an aggregate must say, computed from the messages the same search lists. */
async function expected(h: ApiHarness, key: string, params: Record<string, string>): Promise<AggregateResultDto> {
  const res = await h.request
    .get('/api/v1/emails')
    .query({ ...params, pageSize: 100 })
    .set(bearer(key));
  const items = (res.body as Page).items;
  const groupBy = params.groupBy as GroupBy;
  const counts = new Map<string, number>();
  for (const m of items) {
    const sent = Date.parse(m.sentDate);
    const keys: string[] =
      groupBy === 'from'
        ? [fromAddress(m.from)].filter((k): k is string => k !== null)
        : groupBy === 'fromDomain'
          ? [fromAddress(m.from)].filter((k): k is string => k !== null).map((a) => a.slice(a.lastIndexOf('@') + 1))
          : groupBy === 'to'
            ? toAddresses(m.to)
            : groupBy === 'folder'
              ? [m.folderName]
              : groupBy === 'account'
                ? [String(m.accountId)]
                : groupBy === 'hasAttachments'
                  ? [String(m.hasAttachments)]
                  : [dayKey(groupBy, dayOf(sent))];
    for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  const groups = [...counts].map(([k, count]) => ({ key: k, count }));
  const limit = Number(params.limit ?? 20);
  // Time groupings: the latest periods, in time order; the others: the largest groups.
  if (groupBy === 'year' || groupBy === 'month' || groupBy === 'week') {
    groups.sort((a, b) => compareCodePoints(a.key, b.key));
    return { groupBy, total: items.length, distinctGroups: groups.length, groups: groups.slice(-limit) };
  }
  groups.sort((a, b) => b.count - a.count || compareCodePoints(a.key, b.key));
  return { groupBy, total: items.length, distinctGroups: groups.length, groups: groups.slice(0, limit) };
}

test('GET /api/v1/emails/aggregate counts what the same search finds, for every grouping and key', async (t) => {
  const { api } = t.context;
  const { keys } = api.fixture;
  const cases: Array<[string, Record<string, string>]> = [];
  for (const groupBy of GROUP_BY) {
    cases.push([keys.admin, { groupBy }], [keys.alice, { groupBy }], [keys.bob, { groupBy }]);
  }
  cases.push(
    [keys.admin, { groupBy: 'month', q: 'budget OR meeting' }],
    [keys.admin, { groupBy: 'FROM', direction: 'incoming', limit: '2' }],
    [keys.alice, { groupBy: 'folder', from: '2024-01-01', to: '2024-12-31' }],
    [keys.admin, { groupBy: 'account', accountId: String(api.fixture.accounts.personal) }],
  );
  for (const [key, params] of cases) {
    const res = await api.request.get('/api/v1/emails/aggregate').query(params).set(bearer(key));
    t.is(res.status, 200, JSON.stringify(params));
    const want = await expected(api, key, {
      ...params,
      groupBy: GROUP_BY.find((g) => g.toLowerCase() === params.groupBy!.toLowerCase())!,
    });
    t.deepEqual(res.body, want, JSON.stringify(params));
  }
  // A restricted key sees only its accounts: carol has none.
  const none = await api.request.get('/api/v1/emails/aggregate?groupBy=account').set(bearer(keys.carol));
  t.deepEqual(none.body, { groupBy: 'account', total: 0, distinctGroups: 0, groups: [] });
});

test('bad parameters are 400 problems naming them; the aggregate is logged as a Search with its parameters', async (t) => {
  const { api } = t.context;
  const get = (query: string) =>
    api.request.get(`/api/v1/emails/aggregate${query}`).set(bearer(api.fixture.keys.alice));
  for (const [query, param] of [
    ['', 'groupBy'],
    ['?groupBy=subject', 'groupBy'],
    ['?groupBy=from&limit=ten', 'limit'],
    ['?groupBy=from&from=yesterday', 'from'],
    ['?groupBy=from&q=)', 'q'],
  ] as const) {
    const res = await get(query);
    t.is(res.status, 400, query);
    t.regex(res.headers['content-type'] ?? '', /application\/problem\+json/);
    t.regex((res.body as { detail: string }).detail, new RegExp(param), query);
  }
  const limited = await get('?groupBy=to&limit=1000');
  t.is(limited.status, 200, 'limit is clamped, as pageSize is');
  await get('?groupBy=month&q=budget');
  await api.gateway.accessLog.flush();
  // Other tests of this file read through the same gateway at the same time, so the entry is found
  // by what it must hold, not by being the last one written.
  const entries = (await readAccessLog(api.settings.Database.Path)).filter(
    (r) => r.user_id === api.fixture.users.alice && r.search_params?.groupBy === 'month',
  );
  t.is(entries.length, 1, JSON.stringify(entries));
  t.like(entries[0], { type: 'Search', search_params: { groupBy: 'month', q: 'budget' } });
});

test('the aggregate route is rate-limited with the REST budget', async (t) => {
  const h = await startApi({ Api: { RateLimitPerMinute: 2 } });
  t.teardown(() => h.close());
  // Five calls at two a minute: even if a minute ends between them, at least one is refused.
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) {
    const res = await h.request.get('/api/v1/emails/aggregate?groupBy=from').set(bearer(h.fixture.keys.admin));
    statuses.push(res.status);
    if (res.status === 429) t.truthy(res.headers['retry-after']);
  }
  t.is(statuses[0], 200);
  t.true(statuses.includes(429), statuses.join());
  t.true(statuses.filter((s) => s === 200).length <= 4);
});

test('year, month and week come in time order over REST and MCP: the latest periods, oldest first', async (t) => {
  const { api, client } = t.context;
  const admin = bearer(api.fixture.keys.admin);
  let countOrderDiffers = false;
  for (const groupBy of ['year', 'month', 'week'] as const) {
    const all = (await api.request.get('/api/v1/emails/aggregate').query({ groupBy, limit: 100 }).set(admin))
      .body as AggregateResultDto;
    const keys = all.groups.map((g) => g.key);
    t.true(all.groups.length >= 2, `${groupBy}: the fixture spans several periods`);
    t.deepEqual(keys, [...keys].sort(compareCodePoints), `${groupBy}: oldest first`);
    t.is(new Set(keys).size, keys.length);
    const byCount = [...all.groups].sort((a, b) => b.count - a.count || compareCodePoints(a.key, b.key));
    if (byCount.some((g, i) => g.key !== keys[i])) countOrderDiffers = true;
    // A smaller limit keeps the latest periods, still oldest first.
    const last2 = await api.request.get('/api/v1/emails/aggregate').query({ groupBy, limit: 2 }).set(admin);
    t.deepEqual((last2.body as AggregateResultDto).groups, all.groups.slice(-2), groupBy);
    const r = await call(client, 'aggregate_emails', { groupBy, limit: 2 });
    t.deepEqual(r.structuredContent, last2.body, `${groupBy} over MCP`);
    if (all.groups.length > 2) t.regex(noteOf(r) ?? '', /The 2 latest of \d+ groups/);
  }
  t.true(countOrderDiffers, 'the fixture has a period with more mail than a later one: count order is not time order');
});

test('MCP aggregate_emails answers as REST does, says when there are more groups, and refuses a bad groupBy', async (t) => {
  const { api, client } = t.context;
  const { tools } = await client.listTools();
  const tool = tools.find((x) => x.name === 'aggregate_emails')!;
  t.truthy(tool.outputSchema);
  t.deepEqual(tool.inputSchema.required, ['groupBy']);
  t.true(tool.annotations?.readOnlyHint);
  const args = { groupBy: 'from', limit: 1 };
  const r = await call(client, 'aggregate_emails', args);
  const rest = await api.request.get('/api/v1/emails/aggregate').query(args).set(bearer(api.fixture.keys.admin));
  t.deepEqual(jsonOf(r), rest.body);
  t.deepEqual(r.structuredContent, rest.body);
  t.regex(noteOf(r)!, /The 1 largest of \d+ groups; call aggregate_emails again with a larger limit/);
  const bad = await call(client, 'aggregate_emails', { groupBy: 'subject' });
  t.true(bad.isError);
  t.regex(textOf(bad), /groupBy must be one of from, fromDomain, to/);
});

test('on PostgreSQL, dates are grouped in UTC whatever Database:TimeZone says SentDate holds', async (t) => {
  // SentDate read as wall-clock time 14 hours ahead of UTC: every instant moves, and the groups
  // follow the instants the search reports, not the wall clock.
  const h = await startApi({ Database: { TimeZone: 'Pacific/Kiritimati' } });
  t.teardown(() => h.close());
  for (const groupBy of ['year', 'month', 'week'] as const) {
    const res = await h.request.get('/api/v1/emails/aggregate').query({ groupBy }).set(bearer(h.fixture.keys.admin));
    t.deepEqual(res.body, await expected(h, h.fixture.keys.admin, { groupBy }), groupBy);
  }
});
