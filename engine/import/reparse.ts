// Reparse (docs/reparse.md): every message that has its original kept is parsed again with the
// current parser (parse.ts, with the options the importer gives it), compared field by field with
// what is stored (engine/rules/reparse.ts), and rewritten where they differ, in batches through
// the store's ReparseStore (engine/store-contract.ts), each batch one transaction. Progress is
// saved after each batch, so a pass cut short continues where it stopped. Prints nothing: the
// CLI hears about progress through a callback.
import type { ArchiveAdmin, ReparseChange, ReparseProgress, ReparseStore } from '../store-contract.js';
import { hasFileAttachments } from '../rules/attachment-counts.js';
import { Extractor } from '../attachments/extractor.js';
import { indexNewMessages } from '../attachments/index-texts.js';
import { TextBudget } from '../attachments/budget.js';
import type { ExtractLimits } from '../attachments/extract.js';
import { prepareBody, STORED_BODY_LIMIT } from '../rules/body.js';
import { normalizeFolder, type NewEmail } from '../rules/new-email.js';
import { sha256Hex } from '../rules/originals.js';
import { changedFields, emptyCounts, type FreshForm, type ReparseCounts } from '../rules/reparse.js';
import { normaliseSubject } from '../rules/threads.js';
import { toSecond } from '../search/fts-key.js';
import { messageTags } from '../search/tags.js';
import { DEFAULT_IMPORT_LIMITS } from './limits.js';
import { parseMessage } from './parse.js';

/** What a store keeps of a freshly parsed message, in the shape the comparison reads. */
export function freshForm(email: NewEmail, bodyLimit = STORED_BODY_LIMIT): FreshForm {
  const folder = normalizeFolder(email.folder);
  const subject = normaliseSubject(email.subject);
  const hasAttachments = hasFileAttachments(email.attachments);
  const body = (value: string | null) => {
    const b = prepareBody(value, bodyLimit);
    return { stored: b.stored, untruncated: b.untruncated, original: b.original };
  };
  return {
    messageId: email.messageId,
    subject: email.subject,
    from: email.from,
    to: email.to,
    cc: email.cc,
    bcc: email.bcc,
    sentDate: toSecond(email.sentDate),
    receivedDate: email.receivedDate,
    isOutgoing: email.isOutgoing,
    hasAttachments,
    threadSubject: subject.key,
    threadReply: subject.reply,
    text: body(email.textBody),
    html: body(email.htmlBody),
    ftsTags: messageTags({ ...email, folder, hasAttachments }),
    attachments: email.attachments.map((a) => ({
      fileName: a.fileName,
      contentType: a.contentType,
      size: a.content.length,
      isInline: a.isInline === true,
      sha256: sha256Hex(a.content),
      contentId: a.contentId ?? null,
      content: a.content,
    })),
    refs: [...new Set(email.refs ?? [])].sort(),
  };
}

export interface ReparseOptions {
  /** Only this account's messages. */
  accountId?: number;
  /** Messages per write transaction (default DEFAULT_REPARSE_BATCH). */
  batchSize?: number;
  /** Compute and count everything, write nothing (progress neither read nor saved). */
  dryRun?: boolean;
  /** Forget an unfinished pass and start from the first message. */
  restart?: boolean;
  /** Import:MaxTnefFiles, as the importer used it. */
  maxTnefFiles?: number;
  /**
   * Read the text inside attachment contents a rewrite added (default true), with these bounds;
   * false leaves them to `mail-archive reindex --attachments`.
   */
  attachmentText?: boolean | Partial<ExtractLimits>;
  onProgress?: (progress: { done: number; total: number; counts: ReparseCounts }) => void;
  /**
   * Examine at most this many messages in this run, then stop as an interruption would: the
   * next run continues after them (a pass spread over several quiet hours).
   */
  limit?: number;
}

export interface ReparseSummary extends ReparseCounts {
  /** The message id this run continued after (an unfinished pass resumed), or null. */
  resumedAfter: number | null;
  /** Whether the pass reached the last message (false: stopped early; run again to continue). */
  complete: boolean;
  dryRun: boolean;
  /** The first messages that could not be reparsed, with the reason (at most MAX_LISTED_FAILURES). */
  failures: Array<{ id: number; reason: string }>;
  /** Attachment contents a rewrite added whose text was read in this run. */
  attachmentTexts: number;
  seconds: number;
}

export const DEFAULT_REPARSE_BATCH = 200;
export const MAX_LISTED_FAILURES = 100;

/** The store's ReparseStore, or null when it keeps no originals to reparse from. */
export function reparseStoreOf(admin: ArchiveAdmin): ReparseStore | null {
  return admin.reparse ? admin.reparse() : null;
}

export async function reparseArchive(admin: ArchiveAdmin, options: ReparseOptions = {}): Promise<ReparseSummary> {
  const started = performance.now();
  const store = reparseStoreOf(admin);
  if (!store) throw new Error('this archive keeps no originals to reparse');
  const accountId = options.accountId ?? null;
  if (accountId !== null) await admin.requireAccount(accountId);
  const accounts = new Map((await admin.listAccounts()).map((a) => [a.id, a.emailAddress]));
  const batchSize = Math.max(1, options.batchSize ?? DEFAULT_REPARSE_BATCH);
  const dryRun = options.dryRun === true;

  let progress: ReparseProgress = { accountId, after: 0, counts: emptyCounts(), startedAt: Date.now() };
  let resumedAfter: number | null = null;
  if (!dryRun) {
    if (options.restart) await store.clearProgress();
    const saved = await store.loadProgress();
    // A pass over another scope is not continued: this one starts from the first message.
    if (saved && saved.accountId === accountId) {
      progress = saved;
      resumedAfter = saved.after;
    }
  }
  const counts = progress.counts;
  const failures: ReparseSummary['failures'] = [];
  const total = progress.counts.examined + (await store.remaining(progress.after, accountId));
  const textOption = options.attachmentText ?? true;
  const textBudget = new TextBudget();
  let extractor: Extractor | undefined;
  let attachmentTexts = 0;
  let examinedNow = 0;
  let complete = false;

  try {
    for (;;) {
      const left = options.limit === undefined ? batchSize : options.limit - examinedNow;
      if (left <= 0) break;
      const candidates = await store.read(progress.after, Math.min(batchSize, left), accountId);
      if (candidates.length === 0) {
        complete = true;
        break;
      }
      const changes: ReparseChange[] = [];
      for (const c of candidates) {
        counts.examined++;
        if (c.damaged !== undefined) {
          counts.damaged++;
          if (failures.length < MAX_LISTED_FAILURES) failures.push({ id: c.id, reason: c.damaged });
          continue;
        }
        if (c.original === null) {
          counts.withoutOriginal++;
          continue;
        }
        let fresh: FreshForm;
        try {
          // The importer's options (importer.ts), with what it knew then that is known now: the
          // account's address, the folder, and for the fallback date the date stored from it.
          const email = await parseMessage(c.original, {
            accountId: c.accountId,
            accountEmail: accounts.get(c.accountId) ?? '',
            folder: c.folder,
            fallbackDate: c.receivedDate,
            maxTnefFiles: options.maxTnefFiles ?? DEFAULT_IMPORT_LIMITS.maxTnefFiles,
          });
          fresh = freshForm(email);
        } catch (err) {
          counts.failed++;
          if (failures.length < MAX_LISTED_FAILURES) failures.push({ id: c.id, reason: (err as Error).message });
          continue;
        }
        const fields = changedFields(c.stored, fresh);
        if (fields.length === 0) {
          counts.unchanged++;
          continue;
        }
        counts.changed++;
        for (const f of fields) counts.fields[f]++;
        changes.push({ id: c.id, fields, fresh });
      }
      progress = { ...progress, after: candidates.at(-1)!.id, counts };
      if (!dryRun) {
        await store.write(changes);
        await store.saveProgress(progress);
        // New attachment contents have no text yet: read it after the commit, as the importer
        // does, so the mail is safe whatever happens while reading.
        const withNewAttachments = changes.filter((ch) => ch.fields.includes('attachments')).map((ch) => ch.id);
        if (textOption !== false && withNewAttachments.length > 0) {
          extractor ??= new Extractor(textOption === true ? {} : textOption);
          const read = await indexNewMessages(admin.attachmentTexts(), extractor, withNewAttachments, textBudget);
          attachmentTexts += read.contents;
        }
      }
      examinedNow += candidates.length;
      options.onProgress?.({ done: counts.examined, total, counts });
    }
    if (complete && !dryRun) await store.clearProgress();
  } finally {
    await extractor?.close();
  }
  return {
    ...counts,
    resumedAfter,
    complete,
    dryRun,
    failures,
    attachmentTexts,
    seconds: (performance.now() - started) / 1000,
  };
}
