// The saved search index on SQLite (engine/search/bitsets/persist.ts, ADR 23): a restarted pool
// loads `<archive>.index` instead of rebuilding, catches up mail appended while it was stopped,
// rebuilds when mail was rewritten or deleted (archive_state.rewrites moved: which mail changed
// is not recorded), ignores a torn, foreign, older or edited file (an edit that keeps the file
// whole is told by its MAC, with a warning), and two pools
// starting together build once and leave one valid file. Every count is checked against plain SQL.
// Serial: each test starts pools of their own, and a loaded machine need not run eleven at once.
import test, { type ExecutionContext } from 'ava';
import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { copyFileSync, existsSync, readFileSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import type { Db } from '../engine/sqlite/open.js';
import { EnginePool } from '../engine/pool/pool.js';
import { BuildLock, processStart, releaseLockOfThread } from '../engine/search/bitsets/build-lock.js';
import { exactCount } from '../engine/sqlite/search.js';
import type { SearchIndexInfo } from '../shared/jobs.js';
import { parseSearchInput } from '../shared/search-input.js';
import { tempDir } from './helpers/fixture.js';
import {
  addMessages,
  archive,
  current,
  editSavedSnapshot,
  indexKey,
  QUERIES,
  readyLine,
  savedFile,
  searchers,
  startPool,
  warmUps,
  withFirstPingAfterReady,
  WORDS,
  zeroSnapshotSets,
} from './helpers/index-archive.js';

const limits = { defaultPageSize: 20, maxPageSize: 100 };

/** Each query's count through the pool, against plain SQL, as admin and as ruth. */
async function countsMatchSql(
  t: { deepEqual: (a: unknown, b: unknown, m?: string) => void },
  pool: EnginePool,
  db: Db,
  ruth: number,
) {
  const viewers = searchers(ruth);
  for (const v of viewers)
    for (const params of QUERIES) {
      const query = parseSearchInput(params, limits);
      const got = await pool.run({ kind: 'search', principal: v.principal, query });
      const want = exactCount(db, { isAdmin: v.isAdmin, userId: v.principal.userId }, query);
      t.deepEqual(got.totalItems, want, `${JSON.stringify(params)} as ${v.principal.username}`);
    }
}

const maxId = (db: Db) => db.prepare('SELECT max(id) FROM emails').pluck().get() as number;
type Archive = ReturnType<typeof archive>;

/** Runs `work` on a new archive of 600 messages in a temporary directory, removed afterwards. */
async function withArchive(work: (a: Archive, dir: string) => Promise<void>): Promise<void> {
  const { dir, cleanup } = tempDir();
  const a = archive(dir, 'a.db', 600);
  try {
    await work(a, dir);
  } finally {
    a.db.close();
    cleanup();
  }
}

/** A pool's first start: it builds, saves `<archive>.index`, and stops. */
async function firstRun(path: string): Promise<SearchIndexInfo> {
  const pool = startPool(path);
  try {
    const built = await current(pool);
    await savedFile(`${path}.index`, built.maxId!, path);
    return built;
  } finally {
    await pool.close();
  }
}

/** A restart: the pool's index once current, its log lines, and its counts checked against SQL. */
async function restart(
  t: ExecutionContext,
  a: Archive,
  check: (index: SearchIndexInfo, log: string[]) => Promise<void> | void,
): Promise<void> {
  const log: string[] = [];
  const pool = startPool(a.path, log);
  try {
    await check(await current(pool), log);
    await countsMatchSql(t, pool, a.db, a.ruth);
  } finally {
    await pool.close();
  }
}

test.serial('a restarted pool loads the saved index instead of rebuilding it; counts equal plain SQL', (t) =>
  withArchive(async (a) => {
    const built = await firstRun(a.path);
    t.is(built.origin, 'built');
    t.false(built.fromFile);
    // What a save killed mid-write leaves behind: removed at the next start.
    const leftover = `${a.path}.index.${spawnSync(process.execPath, ['-e', '']).pid}.0badf00d.tmp`;
    writeFileSync(leftover, 'half a file');
    await restart(t, a, (index, log) => {
      t.false(existsSync(leftover));
      t.is(index.origin, 'loaded');
      t.true(index.fromFile);
      t.is(index.builtAt, built.builtAt, 'the very snapshot the first pool built');
      t.true(
        log.some((l) => l.startsWith(`search index: loaded ${a.path}.index`)),
        log.join('\n'),
      );
    });
  }),
);

test.serial('mail appended while the pool was stopped is caught up from the saved index, not rebuilt', (t) =>
  withArchive(async (a) => {
    const before = (await firstRun(a.path)).maxId!;
    addMessages(a.db, a.accounts, 150, 7);
    await restart(t, a, (index) => {
      t.is(index.origin, 'caught up');
      t.true(index.fromFile, 'grown from the file, no full build');
      t.is(index.maxId, maxId(a.db));
      t.true(index.maxId! > before);
    });
  }),
);

for (const [label, change] of [
  [
    'deleted',
    (db: Db) => db.prepare('DELETE FROM emails WHERE id IN (SELECT id FROM emails ORDER BY id LIMIT 40)').run(),
  ],
  // This store's own code never moves or edits stored mail; a repair tool's edit is a rewrite.
  ['rewritten', (db: Db) => db.prepare("UPDATE emails SET subject = 'omega omega' WHERE id % 5 = 0").run()],
] as const) {
  test.serial(
    `mail ${label} while the pool was stopped: the saved index is not used, the pool rebuilds and saves again`,
    (t) =>
      withArchive(async (a) => {
        await firstRun(a.path);
        change(a.db);
        await restart(t, a, async (index, log) => {
          t.is(index.origin, 'built');
          t.false(index.fromFile);
          t.true(
            log.some((l) => l.includes('not used (mail was changed or deleted since it was saved)')),
            log.join('\n'),
          );
          // While the pool runs: closing it stops a save still being written.
          await savedFile(`${a.path}.index`, maxId(a.db), a.path);
        });
      }),
  );
}

const damages: Array<[string, (file: string, dir: string) => void | Promise<void>, RegExp]> = [
  ['truncated', (file) => truncateSync(file, Math.floor(readFileSync(file).length / 2)), /ignored \(truncated/],
  [
    'with one byte flipped',
    (file) => {
      const bytes = readFileSync(file);
      bytes[bytes.length - 100]! ^= 0xff;
      writeFileSync(file, bytes);
    },
    /ignored \(checksum mismatch\)/,
  ],
  [
    'of another format version',
    (file) => {
      const bytes = readFileSync(file);
      bytes.writeUInt32LE(999, 8);
      writeFileSync(file, bytes);
    },
    /ignored \(format 999, not 2\)/,
  ],
  [
    // What someone who can write the file but not read the archive could do: the file is whole,
    // every id, rowid and date still matches the archive, and the sets say less than the mail.
    'whose snapshot was edited (4 KiB of sets zeroed) and its CRC-32 recomputed',
    (file) => editSavedSnapshot(file, zeroSnapshotSets),
    /^warning: search index: \S+ ignored \(not written by this service for this archive \(its MAC does not match\)\); building instead$/,
  ],
  [
    'of another archive holding the very same mail',
    async (file, dir) => {
      // The same mail (seed 1) in another archive: its key differs, nothing the archive check sees does.
      const twin = archive(dir, 'twin.db', 600);
      twin.db.close();
      await firstRun(twin.path);
      copyFileSync(`${twin.path}.index`, file);
    },
    /^warning: search index: \S+ ignored \(not written by this service for this archive/,
  ],
  [
    'not an index at all',
    (file) => writeFileSync(file, 'hello, I am a text file'),
    /ignored \(shorter than its header\)/,
  ],
  [
    "of another archive that shares this one's key, with the same number of messages",
    async (file, dir) => {
      // Same highest id and rewrite count, other mail, and the MAC is good (as for a copy of a
      // backup filled again): only the check of every message tells.
      const other = archive(dir, 'other.db', 600, 99);
      other.db.prepare('UPDATE search_index_key SET secret = ?').run(await indexKey(file.replace(/\.index$/, '')));
      other.db.close();
      await firstRun(other.path);
      copyFileSync(`${other.path}.index`, file);
    },
    /not used \(it describes other mail\)/,
  ],
];

for (const [label, damage, reason] of damages) {
  test.serial(`a saved index ${label} is ignored and rebuilt, and a valid one written`, (t) =>
    withArchive(async (a, dir) => {
      const built = await firstRun(a.path);
      await damage(`${a.path}.index`, dir);
      await restart(t, a, async (index, log) => {
        t.is(index.origin, 'built');
        t.false(index.fromFile);
        t.not(index.builtAt, built.builtAt);
        t.is(log.filter((l) => reason.test(l)).length, 1, log.join('\n'));
        // While the pool runs: closing it stops a save still being written.
        await savedFile(`${a.path}.index`, maxId(a.db), a.path);
        t.is(log.filter((l) => l.startsWith('warning:')).length, reason.source.startsWith('^warning') ? 1 : 0);
      });
    }),
  );
}

test.serial('two pools starting together on one archive build once and leave one valid file', (t) =>
  withArchive(async (a) => {
    const pools = [startPool(a.path), startPool(a.path)];
    try {
      const indexes = await Promise.all(pools.map(current));
      t.deepEqual(indexes.map((i) => i.origin).sort(), ['built', 'loaded'], 'one built, the other loaded its file');
      await savedFile(`${a.path}.index`, maxId(a.db), a.path);
      t.false(existsSync(`${a.path}.index.lock`), 'the build lock is given back');
      for (const pool of pools) await countsMatchSql(t, pool, a.db, a.ruth);
    } finally {
      await Promise.all(pools.map((p) => p.close()));
    }
  }),
);

test.serial("Engine:SearchIndexFile '' saves nothing", (t) =>
  withArchive(async (a) => {
    const pool = new EnginePool({ dbPath: a.path, threads: 1, searchIndexFile: '' });
    try {
      t.is((await current(pool)).origin, 'built');
      await countsMatchSql(t, pool, a.db, a.ruth);
    } finally {
      await pool.close();
    }
    t.false(existsSync(`${a.path}.index`));
  }),
);

test.serial(
  'the build lock: taken over from a process that is gone, kept from a live one, cleared for a stopped thread',
  (t) => {
    const { dir, cleanup } = tempDir();
    const file = join(dir, 'a.db.index');
    try {
      const holder = (pid: number, token: string) =>
        writeFileSync(`${file}.lock`, JSON.stringify({ pid, host: hostname(), token }));
      holder(spawnSync(process.execPath, ['-e', '']).pid!, 'gone');
      const lock = new BuildLock(file);
      t.true(lock.tryTake(), 'its holder exited');
      lock.release();
      t.false(existsSync(`${file}.lock`));

      holder(process.pid, `${process.pid}-77-x`);
      t.false(new BuildLock(file).tryTake(), 'its holder is alive');
      // A build longer than an hour (a full PostgreSQL build at 6 to 10M messages) keeps its lock
      // while its holder lives; a lock whose pid a later process took is abandoned.
      const hoursAgo = (h: number) => (Date.now() - h * 3_600_000) / 1000;
      const own = { pid: process.pid, host: hostname(), token: `${process.pid}-77-x` };
      writeFileSync(`${file}.lock`, JSON.stringify({ ...own, started: processStart(process.pid) }));
      utimesSync(`${file}.lock`, hoursAgo(2), hoursAgo(2));
      t.truthy(processStart(process.pid));
      t.false(new BuildLock(file).tryTake(), 'a live holder two hours into its build');
      writeFileSync(`${file}.lock`, JSON.stringify({ ...own, started: '1' }));
      const reused = new BuildLock(file);
      t.true(reused.tryTake(), 'the pid is alive, but it is another process than the one that took it');
      reused.release();
      writeFileSync(`${file}.lock`, JSON.stringify(own)); // written by an earlier version: no start
      utimesSync(`${file}.lock`, hoursAgo(2), hoursAgo(2));
      const old = new BuildLock(file);
      t.true(old.tryTake(), 'a holder that cannot be checked is given up after an hour');
      old.release();
      holder(process.pid, `${process.pid}-77-x`);
      releaseLockOfThread(file, 78);
      t.true(existsSync(`${file}.lock`), 'another thread');
      releaseLockOfThread(file, 77);
      t.false(existsSync(`${file}.lock`), 'the stopped builder thread');
    } finally {
      cleanup();
    }
  },
);

test.serial('the ready line names its file, or says the index is not saved and names the setting', async (t) => {
  await withArchive(async (a) => {
    for (const [searchIndexFile, saved] of [
      ['', false],
      [undefined, true],
    ] as const) {
      const log: string[] = [];
      const pool = startPool(a.path, log, searchIndexFile === undefined ? {} : { searchIndexFile });
      try {
        await current(pool);
        const line = await readyLine(log);
        t.is(line.includes('not saved') && line.includes('Engine:SearchIndexFile'), !saved, line);
        t.is(line.endsWith(`; kept in ${a.path}.index`), saved, line);
      } finally {
        await pool.close();
      }
    }
  });
});

test.serial(
  "a query thread's first job counts with an index posted before it: /readyz says current at once",
  async (t) => {
    await withArchive((a) =>
      // The thread's first job: it must already hold the snapshot the builder posted.
      withFirstPingAfterReady(a.path, async (index, pool) => {
        t.is(index?.status, 'current', JSON.stringify(index));
        await countsMatchSql(t, pool, a.db, a.ruth);
      }),
    );
  },
);

test.serial(
  'once the index is posted, the query thread searches its commonest word to warm up, counted as plain SQL counts it',
  async (t) => {
    await withArchive(async (a) => {
      const log: string[] = [];
      const pool = startPool(a.path, log, { searchIndexFile: '' });
      try {
        const [warm] = await warmUps(log);
        const count = (q: string) => exactCount(a.db, { isAdmin: true, userId: 1 }, parseSearchInput({ q }, limits));
        t.is(warm!.total, count(warm!.word), warm!.word);
        for (const word of WORDS) t.true(count(word) <= warm!.total, `${word} is in more messages than ${warm!.word}`);
      } finally {
        await pool.close();
      }
    });
  },
);

test.serial('a query thread busy when the index is posted runs its warm-up once the lane is idle', async (t) => {
  // Large enough that the index is posted after the first thread has started the held job.
  const { dir, cleanup } = tempDir();
  const a = archive(dir, 'a.db', 8_000);
  const log: string[] = [];
  const pool = startPool(a.path, log, { searchIndexFile: '', threads: 2, faultInjection: true });
  const release = new Int32Array(new SharedArrayBuffer(4));
  try {
    const held = pool.run({ kind: 'fault', mode: 'hold', release });
    await current(pool); // its pings run on the other thread
    Atomics.store(release, 0, 1);
    Atomics.notify(release, 0);
    await held;
    const warm = await warmUps(log, 2);
    t.deepEqual(
      warm.map((w) => w.thread).sort(),
      pool.threadIds('query').sort(),
      `each thread warms once, the held one too:\n${log.join('\n')}`,
    );
  } finally {
    Atomics.store(release, 0, 1);
    Atomics.notify(release, 0);
    await pool.close();
    a.db.close();
    cleanup();
  }
});
