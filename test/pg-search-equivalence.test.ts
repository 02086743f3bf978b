// Search means the same on both stores. One generated archive is written to a SQLite file
// (through ArchiveWriter) and copied with plain SQL into a PostgreSQL database in Mail
// Archiver's schema (as Mail Archiver's own rows arrive: no call into this service); the
// PostgreSQL side-index is then caught up. Thousands of generated queries and filters run on
// both; totalItems and the first page's ids must be equal. The one explained difference
// (docs/search.md, "On PostgreSQL"): `relevance` ranks by engine/search/relevance.ts on SQLite and by ts_rank on
// PostgreSQL, so for relevance the ids are compared as a set when one page holds every match,
// and only the count otherwise.
import test, { type ExecutionContext } from 'ava';
import fc from 'fast-check';
import { join } from 'node:path';
import { prepareArchive } from '../engine/archive.js';
import { openArchive, type Db } from '../engine/sqlite/open.js';
import { Random } from '../engine/demo/random.js';
import { addWordPairs, catchUpSearchIndex, compileTsQuery, pairedTsQuery } from '../engine/postgres/search-index.js';
import { searchEmails as pgSearch } from '../engine/postgres/search.js';
import { exportSnapshot, indexedSearch, type ExportedSnapshot } from '../engine/postgres/search-snapshot.js';
import { PgStore } from '../engine/postgres/store.js';
import { learnPresent } from '../engine/postgres/search-present.js';
import { BroadcastChannel, Worker } from 'node:worker_threads';
import { setBytes, Snapshot, termKey } from '../engine/search/bitsets/snapshot.js';
import { folderTag } from '../engine/search/tags.js';
import { raw, sql, type Sql } from '../engine/postgres/sql.js';
import { compileSearch } from '../engine/search/compile.js';
import { addAccount } from '../engine/sqlite/accounts.js';
import { searchEmails as sqliteSearch } from '../engine/sqlite/emails.js';
import { addUser, assignAccount } from '../engine/sqlite/users.js';
import { ArchiveWriter } from '../engine/sqlite/writer.js';
import { dedupKeyFor, type NewAttachment } from '../engine/rules/new-email.js';
import type { SearchIndexInfo, SearchQuery } from '../shared/jobs.js';
import { EnginePool } from '../engine/pool/pool.js';
import { InvalidInput, parseSearchInput } from '../shared/search-input.js';
import { parseQuery } from '../shared/query-language.js';
import { tempDir } from './helpers/fixture.js';
import { copySqliteToPostgres } from './helpers/pg-copy.js';
import { createTestDatabase, interceptQueries, queryText, runSql, type TestDatabase } from './helpers/postgres.js';
import { anyText, long, spaced, structured } from './helpers/query-arbitraries.js';

const MESSAGES = 2500;
/** Mail Archiver stores SentDate as wall-clock time in its display zone: not UTC, to test that. */
const ZONE = 'Europe/Berlin';
const WORDS = [
  'budget',
  'review',
  'meeting',
  'report',
  'reports',
  'reporting',
  'invoice',
  'receipt',
  'draft',
  'quarterly',
  'project',
  'Café',
  'cafe',
  'München',
  'munchen',
  'Grüße',
  'grusse',
  'Ångström',
  'naïve',
  'e-mail',
  'co-operation',
  '日本語',
  '東京',
  'Łódź',
  'résumé',
  'ZANZIBAR',
  'Zürich',
  'x1',
  '2024',
  'v2.0',
  'foo_bar',
  "O'Brien",
  'señor',
  'İstanbul',
  'ǡpple',
  'µ-law',
  'the',
  'and',
  'or',
  'not',
  'NEAR',
  'Straße',
  'ØRESUND',
  'déjà-vu',
  'a',
  'rank',
  'subject',
];
const ADDRESSES = [
  'alice@work.example',
  'malice@work.example',
  'bob@home.example',
  'Carol Müller <carol@firma.example>',
  'team@work.example',
  "dave.o'neil@x.example",
  'Zoë <zoe@café.example>',
];
const FILES = ['report-2024.pdf', 'Grüße.txt', 'invoice 77.csv', 'photo.JPG', 'budget_review.xlsx', 'München.png'];
const FOLDERS = ['INBOX', 'Sent', 'Archive/2023', 'Projekte/München', 'inbox'];
const START = Date.UTC(2022, 0, 1);
const SPAN_S = 3 * 365 * 86400;

let dir: { dir: string; cleanup: () => void };
let db: Db;
let pgdb: TestDatabase;
let store: PgStore;
const accounts: number[] = [];
const users = { admin: 0, alice: 0, carol: 0 };

function buildArchive(path: string): void {
  const archive = openArchive(path);
  try {
    accounts.push(addAccount(archive, { name: 'Work', emailAddress: 'alice@work.example' }).id);
    accounts.push(addAccount(archive, { name: 'Home', emailAddress: 'bob@home.example' }).id);
    accounts.push(addAccount(archive, { name: 'Team', emailAddress: 'team@work.example' }).id);
    users.admin = addUser(archive, { username: 'admin', isAdmin: true }).id;
    users.alice = addUser(archive, { username: 'alice' }).id;
    users.carol = addUser(archive, { username: 'carol' }).id;
    assignAccount(archive, 'alice', accounts[0]!);
    assignAccount(archive, 'alice', accounts[2]!);
    const rng = new Random(20261123);
    const pick = <T>(list: readonly T[]) => list[rng.int(0, list.length - 1)]!;
    const text = (min: number, max: number) => Array.from({ length: rng.int(min, max) }, () => pick(WORDS)).join(' ');
    const writer = new ArchiveWriter(archive);
    let sent = START;
    writer.batch(() => {
      for (let i = 0; i < MESSAGES; i++) {
        // One message in ten shares its sent second with another: ties must order alike.
        if (!rng.chance(0.1)) sent = START + rng.int(0, SPAN_S) * 1000;
        const attachments: NewAttachment[] = rng.chance(0.25)
          ? Array.from({ length: rng.int(1, 2) }, () => ({
              fileName: pick(FILES),
              contentType: 'application/octet-stream',
              content: Buffer.from(`file ${rng.int(0, 20)}`),
              isInline: rng.chance(0.2),
            }))
          : [];
        const messageId = `<m${i}@gen.example>`;
        writer.add({
          accountId: pick(accounts),
          folder: pick(FOLDERS),
          messageId,
          subject: rng.chance(0.05) ? '' : text(1, 6),
          from: pick(ADDRESSES),
          to: Array.from({ length: rng.int(1, 3) }, () => pick(ADDRESSES)).join(', '),
          cc: rng.chance(0.3) ? pick(ADDRESSES) : '',
          bcc: rng.chance(0.1) ? pick(ADDRESSES) : '',
          sentDate: sent,
          receivedDate: sent + rng.int(0, 3600) * 1000,
          isOutgoing: rng.chance(0.3),
          textBody: rng.chance(0.1) ? null : text(0, 60),
          htmlBody: rng.chance(0.2) ? `<p>${text(0, 10)}</p>` : null,
          attachments,
          dedupKey: dedupKeyFor(messageId, ''),
          // Four in five reply to the first of their five (linked when in the same account).
          refs: i % 5 === 0 ? [] : [`m${i - (i % 5)}@gen.example`],
        });
      }
    });
  } finally {
    archive.close();
  }
}

test.before(async () => {
  dir = tempDir();
  const path = join(dir.dir, 'archive.db');
  buildArchive(path);
  db = openArchive(path);
  pgdb = await createTestDatabase('search_equivalence');
  await prepareArchive({ path: pgdb.url }, { createIfEmpty: true });
  await copySqliteToPostgres(path, pgdb.url, { timeZone: ZONE });
  store = new PgStore({ url: pgdb.url, timeZone: ZONE });
});

test.after.always(async () => {
  await store?.close();
  await pgdb?.drop();
  db?.close();
  dir?.cleanup();
});

// Queries that mean something on this archive: its words, prefixes, phrases, fields, addresses.
const word = fc.constantFrom(...WORDS, 'cafe', 'grusse', 'munchen', 'zurich', 'LODZ', 'resume', 'apple', 'mail');
const term = fc.oneof(
  { weight: 4, arbitrary: word },
  { weight: 2, arbitrary: word.map((w) => `${w.slice(0, Math.max(1, Math.min(3, w.length - 1)))}*`) },
  { weight: 2, arbitrary: fc.tuple(word, word).map(([a, b]) => `"${a} ${b}"`) },
  { weight: 1, arbitrary: fc.constantFrom('has:attachment', 'has:attachments') },
  // Conversations: linked on each store by its own code (ids past the archive name none).
  { weight: 1, arbitrary: fc.integer({ min: 1, max: MESSAGES + 20 }).map((id) => `thread:${id}`) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(...ADDRESSES.map((a) => a.replace(/^.*<|>$/g, '')), 'alice', 'work.example'),
  },
);
const fieldTerm = fc
  .tuple(fc.constantFrom('subject:', 'from:', 'to:', 'cc:', 'bcc:', 'body:', 'filename:', ''), term)
  .map(([f, t]) => (/^(has|thread):/.test(t) ? t : f + t));
const unary = fc.tuple(fc.constantFrom('', '', '', '-', 'NOT '), fieldTerm).map(([op, t]) => op + t);
const meaningful = fc
  .array(fc.tuple(unary, fc.constantFrom(' ', ' ', ' OR ', ' AND ')), { minLength: 1, maxLength: 4 })
  .chain((parts) =>
    fc.boolean().map((group) => {
      const q = parts.map(([t, op], i) => (i === 0 ? t : op + t)).join('');
      return group && parts.length > 1 ? `(${q}) ${parts[0]![0]}` : q;
    }),
  );
const day = fc.integer({ min: -30, max: 3 * 365 + 30 }).map((d) => new Date(START + d * 86400_000).toISOString());
/** null (not given) `odds` times as often as a value. */
const sometimes = <T>(arb: fc.Arbitrary<T>, odds: number) =>
  fc.oneof({ weight: odds, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: arb });
const filters = fc.record({
  accountId: sometimes(fc.constantFrom('1', '2', '3', '99'), 3),
  folder: sometimes(fc.constantFrom(...FOLDERS, 'Nowhere'), 3),
  direction: sometimes(fc.constantFrom('incoming', 'outgoing'), 3),
  from: sometimes(day, 3),
  to: sometimes(day, 3),
  sortBy: fc.constantFrom('sentDate', 'receivedDate', 'subject', 'from', 'to', 'relevance'),
  sortOrder: fc.constantFrom('asc', 'desc'),
  page: sometimes(fc.constantFrom('2', '3'), 8),
  viewer: fc.constantFrom('admin', 'admin', 'alice', 'carol'),
});

const limits = { defaultPageSize: 20, maxPageSize: 100 };

test.serial('generated queries and filters: the same totals and first pages on SQLite and PostgreSQL', async (t) => {
  const t0 = performance.now();
  const indexed = await catchUpSearchIndex(store);
  const indexMs = performance.now() - t0;
  t.is(indexed, MESSAGES);

  const queries = [
    ...fc.sample(meaningful, { numRuns: 3000, seed: 11 }),
    ...fc.sample(structured, { numRuns: 300, seed: 12 }),
    ...fc.sample(spaced, { numRuns: 300, seed: 13 }),
    ...fc.sample(anyText, { numRuns: 200, seed: 15 }),
    ...fc.sample(long, { numRuns: 10, seed: 16 }),
    '',
    'budget',
    'e-mail',
    'cafe',
    '"quarterly budget"',
    'from:alice@work.example',
    '-budget',
    'a OR -b',
    // A phrase of 1,400 words (10,000 characters, the limit): one long chain of <-> on PostgreSQL.
    `"${'budget '.repeat(1400)}"`,
    `subject:"${'a b '.repeat(2400)}"*`,
  ];
  const filterSets = fc.sample(filters, { numRuns: queries.length, seed: 14 });
  let compared = 0;
  let refused = 0;
  const refusedMeaningful: string[] = [];
  let nonEmpty = 0;
  let relevanceCountOnly = 0;
  const mismatches: string[] = [];
  const timing = { sqlite: [] as number[], pg: [] as number[] };
  for (let i = 0; i < queries.length; i++) {
    const q = queries[i]!; // as the MCP tool may pass it: NULs and lone surrogates included
    const { viewer: who, ...f } = filterSets[i]!;
    if (f.from !== null && f.to !== null && f.from > f.to) [f.from, f.to] = [f.to, f.from];
    let query: SearchQuery;
    try {
      const raw = Object.fromEntries(Object.entries({ q, ...f }).filter(([, v]) => v !== null));
      query = parseSearchInput(raw, limits);
    } catch (err) {
      if (!(err instanceof InvalidInput)) throw err;
      refused++;
      if (i < 3000 && err.param === 'q') refusedMeaningful.push(q);
      continue;
    }
    const viewer = { isAdmin: who === 'admin', userId: users[who as keyof typeof users] };
    let s = performance.now();
    const a = sqliteSearch(db, viewer, query);
    timing.sqlite.push(performance.now() - s);
    s = performance.now();
    const b = await pgSearch(store, viewer, query);
    timing.pg.push(performance.now() - s);
    compared++;
    if (a.totalItems > 0) nonEmpty++;
    const idsA = a.items.map((m) => m.id);
    const idsB = b.items.map((m) => m.id);
    const compiled = compileSearch(query.q);
    const ranked = query.sortBy === 'relevance' && compiled.kind === 'query' && compiled.match !== null;
    let same = a.totalItems === b.totalItems;
    if (same && !ranked)
      same = JSON.stringify(idsA) === JSON.stringify(idsB) && JSON.stringify(a) === JSON.stringify(b);
    else if (same && ranked) {
      if (query.page === 1 && a.totalItems <= query.pageSize)
        same = JSON.stringify(idsA.sort()) === JSON.stringify(idsB.sort());
      else {
        // Another ranking may pick another page, but only from the same matches.
        relevanceCountOnly++;
        if (a.totalItems <= 100) {
          const every = new Set(sqliteSearch(db, viewer, { ...query, page: 1, pageSize: 100 }).items.map((m) => m.id));
          same = idsB.length === idsA.length && idsB.every((id) => every.has(id));
        }
      }
    }
    if (!same) {
      mismatches.push(
        `${JSON.stringify({ q: query.q, ...f, viewer: who })}: sqlite ${a.totalItems} [${idsA.slice(0, 5).join(',')}…], postgres ${b.totalItems} [${idsB.slice(0, 5).join(',')}…]`,
      );
    }
  }
  const pct = (list: number[], p: number) => {
    const sorted = [...list].sort((x, y) => x - y);
    return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(2);
  };
  t.log(`indexed ${indexed} messages in ${indexMs.toFixed(0)} ms`);
  t.log(
    `${compared} compared (${nonEmpty} with matches), ${refused} refused by validation on both, ${relevanceCountOnly} relevance counts only`,
  );
  t.log(
    `SQLite ms p50 ${pct(timing.sqlite, 50)} p99 ${pct(timing.sqlite, 99)}; PostgreSQL ms p50 ${pct(timing.pg, 50)} p99 ${pct(timing.pg, 99)}`,
  );
  t.deepEqual(refusedMeaningful.slice(0, 5), []);
  t.deepEqual(mismatches.slice(0, 15), [], `${mismatches.length} mismatches`);
  t.true(compared >= 2500);
  t.true(nonEmpty >= 1000);
});

// The in-memory index serving PostgreSQL (engine/postgres/search-snapshot.ts, ADR 22): its answers
// must be SQL's, item for item, on the same state of the database.
const NO_THREAD = (q: string) => !/thread:/i.test(q);

async function indexedStore(options: { minDocs: number; maxBytes?: number }, old?: ExportedSnapshot) {
  const exported = await exportSnapshot(pgdb.url, old?.state, { ...options, tailMinCostUs: 0 });
  const indexed = new PgStore({ url: pgdb.url, timeZone: ZONE });
  indexed.adoptSearchSnapshot(exported.state.snapshot, exported.token);
  return { exported, indexed };
}

/** The index's answer (it must answer) beside SQL's; relevance as a set when one page holds all. */
async function compareWithSql(
  indexed: PgStore,
  viewer: { isAdmin: boolean; userId: number },
  query: SearchQuery,
  expected?: Awaited<ReturnType<typeof pgSearch>>,
): Promise<string | null> {
  const a = await indexedSearch(indexed, viewer, query);
  if (!a) return `${JSON.stringify(query)}: the index did not answer`;
  const b = expected ?? (await pgSearch(store, viewer, query));
  const compiled = compileSearch(query.q);
  const ranked = query.sortBy === 'relevance' && compiled.kind === 'query' && compiled.match !== null;
  const ids = (r: typeof a) => r.items.map((m) => m.id);
  let same = a.totalItems === b.totalItems;
  if (same && !ranked) same = JSON.stringify(a) === JSON.stringify(b);
  else if (same && ranked && query.page === 1 && b.totalItems <= query.pageSize)
    same = JSON.stringify(ids(a).sort()) === JSON.stringify(ids(b).sort());
  return same
    ? null
    : `${JSON.stringify({ ...query, viewer: viewer.userId })}: index ${a.totalItems} [${ids(a).slice(0, 5)}], sql ${b.totalItems} [${ids(b).slice(0, 5)}]`;
}

for (const [label, minDocs] of [
  ['most words kept', 50],
  ['no word kept', 1_000_000],
] as const) {
  test.serial(`the in-memory index answers as SQL does on PostgreSQL, ${label}`, async (t) => {
    await catchUpSearchIndex(store);
    const { exported, indexed } = await indexedStore({ minDocs });
    try {
      const queries = [
        ...fc.sample(meaningful, { numRuns: 700, seed: 21 }),
        ...fc.sample(structured, { numRuns: 100, seed: 22 }),
        '',
        '-budget',
        'a OR -b',
      ].filter(NO_THREAD);
      const filterSets = fc.sample(filters, { numRuns: queries.length, seed: 23 });
      const mismatches: string[] = [];
      let answered = 0;
      for (let i = 0; i < queries.length; i++) {
        const { viewer: who, ...f } = filterSets[i]!;
        if (f.from !== null && f.to !== null && f.from > f.to) [f.from, f.to] = [f.to, f.from];
        let query: SearchQuery;
        try {
          query = parseSearchInput(
            Object.fromEntries(Object.entries({ q: queries[i]!, ...f }).filter(([, v]) => v !== null)),
            limits,
          );
        } catch (err) {
          if (err instanceof InvalidInput) continue;
          throw err;
        }
        const viewer = { isAdmin: who === 'admin', userId: users[who as keyof typeof users] };
        const problem = await compareWithSql(indexed, viewer, query);
        if (problem) mismatches.push(problem);
        else answered++;
      }
      t.log(`${answered} searches answered by the index, equal to SQL`);
      t.deepEqual(mismatches.slice(0, 10), [], `${mismatches.length} mismatches`);
      t.true(answered >= 600);
    } finally {
      await indexed.close();
      await exported.release();
    }
  });
}

test.serial(
  'a budget short of every common word pair keeps the pairs of the commonest pair words; phrases equal SQL',
  async (t) => {
    await catchUpSearchIndex(store);
    const whole = await indexedStore({ minDocs: 50 });
    const full = whole.exported.state.snapshot;
    const size = (key: string) => setBytes(full.term(key)!);
    const pairWords = full.termKeys.filter((k) => k.startsWith('w:')).map((k) => k.slice(2));
    const single = full.termKeys.filter((k) => !k.startsWith('b:')).reduce((n, k) => n + size(k), 0);
    const pairBytes = full.termKeys.filter((k) => k.startsWith('b:')).reduce((n, k) => n + size(k), 0);
    await whole.indexed.close();
    await whole.exported.release();
    t.true(pairWords.length >= 3, 'the archive has common words to pair');
    // Room for every single word and half the pairs' bytes: before, no pair at all was kept.
    const { exported, indexed } = await indexedStore({ minDocs: 50, maxBytes: single + Math.floor(pairBytes / 2) });
    try {
      const kept = exported.state.snapshot.termKeys.filter((k) => k.startsWith('w:')).map((k) => k.slice(2));
      t.true(kept.length > 0 && kept.length < pairWords.length, `${kept.length} of ${pairWords.length} pair words`);
      t.deepEqual(kept, pairWords.slice(0, kept.length), 'the commonest pair words first');
      const admin = { isAdmin: true, userId: users.admin };
      const mismatches: string[] = [];
      for (const first of pairWords)
        for (const second of pairWords) {
          const problem = await compareWithSql(indexed, admin, parseSearchInput({ q: `"${first} ${second}"` }, limits));
          if (problem) mismatches.push(problem);
        }
      t.deepEqual(mismatches.slice(0, 10), [], `${mismatches.length} mismatches`);
    } finally {
      await indexed.close();
      await exported.release();
    }
  },
);

test.serial(
  'the index stays exact across deletes, folder moves, reassignments, permission changes and new mail made by plain SQL',
  async (t) => {
    await catchUpSearchIndex(store);
    let { exported, indexed } = await indexedStore({ minDocs: 50 });
    const admin = { isAdmin: true, userId: users.admin };
    const alice = { isAdmin: false, userId: users.alice };
    const cases = [
      { q: 'budget' },
      { q: 'budget', folder: 'INBOX' },
      { folder: 'Sent' },
      { accountId: String(accounts[0]) },
      { q: 'meeting', sortBy: 'subject', sortOrder: 'asc' },
      { q: 'rep*', direction: 'outgoing' },
      { q: '"quarterly budget"', page: '2' },
      { q: 'review', sortBy: 'relevance' },
    ].map((c) => parseSearchInput(c, limits));
    const all = async () => {
      const out = [];
      for (const viewer of [admin, alice])
        for (const query of cases) out.push({ viewer, query, sql: await pgSearch(store, viewer, query) });
      return out;
    };
    const expectSame = async (stage: string, expected?: Awaited<ReturnType<typeof all>>) => {
      const problems: string[] = [];
      for (const { viewer, query, sql: before } of expected ?? (await all())) {
        const problem = await compareWithSql(indexed, viewer, query, expected ? before : undefined);
        if (problem) problems.push(problem);
      }
      t.deepEqual(problems, [], stage);
    };
    const refresh = async () => {
      const next = await indexedStore({ minDocs: 50 }, exported);
      await indexed.close();
      await exported.release();
      ({ exported, indexed } = next);
    };
    const ids = async (where: Sql, limit: number) =>
      (
        await store.primary<{ id: number }>(
          sql`SELECT "Id" AS id FROM mail_archiver."ArchivedEmails" WHERE ${where} ORDER BY "Id" LIMIT ${limit}`,
        )
      ).map((r) => r.id);
    try {
      await expectSame('at the start');

      // Behind the service's back: each change, then the index before and after its refresh.
      const changes: Array<[string, () => Promise<unknown>]> = [
        [
          'deletes',
          async () => {
            const gone = await ids(sql`"Subject" LIKE '%budget%'`, 25);
            await store.primary(sql`DELETE FROM mail_archiver."ArchivedEmails" WHERE "Id" = ANY(${gone}::int[])`);
          },
        ],
        [
          'folder moves',
          async () => {
            const moved = await ids(sql`"FolderName" = 'INBOX'`, 40);
            await store.primary(
              sql`UPDATE mail_archiver."ArchivedEmails" SET "FolderName" = 'Sent' WHERE "Id" = ANY(${moved}::int[])`,
            );
          },
        ],
        [
          // The folders' counts stay what they were: only the rows can tell (and a sum of row
          // hashes that adds each column's hash apart cannot: PostgreSQL's record hash does).
          'two messages swapping folders',
          async () => {
            const budget = sql`("Subject" ILIKE '%budget%' OR "Body" ILIKE '%budget%')`;
            const [inbox] = await ids(sql`"FolderName" = 'INBOX' AND ${budget}`, 1);
            const [sent] = await ids(sql`"FolderName" = 'Sent' AND NOT ${budget}`, 1);
            t.true(inbox !== undefined && sent !== undefined, 'a pair to swap');
            await store.primary(
              sql`UPDATE mail_archiver."ArchivedEmails"
                     SET "FolderName" = CASE WHEN "Id" = ${inbox!}::int THEN 'Sent' ELSE 'INBOX' END
                   WHERE "Id" IN (${inbox!}::int, ${sent!}::int)`,
            );
          },
        ],
        [
          'a date corrected',
          async () => {
            const [first] = await ids(sql`"Subject" LIKE '%budget%'`, 1);
            await store.primary(
              sql`UPDATE mail_archiver."ArchivedEmails" SET "SentDate" = '2019-01-02 03:04:05' WHERE "Id" = ${first!}::int`,
            );
          },
        ],
        [
          'account reassignment',
          async () => {
            const moved = await ids(sql`"MailAccountId" = ${accounts[1]!}`, 40);
            await store.primary(
              sql`UPDATE mail_archiver."ArchivedEmails" SET "MailAccountId" = ${accounts[0]!} WHERE "Id" = ANY(${moved}::int[])`,
            );
          },
        ],
      ];
      for (const [label, change] of changes) {
        const before = await all();
        await change();
        // Not refreshed yet: page and totalItems still describe the state the snapshot saw.
        await expectSame(`${label}, before the refresh: the snapshot's state`, before);
        await refresh();
        await expectSame(`${label}, after the refresh`);
      }

      // Who sees what is read on every search: no refresh needed.
      await store.primary(
        sql`DELETE FROM mail_archiver."UserMailAccounts" WHERE "UserId" = ${users.alice} AND "MailAccountId" = ${accounts[0]!}`,
      );
      await expectSame('a permission revoked');
      await store.primary(
        sql`INSERT INTO mail_archiver."UserMailAccounts" ("UserId", "MailAccountId") VALUES (${users.alice}, ${accounts[1]!})`,
      );
      await expectSame('a permission granted');

      // New mail: the index steps aside (SQL finds it at once) until the next refresh has it.
      // As Mail Archiver inserts: the identity column gives the id.
      await store.primary(
        sql`INSERT INTO mail_archiver."ArchivedEmails" ("MailAccountId", "MessageId", "Subject", "Body", "HtmlBody", "From",
            "To", "Cc", "Bcc", "SentDate", "ReceivedDate", "IsOutgoing", "HasAttachments", "FolderName")
          VALUES (${accounts[0]!}, '<xylograph@x>', 'Budget of the xylograph', 'budget', '', 'new@x.example', '', '', '',
            '2025-06-03 10:00:00', '2025-06-03 10:00:00', false, false, 'INBOX')`,
      );
      t.is(await indexedSearch(indexed, admin, cases[0]!), undefined);
      t.is((await pgSearch(indexed, admin, parseSearchInput({ q: 'xylograph' }, limits))).totalItems, 1);
      await catchUpSearchIndex(store);
      await refresh();
      t.is((await indexedSearch(indexed, admin, parseSearchInput({ q: 'xylograph' }, limits)))?.totalItems, 1);
      await expectSame('new mail, after the refresh');
    } finally {
      await indexed.close();
      await exported.release();
    }
  },
);

test.serial(
  'a refresh that finds nothing changed reads no message rows: the server sums them, and a change is still seen',
  async (t) => {
    await catchUpSearchIndex(store);
    const first = await exportSnapshot(pgdb.url, undefined, { minDocs: 50 });
    const sent: string[] = [];
    const stop = interceptQueries((q, send) => (sent.push(queryText(q)), send()));
    const rowReads = () => sent.filter((q) => /ORDER BY e\."SentDate", e\."Id"/.test(q)).length;
    const exported: ExportedSnapshot[] = [first];
    try {
      const again = await exportSnapshot(pgdb.url, first.state, { minDocs: 50 });
      exported.push(again);
      t.is(again.state, first.state, 'nothing changed: the same state');
      t.is(rowReads(), 0, 'and no message was read to tell');
      t.not(again.token, first.token, 'a snapshot of its own all the same (the old one is let go)');

      const [id] = await store.primary<{ id: number }>(
        sql`SELECT "Id" AS id FROM mail_archiver."ArchivedEmails" WHERE "FolderName" = 'INBOX' ORDER BY "Id" LIMIT 1`,
      );
      await store.primary(
        sql`UPDATE mail_archiver."ArchivedEmails" SET "FolderName" = 'Sent' WHERE "Id" = ${id!.id}::int`,
      );
      const moved = await exportSnapshot(pgdb.url, again.state, { minDocs: 50 });
      exported.push(moved);
      t.not(moved.state, first.state, 'a folder move is a new state');
      t.is(rowReads(), 1, 'read once to find it');
      await store.primary(
        sql`UPDATE mail_archiver."ArchivedEmails" SET "FolderName" = 'INBOX' WHERE "Id" = ${id!.id}::int`,
      );
    } finally {
      stop();
      for (const e of exported) await e.release();
    }
  },
);

test.serial(
  'a search the index answers is one message to the server, and a wrong guess of the present is never kept',
  async (t) => {
    await catchUpSearchIndex(store);
    const { exported, indexed } = await indexedStore({ minDocs: 50 });
    const alice = { isAdmin: false, userId: users.alice };
    // Every message a client sends: the simple protocol's one query, or one extended query.
    const sent: string[] = [];
    // Relevance ranks by ts_rank on the SQL path (docs/search.md): only its count is compared.
    const messagesFor = async (viewer: typeof alice, params: Record<string, string>) => {
      const query = parseSearchInput(params, limits);
      sent.length = 0;
      const stop = interceptQueries((q, send) => (sent.push(queryText(q)), send()));
      let answer;
      try {
        answer = await indexedSearch(indexed, viewer, query);
      } finally {
        stop();
      }
      t.truthy(answer, `the index answers ${JSON.stringify(params)}`);
      const bySql = await pgSearch(store, viewer, query);
      if (query.sortBy === 'relevance') t.is(answer?.totalItems, bySql.totalItems, JSON.stringify(params));
      else t.deepEqual(answer, bySql, JSON.stringify(params));
      return sent.length;
    };
    try {
      // A viewer this thread has not seen: the present first, then the search.
      const visible = await store.primary<{ id: number }>(
        sql`SELECT "MailAccountId" AS id FROM mail_archiver."UserMailAccounts" WHERE "UserId" = ${users.alice} ORDER BY 1`,
      );
      t.true(visible.length > 0 && visible.length < accounts.length, 'alice sees some accounts, not all');
      await messagesFor(alice, { q: 'budget' });
      // Seen: one message, dates (in a zone with summer time) included.
      t.is(await messagesFor(alice, { q: 'budget', from: '2024-03-31', to: '2024-10-27' }), 1);
      t.is(await messagesFor(alice, { folder: 'INBOX', sortBy: 'subject' }), 1);
      t.regex(sent[0]!, /SET TRANSACTION SNAPSHOT/);
      // The same page again, in the same snapshot: its rows are kept, only the present is read.
      t.is(await messagesFor(alice, { folder: 'INBOX', sortBy: 'subject' }), 1);
      t.notRegex(sent[0]!, /SET TRANSACTION SNAPSHOT/);
      t.is(await messagesFor(alice, { q: 'budget', page: '500' }), 1, 'past the last page');
      // Terms the index leaves to the side index: all of them asked in one message, before the
      // one evaluation over the archive (a dry run finds them), then the page's message.
      t.is(await messagesFor(alice, { q: 'body:budget "review meeting" -cc:alice' }), 2);
      t.is(await messagesFor(alice, { q: 'body:budget OR "draft report"', sortBy: 'relevance' }), 2);

      // What this thread believes of the present, made wrong on purpose: the answer is still
      // SQL's, read again with the server's present (one message more).
      const allAccounts = accounts.slice().sort((a, b) => a - b);
      const wrong = { max: 0, visible: allAccounts, from: 0, to: 1 };
      const dated = parseSearchInput({ q: 'budget', from: '2024-01-01', to: '2024-12-31' }, limits);
      learnPresent(indexed, alice, dated, wrong);
      t.is(await messagesFor(alice, { q: 'budget', from: '2024-01-01', to: '2024-12-31' }), 2);
      t.is(await messagesFor(alice, { q: 'budget', from: '2024-01-01', to: '2024-12-31' }), 1, 'learnt');
    } finally {
      await indexed.close();
      await exported.release();
    }
  },
);

test.serial(
  'through the engine pool: the builder thread builds the PostgreSQL index, readiness says so, and searches equal SQL',
  async (t) => {
    await catchUpSearchIndex(store);
    // No saved file: its default is under the working directory, the repository's data/.
    const engine = new EnginePool({ dbPath: pgdb.url, timeZone: ZONE, threads: 1, searchIndexFile: '' });
    try {
      let index: SearchIndexInfo | undefined;
      for (const deadline = Date.now() + 90_000; Date.now() < deadline;) {
        index = (await engine.ping('query')).searchIndex;
        if (index?.status === 'current') break;
        await new Promise((r) => setTimeout(r, 200));
      }
      t.is(index?.status, 'current', engine.searchIndexError);
      t.true((index?.terms ?? 0) > 0);
      const principal = { userId: users.alice, username: 'alice', isAdmin: false, keyId: 1, keyPrefix: 'ma_test0000' };
      for (const params of [{ q: 'budget' }, { q: 'rep*', sortBy: 'subject' }, { folder: 'Sent', page: '2' }]) {
        const query = parseSearchInput(params, limits);
        const viewer = { isAdmin: false, userId: users.alice };
        t.deepEqual(await engine.run({ kind: 'search', principal, query }), await pgSearch(store, viewer, query));
      }
    } finally {
      await engine.close();
    }
  },
);

test.serial('messages inserted by plain SQL are found by the next search; deleted ones never', async (t) => {
  const admin = { isAdmin: true, userId: users.admin };
  const query = parseSearchInput({ q: 'xylophonist' }, limits);
  t.is((await pgSearch(store, admin, query)).totalItems, 0);
  const [row] = await store.primary<{ id: number }>(
    sql`INSERT INTO mail_archiver."ArchivedEmails" ("MailAccountId", "MessageId", "Subject", "Body", "HtmlBody", "From",
          "To", "Cc", "Bcc", "SentDate", "ReceivedDate", "IsOutgoing", "HasAttachments", "FolderName")
        VALUES (1, '<new@x>', 'Xylophonist news', 'body', '', 'new@x.example', 'alice@work.example', '', '',
          '2025-06-01 10:00:00', '2025-06-01 10:00:00', false, false, 'INBOX') RETURNING "Id" AS id`,
  );
  const found = await pgSearch(store, admin, query);
  t.deepEqual(
    found.items.map((m) => m.id),
    [row!.id],
  );
  await store.primary(sql`DELETE FROM mail_archiver."ArchivedEmails" WHERE "Id" = ${row!.id}`);
  t.is((await pgSearch(store, admin, query)).totalItems, 0);
});

const insertRow = (id: number, subject: string, body: string) =>
  store.primary(
    sql`INSERT INTO mail_archiver."ArchivedEmails" ("Id", "MailAccountId", "MessageId", "Subject", "Body", "HtmlBody",
          "From", "To", "Cc", "Bcc", "SentDate", "ReceivedDate", "IsOutgoing", "HasAttachments", "FolderName")
        VALUES (${id}, 1, ${`<${id}@x>`}, ${subject}, ${body}, '', 'new@x.example', '', '', '',
          '2025-06-02 10:00:00', '2025-06-02 10:00:00', false, false, 'INBOX')`,
  );

test.serial('a message committed late below the watermark is found by the next catch-up', async (t) => {
  const admin = { isAdmin: true, userId: users.admin };
  // Above every id ever used: Mail Archiver's identity never hands out an id twice.
  const [top] = await store.primary<{ id: number }>(
    sql`SELECT greatest((SELECT max("Id") FROM mail_archiver."ArchivedEmails"),
                        (SELECT max(email_id) FROM mail_archive_gateway.search_docs)) AS id`,
  );
  // Id top+1 stands for a transaction that took its id first but commits after top+2 was indexed.
  await insertRow(top!.id + 2, 'Marimba one', 'x');
  t.is((await pgSearch(store, admin, parseSearchInput({ q: 'marimba' }, limits))).totalItems, 1);
  await insertRow(top!.id + 1, 'Marimba two', 'x');
  await insertRow(top!.id + 3, 'Marimba three', 'x');
  t.is((await pgSearch(store, admin, parseSearchInput({ q: 'marimba' }, limits))).totalItems, 3);
});

test.serial('a word past the lexeme size limit and a long body are indexed, not refused', async (t) => {
  const admin = { isAdmin: true, userId: users.admin };
  const [top] = await store.primary<{ id: number }>(
    sql`SELECT greatest((SELECT max("Id") FROM mail_archiver."ArchivedEmails"),
                        (SELECT max(email_id) FROM mail_archive_gateway.search_docs)) AS id`,
  );
  const giant = 'q'.repeat(5000);
  const distinct = Array.from({ length: 60_000 }, (_, i) => `w${i.toString(36)}x${'z'.repeat(5)}`).join(' ');
  await insertRow(top!.id + 1, `Gong ${giant}`, `${'gong '.repeat(20_000)}tail ${distinct}`);
  const found = await pgSearch(store, admin, parseSearchInput({ q: 'gong' }, limits));
  t.deepEqual(
    found.items.map((m) => m.id),
    [top!.id + 1],
  );
  t.is((await pgSearch(store, admin, parseSearchInput({ q: `subject:${giant}` }, limits))).totalItems, 1);
});

// Word pairs (migration 10, ADR 24): a phrase the index does not keep is asked of the side index
// by its adjacent-pair lexemes, which must list exactly the messages its positions do.
const PHRASES = [
  '"quarterly budget"',
  '"budget review meeting"',
  '"the and"',
  '"project rep"*',
  'subject:"budget rev"*',
  'subject:"budget review"',
  '"café münchen" OR "x1 2024"',
  '-"review meeting" budget',
  '"gong gong"',
  '"tail w0xzzzzz"',
  '"w1xzzzzz w2xzzzzz"',
];
const stripPairs = (where: string) =>
  runSql(
    pgdb.url,
    `ALTER TABLE mail_archive_gateway.search_docs DISABLE TRIGGER search_docs_pairs;
     UPDATE mail_archive_gateway.search_docs
        SET doc = ts_delete(doc, ARRAY(SELECT u.lexeme FROM unnest(doc) u WHERE u.lexeme !~ '^[a-z]:')) WHERE ${where};
     ALTER TABLE mail_archive_gateway.search_docs ENABLE TRIGGER search_docs_pairs;`,
  );

test.serial(
  'a two-word phrase compiles to one pair lexeme per field; a pair past the lexeme limit keeps positions',
  (t) => {
    const node = parseQuery('"quarterly budget"')!;
    t.deepEqual(pairedTsQuery(node)?.paired.match(/'[A-Z]:[^']*'/g), [
      "'S:quarterly budget'",
      "'B:quarterly budget'",
      "'F:quarterly budget'",
      "'T:quarterly budget'",
      "'C:quarterly budget'",
      "'K:quarterly budget'",
    ]);
    t.regex(pairedTsQuery(parseQuery('"a b c"*')!)!.paired, /'B:a b' & 'B:b c':\* & \('b:a' <-> 'b:b' <-> 'b:c':\*\)/);
    t.is(pairedTsQuery(parseQuery(`"${'q'.repeat(1500)} ${'r'.repeat(1500)}"`)!), null);
    t.is(pairedTsQuery(parseQuery('budget')!), null);
  },
);

test.serial(
  'each document comes with exactly the word pairs the server would derive (with_pairs), clamped positions too',
  async (t) => {
    const [top] = await store.primary<{ id: number }>(
      sql`SELECT greatest((SELECT max("Id") FROM mail_archiver."ArchivedEmails"),
                        (SELECT max(email_id) FROM mail_archive_gateway.search_docs)) AS id`,
    );
    // Past 16,383 words positions clamp (many words at the last one), past 256 a word's are dropped.
    const words = Array.from({ length: 17_000 }, (_, i) => (i % 3 === 0 ? 'often' : `w${i % 700}`));
    await insertRow(top!.id + 1, 'Quarterly budget review', words.join(' '));
    await insertRow(top!.id + 2, 'One', 'word');
    await catchUpSearchIndex(store);
    const count = async (where: string) =>
      (
        await store.primary<{ n: number }>(
          sql`SELECT count(*)::int AS n FROM mail_archive_gateway.search_docs WHERE ${raw(where)}`,
        )
      )[0]!.n;
    t.true((await count('true')) > MESSAGES);
    // As text: a document received in binary form may be laid out a byte longer, the same lexemes.
    t.is(await count('doc::text <> mail_archive_gateway.with_pairs(doc)::text'), 0);
    t.is(await count(`email_id = ${top!.id + 1} AND doc @@ '''S:quarterly budget''' AND doc @@ '''B:often w1'''`), 1);
    // The trigger keeps a document that brings its pairs: one of pairs it would not derive stays.
    await store.primary(
      sql`UPDATE mail_archive_gateway.search_docs SET doc = doc || array_to_tsvector(ARRAY['B:not derived'])
         WHERE email_id = ${top!.id + 1}`,
    );
    t.is(await count(`email_id = ${top!.id + 1} AND doc @@ '''B:not derived'''`), 1);
    // One without pairs (an earlier release's writer) is paired by the trigger.
    await store.primary(
      sql`UPDATE mail_archive_gateway.search_docs SET doc = ts_delete(doc, ARRAY(SELECT u.lexeme FROM unnest(doc) u
                  WHERE u.lexeme !~ '^[a-z]:')) WHERE email_id = ${top!.id + 1}`,
    );
    t.is(await count(`email_id = ${top!.id + 1} AND doc @@ '''B:often w1''' AND NOT doc @@ '''B:not derived'''`), 1);
    await store.primary(sql`DELETE FROM mail_archiver."ArchivedEmails" WHERE "Id" > ${top!.id}`);
    await store.primary(sql`DELETE FROM mail_archive_gateway.search_docs WHERE email_id > ${top!.id}`);
  },
);

test.serial(
  'documents written before the word pairs get them in batches; only then do the index and the SQL path use them, and phrases stay exact',
  async (t) => {
    const admin = { isAdmin: true, userId: users.admin };
    await catchUpSearchIndex(store);
    // The corpus as an earlier release left it: no pair lexemes, the rewrite still to do.
    await stripPairs('true');
    await runSql(
      pgdb.url,
      `UPDATE mail_archive_gateway.search_state
          SET pairs_through = 0, pairs_goal = (SELECT max(email_id) FROM mail_archive_gateway.search_docs)`,
    );
    const count = async (where: string) =>
      (
        await store.primary<{ n: number }>(
          sql`SELECT count(*)::int AS n FROM mail_archive_gateway.search_docs WHERE ${raw(where)}`,
        )
      )[0]!.n;
    const paired = "doc @@ '''B:quarterly budget'' | ''_:unpaired'''";
    t.is(await count(paired), 0);
    const phrases = PHRASES.map((q) => parseSearchInput({ q }, limits));
    const compareAll = async (indexed: PgStore) => {
      const problems: string[] = [];
      for (const query of phrases) {
        const problem = await compareWithSql(indexed, admin, query);
        if (problem) problems.push(problem);
      }
      return problems;
    };
    let { exported, indexed } = await indexedStore({ minDocs: 1_000_000 });
    /** A new snapshot from the one serving (grown, not rebuilt), and a store that uses it. */
    const nextSnapshot = async () => {
      const old = { exported, indexed };
      ({ exported, indexed } = await indexedStore({ minDocs: 1_000_000 }, old.exported));
      await old.indexed.close();
      await old.exported.release();
    };
    try {
      t.is(exported.state.snapshot.term('x:pairs'), undefined, 'not used before every document has them');
      t.deepEqual(await compareAll(indexed), []);

      // One batch when the time is up at once; then the rest.
      t.false(await addWordPairs(store, 0));
      const [state] = await store.primary<{ through: number; goal: number }>(
        sql`SELECT pairs_through AS through, pairs_goal AS goal FROM mail_archive_gateway.search_state`,
      );
      t.true(state!.through > 0 && state!.through < state!.goal);
      t.true(await addWordPairs(store));
      t.true((await count(paired)) > 0);
      t.is(await count('doc <> mail_archive_gateway.with_pairs(doc)'), 0, 'the rewrite is the trigger: idempotent');
      // A message whose pairs do not fit tsvector's limits keeps positions only, and says so.
      const [top] = await store.primary<{ id: number }>(
        sql`SELECT greatest((SELECT max("Id") FROM mail_archiver."ArchivedEmails"),
                            (SELECT max(email_id) FROM mail_archive_gateway.search_docs)) AS id`,
      );
      const distinct = Array.from({ length: 60_000 }, (_, i) => `w${i.toString(36)}xzzzzz`).join(' ');
      await insertRow(top!.id + 1, 'Unpaired', distinct);
      await catchUpSearchIndex(store);
      t.is(
        await count(`email_id = ${top!.id + 1} AND doc @@ '''_:unpaired''' AND NOT doc @@ '''B:w1xzzzzz w2xzzzzz'''`),
        1,
      );

      await nextSnapshot();
      t.not(exported.state.snapshot.term('x:pairs'), undefined, 'used once every document has them');
      const problems = await compareAll(indexed);
      t.deepEqual(problems, []);
      const unpaired = await indexedSearch(indexed, admin, parseSearchInput({ q: '"w1xzzzzz w2xzzzzz"' }, limits));
      t.deepEqual(
        unpaired?.items.map((m) => m.id),
        [top!.id + 1],
      );

      // The pairs are what the index reads: a document whose pairs vanish behind its back drops out.
      const quarterly = phrases[0]!;
      const before = await indexedSearch(indexed, admin, quarterly);
      t.true(before!.totalItems > 0);
      await stripPairs(
        `doc @@ '''B:quarterly budget''' AND email_id = (SELECT min(email_id) FROM mail_archive_gateway.search_docs WHERE doc @@ '''B:quarterly budget''')`,
      );
      await nextSnapshot();
      t.is((await indexedSearch(indexed, admin, quarterly))!.totalItems, before!.totalItems - 1);
      // So does a search without the in-memory index (the SQL path): GIN answers the pair from its
      // posting list, where positions had it read and recheck every document holding both words.
      t.is((await pgSearch(store, admin, quarterly)).totalItems, before!.totalItems - 1, 'SQL path');
      const negated = parseSearchInput({ q: `-${quarterly.q!}` }, limits);
      const all = (await pgSearch(store, admin, parseSearchInput({}, limits))).totalItems;
      t.is((await pgSearch(store, admin, negated)).totalItems, all - before!.totalItems + 1, 'SQL path, negated');
    } finally {
      await indexed.close();
      await exported.release();
      await runSql(pgdb.url, 'UPDATE mail_archive_gateway.search_docs SET doc = doc');
    }
  },
);

/** The PostgreSQL index builder thread on this archive, looking every 50 ms; its posts as snapshots. */
function startBuilder(t: ExecutionContext, timing: { refreshMs: number; backstopMs: number }) {
  const channel = `test-refresh-${process.pid}-${++builders}`;
  const bc = new BroadcastChannel(channel);
  const posts: Snapshot[] = [];
  bc.onmessage = (event) => {
    const message = (event as { data: { buffer?: SharedArrayBuffer } }).data;
    if (message.buffer) posts.push(new Snapshot(message.buffer));
  };
  const builder = new Worker(new URL('../engine/postgres/search-snapshot-builder.js', import.meta.url), {
    workerData: { url: pgdb.url, timeZone: ZONE, channel, maxBytes: 64 << 20, pollMs: 50, ...timing },
  });
  builder.on('error', (err) => t.fail(String(err)));
  return {
    posts,
    stop: async () => {
      await builder.terminate();
      bc.close();
    },
  };
}
let builders = 0;

async function until(what: string, done: () => boolean | Promise<boolean>): Promise<void> {
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50)))
    if (await done()) return;
  throw new Error(`gave up waiting for ${what}`);
}

/** The builder's looks so far: each reads the highest id, one index scan of ArchivedEmails as the server counts them. */
const looks = async () =>
  Number(
    (
      await store.primary<{ n: string }>(
        sql`SELECT idx_scan AS n FROM pg_stat_user_tables WHERE relid = 'mail_archiver."ArchivedEmails"'::regclass`,
      )
    )[0]!.n,
  );

test.serial('a builder that starts with every document paired does not refresh at once to say so', async (t) => {
  await catchUpSearchIndex(store);
  await addWordPairs(store);
  // Refreshes far apart: only a forced one could come during the test.
  const { posts, stop } = startBuilder(t, { refreshMs: 600_000, backstopMs: 600_000 });
  try {
    await until('a first snapshot', () => posts.length > 0);
    t.not(posts[0]!.term('x:pairs'), undefined, 'the first snapshot uses the pairs');
    const looked = await looks();
    await until('forty looks', async () => (await looks()) >= looked + 40);
    t.is(posts.length, 1);
  } finally {
    await stop();
  }
});

test.serial(
  'the builder refreshes when the server counts writes to what it reads, and not while nothing is written',
  async (t) => {
    await catchUpSearchIndex(store);
    // Looking often, and a backstop far past the test: only the counters can bring a refresh.
    const { posts, stop } = startBuilder(t, { refreshMs: 50, backstopMs: 600_000 });
    const moved = 'Moved/By Mail Archiver';
    const [victim] = await store.primary<{ id: number; folder: string }>(
      sql`SELECT "Id" AS id, "FolderName" AS folder FROM mail_archiver."ArchivedEmails" ORDER BY "Id" LIMIT 1`,
    );
    const inFolder = (snap: Snapshot, folder: string) => snap.term(termKey('t', folderTag(folder)))?.docs ?? 0;
    try {
      await until('a first snapshot', () => posts.length > 0);
      // The writes of the tests before this one reach the counters within a second or so; then
      // forty looks in a row find nothing to refresh (the refresh interval alone is 50 ms).
      let quiet = false;
      for (let attempt = 0; attempt < 6 && !quiet; attempt++) {
        const [posted, looked] = [posts.length, await looks()];
        await until('forty looks', async () => (await looks()) >= looked + 40);
        quiet = posts.length === posted;
      }
      t.true(quiet, 'no refresh while nothing is written');

      // A folder move by plain SQL, as Mail Archiver makes it: the counters bring the refresh.
      await store.primary(
        sql`UPDATE mail_archiver."ArchivedEmails" SET "FolderName" = ${moved} WHERE "Id" = ${victim!.id}`,
      );
      const posted = posts.length;
      await until('the move in a snapshot', () => inFolder(posts.at(-1)!, moved) === 1);
      t.true(posts.length > posted);
      t.is(inFolder(posts.at(-1)!, moved), 1, 'the moved message in its new folder');
      await store.primary(
        sql`UPDATE mail_archiver."ArchivedEmails" SET "FolderName" = ${victim!.folder} WHERE "Id" = ${victim!.id}`,
      );
      await until('the move back in a snapshot', () => inFolder(posts.at(-1)!, moved) === 0);
      t.is(inFolder(posts.at(-1)!, moved), 0, 'and back');
    } finally {
      await store.primary(
        sql`UPDATE mail_archiver."ArchivedEmails" SET "FolderName" = ${victim!.folder} WHERE "Id" = ${victim!.id}`,
      );
      await stop();
    }
  },
);

test.serial(
  'sorted by date, a walk that would read more than half as many messages as there are matches gives way to the list',
  async (t) => {
    // Matches bunched in time defeat the guess that they are spread evenly: `subject:client` on the
    // bench corpus walked 47,560 messages for one page. 900 messages of one word, all older than the
    // rest of the archive: an even spread would find a page in the newest hundred or so.
    const admin = { isAdmin: true, userId: users.admin };
    const [top] = await store.primary<{ id: number }>(
      sql`SELECT greatest((SELECT max("Id") FROM mail_archiver."ArchivedEmails"),
                          (SELECT max(email_id) FROM mail_archive_gateway.search_docs)) AS id`,
    );
    const first = top!.id + 1;
    await store.primary(
      sql`INSERT INTO mail_archiver."ArchivedEmails" ("Id", "MailAccountId", "MessageId", "Subject", "Body", "HtmlBody",
            "From", "To", "Cc", "Bcc", "SentDate", "ReceivedDate", "IsOutgoing", "HasAttachments", "FolderName")
          SELECT i, 1, '<' || i || '@old>', 'Zeitgeist ' || i, 'x', '', 'old@x.example', '', '', '',
                 timestamp '2001-01-01' + (i - ${first}) * interval '1 hour', timestamp '2001-01-01', false, false, 'INBOX'
            FROM generate_series(${first}::int, ${first + 899}::int) i`,
    );
    try {
      const sent: string[] = [];
      const stop = interceptQueries((q, send) => (sent.push(queryText(q)), send()));
      let found;
      try {
        found = await pgSearch(store, admin, parseSearchInput({ q: 'zeitgeist' }, limits));
      } finally {
        stop();
      }
      t.is(found.totalItems, 900);
      t.deepEqual(
        found.items.map((m) => m.id),
        Array.from({ length: 20 }, (_, i) => first + 899 - i),
        'the newest 20 of them, newest first',
      );
      const walked = sent.filter((s) => /FROM \(SELECT \* FROM mail_archiver\."ArchivedEmails" e .* LIMIT/s.test(s));
      t.is(walked.length, 1, 'the walk was tried, bounded');
      t.true(
        sent.some((s) => s.includes('AS MATERIALIZED')),
        'and gave way to the list of matches',
      );
      // Page 2 the same way, and a page of the words spread evenly still walks and is right.
      const second = await pgSearch(store, admin, parseSearchInput({ q: 'zeitgeist', page: '2' }, limits));
      t.is(second.items[0]?.id, first + 879);
      const newest = await store.primary<{ id: number }>(
        sql`SELECT e."Id" AS id FROM mail_archiver."ArchivedEmails" e
              JOIN mail_archive_gateway.search_docs d ON d.email_id = e."Id"
             WHERE d.doc @@ ${compileTsQuery('budget')}::tsquery ORDER BY e."SentDate" DESC, e."Id" DESC LIMIT 20`,
      );
      t.deepEqual(
        (await pgSearch(store, admin, parseSearchInput({ q: 'budget' }, limits))).items.map((m) => m.id),
        newest.map((r) => r.id),
      );
    } finally {
      await store.primary(sql`DELETE FROM mail_archiver."ArchivedEmails" WHERE "Id" >= ${first}`);
      await store.primary(sql`DELETE FROM mail_archive_gateway.search_docs WHERE email_id >= ${first}`);
    }
  },
);
