// Acceptance tests of SPEC.md, “REST API” (v1): every endpoint, every query parameter
// of GET /api/v1/emails, and the page-size settings, against the real gateway, a real worker
// pool and a real SQLite archive.
import anyTest, { type TestFn } from 'ava';
import { openArchive } from '../engine/sqlite/open.js';
import { asServed, changeArchive, HAS_READ_FLAG, servedKeys } from './helpers/store.js';
import { addAccount } from '../engine/sqlite/accounts.js';
import { ArchiveWriter } from '../engine/sqlite/writer.js';
import type {
  EmailDetailDto,
  EmailSummaryDto,
  FolderNodeDto,
  MailAccountDto,
  PagedResult,
  StatsDto,
} from '../shared/dto.js';
import { bearer, rawBody, startApi, type ApiHarness } from './helpers/api.js';
import { createFixture, email, type Fixture } from './helpers/fixture.js';

interface Extra {
  sorting: number;
  ties: number;
  bodies: number;
  /** Sorting account: letters name the messages, see addExtraMail. */
  s: Record<'A' | 'B' | 'C' | 'D' | 'E', number>;
  tieIds: number[];
  nul: number;
  long: number;
  htmlOnly: number;
  noBody: number;
  emptyFolders: number;
  /** An email whose attachments carry unusual stored content types, in TYPES order. */
  types: number;
  typeAttachments: number[];
  /** An email whose attachments have hostile file names, in NAMES order. */
  names: number;
  nameAttachments: number[];
}

/** Stored file name → the name a client must recover from filename*. */
const NAMES: Array<[stored: string, saved: string]> = [
  ['../../etc/passwd', '.._.._etc_passwd'],
  ['a\r\nSet-Cookie: x=1.txt', 'a__Set-Cookie: x=1.txt'],
  ['😀 émoji.pdf', '😀 émoji.pdf'],
  ['', 'attachment'],
  ['   ', 'attachment'],
  ['back\\slash.txt', 'back_slash.txt'],
  ['%41.txt', '%41.txt'],
  ['tab\tname.txt', 'tab_name.txt'],
  [';semi=colon".txt', ';semi=colon".txt'],
  ["it's (1) [draft] {x}.doc", "it's (1) [draft] {x}.doc"],
];

/** Stored content type → the Content-Type a download must carry. */
const TYPES: Array<[stored: string, served: string]> = [
  ['text/csv', 'text/csv'],
  ['text/plain; charset=iso-8859-1', 'text/plain; charset=iso-8859-1'],
  ['TEXT/HTML', 'TEXT/HTML'],
  ['image/svg+xml', 'image/svg+xml'],
  ['multipart/mixed; boundary="a b"', 'multipart/mixed; boundary="a b"'],
  ['', 'application/octet-stream'],
  ['bogus', 'application/octet-stream'],
  ['xlsx', 'application/octet-stream'],
  ['text/html\r\nX-Injected: 1', 'application/octet-stream'],
  ['text/plain; charset=ü', 'application/octet-stream'],
];

const test = anyTest as TestFn<{ api: ApiHarness; small: ApiHarness; f: Fixture; x: Extra }>;
const T = (iso: string) => Date.parse(iso);
const LONG_TEXT = 'long body '.repeat(10);

/** Messages beyond the standard fixture, each set in its own account so filters isolate it. */
function addExtraMail(dbPath: string): Extra {
  const db = openArchive(dbPath);
  try {
    const sorting = addAccount(db, { name: 'Sorting', emailAddress: 'sort@example.com' }).id;
    const ties = addAccount(db, { name: 'Ties', emailAddress: 'ties@example.com' }).id;
    const bodies = addAccount(db, { name: 'Bodies', emailAddress: 'bodies@example.com' }).id;
    // A tiny stored-body limit so the "untruncated" link of the fallback chain is exercised.
    const writer = new ArchiveWriter(db, { bodyLimit: 30 });
    return writer.batch(() => {
      const add = (e: Parameters<typeof email>[0]) => writer.add(email(e))!;
      // Five messages whose order differs for every sort key.
      //        subject    from    to      sent                    received
      const s = {
        A: add({
          accountId: sorting,
          subject: 'delta',
          from: 'c@x.example',
          to: 'e@x.example',
          sentDate: T('2024-05-01T00:00:00Z'),
          receivedDate: T('2024-05-09T00:00:00Z'),
        }),
        B: add({
          accountId: sorting,
          subject: 'Alpha',
          from: 'e@x.example',
          to: 'a@x.example',
          sentDate: T('2024-05-02T00:00:00Z'),
          receivedDate: T('2024-05-07T00:00:00Z'),
        }),
        C: add({
          accountId: sorting,
          subject: 'charlie',
          from: 'a@x.example',
          to: 'd@x.example',
          sentDate: T('2024-05-03T00:00:00Z'),
          receivedDate: T('2024-05-08T00:00:00Z'),
        }),
        D: add({
          accountId: sorting,
          subject: 'bravo',
          from: 'D@x.example',
          to: 'b@x.example',
          sentDate: T('2024-05-03T00:00:00Z'),
          receivedDate: T('2024-05-06T00:00:00Z'),
        }),
        E: add({
          accountId: sorting,
          subject: 'Echo',
          from: 'b@x.example',
          to: 'c@x.example',
          sentDate: T('2024-05-05T00:00:00Z'),
          receivedDate: T('2024-05-05T00:00:00Z'),
        }),
      };
      // Seven messages equal in every sort key: only the id can order them.
      const tieIds: number[] = [];
      for (let i = 0; i < 7; i++) {
        tieIds.push(
          add({
            accountId: ties,
            subject: 'same',
            from: 'same@x.example',
            to: 'same@x.example',
            sentDate: T('2024-06-01T00:00:00Z'),
          }),
        );
      }
      const nul = add({
        accountId: bodies,
        subject: 'nul body',
        textBody: 'text with\0NUL',
        htmlBody: '<p>html with\0NUL</p>',
      });
      const long = add({
        accountId: bodies,
        subject: 'long body',
        textBody: LONG_TEXT,
        htmlBody: `<p>${LONG_TEXT}</p>`,
      });
      const htmlOnly = add({ accountId: bodies, subject: 'html only', textBody: null, htmlBody: '<p>only html</p>' });
      const noBody = add({ accountId: bodies, folder: 'a/b/c', subject: 'no body', textBody: null, htmlBody: null });
      const emptyFolders = add({ accountId: bodies, folder: 'a/b2', subject: 'sibling', textBody: 'x' });
      const types = add({
        accountId: bodies,
        folder: 'a/b2',
        subject: 'types',
        textBody: 'x',
        attachments: TYPES.map(([contentType], i) => ({
          fileName: `t${i}.bin`,
          contentType,
          content: Buffer.from(`content ${i}`),
        })),
      });
      const typeAttachments = db
        .prepare('SELECT id FROM attachments WHERE email_id = ? ORDER BY id')
        .pluck()
        .all(types) as number[];
      const names = add({
        accountId: bodies,
        folder: 'a/b2',
        subject: 'names',
        textBody: 'x',
        attachments: NAMES.map(([fileName], i) => ({
          fileName,
          contentType: 'text/plain',
          content: Buffer.from(`name ${i}`),
        })),
      });
      const nameAttachments = db
        .prepare('SELECT id FROM attachments WHERE email_id = ? ORDER BY id')
        .pluck()
        .all(names) as number[];
      return {
        sorting,
        ties,
        bodies,
        s,
        tieIds,
        nul,
        long,
        htmlOnly,
        noBody,
        emptyFolders,
        types,
        typeAttachments,
        names,
        nameAttachments,
      };
    });
  } finally {
    db.close();
  }
}

test.before(async (t) => {
  const f = createFixture();
  const x = addExtraMail(f.dbPath);
  // Page sizes differ from the defaults so that honouring the settings is visible.
  const api = await startApi({ Api: { DefaultPageSize: 3, MaxPageSize: 5 } }, { useFixture: f });
  // Same archive, default page settings.
  const small = await startApi({}, { useFixture: f });
  t.context = { api, small, f, x };
});

test.after.always(async (t) => {
  await t.context.api?.close();
  await t.context.small?.close();
  t.context.f?.cleanup();
});

const ISO_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;

async function search(
  t: { context: { api: ApiHarness; f: Fixture } },
  query: Record<string, string | number>,
  key?: string,
) {
  return t.context.api.request
    .get('/api/v1/emails')
    .query(query)
    .set(bearer(key ?? t.context.f.keys.admin));
}

async function ids(
  t: { context: { api: ApiHarness; f: Fixture } },
  query: Record<string, string | number>,
  key?: string,
): Promise<number[]> {
  const res = await search(t, { pageSize: 5, ...query }, key);
  if (res.status !== 200) throw new Error(`search ${JSON.stringify(query)} answered ${res.status}: ${res.text}`);
  return (res.body as PagedResult<EmailSummaryDto>).items.map((i) => i.id);
}

// ---------------------------------------------------------------------------------------------
// GET /api/v1/accounts

test('GET /accounts lists the visible accounts with every MailAccountDto field and no credentials', async (t) => {
  const { api, f, x } = t.context;
  const res = await api.request.get('/api/v1/accounts').set(bearer(f.keys.admin));
  t.is(res.status, 200);
  t.regex(res.headers['content-type']!, /^application\/json/);
  const accounts = res.body as MailAccountDto[];
  t.deepEqual(
    accounts.map((a) => a.id),
    [f.accounts.work, f.accounts.personal, f.accounts.shared, x.sorting, x.ties, x.bodies],
  );
  t.deepEqual(accounts[0], {
    id: f.accounts.work,
    name: 'Work',
    emailAddress: 'alice@work.example',
    provider: 'IMAP',
    isEnabled: true,
    lastSync: null,
  });
  t.is(accounts[1]!.provider, 'M365');
  for (const a of accounts)
    t.deepEqual(Object.keys(a).sort(), ['emailAddress', 'id', 'isEnabled', 'lastSync', 'name', 'provider']);
});

test('GET /accounts shows lastSync as UTC ISO 8601 ending in Z', async (t) => {
  const { api, f } = t.context;
  await changeArchive(api.settings.Database.Path, {
    sqlite: (db) =>
      db
        .prepare('UPDATE mail_accounts SET last_sync = ? WHERE id = ?')
        .run(T('2024-04-01T10:20:30.456Z'), f.accounts.shared),
    // Mail Archiver keeps LastSync as naive UTC.
    postgres: (client) =>
      client.query('UPDATE mail_archiver."MailAccounts" SET "LastSync" = $1 WHERE "Id" = $2', [
        '2024-04-01 10:20:30.456',
        f.accounts.shared,
      ]),
  });
  const res = await api.request.get('/api/v1/accounts').set(bearer(f.keys.alice));
  t.is(res.status, 200);
  const shared = (res.body as MailAccountDto[]).find((a) => a.id === f.accounts.shared)!;
  t.is(shared.lastSync, '2024-04-01T10:20:30.456Z');
});

// ---------------------------------------------------------------------------------------------
// GET /api/v1/accounts/{id}/folders

test('GET /accounts/{id}/folders is a nested tree: INBOX first, then alphabetical, empty parents with totalCount 0', async (t) => {
  const { api, f } = t.context;
  const res = await api.request.get(`/api/v1/accounts/${f.accounts.work}/folders`).set(bearer(f.keys.alice));
  t.is(res.status, 200);
  const tree = res.body as FolderNodeDto[];
  t.deepEqual(tree, [
    {
      name: 'INBOX',
      fullPath: 'INBOX',
      totalCount: 2,
      level: 0,
      children: [{ name: 'Invoices', fullPath: 'INBOX/Invoices', totalCount: 1, level: 1, children: [] }],
    },
    {
      name: 'Archive',
      fullPath: 'Archive',
      totalCount: 0,
      level: 0,
      children: [
        {
          name: '2023',
          fullPath: 'Archive/2023',
          totalCount: 0,
          level: 1,
          children: [{ name: 'Q4', fullPath: 'Archive/2023/Q4', totalCount: 1, level: 2, children: [] }],
        },
      ],
    },
    { name: 'Sent', fullPath: 'Sent', totalCount: 1, level: 0, children: [] },
  ]);
});

test('GET /accounts/{id}/folders: siblings under an empty parent are sorted and counted separately', async (t) => {
  const { api, f, x } = t.context;
  const res = await api.request.get(`/api/v1/accounts/${x.bodies}/folders`).set(bearer(f.keys.admin));
  t.is(res.status, 200);
  const tree = res.body as FolderNodeDto[];
  t.deepEqual(
    tree.map((n) => n.fullPath),
    ['INBOX', 'a'],
  );
  t.is(tree[0]!.totalCount, 3);
  const a = tree[1]!;
  t.is(a.totalCount, 0);
  t.deepEqual(
    a.children.map((c) => [c.fullPath, c.totalCount, c.level]),
    [
      ['a/b', 0, 1],
      ['a/b2', 3, 1],
    ],
  );
  t.deepEqual(
    a.children[0]!.children.map((c) => [c.fullPath, c.totalCount, c.level]),
    [['a/b/c', 1, 2]],
  );
});

test('GET /accounts/{id}/folders answers 404 problem for a missing or invisible account and 400 for a non-integer id', async (t) => {
  const { api, f } = t.context;
  for (const [path, key] of [
    ['/api/v1/accounts/9999/folders', f.keys.admin],
    [`/api/v1/accounts/${f.accounts.personal}/folders`, f.keys.alice],
    [`/api/v1/accounts/${f.accounts.work}/folders`, f.keys.carol],
  ] as const) {
    const res = await api.request.get(path).set(bearer(key));
    t.is(res.status, 404, path);
    t.is(res.headers['content-type'], 'application/problem+json');
    t.is(res.body.instance, path);
  }
  const bad = await api.request.get('/api/v1/accounts/abc/folders').set(bearer(f.keys.admin));
  t.is(bad.status, 400);
  t.regex(bad.body.detail, /\bid\b/);
});

// ---------------------------------------------------------------------------------------------
// GET /api/v1/emails: envelope, defaults, filters

test('GET /emails returns the paged envelope with every EmailSummaryDto field, newest first by default', async (t) => {
  const { api, f } = t.context;
  const res = await api.request.get('/api/v1/emails').query({ accountId: f.accounts.work }).set(bearer(f.keys.admin));
  t.is(res.status, 200);
  const page = res.body as PagedResult<EmailSummaryDto>;
  t.deepEqual(Object.keys(page).sort(), ['items', 'page', 'pageSize', 'totalItems', 'totalPages']);
  t.like(page, { page: 1, pageSize: 3, totalItems: 5, totalPages: 2 });
  t.deepEqual(
    page.items.map((i) => i.id),
    [f.emails.lunch, f.emails.sent, f.emails.budget],
  );
  t.deepEqual(
    page.items[2],
    asServed({
      id: f.emails.budget,
      accountId: f.accounts.work,
      subject: 'Quarterly budget review',
      from: 'Carol Finance <carol@work.example>',
      to: 'alice@work.example',
      sentDate: '2024-03-05T09:30:00.000Z',
      isOutgoing: false,
      hasAttachments: true,
      folderName: 'INBOX',
    }),
  );
  for (const item of page.items) t.regex(item.sentDate, ISO_Z);
});

test("is:read and is:unread: answered where the archive has Mail Archiver's read flag, else a 400 naming q", async (t) => {
  const { api, f } = t.context;
  t.is((await search(t, { q: 'is:seen' })).status, 400, 'an unknown is: term is a syntax error on every store');
  if (!HAS_READ_FLAG) {
    // SQLite, or a Mail Archiver database without ArchivedEmails."IsRead".
    for (const q of ['is:read', 'budget -is:unread', 'ramen OR is:read']) {
      const res = await search(t, { q });
      t.is(res.status, 400, q);
      t.is(res.type, 'application/problem+json');
      t.regex(res.body.detail, /^is:read and is:unread need the read flag of Mail Archiver .*; remove them from q\.$/);
    }
    const [item] = (await search(t, { accountId: f.accounts.work })).body.items as EmailSummaryDto[];
    t.false('isRead' in item!, "no read flag: items are exactly SPEC.md's");
    return;
  }
  await changeArchive(api.settings.Database.Path, {
    sqlite: () => t.fail('SQLite has no read flag'),
    postgres: (c) =>
      c.query('UPDATE mail_archiver."ArchivedEmails" SET "IsRead" = true WHERE "Id" = $1', [f.emails.lunch]),
  });
  const work = { accountId: f.accounts.work };
  t.deepEqual(await ids(t, { ...work, q: 'is:read' }), [f.emails.lunch]);
  const unread = await ids(t, { ...work, q: 'is:unread' });
  t.is(unread.length, 4);
  t.false(unread.includes(f.emails.lunch!));
  t.deepEqual(await ids(t, { ...work, q: '-is:read' }), unread);
  t.deepEqual(await ids(t, { q: 'ramen is:read' }), [f.emails.lunch]);
  t.deepEqual(await ids(t, { q: 'ramen is:unread' }), []);
  t.deepEqual((await ids(t, { q: 'standup OR is:read' })).sort(), [f.emails.lunch, f.emails.team].sort());
  t.deepEqual(await ids(t, { q: 'ramen is:read', sortBy: 'relevance' }), [f.emails.lunch]);
  const page = (await search(t, { ...work, q: 'is:read' })).body as PagedResult<EmailSummaryDto>;
  t.is(page.items[0]!.isRead, true);
  t.is(page.totalItems, 1);
  const detail = await api.request.get(`/api/v1/emails/${f.emails.lunch}`).set(bearer(f.keys.admin));
  t.is(detail.body.isRead, true);
  const other = await api.request.get(`/api/v1/emails/${f.emails.budget}`).set(bearer(f.keys.admin));
  t.is(other.body.isRead, false);
});

test('GET /emails q searches subject, body, from, to, cc and bcc', async (t) => {
  const { f } = t.context;
  t.deepEqual(await ids(t, { q: 'ramen' }), [f.emails.lunch], 'body');
  t.deepEqual(await ids(t, { q: 'standup' }), [f.emails.team], 'subject and body');
  t.deepEqual(await ids(t, { q: 'boss' }), [f.emails.budget], 'cc');
  t.deepEqual(await ids(t, { q: 'archive@work.example' }), [f.emails.sent], 'bcc');
  t.deepEqual(await ids(t, { q: 'dan@work.example' }), [f.emails.lunch], 'to');
  t.deepEqual(await ids(t, { q: 'vendor' }), [f.emails.invoice], 'from');
  t.deepEqual(await ids(t, { q: 'budget review' }), [f.emails.sent, f.emails.budget], 'words are ANDed');
  t.deepEqual(await ids(t, { q: '"budget spreadsheet"' }), [f.emails.budget], 'phrase');
  t.deepEqual(await ids(t, { q: 'munchen' }), [f.emails.umlaut], 'diacritics folded');
  t.deepEqual(await ids(t, { q: 'München' }), [f.emails.umlaut]);
  t.deepEqual(await ids(t, { q: 'nothingmatchesthis' }), []);
});

test('GET /emails q supports subject:, from: and to: field terms', async (t) => {
  const { f } = t.context;
  // "budget" is in the family body and the budget subject; subject: keeps only subjects.
  t.deepEqual(await ids(t, { q: 'subject:budget' }), [f.emails.sent, f.emails.budget]);
  t.deepEqual(await ids(t, { q: 'subject:"year end"' }), [f.emails.archived]);
  t.deepEqual(await ids(t, { q: 'from:carol@work.example' }), [f.emails.budget]);
  t.deepEqual(await ids(t, { q: 'to:carol@work.example' }), [f.emails.sent]);
  t.deepEqual(await ids(t, { q: 'from:alice@work.example subject:lunch' }), [f.emails.lunch]);
  t.deepEqual(await ids(t, { q: 'SUBJECT:reunion' }), [f.emails.family], 'field names are case-insensitive');
  t.deepEqual(await ids(t, { q: 'from:ramen' }), [], 'a from: term does not search the body');
});

test('GET /emails and /emails/aggregate: a quote or parenthesis left open is a 400 problem saying what is wrong, not an empty page', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['from:(', /^q: from: must be followed by a word or a quoted phrase, not "\("/],
    ['subject:)', /^q: subject: must be followed by a word/],
    ['"unterminated', /^q: The query has a '"' without its closing '"' \(at "\\"unterminated"\)/],
    ['budget "q3 review', /without its closing '"'/],
    ['(budget OR meeting', /^q: The query has a "\(" without its closing "\)"/],
  ];
  for (const [q, detail] of cases) {
    for (const path of ['/api/v1/emails', '/api/v1/emails/aggregate']) {
      const res = await t.context.api.request
        .get(path)
        .query({ q, groupBy: 'month' })
        .set(bearer(t.context.f.keys.admin));
      const label = `${path} q=${q}: ${res.text}`;
      t.is(res.status, 400, label);
      t.is(res.headers['content-type'], 'application/problem+json', label);
      t.regex(res.body.detail, detail, label);
    }
  }
  // Closed, the same queries are searches.
  for (const q of ['from:"alice"', '"budget"', '(budget OR meeting)']) t.is((await search(t, { q })).status, 200, q);
});

test('GET /emails q with unbalanced quotes, operators, FTS5 syntax and odd characters is never a 500', async (t) => {
  const nasty = [
    '"unbalanced',
    'budget"',
    '"""',
    '(',
    ')',
    '(budget',
    'budget)',
    '((((',
    '))))',
    'a OR',
    'OR',
    'AND',
    'NOT',
    'NOT budget',
    'budget NOT',
    '- -',
    '--budget',
    'NEAR(budget review)',
    'NEAR/2',
    '*',
    '**',
    'budget*',
    '"budget"*',
    '^budget',
    'budget^2',
    'subject:',
    'subject:"',
    'from:"unclosed',
    'has:',
    'has:nothing',
    'body:budget',
    'rowid:1',
    'email_fts:x',
    'email_fts MATCH x',
    '{subject}:budget',
    '{subject from}:x',
    '-budget',
    '+',
    '\\',
    "'; DROP TABLE emails; --",
    '%',
    '_',
    '\u0000',
    '😀',
    'ß',
    '\u202e',
    'x'.repeat(5000),
    '"' + 'a '.repeat(500),
    ':::',
    'subject:subject:subject:',
    '('.repeat(40) + 'x' + ')'.repeat(40),
    Array.from({ length: 100 }, (_, i) => `w${i}`).join(' OR '),
    'a AND AND b',
    'OR OR OR',
    '" OR "',
    'col:"x" AND (y',
  ];
  for (const q of nasty) {
    const res = await search(t, { q });
    const label = `q=${JSON.stringify(q.slice(0, 40))}: ${res.text.slice(0, 200)}`;
    t.true(res.status === 200 || res.status === 400, label);
    if (res.status === 200) {
      t.true(Array.isArray(res.body.items), label);
    } else {
      // A query that has no sensible reading is the caller's error, and says so about q.
      t.is(res.headers['content-type'], 'application/problem+json', label);
      t.regex(res.body.detail, /\bq\b/, label);
    }
  }
  const tooLong = await search(t, { q: 'x'.repeat(10_001) });
  t.is(tooLong.status, 400);
  t.regex(tooLong.body.detail, /\bq\b/);
  // An empty or blank q is no filter at all.
  const all = await search(t, { pageSize: 1 });
  for (const q of ['', '   '])
    t.is((await search(t, { q, pageSize: 1 })).body.totalItems, all.body.totalItems, JSON.stringify(q));
});

test('GET /emails from/to accept YYYY-MM-DD and full ISO date-times, both bounds inclusive', async (t) => {
  const { f } = t.context;
  const work = f.accounts.work;
  // Date-only to covers the whole day: lunch was sent 2024-03-07T12:00Z.
  t.deepEqual(await ids(t, { accountId: work, from: '2024-03-07', to: '2024-03-07' }), [f.emails.lunch]);
  t.deepEqual(await ids(t, { accountId: work, to: '2024-03-06' }), [
    f.emails.sent,
    f.emails.budget,
    f.emails.invoice,
    f.emails.archived,
  ]);
  t.deepEqual(await ids(t, { accountId: work, from: '2024-03-06' }), [f.emails.lunch, f.emails.sent]);
  // Date-times: exact instants, inclusive, with Z or an offset.
  t.deepEqual(await ids(t, { accountId: work, from: '2024-03-05T09:30:00Z', to: '2024-03-05T09:30:00Z' }), [
    f.emails.budget,
  ]);
  t.deepEqual(await ids(t, { accountId: work, from: '2024-03-05T09:30:01Z', to: '2024-03-06' }), [f.emails.sent]);
  t.deepEqual(
    await ids(t, { accountId: work, from: '2024-03-05T10:30:00+01:00', to: '2024-03-05T10:30:00.000+01:00' }),
    [f.emails.budget],
  );
  t.deepEqual(await ids(t, { accountId: work, to: '2024-03-05T09:29:59.999Z' }), [f.emails.invoice, f.emails.archived]);
});

test('GET /emails answers 400 naming the parameter for an unparseable date', async (t) => {
  for (const [param, value] of [
    ['from', 'yesterday'],
    ['to', '2024-13-01'],
    ['from', '2024-02-30'],
    ['to', '05/03/2024'],
    ['from', '2024-03-05T25:00:00Z'],
    ['to', '2024-3-5'],
    ['from', '20240305'],
  ] as const) {
    const res = await search(t, { [param]: value });
    t.is(res.status, 400, `${param}=${value}`);
    t.is(res.headers['content-type'], 'application/problem+json');
    t.true(new RegExp(`\\b${param}\\b`).test(res.body.detail), res.body.detail);
    t.is(res.body.instance, '/api/v1/emails');
  }
});

test('GET /emails accountId restricts to one account; an invisible account gives an empty page, not an error', async (t) => {
  const { f } = t.context;
  t.deepEqual(await ids(t, { accountId: f.accounts.personal }, f.keys.bob), [f.emails.family, f.emails.umlaut]);
  const hidden = await search(t, { accountId: f.accounts.personal }, f.keys.alice);
  t.is(hidden.status, 200);
  t.deepEqual(hidden.body, { items: [], page: 1, pageSize: 3, totalItems: 0, totalPages: 0 });
  const missing = await search(t, { accountId: 9999 });
  t.is(missing.status, 200);
  t.is(missing.body.totalItems, 0);
  const bad = await search(t, { accountId: 'work' });
  t.is(bad.status, 400);
  t.regex(bad.body.detail, /accountId/);
});

test('GET /emails folder matches one folder by full path, not its sub-folders', async (t) => {
  const { f } = t.context;
  t.deepEqual(await ids(t, { accountId: f.accounts.work, folder: 'INBOX' }), [f.emails.lunch, f.emails.budget]);
  t.deepEqual(await ids(t, { folder: 'INBOX/Invoices' }), [f.emails.invoice]);
  t.deepEqual(await ids(t, { folder: 'Archive/2023/Q4' }), [f.emails.archived]);
  t.deepEqual(await ids(t, { folder: 'Archive' }), []);
});

test('GET /emails direction incoming/outgoing (any case); anything else is 400', async (t) => {
  const { f } = t.context;
  t.deepEqual(await ids(t, { accountId: f.accounts.work, direction: 'outgoing' }), [f.emails.lunch, f.emails.sent]);
  t.deepEqual(await ids(t, { accountId: f.accounts.work, direction: 'Incoming' }), [
    f.emails.budget,
    f.emails.invoice,
    f.emails.archived,
  ]);
  const bad = await search(t, { direction: 'sideways' });
  t.is(bad.status, 400);
  t.regex(bad.body.detail, /direction/);
});

// ---------------------------------------------------------------------------------------------
// page, pageSize

test('GET /emails page past the end is 200 with empty items and the true totals', async (t) => {
  const { f } = t.context;
  const res = await search(t, { accountId: f.accounts.work, page: 3 });
  t.is(res.status, 200);
  t.deepEqual(res.body, { items: [], page: 3, pageSize: 3, totalItems: 5, totalPages: 2 });
  const far = await search(t, { accountId: f.accounts.work, page: 2_147_483_647 });
  t.is(far.status, 200);
  t.deepEqual(far.body, { items: [], page: 2_147_483_647, pageSize: 3, totalItems: 5, totalPages: 2 });
  const second = await search(t, { accountId: f.accounts.work, page: 2 });
  t.deepEqual(
    second.body.items.map((i: EmailSummaryDto) => i.id),
    [f.emails.invoice, f.emails.archived],
  );
});

test('GET /emails page < 1 or non-integer is 400 naming page', async (t) => {
  for (const page of ['0', '-1', '1.5', 'two', '1e2', '2147483648']) {
    const res = await search(t, { page });
    t.is(res.status, 400, `page=${page}`);
    t.regex(res.body.detail, /\bpage\b/);
  }
});

test('GET /emails pageSize: 0 means Api:DefaultPageSize, too large is clamped to Api:MaxPageSize, negative is 1', async (t) => {
  const cases: Array<[string | undefined, number]> = [
    [undefined, 3],
    ['0', 3],
    ['1', 1],
    ['4', 4],
    ['5', 5],
    ['6', 5],
    ['1000', 5],
    ['-1', 1],
    ['-50', 1],
  ];
  for (const [pageSize, expected] of cases) {
    const res = await search(t, pageSize === undefined ? {} : { pageSize });
    t.is(res.status, 200, `pageSize=${pageSize}`);
    t.is(res.body.pageSize, expected, `pageSize=${pageSize}`);
    t.is(res.body.items.length, expected, `pageSize=${pageSize}`);
    t.is(res.body.totalPages, Math.ceil(res.body.totalItems / expected));
  }
  for (const pageSize of ['ten', '2.5', '99999999999']) {
    const res = await search(t, { pageSize });
    t.is(res.status, 400, `pageSize=${pageSize}`);
    t.regex(res.body.detail, /pageSize/);
  }
});

test('GET /emails honours the default page settings (20, max 100) when none are configured', async (t) => {
  const { small, f } = t.context;
  const res = await small.request.get('/api/v1/emails').set(bearer(f.keys.admin));
  t.is(res.status, 200);
  t.is(res.body.pageSize, 20);
  t.is(res.body.items.length, 20);
  t.is(res.body.totalItems, 27);
  t.is(res.body.totalPages, 2);
  const clamped = await small.request.get('/api/v1/emails').query({ pageSize: 500 }).set(bearer(f.keys.admin));
  t.is(clamped.body.pageSize, 100);
  t.is(clamped.body.items.length, 27);
  t.is(clamped.body.totalPages, 1);
});

// ---------------------------------------------------------------------------------------------
// sortBy, sortOrder, stable paging

test('GET /emails sortBy each of the five keys, case-insensitively, asc and desc', async (t) => {
  const { x } = t.context;
  const { A, B, C, D, E } = x.s;
  const expected: Record<string, number[]> = {
    sentDate: [A, B, C, D, E],
    receivedDate: [E, D, B, C, A],
    subject: [B, D, C, A, E],
    from: [C, E, A, D, B],
    to: [B, D, E, C, A],
  };
  for (const [key, asc] of Object.entries(expected)) {
    for (const spelling of [key, key.toLowerCase(), key.toUpperCase()]) {
      t.deepEqual(await ids(t, { accountId: x.sorting, sortBy: spelling, sortOrder: 'asc' }), asc, `${spelling} asc`);
    }
    // Descending reverses the whole order, ties included (C and D share a sent date).
    t.deepEqual(
      await ids(t, { accountId: x.sorting, sortBy: key, sortOrder: 'DESC' }),
      [...asc].reverse(),
      `${key} desc`,
    );
  }
  t.deepEqual(await ids(t, { accountId: x.sorting }), [E, D, C, B, A], 'default: sentDate desc');
  t.deepEqual(await ids(t, { accountId: x.sorting, sortOrder: 'asc' }), [A, B, C, D, E], 'default key is sentDate');
});

test('GET /emails unknown sortBy or sortOrder is 400 naming the parameter', async (t) => {
  for (const [param, value] of [
    ['sortBy', 'size'],
    ['sortBy', 'sent_date'],
    ['sortBy', 'id'],
    ['sortOrder', 'up'],
    ['sortOrder', 'ascending'],
  ] as const) {
    const res = await search(t, { [param]: value });
    t.is(res.status, 400, `${param}=${value}`);
    t.is(res.headers['content-type'], 'application/problem+json');
    t.true(res.body.detail.includes(param), res.body.detail);
  }
});

test('GET /emails paging is stable: every sort key ties break by id, no item is lost or repeated', async (t) => {
  const { x } = t.context;
  for (const sortBy of ['sentDate', 'receivedDate', 'subject', 'from', 'to']) {
    for (const sortOrder of ['asc', 'desc']) {
      const seen: number[] = [];
      for (let page = 1; page <= 4; page++) {
        const res = await search(t, { accountId: x.ties, sortBy, sortOrder, pageSize: 2, page });
        t.is(res.body.totalItems, 7);
        t.is(res.body.totalPages, 4);
        seen.push(...res.body.items.map((i: EmailSummaryDto) => i.id));
      }
      const byId = [...x.tieIds].sort((a, b) => (sortOrder === 'asc' ? a - b : b - a));
      t.deepEqual(seen, byId, `${sortBy} ${sortOrder}`);
    }
  }
});

test('GET /emails combines filters and repeats of a parameter are 400', async (t) => {
  const { f } = t.context;
  t.deepEqual(
    await ids(t, {
      q: 'budget',
      accountId: f.accounts.work,
      folder: 'Sent',
      direction: 'outgoing',
      from: '2024-03-01',
      to: '2024-03-31',
    }),
    [f.emails.sent],
  );
  const res = await t.context.api.request.get('/api/v1/emails?page=1&page=2').set(bearer(f.keys.admin));
  t.is(res.status, 400);
  t.regex(res.body.detail, /page/);
});

// ---------------------------------------------------------------------------------------------
// GET /api/v1/emails/{id}

test('GET /emails/{id} returns every EmailDetailDto field with UTC timestamps and attachment metadata', async (t) => {
  const { api, f } = t.context;
  const res = await api.request.get(`/api/v1/emails/${f.emails.budget}`).set(bearer(f.keys.alice));
  t.is(res.status, 200);
  const d = res.body as EmailDetailDto;
  t.deepEqual(
    Object.keys(d).sort(),
    servedKeys([
      'accountId',
      'attachments',
      'bcc',
      'cc',
      'folderName',
      'from',
      'hasAttachments',
      'htmlBody',
      'id',
      'isOutgoing',
      'messageId',
      'receivedDate',
      'sentDate',
      'subject',
      'textBody',
      'to',
    ]),
  );
  t.like(d, {
    id: f.emails.budget,
    accountId: f.accounts.work,
    subject: 'Quarterly budget review',
    from: 'Carol Finance <carol@work.example>',
    to: 'alice@work.example',
    cc: 'boss@work.example',
    bcc: '',
    sentDate: '2024-03-05T09:30:00.000Z',
    receivedDate: '2024-03-05T09:31:00.000Z',
    isOutgoing: false,
    hasAttachments: true,
    folderName: 'INBOX',
    textBody: 'Please review the attached budget spreadsheet.',
    htmlBody: '<p>Please review the attached <b>budget</b> spreadsheet.</p>',
  });
  t.regex(d.messageId, /^<.+@test>$/);
  t.regex(d.sentDate, ISO_Z);
  t.regex(d.receivedDate, ISO_Z);
  t.deepEqual(d.attachments, [
    {
      id: f.attachments['budget:budget "Q1" €.xlsx']!,
      fileName: 'budget "Q1" €.xlsx',
      contentType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
      size: 15,
    },
    { id: f.attachments['budget:notes.txt']!, fileName: 'notes.txt', contentType: 'text/plain', size: 18 },
  ]);
  const sent = await api.request.get(`/api/v1/emails/${f.emails.sent}`).set(bearer(f.keys.alice));
  t.like(sent.body, {
    bcc: 'archive@work.example',
    isOutgoing: true,
    hasAttachments: false,
    folderName: 'Sent',
    htmlBody: null,
  });
  t.deepEqual(sent.body.attachments, []);
});

test('GET /emails/{id} resolves bodies by the fallback chain: original bytes, then untruncated, then stored', async (t) => {
  const { api, f, x } = t.context;
  const get = async (id: number) =>
    (await api.request.get(`/api/v1/emails/${id}`).set(bearer(f.keys.admin))).body as EmailDetailDto;
  const nul = await get(x.nul);
  t.is(nul.textBody, 'text with\0NUL');
  t.is(nul.htmlBody, '<p>html with\0NUL</p>');
  const long = await get(x.long);
  t.is(long.textBody, LONG_TEXT, 'the whole text, not the 30-character stored copy');
  t.is(long.htmlBody, `<p>${LONG_TEXT}</p>`);
  const htmlOnly = await get(x.htmlOnly);
  t.is(htmlOnly.textBody, null);
  t.is(htmlOnly.htmlBody, '<p>only html</p>');
  const none = await get(x.noBody);
  t.is(none.textBody, null);
  t.is(none.htmlBody, null);
  t.is(none.folderName, 'a/b/c');
});

test('GET /emails/{id} is 404 for a missing or invisible message and 400 for a non-integer id', async (t) => {
  const { api, f } = t.context;
  for (const [id, key] of [
    [999_999, f.keys.admin],
    [f.emails.family, f.keys.alice],
    [f.emails.budget, f.keys.bob],
    [f.emails.team, f.keys.carol],
  ] as const) {
    const res = await api.request.get(`/api/v1/emails/${id}`).set(bearer(key));
    t.is(res.status, 404);
    t.is(res.headers['content-type'], 'application/problem+json');
    t.is(res.body.instance, `/api/v1/emails/${id}`);
  }
  for (const id of ['abc', '1.5', '99999999999']) {
    const res = await api.request.get(`/api/v1/emails/${id}`).set(bearer(f.keys.admin));
    t.is(res.status, 400, id);
  }
});

// ---------------------------------------------------------------------------------------------
// GET /api/v1/emails/{id}/attachments/{attachmentId}

test('attachment download: bytes, stored Content-Type, Content-Length and safe headers', async (t) => {
  const { api, f } = t.context;
  const res = await api.request
    .get(`/api/v1/emails/${f.emails.budget}/attachments/${f.attachments['budget:notes.txt']}`)
    .set(bearer(f.keys.alice))
    .buffer(true)
    .parse(rawBody);
  t.is(res.status, 200);
  t.true(Buffer.isBuffer(res.body));
  t.is((res.body as Buffer).toString('utf8'), 'line one\nline two\n');
  t.is(res.headers['content-type'], 'text/plain', 'the stored type, without an added charset');
  t.is(res.headers['content-length'], '18');
  t.is(res.headers['x-content-type-options'], 'nosniff');
  t.is(res.headers['content-security-policy'], 'sandbox');
  t.is(res.headers['content-disposition'], `attachment; filename="notes.txt"; filename*=UTF-8''notes.txt`);
});

test('attachment download: Content-Disposition keeps a non-ASCII, quoted file name intact via RFC 6266 filename*', async (t) => {
  const { api, f } = t.context;
  const res = await api.request
    .get(`/api/v1/emails/${f.emails.budget}/attachments/${f.attachments['budget:budget "Q1" €.xlsx']}`)
    .set(bearer(f.keys.admin))
    .buffer(true)
    .parse(rawBody);
  t.is(res.status, 200);
  t.is(res.headers['content-type'], 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
  t.is((res.body as Buffer).toString(), 'fake xlsx bytes');
  const cd = res.headers['content-disposition']!;
  t.regex(cd, /^attachment;/);
  // The ASCII fallback is one quoted-string: no raw quote or non-ASCII byte breaks out of it.
  const fallback = /filename="([^"]*)"/.exec(cd);
  t.truthy(fallback);
  t.regex(fallback![1]!, /^[\x20-\x7e]*$/);
  const star = /filename\*=UTF-8''([A-Za-z0-9!#$&+.^_`|~%-]+)$/.exec(cd);
  t.truthy(star, cd);
  t.is(decodeURIComponent(star![1]!), 'budget "Q1" €.xlsx');
});

test('attachment download: Content-Type is the stored type verbatim; a malformed stored type becomes application/octet-stream', async (t) => {
  const { api, f, x } = t.context;
  for (const [i, [stored, served]] of TYPES.entries()) {
    const res = await api.request
      .get(`/api/v1/emails/${x.types}/attachments/${x.typeAttachments[i]}`)
      .set(bearer(f.keys.admin))
      .buffer(true)
      .parse(rawBody);
    t.is((res.body as Buffer).toString(), `content ${i}`);
    t.is(res.status, 200, JSON.stringify(stored));
    t.is(res.headers['content-type'], served, JSON.stringify(stored));
    t.is(res.headers['x-injected'], undefined);
    t.is(res.headers['x-content-type-options'], 'nosniff');
  }
});

test('attachment download: hostile file names cannot inject headers or paths, and filename* carries the rest exactly', async (t) => {
  const { api, f, x } = t.context;
  for (const [i, [stored, saved]] of NAMES.entries()) {
    const label = JSON.stringify(stored);
    const res = await api.request
      .get(`/api/v1/emails/${x.names}/attachments/${x.nameAttachments[i]}`)
      .set(bearer(f.keys.admin))
      .buffer(true)
      .parse(rawBody);
    t.is(res.status, 200, label);
    t.is((res.body as Buffer).toString(), `name ${i}`, label);
    t.is(res.headers['set-cookie'], undefined, label);
    const cd = res.headers['content-disposition']!;
    const m = /^attachment; filename="([\x20\x21\x23-\x7e]*)"; filename\*=UTF-8''([A-Za-z0-9!#$&+.^_`|~%-]+)$/.exec(cd);
    t.truthy(m, `${label}: ${cd}`);
    t.is(decodeURIComponent(m![2]!), saved, label);
    t.notRegex(m![1]!, /[\/\\%]/, `${label}: fallback ${m![1]}`);
  }
});

test('attachment download: 404 for a missing attachment, an invisible message, or an attachment of another message', async (t) => {
  const { api, f } = t.context;
  const notes = f.attachments['budget:notes.txt']!;
  for (const [path, key] of [
    [`/api/v1/emails/${f.emails.budget}/attachments/999999`, f.keys.admin],
    [`/api/v1/emails/999999/attachments/${notes}`, f.keys.admin],
    [`/api/v1/emails/${f.emails.budget}/attachments/${notes}`, f.keys.bob],
    [`/api/v1/emails/${f.emails.budget}/attachments/${notes}`, f.keys.carol],
    // The attachment exists, but belongs to another message (the invoice).
    [`/api/v1/emails/${f.emails.budget}/attachments/${f.attachments['invoice:notes.txt']}`, f.keys.admin],
    [`/api/v1/emails/${f.emails.invoice}/attachments/${notes}`, f.keys.admin],
  ] as const) {
    const res = await api.request.get(path).set(bearer(key));
    t.is(res.status, 404, path);
    t.is(res.headers['content-type'], 'application/problem+json');
    t.is(res.headers['content-disposition'], undefined);
  }
});

test('attachment download is 403 problem+json when Api:AllowAttachmentDownloads is false; metadata stays', async (t) => {
  const { f } = t.context;
  const off = await startApi({ Api: { AllowAttachmentDownloads: false } }, { useFixture: f });
  t.teardown(() => off.close());
  const path = `/api/v1/emails/${f.emails.budget}/attachments/${f.attachments['budget:notes.txt']}`;
  const res = await off.request.get(path).set(bearer(f.keys.admin));
  t.is(res.status, 403);
  t.is(res.headers['content-type'], 'application/problem+json');
  t.like(res.body, { status: 403, title: 'Forbidden', instance: path });
  t.regex(res.body.detail, /AllowAttachmentDownloads/);
  t.is(res.headers['content-disposition'], undefined);
  const detail = await off.request.get(`/api/v1/emails/${f.emails.budget}`).set(bearer(f.keys.admin));
  t.is(detail.status, 200);
  t.is(detail.body.attachments.length, 2);
});

// ---------------------------------------------------------------------------------------------
// GET /api/v1/stats

test('GET /stats: admin sees global counts and the database size as a string', async (t) => {
  const { api, f } = t.context;
  const db = api.db();
  const count = (sql: string) => db.prepare(sql).pluck().get() as number;
  const res = await api.request.get('/api/v1/stats').set(bearer(f.keys.admin));
  t.is(res.status, 200);
  const s = res.body as StatsDto;
  t.deepEqual(Object.keys(s).sort(), ['accounts', 'attachments', 'databaseSizeInMB', 'emails']);
  t.is(s.emails, count('SELECT count(*) FROM emails'));
  t.is(s.emails, 27);
  t.is(s.accounts, 6);
  t.is(s.attachments, 3 + TYPES.length + NAMES.length);
  t.is(typeof s.databaseSizeInMB, 'string');
  t.regex(s.databaseSizeInMB, /^\d+\.\d{2}$/);
  t.true(Number(s.databaseSizeInMB) > 0);
});

test('GET /stats: non-admin keys see counts scoped to their accounts and an empty size', async (t) => {
  const { api, f } = t.context;
  const stats = async (key: string) => (await api.request.get('/api/v1/stats').set(bearer(key))).body as StatsDto;
  t.deepEqual(await stats(f.keys.alice), { emails: 6, accounts: 2, attachments: 3, databaseSizeInMB: '' });
  t.deepEqual(await stats(f.keys.bob), { emails: 2, accounts: 1, attachments: 0, databaseSizeInMB: '' });
  t.deepEqual(await stats(f.keys.carol), { emails: 0, accounts: 0, attachments: 0, databaseSizeInMB: '' });
});
