// Shared by the tests of the saved search index on both stores (search-index-persist,
// pg-search-index-persist): a SQLite archive of common words, pools with their builder's log,
// and conditions to wait for.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { HEADER, Snapshot } from '../../engine/search/bitsets/snapshot.js';
import { openArchive, type Db } from '../../engine/sqlite/open.js';
import { Random } from '../../engine/demo/random.js';
import { EnginePool } from '../../engine/pool/pool.js';
import { loadIndex } from '../../engine/search/bitsets/persist.js';
import { searchIndexKey } from '../../engine/sqlite/index-verify.js';
import { sql } from '../../engine/postgres/sql.js';
import { PgStore } from '../../engine/postgres/store.js';
import { isPostgresUrl } from '../../shared/config.js';
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
  // A warning is told apart by its prefix (the gateway logs it at level warn).
  const keep = (line: string, level?: 'warn') => log.push(level === 'warn' ? `warning: ${line}` : line);
  return new EnginePool({ dbPath: path, threads: 1, log: keep, ...options });
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

/** The secret the archive at `path` (a SQLite file or a PostgreSQL URL) signs its saved index with. */
export async function indexKey(path: string): Promise<Buffer> {
  if (!isPostgresUrl(path)) {
    const db = openArchive(path, { readonly: true });
    try {
      return searchIndexKey(db);
    } finally {
      db.close();
    }
  }
  const store = new PgStore({ url: path, timeZone: 'UTC', connections: 1 });
  try {
    const [row] = await store.primary<{ secret: Buffer }>(
      sql`SELECT secret FROM mail_archive_gateway.search_index_key WHERE id = 1`,
    );
    return row!.secret;
  } finally {
    await store.close();
  }
}

/** Waits until the saved file is whole, signed by the archive at `archive`, and describes `maxId`. */
export async function savedFile(file: string, maxId: number, archive: string): Promise<void> {
  const key = await indexKey(archive);
  for (const deadline = Date.now() + 300_000; Date.now() < deadline;) {
    const loaded = loadIndex(file, key);
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

/**
 * Edits the snapshot inside a saved index file as someone who can write the file but not read the
 * archive could: `edit` changes the snapshot (through `view`, or `bytes`) in place, then the file's
 * CRC-32 is computed again, so that the file is whole and only its MAC can tell
 * (engine/search/bitsets/persist.ts: a 64-byte header, the meta padded to 8 bytes, the table of
 * section lengths, the snapshot first).
 */
export function editSavedSnapshot(file: string, edit: (bytes: Uint8Array, view: Snapshot) => void): void {
  const bytes = readFileSync(file);
  const tableAt = 64 + Math.ceil(bytes.readUInt32LE(12) / 8) * 8;
  const at = tableAt + 8 * bytes.readUInt32LE(16);
  const shared = new SharedArrayBuffer(bytes.readDoubleLE(tableAt));
  const copy = new Uint8Array(shared);
  copy.set(bytes.subarray(at, at + copy.byteLength));
  edit(copy, new Snapshot(shared));
  bytes.set(copy, at);
  bytes.writeUInt32LE(crc32(bytes.subarray(64)) >>> 0, 20);
  writeFileSync(file, bytes);
}

/** Zeroes the last 4 KiB of the snapshot's sets (its data section, HEADER.dataBytes), as found in the field. */
export function zeroSnapshotSets(bytes: Uint8Array): void {
  const dataBytes = new Float64Array(bytes.buffer, 0, 16)[HEADER.dataBytes]!;
  const end = bytes.byteLength;
  bytes.fill(0, Math.max(end - dataBytes, end - 4096), end);
}
