// What `mail-archive search` and `show` share: they read mail through the same engine jobs as
// GET /api/v1/emails and GET /api/v1/emails/{id} (the store's job handlers, run in this process as
// `export` runs its jobs), as someone, and record every read in the access log as the REST routes
// do (gateway/archive-service.ts), with source `cli` (docs/search.md, "From the command line").
import type { Command } from 'commander';
import { hostname, userInfo } from 'node:os';
import { loadSettings } from '../../shared/config.js';
import { isInvalidInput } from '../../shared/errors.js';
import { sessionPrincipal, type AccessLogEntry, type JobMap, type Principal } from '../../shared/jobs.js';
import { openStore, storeKind } from '../archive.js';
import type { ArchiveStore } from '../store-contract.js';
import { archivePath, UsageError, withArchive } from './context.js';

/** The operator at the command line reads every account, as `export` does (user id 0: no user). */
export const OPERATOR: Principal = { userId: 0, username: 'operator', isAdmin: true, keyId: 0, keyPrefix: '' };

/**
 * The operating-system account and host that ran the command, for the access log's `clientIp`:
 * a command line has no client address, and who ran it is what an auditor asks. Without a
 * password-file entry for the uid (some containers) the uid is named instead.
 */
export function osActor(): string {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = process.env.USER ?? process.env.LOGNAME ?? `uid ${process.getuid?.() ?? '?'}`;
  }
  return `${user}@${hostname()}`;
}

export interface Reader {
  principal: Principal;
  /** Runs one job as the reader. */
  run<K extends 'search' | 'detail'>(
    job: { kind: K } & Omit<JobMap[K]['args'], 'principal'>,
  ): Promise<JobMap[K]['result']>;
  /** Writes one access-log entry now: a read is shown only once it is recorded. */
  record(entry: Pick<AccessLogEntry, 'type' | 'emailId' | 'accountId' | 'searchParams'>): Promise<void>;
}

/**
 * Opens the archive as `username` reads it (their accounts; `--user`) or as the operator, for the
 * duration of `work`. A missing archive, an unknown or inactive user is one sentence.
 */
export async function withReader<T>(
  cmd: Command,
  username: string | undefined,
  work: (reader: Reader) => Promise<T>,
): Promise<T> {
  // withArchive says what is wrong with a missing or unreadable archive before any job runs.
  const principal = await withArchive(cmd, async (archive): Promise<Principal> => {
    if (username === undefined) return OPERATOR;
    const user = await archive.requireUser(username);
    if (!user.isActive) throw new UsageError(`${user.username} is inactive: an inactive user reads nothing.`);
    // As the web pages read for a signed-in user: no key.
    return sessionPrincipal(user);
  });
  const path = archivePath(cmd);
  const store: ArchiveStore = await openStore({
    path,
    ...(storeKind(path) === 'postgres' ? { timeZone: loadSettings().Database.TimeZone } : {}),
  });
  const clientIp = osActor();
  try {
    return await work({
      principal,
      run: async (job) => {
        try {
          return await store.run({ ...job, principal } as never);
        } catch (err) {
          // A job refuses what the archive cannot answer (is:read without the read flag) as REST's 400.
          if (isInvalidInput(err)) throw new UsageError((err as Error).message);
          throw err;
        }
      },
      record: async (entry) => {
        await store.run({
          kind: 'accessLog',
          entries: [{ ...entry, userId: principal.userId, at: Date.now(), keyPrefix: '', clientIp, source: 'cli' }],
        });
      },
    });
  } finally {
    await store.close();
  }
}
