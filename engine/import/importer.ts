// The importer: sources in, parsed messages out, written in batches through the archive's
// writer (ArchiveAdmin.openWriter(), engine/store-contract.ts: ArchiveWriter on SQLite, PgArchiveWriter on PostgreSQL), so one import
// path serves both stores. It prints nothing; callers hear about progress and skipped messages
// through callbacks.
import { asAdmin } from '../sqlite/admin.js';
import { type ArchiveAdmin } from '../store-contract.js';
import type { Db } from '../sqlite/open.js';
import type { ParsedMessage } from './parse.js';
import { inOrder, MessageParser, ParserFailed, type ParserOptions } from './parsers.js';
import type { Repair } from './repairs.js';
import { planSources, readSources, type IgnoredFile, type RawMessage } from './sources.js';
import type { ExtractLimits } from '../attachments/extract.js';
import { Extractor } from '../attachments/extractor.js';
import { indexNewMessages } from '../attachments/index-texts.js';
import { TextBudget } from '../attachments/budget.js';
import { DEFAULT_IMPORT_LIMITS, tooLargeReason, type ImportLimits } from './limits.js';

export interface ImportProgress {
  /** Source bytes read so far, and in all (0 when unknown). */
  bytesDone: number;
  bytesTotal: number;
  /** Messages read so far, whatever became of them. */
  messages: number;
  imported: number;
  duplicates: number;
  failed: number;
  /** Messages above Import:MaxMessageBytes, not archived (each a warning with its size). */
  tooLarge: number;
}

export interface ImportSummary {
  imported: number;
  duplicates: number;
  failed: number;
  /** Messages above Import:MaxMessageBytes, not archived (each a warning with its size). */
  tooLarge: number;
  /** Attachment contents left unread because the pass had spent its text budget. */
  textDeferred: number;
  /** Files under the import paths that were not read, each with the reason (planSources). */
  ignored: IgnoredFile[];
  /** Imported messages whose Message-ID another message in their folder has: different content. */
  sameIdDifferentContent: number;
  /** Duplicates that were stored without their original and were given it (docs/evidence.md). */
  originalsAttached: number;
  /** Imported messages stored with a repair, by reason: how many, and where the first ones came from. */
  repaired: Partial<Record<Repair, { count: number; messages: string[] }>>;
  seconds: number;
}

/** Origins listed per repair reason in a summary; the count goes on beyond. */
export const MAX_LISTED_REPAIRS = 1000;

export interface ImportOptions {
  accountId: number;
  /** Messages per write transaction. */
  batchSize?: number;
  onProgress?: (progress: ImportProgress) => void;
  /** One sentence per skipped message, naming where it came from. */
  onWarning?: (message: string) => void;
  /** Each file under the import paths that is not read, with the reason, before reading starts. */
  onIgnored?: (file: IgnoredFile) => void;
  /**
   * Read and parse everything, count what would be imported and what is a duplicate, and write
   * nothing: the whole import runs in one transaction that is rolled back.
   */
  dryRun?: boolean;
  /**
   * After each batch is committed: the last message read up to it (stored, duplicate or
   * skipped). The IMAP sync records its checkpoint here, so a pass cut short resumes after it.
   */
  onCommitted?: (last: RawMessage) => Promise<void>;
  /** Set the account's lastSync when done (default true; the sync sets it per pass instead). */
  touchLastSync?: boolean;
  /**
   * Read the text inside new attachments after each batch (default true), with these bounds
   * (engine/attachments/extract.ts). false leaves it to `mail-archive reindex --attachments`.
   */
  attachmentText?: boolean | Partial<ExtractLimits>;
  /** What one message and one pass may cost (Import:* settings); defaults: DEFAULT_IMPORT_LIMITS. */
  limits?: Partial<ImportLimits>;
  /**
   * Keep each message's original bytes (default true; docs/evidence.md, "Originals"). false only
   * for the import benchmark, which measures what keeping them costs against not keeping them.
   */
  originals?: boolean;
  /** Where messages are parsed: threads, and how many are parsed here first (engine/import/parsers.ts). */
  parse?: ParserOptions;
  /**
   * The attachment-text budget of the pass this import is part of (a sync pass spans several
   * folders); default: one for this import, from `limits.text`.
   */
  textBudget?: TextBudget;
}

export const DEFAULT_BATCH_SIZE = 500;
/** Batches written whose attachment text may still be read before the next write waits for it. */
const TEXT_BATCHES_BEHIND = 2;
// A batch is also cut at this many raw bytes, so a run of large attachments stays in bounds.
const MAX_BATCH_BYTES = 64 * 1024 * 1024;

/** Imports files and directories (mbox, Maildir, .eml); see planSources for folder rules. */
export async function importPaths(
  target: Db | ArchiveAdmin,
  paths: readonly string[],
  options: ImportOptions & { folder?: string },
): Promise<ImportSummary> {
  const admin = asAdmin(target);
  await admin.requireAccount(options.accountId); // before touching the file system: the cheaper mistake first
  const { sources, ignored } = planSources(paths, options.folder);
  for (const file of ignored) options.onIgnored?.(file);
  const bytesTotal = sources.reduce((sum, s) => sum + s.size, 0);
  const run = (target: ArchiveAdmin, extra: Partial<ImportOptions> = {}) =>
    importMessages(target, readSources(sources, limitsOf(options).maxMessageBytes), {
      ...options,
      ...extra,
      bytesTotal,
    });
  if (!options.dryRun) return { ...(await run(admin)), ignored };
  // A dry run is the import itself, rolled back: its counts are the real ones, duplicates within
  // the run and against the archive alike. Nothing outlives it: no attachment text, no lastSync.
  let summary: ImportSummary | undefined;
  await admin
    .transaction(async (tx) => {
      summary = await run(tx, { attachmentText: false, touchLastSync: false });
      throw ROLLBACK;
    })
    .catch((err: unknown) => {
      if (err !== ROLLBACK) throw err;
    });
  return { ...summary!, ignored };
}

const ROLLBACK = Symbol('dry run: roll back');

/** The import's limits: the defaults, with what the options set. */
const limitsOf = (options: ImportOptions): ImportLimits => ({ ...DEFAULT_IMPORT_LIMITS, ...options.limits });

/** Imports messages from any reader (files, or the demo generator) into one account. */
export async function importMessages(
  target: Db | ArchiveAdmin,
  messages: AsyncIterable<RawMessage> | Iterable<RawMessage>,
  options: ImportOptions & { bytesTotal?: number },
): Promise<ImportSummary> {
  const started = performance.now();
  const admin = asAdmin(target);
  const account = await admin.requireAccount(options.accountId);
  const writer = admin.openWriter({ pipelined: true });
  const batchSize = Math.max(1, options.batchSize ?? DEFAULT_BATCH_SIZE);
  const limits = limitsOf(options);
  const textBudget = options.textBudget ?? new TextBudget(limits.text);
  let textDeferred = 0;
  const progress: ImportProgress = {
    bytesDone: 0,
    bytesTotal: options.bytesTotal ?? 0,
    messages: 0,
    imported: 0,
    duplicates: 0,
    failed: 0,
    tooLarge: 0,
  };
  let pending: ParsedMessage[] = [];
  let origins: string[] = [];
  let pendingSizes: number[] = [];
  const repaired: ImportSummary['repaired'] = {};
  let pendingBytes = 0;
  let lastRead: RawMessage | undefined;
  let committed: RawMessage | undefined;
  // Started on the first batch with an attachment: importing mail without any costs nothing.
  let extractor: Extractor | undefined;
  const textOption = options.attachmentText ?? true;

  // One batch may be in flight while the next is parsed: a PostgreSQL server stores it
  // meanwhile. (The SQLite writer finishes within the call, so there it changes nothing.)
  let inflight: Promise<void> = Promise.resolve();
  // Attachment text follows the writes in order, one batch at a time, but does not hold up the
  // next write (on PostgreSQL it reads the stored bytes back on another connection); at most
  // TEXT_BATCHES_BEHIND batches wait for it.
  let texts: Promise<void> = Promise.resolve();
  let textsBehind = 0;
  const flush = async () => {
    const upTo = lastRead;
    if (pending.length === 0) {
      // Only skipped messages since the last batch: nothing to write, but they are done with.
      await inflight;
      if (upTo && upTo !== committed && options.onCommitted) await options.onCommitted(upTo);
      committed = upTo;
      return;
    }
    const batch = pending;
    const from = origins;
    const sizes = pendingSizes;
    pending = [];
    origins = [];
    pendingSizes = [];
    pendingBytes = 0;
    await inflight;
    inflight = writer.writeBatch(batch).then(async (ids) => {
      ids.forEach((id, i) => {
        if (id === null) return void progress.duplicates++;
        progress.imported++;
        for (const reason of batch[i]!.repairs) {
          const r = (repaired[reason] ??= { count: 0, messages: [] });
          if (++r.count <= MAX_LISTED_REPAIRS) r.messages.push(from[i]!);
        }
      });
      // The checkpoint follows the commit, before any attachment is read: a pass cut short while
      // reading attachments does not fetch and parse the same mail again (the contents left
      // unread are what reindex --attachments picks up).
      if (upTo && options.onCommitted) await options.onCommitted(upTo);
      committed = upTo;
      // Attachment text after the commit, in its own transaction: the mail is safe whatever
      // happens here. Meanwhile the next batch is parsed; the extracting itself runs on its own
      // thread, within the pass's budget.
      const withAttachments: number[] = [];
      const bytes = new Map<number, number>();
      ids.forEach((id, i) => {
        if (id === null || batch[i]!.attachments.length === 0) return;
        withAttachments.push(id);
        bytes.set(id, sizes[i]!);
      });
      if (textOption !== false && withAttachments.length > 0) {
        textsBehind++;
        texts = texts.then(async () => {
          extractor ??= new Extractor(textOption === true ? {} : textOption);
          const read = await indexNewMessages(admin.attachmentTexts(), extractor, withAttachments, textBudget, bytes);
          textDeferred += read.deferred ?? 0;
          textsBehind--;
        });
        // Seen by a later flush (or the end); not an unhandled rejection in between.
        texts.catch(() => {});
      }
    });
    // Seen by the next flush (or the end); not an unhandled rejection in between.
    inflight.catch(() => {});
    if (textsBehind >= TEXT_BATCHES_BEHIND) await texts;
  };

  const keepOriginal = options.originals !== false;
  // Parsed (and originals packed) on every core once the import proves long, taken here in the
  // order read (engine/import/parsers.ts).
  const parser = new MessageParser(options.parse);
  const work = (m: RawMessage): Promise<ParsedMessage> => {
    if (m.readError) throw new Error(m.readError);
    if (m.bytes > limits.maxMessageBytes) throw new TooLarge(m.bytes);
    return parser.parse({
      raw: m.raw,
      ctx: {
        accountId: account.id,
        accountEmail: account.emailAddress,
        folder: m.folder,
        fallbackDate: m.mtime,
        maxTnefFiles: limits.maxTnefFiles,
      },
      keepOriginal,
      ...(writer.prepare ? { prepare: writer.prepare } : {}),
    });
  };
  for await (const parsed of inOrder(messages, parser, (m) => m.raw.length, work)) {
    const m = parsed.item;
    lastRead = m;
    progress.messages++;
    if (m.cut)
      options.onWarning?.(
        `The last message in ${m.origin} looks cut short: ${m.cut}; the file may be incomplete (imported as it is).`,
      );
    progress.bytesDone += m.bytes;
    try {
      if (!parsed.ok) throw parsed.error;
      const email = parsed.email;
      if (m.crLineEnds && !email.repairs.includes('crLineEnds')) email.repairs.unshift('crLineEnds');
      // The bytes as the reader gave them: a file's or a fetch's as read, an mbox entry unescaped.
      if (keepOriginal) email.original = m.raw;
      pending.push(email);
      origins.push(m.origin);
      pendingSizes.push(m.raw.length);
      pendingBytes += m.raw.length;
    } catch (err) {
      if (err instanceof ParserFailed) throw err; // not this message's fault: the import stops
      if (err instanceof TooLarge) {
        // Recorded, not dropped in silence: counted, and a warning with its size.
        progress.tooLarge++;
        options.onWarning?.(
          `Skipped the message in ${m.origin}: ${tooLargeReason(err.bytes, limits.maxMessageBytes)}.`,
        );
        options.onProgress?.(progress);
        continue;
      }
      // Parsing touches nothing but the message, so any failure there is that message's fault.
      progress.failed++;
      options.onWarning?.(`Skipped the message in ${m.origin}: ${(err as Error).message}.`);
    }
    if (pending.length >= batchSize || pendingBytes >= MAX_BATCH_BYTES) await flush();
    options.onProgress?.(progress);
  }
  try {
    await flush();
    await inflight;
    await texts;
    await writer.settle();
  } finally {
    await parser.close();
    await extractor?.close();
  }
  if (options.touchLastSync !== false) await admin.touchLastSync(account.id, Date.now());
  options.onProgress?.(progress);
  const { imported, duplicates, failed, tooLarge } = progress;
  const { sameIdDifferentContent, originalsAttached } = writer;
  return {
    imported,
    duplicates,
    failed,
    tooLarge,
    textDeferred,
    ignored: [],
    sameIdDifferentContent,
    originalsAttached,
    repaired,
    seconds: (performance.now() - started) / 1000,
  };
}

class TooLarge extends Error {
  constructor(readonly bytes: number) {
    super('too large');
  }
}
