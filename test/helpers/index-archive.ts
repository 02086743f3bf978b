// Shared by the tests of the saved search index on both stores (search-index-persist,
// pg-search-index-persist): a SQLite archive of common words, pools with their builder's log,
// and conditions to wait for.
import { join } from 'node:path';
import { openArchive, type Db } from '../../engine/sqlite/open.js';
import { Random } from '../../engine/demo/random.js';
import { EnginePool } from '../../engine/pool/pool.js';
import { loadIndex } from '../../engine/search/bitsets/persist.js';
import { addAccount } from '../../engine/sqlite/accounts.js';
import { addUser, assignAccount } from '../../engine/sqlite/users.js';
import { ArchiveWriter } from '../../engine/sqlite/writer.js';
import type { SearchIndexInfo } from '../../shared/jobs.js';
import { email } from './fixture.js';

export const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'omega', 'report', 'repo', 'reply'];
export const FOLDERS = ['INBOX', 'Sent', 'Archive'];
/** Searches whose counts the tests compare with plain SQL. */
export const QUERIES = [{ q: 'alpha' }, { q: 'beta gamma' }, { q: 'rep*', folder: 'Sent' }, { q: '"alpha beta"' }, {}];

export function addMessages(db: Db, accounts: number[], count: number, seed: number): void {
  const rng = new Random(seed);
  const writer = new ArchiveWriter(db);
  writer.batch(() => {
    for (let i = 0; i < count; i++)
      writer.add(
        email({
          accountId: rng.pick(accounts),
          folder: rng.pick(FOLDERS),
          subject: `${rng.pick(WORDS)} ${rng.pick(WORDS)}`,
          textBody: Array.from({ length: 6 }, () => rng.pick(WORDS)).join(' '),
          sentDate: Date.UTC(2021, 0, 1) + rng.int(0, 1e7) * 1000,
        }),
      );
  });
}

/** An archive of `count` messages in three accounts, one user seeing two of them. */
export function archive(dir: string, name: string, count: number, seed = 1) {
  const path = join(dir, name);
  const db = openArchive(path);
  const accounts = [1, 2, 3].map((i) => addAccount(db, { name: `a${i}`, emailAddress: `a${i}@x.com` }).id);
  const ruth = addUser(db, { username: 'ruth' }).id;
  assignAccount(db, 'ruth', accounts[0]!);
  assignAccount(db, 'ruth', accounts[2]!);
  addMessages(db, accounts, count, seed);
  return { path, db, accounts, ruth };
}

export function startPool(
  path: string,
  log: string[] = [],
  options: { searchIndexFile?: string; threads?: number; faultInjection?: boolean } = {},
): EnginePool {
  return new EnginePool({ dbPath: path, threads: 1, log: (line) => log.push(line), ...options });
}

/** Waits until the pool's index is current (as /readyz reports it) and returns what it says. */
export async function current(pool: EnginePool): Promise<SearchIndexInfo> {
  let index: SearchIndexInfo | undefined;
  for (const deadline = Date.now() + 300_000; Date.now() < deadline;) {
    index = (await pool.ping('query')).searchIndex;
    if (index?.status === 'current') return index;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the index did not become current: ${JSON.stringify(index)} ${pool.searchIndexError ?? ''}`);
}

/** Waits until the saved file is whole and describes `maxId`. */
export async function savedFile(file: string, maxId: number): Promise<void> {
  for (const deadline = Date.now() + 300_000; Date.now() < deadline;) {
    const loaded = loadIndex(file);
    if (loaded.ok && new Float64Array(loaded.saved.snapshot, 0, 2)[1] === maxId) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${file} was not saved for maxId ${maxId}`);
}

/** Who searches in these tests: an administrator and ruth, who sees two of the three accounts. */
export function searchers(ruth: number) {
  return [
    { principal: { userId: 1, username: 'admin', isAdmin: true, keyId: 1, keyPrefix: 'ma_test0000' }, isAdmin: true },
    {
      principal: { userId: ruth, username: 'ruth', isAdmin: false, keyId: 2, keyPrefix: 'ma_test0001' },
      isAdmin: false,
    },
  ];
}

/** Waits for the builder's "ready" line, which reaches the pool's log after the index is posted. */
export async function readyLine(log: string[]): Promise<string> {
  for (const deadline = Date.now() + 300_000; Date.now() < deadline;) {
    const line = log.find((l) => l.startsWith('search index: ready'));
    if (line) return line;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no ready line in: ${log.join('\n')}`);
}

/**
 * Starts a pool on `path` that saves no index (so its builder builds and posts while the query
 * thread has run no job), waits for the ready line, and gives `check` the query thread's very
 * first answer to a ping.
 */
export async function withFirstPingAfterReady(
  path: string,
  check: (index: SearchIndexInfo | undefined, pool: EnginePool) => Promise<void> | void,
): Promise<void> {
  const log: string[] = [];
  const pool = startPool(path, log, { searchIndexFile: '' });
  try {
    await readyLine(log);
    await check((await pool.ping('query')).searchIndex, pool);
  } finally {
    await pool.close();
  }
}

/** What a pool's warm-up line (engine/pool/warm-up.ts) says: the word searched, its count, the thread. */
export interface WarmUp {
  word: string;
  total: number;
  thread: number;
}

/** Waits until the pool has logged `count` warm-up searches, and returns what they say. */
export async function warmUps(log: string[], count = 1): Promise<WarmUp[]> {
  const line = /^search index: warm-up search of "([^"]+)" \((\d+) messages\) in [\d.]+ ms on thread (\d+)$/;
  for (const deadline = Date.now() + 120_000; Date.now() < deadline;) {
    const found = log.flatMap((l) => {
      const m = line.exec(l);
      return m ? [{ word: m[1]!, total: Number(m[2]), thread: Number(m[3]) }] : [];
    });
    if (found.length >= count) return found;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`fewer than ${count} warm-up lines in: ${log.join('\n')}`);
}
