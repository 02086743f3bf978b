// The benchmark corpus (bench/corpus.ts, the same plan and message stream) in a PostgreSQL
// database in Mail Archiver's schema, written through the PostgreSQL store's own write path
// (engine/archive.ts openAdmin + MailWriter), the way `mail-archive import` writes. Cached like the
// SQLite file: a database named by size, seed and corpus version on the local server
// (PGHOST/PGPORT/PGUSER, default 127.0.0.1:5432 as postgres), built under a temporary name and
// renamed when complete, so an interrupted build is never mistaken for a finished one.
//
//   node dist/bench/pg-corpus.js [--messages N] [--seed S] [--rebuild]   prints the database URL
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { openAdmin } from '../engine/archive.js';
import { CORPUS_BYTES_PER_MESSAGE, ensureFreeSpace, orStopForSpace } from './lib/disk.js';
import { CACHE_DIR, CORPUS_BATCH, CORPUS_VERSION, corpusArgs, planCorpus, type CorpusOptions } from './corpus.js';

function server() {
  return {
    host: process.env.PGHOST || '127.0.0.1',
    port: Number(process.env.PGPORT || 5432),
    user: process.env.PGUSER || 'postgres',
  };
}

export function pgCorpusUrl(name: string): string {
  const { host, port, user } = server();
  return `postgres://${encodeURIComponent(user)}@${host}:${port}/${name}`;
}

/**
 * Where a benchmark's PostgreSQL server saves its index (Engine:SearchIndexFile, ADR 23): beside
 * the cached corpus, so that the next run loads it as a SQLite server loads its own file.
 */
export function pgIndexFile(url: string): string {
  return `${CACHE_DIR}/${new URL(url).pathname.slice(1)}.index`;
}

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ ...server(), database: 'postgres' });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Builds the corpus database unless it exists; returns its URL. */
export async function ensurePgCorpus(options: CorpusOptions & { rebuild?: boolean } = {}): Promise<string> {
  const messages = options.messages ?? 1_000_000;
  const seed = options.seed ?? 42;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const name = `mag_bench_corpus_v${CORPUS_VERSION}_${messages}_${seed}`;
  const building = `${name}_building`;
  const exists = await admin(
    async (c) => (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1,
  );
  if (exists && !options.rebuild) return pgCorpusUrl(name);
  await admin(async (c) => {
    // The server's data directory, when the server is on this machine (it is not checked otherwise).
    const dir = (await c.query<{ data_directory: string }>('SHOW data_directory')).rows[0]!.data_directory;
    ensureFreeSpace(dir, messages * CORPUS_BYTES_PER_MESSAGE.postgres, `A PostgreSQL corpus of ${messages} messages`);
    await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await c.query(`DROP DATABASE IF EXISTS "${building}" WITH (FORCE)`);
    await c.query(`CREATE DATABASE "${building}"`);
  });
  const started = Date.now();
  const store = await openAdmin(pgCorpusUrl(building), { create: true });
  try {
    const plan = planCorpus(messages, seed);
    const accountIds: number[] = [];
    for (const a of plan.accounts) accountIds.push((await store.addAccount(a)).id);
    for (const u of plan.users) {
      await store.addUser({ username: u.username, isAdmin: u.isAdmin });
      for (const a of u.accounts) await store.assignAccount(u.username, accountIds[a]!);
    }
    const writer = store.openWriter();
    const stream = plan.messages(accountIds);
    for (let start = 0; start < messages; start += CORPUS_BATCH) {
      const batch = [];
      for (let i = start; i < Math.min(messages, start + CORPUS_BATCH); i++) batch.push(stream.next().value!);
      await writer.writeBatch(batch);
      if ((start / CORPUS_BATCH) % 20 === 0)
        log(
          `pg corpus: ${Math.min(messages, start + CORPUS_BATCH)} / ${messages} messages (${((Date.now() - started) / 1000).toFixed(0)} s)`,
        );
    }
    // Each batch was indexed for search as it was written; this finds nothing left to do unless
    // the build was made by an older writer.
    await store.refreshSearchIndex();
  } finally {
    await store.close();
  }
  const client = new pg.Client({ connectionString: pgCorpusUrl(building) });
  await client.connect();
  try {
    await client.query('VACUUM (ANALYZE)');
  } finally {
    await client.end();
  }
  await admin((c) => c.query(`ALTER DATABASE "${building}" RENAME TO "${name}"`));
  log(`pg corpus: built ${messages} messages in ${((Date.now() - started) / 1000).toFixed(0)} s as ${name}`);
  return pgCorpusUrl(name);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await orStopForSpace(async () =>
    process.stdout.write(`${await ensurePgCorpus({ ...corpusArgs(), rebuild: process.argv.includes('--rebuild') })}\n`),
  );
}
