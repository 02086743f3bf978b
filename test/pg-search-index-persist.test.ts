// The saved search index on PostgreSQL (Engine:SearchIndexFile, ADR 23): a restarted pool starts
// from the file instead of a full build, and what Mail Archiver changed while the service was
// stopped (new mail, deletes, folder moves, account reassignment, a permission change; all by
// plain SQL, as Mail Archiver writes) is caught up exactly: every search equals plain SQL. A
// damaged file is ignored and rebuilt.
import test, { type ExecutionContext } from 'ava';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { prepareArchive } from '../engine/archive.js';
import { loadIndex, saveIndex } from '../engine/search/bitsets/persist.js';
import { Snapshot, termKey } from '../engine/search/bitsets/snapshot.js';
import { SIDE_INDEX_MIN_DOCS } from '../engine/postgres/search-snapshot.js';
import type { EnginePool } from '../engine/pool/pool.js';
import { searchEmails as plainSearch } from '../engine/postgres/search.js';
import { sql } from '../engine/postgres/sql.js';
import { PgStore } from '../engine/postgres/store.js';
import type { SearchIndexInfo } from '../shared/jobs.js';
import { parseSearchInput } from '../shared/search-input.js';
import { tempDir } from './helpers/fixture.js';
import {
  archive,
  current,
  indexKey,
  QUERIES,
  savedFile,
  searchers,
  startPool,
  warmUps,
  withFirstPingAfterReady,
  WORDS,
} from './helpers/index-archive.js';
import { copySqliteToPostgres } from './helpers/pg-copy.js';
import { createTestDatabase, type TestDatabase } from './helpers/postgres.js';

const limits = { defaultPageSize: 20, maxPageSize: 100 };

interface Served {
  url: string;
  file: string;
  plain: PgStore;
  ruth: number;
  accounts: number[];
  close(): Promise<void>;
}

/** A database in Mail Archiver's schema holding a generated archive of 600 messages. */
async function served(label: string): Promise<Served> {
  const dir = tempDir();
  const a = archive(dir.dir, 'a.db', 600);
  a.db.close();
  const database: TestDatabase = await createTestDatabase(label);
  await prepareArchive({ path: database.url }, { createIfEmpty: true });
  await copySqliteToPostgres(a.path, database.url);
  const plain = new PgStore({ url: database.url, timeZone: 'UTC' });
  return {
    url: database.url,
    file: join(dir.dir, 'pg.index'),
    plain,
    ruth: a.ruth,
    accounts: a.accounts,
    async close() {
      await plain.close();
      await database.drop();
      dir.cleanup();
    },
  };
}

/** Runs `work` on a new served database, dropped afterwards. */
async function withServed(label: string, work: (s: Served) => Promise<void>): Promise<void> {
  const s = await served(label);
  try {
    await work(s);
  } finally {
    await s.close();
  }
}

const pool = (s: Served, log: string[] = []) => startPool(s.url, log, { searchIndexFile: s.file });

/** Every query, as admin and as ruth, through the pool's index: page and count equal to plain SQL. */
async function sameAsSql(t: ExecutionContext, engine: EnginePool, s: Served): Promise<void> {
  for (const v of searchers(s.ruth))
    for (const params of [...QUERIES, { q: 'alpha', folder: 'INBOX', sortBy: 'subject' }]) {
      const query = parseSearchInput(params, limits);
      const got = await engine.run({ kind: 'search', principal: v.principal, query });
      const want = await plainSearch(s.plain, { isAdmin: v.isAdmin, userId: v.principal.userId }, query);
      t.deepEqual(got, want, `${JSON.stringify(params)} as ${v.principal.username}`);
    }
}

/** A restart: the pool's index once current and its log lines, then every search against SQL. */
async function restart(
  t: ExecutionContext,
  s: Served,
  check: (index: SearchIndexInfo, log: string[]) => Promise<void> | void,
): Promise<SearchIndexInfo> {
  const log: string[] = [];
  const engine = pool(s, log);
  try {
    const index = await current(engine);
    await check(index, log);
    await sameAsSql(t, engine, s);
    return index;
  } finally {
    await engine.close();
  }
}

async function firstRun(s: Served) {
  const engine = pool(s);
  try {
    const built = await current(engine);
    await savedFile(s.file, built.maxId!, s.url);
    return built;
  } finally {
    await engine.close();
  }
}

test.serial(
  'a restarted pool starts from the saved file and catches up what Mail Archiver changed meanwhile, exactly',
  (t) =>
    withServed('index_persist', async (s) => {
      const built = await firstRun(s);
      t.false(built.fromFile, 'built, no file yet');

      // While the service is stopped, as Mail Archiver writes: plain SQL on its tables.
      const ids = async (where: ReturnType<typeof sql>, limit: number) =>
        (
          await s.plain.primary<{ id: number }>(
            sql`SELECT "Id" AS id FROM mail_archiver."ArchivedEmails" WHERE ${where} ORDER BY "Id" LIMIT ${limit}`,
          )
        ).map((r) => r.id);
      const gone = await ids(sql`"Subject" LIKE '%alpha%'`, 30);
      await s.plain.primary(sql`DELETE FROM mail_archiver."ArchivedEmails" WHERE "Id" = ANY(${gone}::int[])`);
      const moved = await ids(sql`"FolderName" = 'INBOX'`, 40);
      await s.plain.primary(
        sql`UPDATE mail_archiver."ArchivedEmails" SET "FolderName" = 'Sent' WHERE "Id" = ANY(${moved}::int[])`,
      );
      const reassigned = await ids(sql`"MailAccountId" = ${s.accounts[1]!}`, 40);
      await s.plain.primary(
        sql`UPDATE mail_archiver."ArchivedEmails" SET "MailAccountId" = ${s.accounts[0]!} WHERE "Id" = ANY(${reassigned}::int[])`,
      );
      await s.plain.primary(
        sql`DELETE FROM mail_archiver."UserMailAccounts" WHERE "UserId" = ${s.ruth} AND "MailAccountId" = ${s.accounts[2]!}`,
      );
      for (let i = 0; i < 30; i++)
        await s.plain.primary(
          sql`INSERT INTO mail_archiver."ArchivedEmails" ("MailAccountId", "MessageId", "Subject", "Body", "HtmlBody", "From",
            "To", "Cc", "Bcc", "SentDate", "ReceivedDate", "IsOutgoing", "HasAttachments", "FolderName")
          VALUES (${s.accounts[i % 3]!}, ${`<new${i}@x>`}, 'alpha beta news', 'alpha report', '', 'new@x.example', '', '', '',
            '2025-06-03 10:00:00', '2025-06-03 10:00:00', false, false, 'INBOX')`,
        );

      await restart(t, s, (index, log) => {
        // 'caught up' once a periodic refresh (ADR 22) has followed the first: still from the file.
        t.true(index.origin === 'loaded' || index.origin === 'caught up', log.join('\n'));
        t.true(index.fromFile, 'no full build: the file, caught up');
        t.true(index.maxId! > built.maxId!);
        t.true(
          log.some((l) => l.startsWith(`search index: loaded ${s.file}`)),
          log.join('\n'),
        );
      });
    }),
);

test.serial('a damaged saved file is ignored on PostgreSQL too: the pool rebuilds and writes a valid one', (t) =>
  withServed('index_persist_bad', async (s) => {
    const built = await firstRun(s);
    const bytes = readFileSync(s.file);
    bytes[bytes.length - 100]! ^= 0xff;
    writeFileSync(s.file, bytes);

    await restart(t, s, async (index, log) => {
      t.true(index.origin === 'built' || index.origin === 'caught up');
      t.false(index.fromFile, 'a full build, not the file');
      t.not(index.builtAt, built.builtAt);
      t.true(
        log.some((l) => l.includes('ignored (checksum mismatch)')),
        log.join('\n'),
      );
      // While the pool runs: closing it stops a save still being written.
      await savedFile(s.file, index.maxId!, s.url);
    });
  }),
);

test.serial('nothing changed while stopped: the saved rows and sort orders are used as they are', (t) =>
  withServed('index_persist_same', async (s) => {
    const built = await firstRun(s);
    await restart(t, s, (index, log) => {
      t.true(index.fromFile, log.join('\n'));
      t.is(index.maxId, built.maxId);
      t.is(index.builtAt, built.builtAt, 'the very snapshot the first pool built');
    });
  }),
);

test.serial("on PostgreSQL too, a query thread's first job counts with an index posted before it", (t) =>
  withServed('pgfirstjob', (s) =>
    withFirstPingAfterReady(s.url, (index) => {
      t.is(index?.status, 'current', JSON.stringify(index));
    }),
  ),
);

test.serial(
  'on PostgreSQL too, the query thread warms up with its commonest word, counted as plain SQL counts it',
  (t) =>
    withServed('pgwarmup', async (s) => {
      const log: string[] = [];
      const engine = pool(s, log);
      try {
        const [warm] = await warmUps(log);
        const admin = searchers(s.ruth)[0]!.principal;
        const count = async (q: string) =>
          (await s.plain.run({ kind: 'search', principal: admin, query: parseSearchInput({ q }, limits) })).totalItems;
        t.is(warm!.total, await count(warm!.word), warm!.word);
        for (const word of WORDS)
          t.true((await count(word)) <= warm!.total, `${word} is in more messages than ${warm!.word}`);
      } finally {
        await engine.close();
      }
    }),
);

test.serial('on PostgreSQL a word in a few messages is kept in memory, and the saved file says by which rule', (t) =>
  withServed('index_keep_rule', async (s) => {
    await firstRun(s);
    const loaded = loadIndex(s.file, await indexKey(s.url));
    if (!loaded.ok) return t.fail(loaded.reason);
    t.is(loaded.saved.meta.extra?.keptFrom, SIDE_INDEX_MIN_DOCS);
    const snap = new Snapshot(loaded.saved.snapshot);
    // 'alpha' is in about a quarter of the 600 subjects: under SQLite's floor of 256, above this one.
    const [row] = await s.plain.primary<{ n: number }>(
      sql`SELECT count(*)::int AS n FROM mail_archiver."ArchivedEmails" WHERE ' ' || "Subject" || ' ' LIKE '% alpha %'`,
    );
    t.true(row!.n >= SIDE_INDEX_MIN_DOCS && row!.n < 256, `alpha in ${row!.n} subjects`);
    t.is(snap.term(termKey('s', 'alpha'))?.docs, row!.n);
  }),
);

test.serial(
  'a file saved by a release that kept fewer words serves at once, and is rebuilt whole in the background',
  (t) =>
    withServed('index_keep_old', async (s) => {
      const built = await firstRun(s);
      // The file as an earlier release wrote it: no rule recorded.
      const loaded = loadIndex(s.file, await indexKey(s.url));
      if (!loaded.ok) return t.fail(loaded.reason);
      const { extra: _extra, ...meta } = loaded.saved.meta;
      saveIndex(s.file, await indexKey(s.url), meta, loaded.saved.snapshot, loaded.saved.sections);

      const log: string[] = [];
      const engine = pool(s, log);
      try {
        const first = await current(engine);
        t.true(first.fromFile, log.join('\n'));
        t.is(first.builtAt, built.builtAt, 'the saved snapshot serves first');
        let index = first;
        for (const deadline = Date.now() + 90_000; index.origin !== 'built';) {
          if (Date.now() > deadline) return t.fail(`no rebuild: ${JSON.stringify(index)}\n${log.join('\n')}`);
          await new Promise((r) => setTimeout(r, 50));
          index = (await engine.ping('query')).searchIndex!;
        }
        t.false(index.fromFile);
        t.true(
          log.some((l) => l.includes('keeps fewer words than this release')),
          log.join('\n'),
        );
        await sameAsSql(t, engine, s);
        await savedFile(s.file, index.maxId!, s.url);
      } finally {
        await engine.close();
      }
      const resaved = loadIndex(s.file, await indexKey(s.url));
      t.true(resaved.ok && resaved.saved.meta.extra?.keptFrom === SIDE_INDEX_MIN_DOCS);
    }),
);
