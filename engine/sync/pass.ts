// One sync pass: every enabled IMAP account (or those named), folder by folder, new UIDs only,
// each message through the importer's own parser and writer (engine/import/importer.ts), so a
// synced message is stored exactly as an imported one and deduplicated against it. Failures are
// per account: recorded with their reason, retried on a later pass, never stopping the others.
import type { ImapFlow } from 'imapflow';
import type { ArchiveAdmin } from '../store-contract.js';
import { TextBudget } from '../attachments/budget.js';
import { importMessages, type ImportProgress } from '../import/importer.js';
import { DEFAULT_IMPORT_LIMITS, type ImportLimits } from '../import/limits.js';
import {
  archiveFolder,
  clearTextWarning,
  connect,
  describeImapError,
  FETCH_WINDOW,
  foldersToSync,
  messagesAfter,
} from './imap.js';
import type { SyncAccount, SyncState } from '../rules/sync-state.js';

/** A lease outlives a stalled runner by this much; a running pass renews it folder by folder. */
export const LEASE_MS = 10 * 60_000;

export interface AccountSummary {
  accountId: number;
  name: string;
  status: 'synced' | 'failed' | 'skipped' | 'busy' | 'stopped';
  /** Why it failed or was skipped, in one sentence. */
  reason?: string;
  folders: number;
  imported: number;
  duplicates: number;
  failed: number;
  /** Messages above Import:MaxMessageBytes: not fetched, each a warning with its size. */
  tooLarge: number;
  seconds: number;
}

export interface SyncOptions {
  /** Account ids; default: every account. */
  ids?: readonly number[];
  /** Who holds the leases this pass takes (host, pid): two runners never sync one account at once. */
  holder: string;
  /** Aborting stops after the message in hand; the pass is then not recorded as complete. */
  signal?: AbortSignal;
  /** Skip accounts whose last pass failed until their back-off has passed (`sync --watch`). */
  backoff?: boolean;
  /** CA certificate to trust (tests: a private server's self-signed certificate). */
  ca?: string | Buffer;
  onProgress?: (account: SyncAccount, folder: string, progress: ImportProgress) => void;
  onWarning?: (message: string) => void;
  now?: () => number;
  /** What one message and one account's pass may cost (Import:* settings). */
  limits?: ImportLimits;
  /** Message bytes fetched at once (Sync:WindowBytes). */
  windowBytes?: number;
  /** Folders per account's pass at most (Sync:MaxFolders). */
  maxFolders?: number;
  /** Wall time of one account's pass (Sync:PassMinutes), in milliseconds. */
  passMs?: number;
  /** How long a lease lasts unless renewed; LEASE_MS (tests shorten it to watch it renewed). */
  leaseMs?: number;
}

/** Defaults of Sync:MaxFolders and Sync:PassMinutes. */
export const DEFAULT_MAX_FOLDERS = 1000;
export const DEFAULT_PASS_MS = 60 * 60_000;

/** Message bytes one FETCH may bring at most, by default (Sync:WindowBytes). */
export const DEFAULT_WINDOW_BYTES = 64 * 1024 * 1024;

/** After n failed passes in a row, wait 1, 2, 4 … minutes, at most an hour. */
export const backoffMs = (failures: number) => Math.min(60, 2 ** Math.max(0, failures - 1)) * 60_000;

export async function syncPass(admin: ArchiveAdmin, state: SyncState, options: SyncOptions): Promise<AccountSummary[]> {
  const now = options.now ?? Date.now;
  const out: AccountSummary[] = [];
  for (const entry of await state.accounts(options.ids)) {
    if (options.signal?.aborted) break;
    out.push(await syncAccount(admin, state, entry, options, now));
  }
  return out;
}

async function syncAccount(
  admin: ArchiveAdmin,
  state: SyncState,
  entry: SyncAccount,
  options: SyncOptions,
  now: () => number,
): Promise<AccountSummary> {
  const { account, imap } = entry;
  const started = performance.now();
  const summary: AccountSummary = {
    accountId: account.id,
    name: account.name,
    status: 'skipped',
    folders: 0,
    imported: 0,
    duplicates: 0,
    failed: 0,
    tooLarge: 0,
    seconds: 0,
  };
  const done = (status: AccountSummary['status'], reason?: string) => {
    summary.status = status;
    if (reason !== undefined) summary.reason = reason;
    summary.seconds = (performance.now() - started) / 1000;
    return summary;
  };
  if (!account.isEnabled) return done('skipped', 'the account is disabled');
  if (entry.imapError) {
    // The stored password cannot be used (a changed Sync:SecretKey): this account fails, alone.
    await state.recordOutcome(account.id, { ok: false, at: now(), error: entry.imapError }).catch(() => {});
    return done('failed', entry.imapError);
  }
  if (!imap) {
    // Provider IMAP (the SQLite default) without a server is an import-only account: say that,
    // not that IMAP is not synced.
    const imapProvider = account.provider.trim().toUpperCase() === 'IMAP';
    return done(
      'skipped',
      imapProvider
        ? `it has no IMAP settings (import-only; add them with accounts set ${account.id} --imap-host HOST --password-stdin)`
        : `provider ${account.provider} is not synced by this service`,
    );
  }
  const last = entry.lastOutcome;
  if (options.backoff && last && !last.ok && now() < last.at + backoffMs(entry.failures)) {
    return done(
      'skipped',
      `retrying after ${new Date(last.at + backoffMs(entry.failures)).toISOString()} (last error: ${last.error})`,
    );
  }
  const leaseMs = options.leaseMs ?? LEASE_MS;
  if (!(await state.acquireLease(account.id, options.holder, leaseMs))) {
    return done('busy', 'another sync runner is syncing this account');
  }
  let client: ImapFlow | undefined;
  const limits = options.limits ?? DEFAULT_IMPORT_LIMITS;
  // One attachment-text budget for the account's whole pass, over all its folders: a hostile
  // mailbox costs this account's pass, not the next accounts' (docs/security.md, "Mail shaped by an attacker", item 4).
  const textBudget = new TextBudget(limits.text);
  // The lease is renewed while the pass runs, not only between folders: reading one folder's
  // messages and their attachments may take longer than the lease (item 4).
  const renew = setInterval(() => {
    void state.acquireLease(account.id, options.holder, leaseMs).catch(() => {});
  }, leaseMs / 4);
  renew.unref();
  // The pass's wall time (docs/security.md, "Mail shaped by an attacker", item 9): past it the pass stops after the message in hand;
  // a server that keeps one command going (an endless LIST) is disconnected at the deadline.
  const passMs = options.passMs ?? DEFAULT_PASS_MS;
  const overtime = new AbortController();
  const deadline = setTimeout(() => {
    overtime.abort();
    // Grace for the message in hand; then whatever IMAP command is still running is cut off.
    setTimeout(() => client?.close(), Math.min(30_000, passMs)).unref();
  }, passMs);
  deadline.unref();
  const signal = options.signal ? AbortSignal.any([options.signal, overtime.signal]) : overtime.signal;
  const overtimeReason = `the pass reached its time bound (Sync:PassMinutes, ${Math.round(passMs / 1000)} s); the next pass resumes it`;
  try {
    if (imap.security === 'none') options.onWarning?.(`${account.name}: ${clearTextWarning(imap)}.`);
    client = connect(imap, options.ca !== undefined ? { ca: options.ca } : {});
    client.on('error', () => {}); // reported through the failing call
    await client.connect();
    const listed = await client.list();
    if (overtime.signal.aborted) throw new Error(overtimeReason);
    const all = foldersToSync(listed, imap);
    const maxFolders = options.maxFolders ?? DEFAULT_MAX_FOLDERS;
    const folders = all.slice(0, maxFolders);
    if (all.length > maxFolders)
      options.onWarning?.(
        `${account.name}: the server lists ${all.length} folders; the first ${maxFolders} are synced (Sync:MaxFolders).`,
      );
    for (const folder of folders) {
      if (signal.aborted) break;
      const name = archiveFolder(folder);
      const lock = await client.getMailboxLock(folder.path, { readOnly: true });
      try {
        const mailbox = client.mailbox;
        const uidValidity = String(mailbox ? mailbox.uidValidity : '');
        const known = await state.folderState(account.id, name);
        // A new UIDVALIDITY means the UIDs mean other messages now: read the whole folder again;
        // the importer's deduplication keeps what is already archived from being stored twice.
        const after = known && known.uidValidity === uidValidity ? known.lastUid : 0;
        if (!known || known.uidValidity !== uidValidity)
          await state.saveFolderState(account.id, name, { uidValidity, lastUid: after });
        const window = {
          count: FETCH_WINDOW,
          bytes: options.windowBytes ?? DEFAULT_WINDOW_BYTES,
          maxMessageBytes: limits.maxMessageBytes,
        };
        const result = await importMessages(admin, messagesAfter(client, name, after, signal, window), {
          accountId: account.id,
          limits,
          textBudget,
          touchLastSync: false,
          onWarning: (message) => options.onWarning?.(`${account.name}: ${message}`),
          onProgress: (progress) => options.onProgress?.(entry, name, progress),
          onCommitted: (lastMessage) =>
            state.saveFolderState(account.id, name, { uidValidity, lastUid: lastMessage.uid ?? after }),
        });
        summary.folders++;
        summary.imported += result.imported;
        summary.duplicates += result.duplicates;
        summary.failed += result.failed;
        summary.tooLarge += result.tooLarge;
      } finally {
        lock.release();
      }
      await state.acquireLease(account.id, options.holder, leaseMs);
    }
    await client.logout().catch(() => {});
    if (options.signal?.aborted) return done('stopped', 'stopped before the pass completed; the next pass resumes it');
    if (overtime.signal.aborted) return done('stopped', overtimeReason);
    await state.recordOutcome(account.id, { ok: true, at: now() });
    return done('synced');
  } catch (err) {
    const reason = overtime.signal.aborted ? overtimeReason : describeImapError(err, imap);
    // Recorded for `accounts list` and the back-off; a failure to record it must not hide it.
    await state.recordOutcome(account.id, { ok: false, at: now(), error: reason }).catch(() => {});
    return done('failed', reason);
  } finally {
    clearTimeout(deadline);
    clearInterval(renew);
    client?.close();
    await state.releaseLease(account.id, options.holder).catch(() => {});
  }
}
