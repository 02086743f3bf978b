// The importer: sources in, parsed messages out, written through ArchiveWriter in batches.
// It prints nothing; callers hear about progress and skipped messages through callbacks.
import type { Db } from '../db/open.js';
import { requireAccount, touchLastSync } from '../store/accounts.js';
import { ArchiveWriter, type NewEmail } from '../store/writer.js';
import { parseMessage } from './parse.js';
import { planSources, readSources, type RawMessage } from './sources.js';

export interface ImportProgress {
  /** Source bytes read so far, and in all (0 when unknown). */
  bytesDone: number;
  bytesTotal: number;
  /** Messages read so far, whatever became of them. */
  messages: number;
  imported: number;
  duplicates: number;
  failed: number;
}

export interface ImportSummary {
  imported: number;
  duplicates: number;
  failed: number;
  seconds: number;
}

export interface ImportOptions {
  accountId: number;
  /** Messages per write transaction. */
  batchSize?: number;
  onProgress?: (progress: ImportProgress) => void;
  /** One sentence per skipped message, naming where it came from. */
  onWarning?: (message: string) => void;
}

export const DEFAULT_BATCH_SIZE = 500;
// A batch is also cut at this many raw bytes, so a run of large attachments stays in bounds.
const MAX_BATCH_BYTES = 64 * 1024 * 1024;

/** Imports files and directories (mbox, Maildir, .eml); see planSources for folder rules. */
export async function importPaths(
  db: Db,
  paths: readonly string[],
  options: ImportOptions & { folder?: string },
): Promise<ImportSummary> {
  requireAccount(db, options.accountId); // before touching the file system: the cheaper mistake first
  const sources = planSources(paths, options.folder);
  const bytesTotal = sources.reduce((sum, s) => sum + s.size, 0);
  return importMessages(db, readSources(sources), { ...options, bytesTotal });
}

/** Imports messages from any reader (files, or the demo generator) into one account. */
export async function importMessages(
  db: Db,
  messages: AsyncIterable<RawMessage> | Iterable<RawMessage>,
  options: ImportOptions & { bytesTotal?: number },
): Promise<ImportSummary> {
  const started = performance.now();
  const account = requireAccount(db, options.accountId);
  const writer = new ArchiveWriter(db);
  const batchSize = Math.max(1, options.batchSize ?? DEFAULT_BATCH_SIZE);
  const progress: ImportProgress = {
    bytesDone: 0,
    bytesTotal: options.bytesTotal ?? 0,
    messages: 0,
    imported: 0,
    duplicates: 0,
    failed: 0,
  };
  let pending: NewEmail[] = [];
  let pendingBytes = 0;

  const flush = () => {
    if (pending.length === 0) return;
    const batch = pending;
    pending = [];
    pendingBytes = 0;
    writer.batch(() => {
      for (const email of batch) {
        if (writer.add(email) === null) progress.duplicates++;
        else progress.imported++;
      }
    });
  };

  for await (const m of messages) {
    progress.messages++;
    progress.bytesDone += m.bytes;
    try {
      if (m.readError) throw new Error(m.readError);
      const email = await parseMessage(m.raw, {
        accountId: account.id,
        accountEmail: account.emailAddress,
        folder: m.folder,
        fallbackDate: m.mtime,
      });
      pending.push(email);
      pendingBytes += m.raw.length;
    } catch (err) {
      // Parsing touches nothing but the message, so any failure there is that message's fault.
      progress.failed++;
      options.onWarning?.(`Skipped the message in ${m.origin}: ${(err as Error).message}.`);
    }
    if (pending.length >= batchSize || pendingBytes >= MAX_BATCH_BYTES) flush();
    options.onProgress?.(progress);
  }
  flush();
  touchLastSync(db, account.id, Date.now());
  options.onProgress?.(progress);
  const { imported, duplicates, failed } = progress;
  return { imported, duplicates, failed, seconds: (performance.now() - started) / 1000 };
}
