// The search language (docs/search.md) against a real archive: every operator and field, the
// address rule, ranking, and counts that stay exact across imports and permission changes.
import test from 'ava';
import { join } from 'node:path';
import { openArchive, type Db } from '../engine/sqlite/open.js';
import { addAccount } from '../engine/sqlite/accounts.js';
import { searchEmails } from '../engine/sqlite/emails.js';
import { addUser, assignAccount, unassignAccount } from '../engine/sqlite/users.js';
import { ArchiveWriter } from '../engine/sqlite/writer.js';
import type { SearchQuery } from '../shared/jobs.js';
import { InvalidInput, parseSearchInput } from '../shared/search-input.js';
import { email, tempDir } from './helpers/fixture.js';

const T = (s: string) => Date.parse(s);
let db: Db;
let writer: ArchiveWriter;
let accountA: number;
let accountB: number;
const ids: Record<string, number> = {};
const admin = { isAdmin: true, userId: 0 };

test.before(() => {
  const { dir } = tempDir('mag-search-');
  db = openArchive(join(dir, 'search.db'));
  accountA = addAccount(db, { name: 'A', emailAddress: 'me@a.example' }).id;
  accountB = addAccount(db, { name: 'B', emailAddress: 'me@b.example' }).id;
  writer = new ArchiveWriter(db);
  const add = (name: string, e: Parameters<typeof email>[0]) => {
    ids[name] = writer.add(email(e))!;
  };
  writer.batch(() => {
    add('budget', {
      accountId: accountA,
      subject: 'Quarterly budget review',
      from: 'Alice Smith <alice@example.com>',
      to: 'bob@example.com',
      textBody: 'Please review the budget before Friday.',
      sentDate: T('2024-03-01T10:00:00Z'),
    });
    add('malice', {
      accountId: accountA,
      subject: 'Security notice',
      from: 'malice@example.com',
      to: 'bob@example.com',
      textBody: 'Reset your password now.',
      sentDate: T('2024-03-02T10:00:00Z'),
    });
    add('report', {
      accountId: accountA,
      subject: 'Monthly report',
      from: 'carol@example.com',
      to: 'alice@example.com',
      cc: 'dave@example.com',
      textBody: 'The reporting period ended.',
      sentDate: T('2024-03-03T10:00:00Z'),
      attachments: [{ fileName: 'report-march.pdf', contentType: 'application/pdf', content: Buffer.from('%PDF') }],
    });
    add('phrase', {
      accountId: accountA,
      subject: 'Meeting notes',
      from: 'dave@example.com',
      to: 'team@example.com',
      bcc: 'archive@example.com',
      textBody: 'We agreed on the quarterly budget targets for next year.',
      sentDate: T('2024-03-04T10:00:00Z'),
    });
    add('cafe', {
      accountId: accountB,
      subject: 'Café in München',
      from: 'Jürgen <juergen@example.de>',
      to: 'me@b.example',
      textBody: 'Treffen im Café am Marienplatz.',
      sentDate: T('2024-03-05T10:00:00Z'),
    });
    add('spam', {
      accountId: accountB,
      subject: 'Budget offer!!!',
      from: 'spam@junk.example',
      to: 'me@b.example',
      textBody: 'Cheap budget deals, budget budget budget.',
      sentDate: T('2024-03-06T10:00:00Z'),
    });
  });
});

test.after.always(() => db?.close());

function search(
  q: string | undefined,
  extra: Partial<SearchQuery> = {},
  viewer: { isAdmin: boolean; userId: number } = admin,
) {
  const query = parseSearchInput({ ...(q !== undefined ? { q } : {}) }, { defaultPageSize: 50, maxPageSize: 100 });
  return searchEmails(db, viewer, { ...query, ...extra });
}
const found = (q: string, extra: Partial<SearchQuery> = {}) =>
  search(q, extra)
    .items.map((i) => Object.entries(ids).find(([, id]) => id === i.id)![0])
    .sort();

test('free words are ANDed, case- and diacritic-insensitive', (t) => {
  t.deepEqual(found('budget'), ['budget', 'phrase', 'spam']);
  t.deepEqual(found('BUDGET review'), ['budget']);
  t.deepEqual(found('munchen'), ['cafe']);
  t.deepEqual(found('CAFE'), ['cafe']);
});

test('quoted phrases, OR, NOT, minus, parentheses and prefixes', (t) => {
  t.deepEqual(found('"quarterly budget"'), ['budget', 'phrase']);
  t.deepEqual(found('"budget quarterly"'), []);
  t.deepEqual(found('security OR monthly'), ['malice', 'report']);
  t.deepEqual(found('budget -spam'), ['budget', 'phrase']);
  t.deepEqual(found('budget NOT offer'), ['budget', 'phrase']);
  t.deepEqual(found('(security OR monthly) password'), ['malice']);
  t.deepEqual(found('report*'), ['report']); // "report", "reporting"
  t.deepEqual(found('-budget'), ['cafe', 'malice', 'report']);
  t.deepEqual(found('monthly OR -budget'), ['cafe', 'malice', 'report']);
});

test('field terms search one field', (t) => {
  t.deepEqual(found('subject:budget'), ['budget', 'spam']);
  t.deepEqual(found('body:password'), ['malice']);
  t.deepEqual(found('cc:dave'), ['report']);
  t.deepEqual(found('bcc:archive'), ['phrase']);
  t.deepEqual(found('to:team@example.com'), ['phrase']);
  t.deepEqual(found('subject:"budget review"'), ['budget']);
  t.deepEqual(found('subject:quart*'), ['budget']);
  t.deepEqual(found('has:attachment'), ['report']);
  t.deepEqual(found('has:attachment monthly'), ['report']);
  t.deepEqual(found('filename:report'), ['report']);
  t.deepEqual(found('filename:march'), ['report']);
  t.deepEqual(found('security OR has:attachment'), ['malice', 'report']);
  t.deepEqual(found('-has:attachment'), ['budget', 'cafe', 'malice', 'phrase', 'spam']);
  t.deepEqual(found('(has:attachment OR security) -password'), ['report']);
});

test('from: an address matches that address only; from: a name matches name or address', (t) => {
  t.deepEqual(found('from:alice@example.com'), ['budget']);
  t.deepEqual(found('from:malice@example.com'), ['malice']);
  t.deepEqual(found('from:alice'), ['budget']);
  t.deepEqual(found('from:smith'), ['budget']);
  t.deepEqual(found('from:juergen'), ['cafe']);
  t.deepEqual(found('from:jurgen'), ['cafe']);
});

test('sortBy=relevance: a word in the subject first, newest first among equals; other sorts keep working', (t) => {
  // Three messages say budget: spam and budget in their subjects, phrase in its body only.
  const ranked = search('budget', { sortBy: 'relevance', sortOrder: 'desc' }).items.map((i) => i.id);
  t.deepEqual(ranked, [ids.spam, ids.budget, ids.phrase]);
  const ascending = search('budget', { sortBy: 'relevance', sortOrder: 'asc' }).items.map((i) => i.id);
  t.deepEqual(ascending, [ids.phrase, ids.budget, ids.spam]);
  const byDate = search('budget', { sortBy: 'sentDate', sortOrder: 'desc' }).items.map((i) => i.id);
  t.deepEqual(byDate, [ids.spam, ids.phrase, ids.budget]);
  const bySubject = search('budget', { sortBy: 'subject', sortOrder: 'asc' }).items.map((i) => i.subject);
  t.deepEqual(bySubject, ['Budget offer!!!', 'Meeting notes', 'Quarterly budget review']);
  t.is(parseSearchInput({ sortBy: 'RELEVANCE' }, { defaultPageSize: 20, maxPageSize: 100 }).sortBy, 'relevance');
});

test('date-sorted text search pages through matches in order, with filters on the index range', (t) => {
  const page1 = search('example', { pageSize: 2, page: 1 });
  const page2 = search('example', { pageSize: 2, page: 2 });
  const page3 = search('example', { pageSize: 2, page: 3 });
  t.is(page1.totalItems, 6);
  t.is(page1.totalPages, 3);
  const dates = [...page1.items, ...page2.items, ...page3.items].map((i) => i.sentDate);
  t.deepEqual(dates, [...dates].sort().reverse());
  t.is(new Set([...page1.items, ...page2.items, ...page3.items].map((i) => i.id)).size, 6);
  const ranged = search('example', { from: T('2024-03-02T00:00:00Z'), to: T('2024-03-04T23:59:59.999Z') });
  t.deepEqual(
    ranged.items.map((i) => i.id),
    [ids.phrase, ids.report, ids.malice],
  );
  t.deepEqual(
    search('budget', { accountId: accountB }).items.map((i) => i.id),
    [ids.spam],
  );
});

test('account, folder, direction and visibility filters combine with q exactly as without it', (t) => {
  const { dir } = tempDir('mag-filters-');
  const local = openArchive(join(dir, 'f.db'));
  t.teardown(() => local.close());
  const a1 = addAccount(local, { name: 'One', emailAddress: 'one@x.example' }).id;
  const a2 = addAccount(local, { name: 'Two', emailAddress: 'two@x.example' }).id;
  const viewer = { isAdmin: false, userId: addUser(local, { username: 'v' }).id };
  assignAccount(local, 'v', a2);
  const w = new ArchiveWriter(local);
  w.batch(() => {
    let n = 0;
    for (const accountId of [a1, a2]) {
      for (const folder of ['INBOX', 'INBOX/Sub', 'Sent']) {
        for (const isOutgoing of [false, true]) {
          w.add(
            email({
              accountId,
              folder,
              isOutgoing,
              subject: `hello ${n}`,
              sentDate: T('2024-01-01T00:00:00Z') + n * 1000,
            }),
          );
          n++;
        }
      }
    }
  });
  const run = (v: { isAdmin: boolean; userId: number }, q: string | undefined, extra: Partial<SearchQuery>) =>
    searchEmails(local, v, { q, page: 1, pageSize: 50, sortBy: 'sentDate', sortOrder: 'desc', ...extra });
  const cases: Array<Partial<SearchQuery>> = [
    {},
    { accountId: a1 },
    { folder: 'INBOX' },
    { folder: 'INBOX/Sub' },
    { direction: 'outgoing' },
    { accountId: a2, folder: 'Sent', direction: 'incoming' },
    { from: T('2024-01-01T00:00:03Z'), to: T('2024-01-01T00:00:07Z') },
  ];
  for (const extra of cases) {
    for (const v of [admin, viewer]) {
      const withQ = run(v, 'hello', extra);
      const without = run(v, undefined, extra);
      t.deepEqual(
        withQ.items.map((i) => i.id),
        without.items.map((i) => i.id),
        JSON.stringify({ extra, admin: v.isAdmin }),
      );
      t.is(withQ.totalItems, without.totalItems);
    }
  }
  t.is(run(viewer, 'hello', {}).totalItems, 6, 'the viewer sees only the assigned account');
  t.is(run(admin, 'hello', { folder: 'INBOX' }).totalItems, 4, 'a folder is its own path, not its sub-folders');
  t.is(run({ isAdmin: false, userId: 999 }, 'hello', {}).totalItems, 0);
});

test("sorting many matches by another key walks that key's index and pages exactly like a plain listing", (t) => {
  const { dir } = tempDir('mag-walk-');
  const local = openArchive(join(dir, 'w.db'));
  t.teardown(() => local.close());
  const acct = addAccount(local, { name: 'W', emailAddress: 'w@x.example' }).id;
  const other = addAccount(local, { name: 'V', emailAddress: 'v@x.example' }).id;
  const w = new ArchiveWriter(local);
  w.batch(() => {
    for (let i = 0; i < 40; i++) {
      // Repeated subjects and senders: ties must fall back to the id, in the sort's direction.
      w.add(
        email({
          accountId: i % 4 ? acct : other,
          subject: `topic ${(i * 7) % 9}`,
          from: `sender${(i * 3) % 5}@x.example`,
          to: `rcpt${i % 6}@x.example`,
          textBody: i % 10 ? 'common words here' : 'something else',
          sentDate: T('2024-01-01T00:00:00Z') + i * 60_000,
          receivedDate: T('2024-02-01T00:00:00Z') - i * 1000,
        }),
      );
    }
  });
  const run = (q: string | undefined, extra: Partial<SearchQuery>) =>
    searchEmails(local, admin, { q, page: 1, pageSize: 4, sortBy: 'subject', sortOrder: 'asc', ...extra });
  for (const sortBy of ['subject', 'from', 'to', 'receivedDate'] as const) {
    for (const sortOrder of ['asc', 'desc'] as const) {
      for (const page of [1, 2, 5, 9]) {
        for (const filter of [{}, { accountId: acct }]) {
          const label = JSON.stringify({ sortBy, sortOrder, page, filter });
          // "here" matches 36 of 40 messages, so a page of 4 is cheaper to find by walking.
          const walked = run('here', { sortBy, sortOrder, page, ...filter });
          // Expected: list everything in that order and drop the non-matches (ids 1, 11, 21, 31).
          const all = run(undefined, { sortBy, sortOrder, page: 1, pageSize: 100, ...filter }).items.filter(
            (i) => (i.id - 1) % 10 !== 0,
          );
          t.is(walked.totalItems, all.length, label);
          t.deepEqual(
            walked.items.map((i) => i.id),
            all.slice((page - 1) * 4, page * 4).map((i) => i.id),
            label,
          );
        }
      }
    }
  }
});

test('sent dates are kept to the second, so date order and id order agree', (t) => {
  const { dir } = tempDir('mag-second-');
  const local = openArchive(join(dir, 's.db'));
  t.teardown(() => local.close());
  const acct = addAccount(local, { name: 'S', emailAddress: 's@x.example' }).id;
  const w = new ArchiveWriter(local);
  const base = T('2024-05-05T05:05:05Z');
  const [x, y] = w.batch(() => [
    w.add(email({ accountId: acct, subject: 'same second late', sentDate: base + 900 }))!,
    w.add(email({ accountId: acct, subject: 'same second early', sentDate: base + 100 }))!,
  ]);
  const res = searchEmails(local, admin, { q: 'same', page: 1, pageSize: 10, sortBy: 'sentDate', sortOrder: 'desc' });
  t.deepEqual(
    res.items.map((i) => i.id),
    [y, x],
    'ties on the second fall back to id, newest id first',
  );
  t.true(res.items.every((i) => i.sentDate === '2024-05-05T05:05:05.000Z'));
  const plain = searchEmails(local, admin, { page: 1, pageSize: 10, sortBy: 'sentDate', sortOrder: 'desc' });
  t.deepEqual(
    plain.items.map((i) => i.id),
    [y, x],
  );
});

test('counts stay exact across an import and a permission change', (t) => {
  const { dir } = tempDir('mag-count-');
  const local = openArchive(join(dir, 'c.db'));
  t.teardown(() => local.close());
  const acct = addAccount(local, { name: 'C', emailAddress: 'c@c.example' }).id;
  const other = addAccount(local, { name: 'D', emailAddress: 'd@d.example' }).id;
  const user = addUser(local, { username: 'viewer' });
  assignAccount(local, 'viewer', acct);
  const w = new ArchiveWriter(local);
  const count = (viewer: { isAdmin: boolean; userId: number }, q?: string) =>
    searchEmails(local, viewer, { q, page: 1, pageSize: 10, sortBy: 'sentDate', sortOrder: 'desc' }).totalItems;
  const viewer = { isAdmin: false, userId: user.id };
  w.batch(() => w.add(email({ accountId: acct, subject: 'invoice one' })));
  t.is(count(admin, 'invoice'), 1);
  t.is(count(viewer, 'invoice'), 1);
  t.is(count(viewer), 1);
  w.batch(() => {
    w.add(email({ accountId: acct, subject: 'invoice two' }));
    w.add(email({ accountId: other, subject: 'invoice three' }));
  });
  t.is(count(admin, 'invoice'), 3, 'import invalidates cached counts');
  t.is(count(viewer, 'invoice'), 2);
  assignAccount(local, 'viewer', other);
  t.is(count(viewer, 'invoice'), 3, 'assignment invalidates cached counts');
  unassignAccount(local, 'viewer', acct);
  t.is(count(viewer, 'invoice'), 1);
  t.is(count(viewer), 1);
});

test('syntax that has no reading is a q error naming what to fix; the rest is searched as text', (t) => {
  const limits = { defaultPageSize: 20, maxPageSize: 100 };
  const err = t.throws(() => parseSearchInput({ q: 'budget)' }, limits), { instanceOf: InvalidInput });
  t.is(err?.param, 'q');
  t.regex(err!.message, /\)/);
  t.throws(() => parseSearchInput({ q: 'has:pdf' }, limits), { instanceOf: InvalidInput, message: /has:attachment/ });
  t.throws(() => parseSearchInput({ q: 'x'.repeat(10_001) }, limits), { instanceOf: InvalidInput, message: /10000/ });
  t.throws(() => parseSearchInput({ q: Array.from({ length: 80 }, (_, i) => `w${i}`).join(' ') }, limits), {
    message: /terms/,
  });
  t.throws(() => parseSearchInput({ q: '('.repeat(40) + 'a' }, limits), { message: /nest/ });
  // Left open, a quote or a parenthesis has no sure reading: a guess answered an empty page.
  for (const [q, message] of [
    ['"unbalanced', /without its closing '"'/],
    ['"', /without its closing '"'/],
    ['((budget', /without its closing "\)"/],
    ['from:(', /from: must be followed by a word/],
    ['to:(a OR b)', /write \(to:alice OR to:bob\)/],
  ] as const) {
    const refused = t.throws(() => parseSearchInput({ q }, limits), { instanceOf: InvalidInput, message }, q);
    t.is(refused?.param, 'q');
  }
  for (const q of [
    'OR',
    'AND',
    'NOT',
    '-',
    '*',
    'subject:',
    '{subject}:budget',
    'body:x*',
    'NEAR(a b)',
    'a AND',
    '^budget',
  ]) {
    t.notThrows(() => search(q), q);
  }
  t.deepEqual(found('"budget"'), ['budget', 'phrase', 'spam']);
  t.deepEqual(found('((budget review))'), ['budget']);
  t.is(search('!!!').totalItems, 0, 'punctuation alone matches nothing');
});
