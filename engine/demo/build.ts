// Builds the demo archive: accounts, users with passwords, and generated mail that goes through
// the real importer (parse, dedup, body policy, attachment store), so the demo proves that path.
import { randomBytes } from 'node:crypto';
import type { Db } from '../db/open.js';
import { importMessages } from '../import/importer.js';
import type { RawMessage } from '../import/sources.js';
import { addAccount } from '../store/accounts.js';
import { StoreError } from '../store/errors.js';
import { addUser, assignAccount, hashPassword } from '../store/users.js';
import { DEMO_ACCOUNTS, DEMO_USERS, type AccountKey } from './corpus.js';
import { demoMail, SHOWCASE_TOTAL } from './generate.js';

export const DEFAULT_DEMO_MESSAGES = 500;
export const MIN_DEMO_MESSAGES = Math.max(20, SHOWCASE_TOTAL);
export const MAX_DEMO_MESSAGES = 1_000_000;
export const DEMO_SEED = 20240301;

export interface DemoArchive {
  messages: number;
  failed: number;
  seconds: number;
  accounts: Array<{ id: number; name: string; emailAddress: string; provider: string; messages: number }>;
  /** Passwords in plain text: shown to the operator once, stored only as scrypt hashes. */
  users: Array<{ username: string; isAdmin: boolean; accountIds: number[]; password: string }>;
}

export interface ArchiveContents {
  messages: number;
  accounts: number;
  users: number;
}

export function archiveContents(db: Db): ArchiveContents {
  return db
    .prepare(
      `SELECT (SELECT count(*) FROM emails) AS messages, (SELECT count(*) FROM mail_accounts) AS accounts,
                     (SELECT count(*) FROM users) AS users`,
    )
    .get() as ArchiveContents;
}

/** How many of `total` messages each account gets, by its share; the last takes the rest. */
function split(total: number): number[] {
  const counts = DEMO_ACCOUNTS.map((a) => Math.round(total * a.share));
  counts[counts.length - 1] = total - counts.slice(0, -1).reduce((s, n) => s + n, 0);
  return counts;
}

async function* asRaw(
  messages: Iterable<{ folder: string; raw: Buffer; date: Date }>,
  account: string,
): AsyncGenerator<RawMessage> {
  let i = 0;
  for (const m of messages) {
    i++;
    yield {
      raw: m.raw,
      folder: m.folder,
      origin: `generated message ${i} of account "${account}"`,
      mtime: m.date.getTime(),
      bytes: m.raw.length,
    };
  }
}

export async function buildDemoArchive(
  db: Db,
  options: { messages?: number; seed?: number; onWarning?: (message: string) => void } = {},
): Promise<DemoArchive> {
  const started = performance.now();
  const total = options.messages ?? DEFAULT_DEMO_MESSAGES;
  if (!Number.isInteger(total) || total < MIN_DEMO_MESSAGES || total > MAX_DEMO_MESSAGES) {
    throw new StoreError(
      `The demo needs between ${MIN_DEMO_MESSAGES} and ${MAX_DEMO_MESSAGES} messages, not ${total}.`,
    );
  }
  const held = archiveContents(db);
  if (held.messages + held.accounts + held.users > 0) {
    throw new StoreError(
      `The archive is not empty (${held.accounts} accounts, ${held.users} users, ${held.messages} messages); the demo is only built into an empty archive file.`,
    );
  }
  // Hash first: the slow, async part, before anything is written.
  const passwords = DEMO_USERS.map(() => randomBytes(9).toString('base64url'));
  const hashes = await Promise.all(passwords.map(hashPassword));

  const ids = new Map<AccountKey, number>();
  db.transaction(() => {
    for (const a of DEMO_ACCOUNTS)
      ids.set(a.key, addAccount(db, { name: a.name, emailAddress: a.emailAddress, provider: a.provider }).id);
    DEMO_USERS.forEach((u, i) => {
      addUser(db, { username: u.username, email: u.email, isAdmin: u.isAdmin, passwordHash: hashes[i]! });
      for (const key of u.accounts) assignAccount(db, u.username, ids.get(key)!);
    });
  })();

  const counts = split(total);
  const accounts: DemoArchive['accounts'] = [];
  let imported = 0;
  let failed = 0;
  for (const [i, spec] of DEMO_ACCOUNTS.entries()) {
    const id = ids.get(spec.key)!;
    const summary = await importMessages(db, asRaw(demoMail(spec, counts[i]!, options.seed ?? DEMO_SEED), spec.key), {
      accountId: id,
      ...(options.onWarning ? { onWarning: options.onWarning } : {}),
    });
    imported += summary.imported;
    failed += summary.failed;
    accounts.push({
      id,
      name: spec.name,
      emailAddress: spec.emailAddress,
      provider: spec.provider,
      messages: summary.imported,
    });
  }
  return {
    messages: imported,
    failed,
    seconds: (performance.now() - started) / 1000,
    accounts,
    users: DEMO_USERS.map((u, i) => ({
      username: u.username,
      isAdmin: u.isAdmin,
      accountIds: u.accounts.map((k) => ids.get(k)!),
      password: passwords[i]!,
    })),
  };
}
