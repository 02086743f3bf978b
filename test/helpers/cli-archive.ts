// One archive per test for the CLI tests, on either store: a SQLite file in a temp dir, or a
// fresh PostgreSQL database (created empty; Mail Archiver's schema appears when a command or
// `admin()` creates it). The tests run the same body against both (see `eachStore`).
import type { ExecutionContext } from 'ava';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { AccessLogEntry } from '../../shared/jobs.js';
import { type ArchiveAdmin } from '../../engine/store-contract.js';
import { openAdmin, openStore } from '../../engine/archive.js';
import { runCli, type Run } from './cli.js';
import { tempDir } from './fixture.js';
import { createTestDatabase } from './postgres.js';

export type StoreKind = 'sqlite' | 'postgres';
export const STORE_KINDS: readonly StoreKind[] = ['sqlite', 'postgres'];

/** What differs, on purpose, between the stores (docs/postgres.md, "CLI on PostgreSQL"). */
export const STORE_FACTS = {
  sqlite: { defaultProvider: 'IMAP' },
  postgres: { defaultProvider: 'IMPORT' },
} as const;

type Counted = 'users' | 'accounts' | 'keys' | 'assignments' | 'emails';
const COUNT_SQL: Record<StoreKind, Record<Counted, string>> = {
  sqlite: {
    users: 'SELECT count(*) AS n FROM users',
    accounts: 'SELECT count(*) AS n FROM mail_accounts',
    keys: 'SELECT count(*) AS n FROM api_keys',
    assignments: 'SELECT count(*) AS n FROM user_accounts',
    emails: 'SELECT count(*) AS n FROM emails',
  },
  postgres: {
    users: 'SELECT count(*)::int AS n FROM mail_archiver."Users"',
    accounts: 'SELECT count(*)::int AS n FROM mail_archiver."MailAccounts"',
    keys: 'SELECT count(*)::int AS n FROM mail_archiver."ApiKeys"',
    assignments: 'SELECT count(*)::int AS n FROM mail_archiver."UserMailAccounts"',
    emails: 'SELECT count(*)::int AS n FROM mail_archiver."ArchivedEmails"',
  },
};

export interface CliArchive {
  kind: StoreKind;
  dir: string;
  /** The SQLite file or the postgres:// URL. */
  db: string;
  /** Runs `mail-archive --db <db> ...args` in `dir`, with an environment free of settings. */
  cli: (args: string[], options?: { input?: string; env?: NodeJS.ProcessEnv; noDb?: boolean }) => Promise<Run>;
  /** The archive in this process (created when missing), closed at teardown. */
  admin: () => Promise<ArchiveAdmin>;
  /** Access-log entries written the way the gateway writes them. */
  writeAccessLog: (entries: AccessLogEntry[]) => Promise<void>;
  count: (what: Counted) => Promise<number>;
  /** Usernames as stored, in id order. */
  usernames: () => Promise<string[]>;
  /** Whether the archive exists: the file, or Mail Archiver's schema in the database. */
  exists: () => Promise<boolean>;
  /** What a command says about an archive that is not there. */
  missingMentions: string[];
  /** One SQL query on a PostgreSQL archive (rows). */
  pgQuery: <R = Record<string, unknown>>(text: string, values?: unknown[]) => Promise<R[]>;
}

export async function cliArchive(t: ExecutionContext, kind: StoreKind): Promise<CliArchive> {
  const { dir, cleanup } = tempDir('mag-cli-');
  const cleanups: Array<() => Promise<void> | void> = [cleanup];
  t.teardown(async () => {
    for (const c of cleanups.reverse()) await c();
  });
  let db: string;
  let name: string;
  if (kind === 'sqlite') {
    db = join(dir, 'a.db');
    name = db;
  } else {
    const database = await createTestDatabase('cli');
    cleanups.push(() => database.drop());
    db = database.url;
    name = database.name;
  }
  let admin: ArchiveAdmin | null = null;
  const getAdmin = async () => {
    if (!admin) {
      admin = await openAdmin(db, { create: true });
      const opened = admin;
      // Closed before the database is dropped (teardown runs these in reverse).
      cleanups.push(() => opened.close());
    }
    return admin;
  };
  const pgQuery = async <R>(text: string, values: unknown[] = []): Promise<R[]> => {
    const client = new pg.Client({ connectionString: db });
    await client.connect();
    try {
      return (await client.query(text, values)).rows as R[];
    } finally {
      await client.end();
    }
  };
  const query = async <R>(text: string): Promise<R[]> => {
    if (kind === 'postgres') return pgQuery<R>(text);
    const a = (await getAdmin()) as unknown as { db: import('../../engine/sqlite/open.js').Db };
    return a.db.prepare(text).all() as R[];
  };
  return {
    kind,
    dir,
    db,
    cli: (args, options = {}) =>
      runCli(options.noDb ? args : ['--db', db, ...args], {
        cwd: dir,
        ...(options.env ? { env: options.env } : {}),
        ...(options.input !== undefined ? { input: options.input } : {}),
      }),
    admin: getAdmin,
    writeAccessLog: async (entries) => {
      await getAdmin();
      const store = await openStore({ path: db });
      try {
        await store.run({ kind: 'accessLog', entries });
      } finally {
        await store.close();
      }
    },
    count: async (what) => (await query<{ n: number }>(COUNT_SQL[kind][what]))[0]!.n,
    usernames: async () =>
      (
        await query<{ u: string }>(
          kind === 'sqlite'
            ? 'SELECT username AS u FROM users ORDER BY id'
            : 'SELECT "Username" AS u FROM mail_archiver."Users" ORDER BY "Id"',
        )
      ).map((r) => r.u),
    exists: async () => {
      if (kind === 'sqlite') return existsSync(db);
      const rows = await pgQuery<{ n: boolean }>(
        `SELECT to_regclass('public."__EFMigrationsHistory"') IS NOT NULL AS n`,
      );
      return rows[0]!.n;
    },
    missingMentions: kind === 'sqlite' ? ['no archive', db] : ['holds no Mail Archiver schema', name],
    pgQuery,
  };
}

/** Success: exit 0 and nothing on stderr. */
export function ok(t: ExecutionContext, r: Run): string {
  t.is(r.code, 0, `exit code; stderr: ${r.stderr}`);
  t.is(r.stderr, '', 'nothing on stderr');
  return r.stdout;
}

/** A failure: non-zero exit, exactly one line on stderr, no stack trace, nothing on stdout. */
export function fails(t: ExecutionContext, r: Run, ...mentions: string[]): string {
  t.not(r.code, 0, `should fail; stdout: ${r.stdout}`);
  t.is(r.stdout, '', 'nothing on stdout');
  t.regex(r.stderr, /^[^\n]+\n$/, `exactly one line on stderr: ${JSON.stringify(r.stderr)}`);
  t.false(/^\s+at /m.test(r.stderr), 'no stack trace');
  for (const m of mentions) t.true(r.stderr.includes(m), `${JSON.stringify(r.stderr)} should mention ${m}`);
  return r.stderr;
}

/** The whole of stdout must be one JSON value. */
export function json<T = unknown>(t: ExecutionContext, r: Run): T {
  const out = ok(t, r);
  return JSON.parse(out) as T;
}
