// Builds the demo archive: accounts, users with passwords, and generated mail that goes through
// the real importer (parse, dedup, body policy, attachment store), so the demo proves that path.
import { randomBytes } from 'node:crypto';
import { archiveContents, asAdmin } from '../sqlite/admin.js';
import { type ArchiveAdmin } from '../store-contract.js';
import type { Db } from '../sqlite/open.js';
import { importMessages } from '../import/importer.js';
import type { RawMessage } from '../import/sources.js';
import { StoreError } from '../../shared/errors.js';
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
  /** Passwords in plain text: shown to the operator once, stored only as hashes. */
  users: Array<{ username: string; isAdmin: boolean; accountIds: number[]; password: string }>;
}

export { archiveContents };
export type { ArchiveContents } from '../store-contract.js';

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
  target: Db | ArchiveAdmin,
  options: {
    messages?: number;
    seed?: number;
    onWarning?: (message: string) => void;
    /** Read attachment text while importing (default true); the attachment-text benchmark compares. */
    attachmentText?: boolean;
  } = {},
): Promise<DemoArchive> {
  const started = performance.now();
  const total = options.messages ?? DEFAULT_DEMO_MESSAGES;
  if (!Number.isInteger(total) || total < MIN_DEMO_MESSAGES || total > MAX_DEMO_MESSAGES) {
    throw new StoreError(
      `The demo needs between ${MIN_DEMO_MESSAGES} and ${MAX_DEMO_MESSAGES} messages, not ${total}.`,
    );
  }
  const admin = asAdmin(target);
  const held = await admin.contents();
  if (held.messages + held.accounts + held.users > 0) {
    throw new StoreError(
      `The archive is not empty (${held.accounts} accounts, ${held.users} users, ${held.messages} messages); the demo is only built into an empty ${admin.kind === 'sqlite' ? 'archive file' : 'database'}.`,
    );
  }
  // Hash first: the slow, async part, before anything is written.
  const passwords = DEMO_USERS.map(() => randomBytes(9).toString('base64url'));
  const hashes = await Promise.all(passwords.map((p) => admin.hashPassword(p)));

  const ids = new Map<AccountKey, number>();
  await admin.transaction(async (tx) => {
    for (const a of DEMO_ACCOUNTS)
      ids.set(a.key, (await tx.addAccount({ name: a.name, emailAddress: a.emailAddress, provider: a.provider })).id);
    for (const [i, u] of DEMO_USERS.entries()) {
      await tx.addUser({ username: u.username, email: u.email, isAdmin: u.isAdmin, passwordHash: hashes[i]! });
      for (const key of u.accounts) await tx.assignAccount(u.username, ids.get(key)!);
    }
  });

  const counts = split(total);
  const accounts: DemoArchive['accounts'] = [];
  let imported = 0;
  let failed = 0;
  for (const [i, spec] of DEMO_ACCOUNTS.entries()) {
    const id = ids.get(spec.key)!;
    const summary = await importMessages(
      admin,
      asRaw(demoMail(spec, counts[i]!, options.seed ?? DEMO_SEED), spec.key),
      {
        accountId: id,
        ...(options.onWarning ? { onWarning: options.onWarning } : {}),
        ...(options.attachmentText === false ? { attachmentText: false } : {}),
      },
    );
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
