// Reading attachment text into the archive, the same on both stores: the importer after each
// committed batch, and `mail-archive reindex --attachments` for what is already stored. Every
// content looked at gets a stored outcome (text or a status), so the set still to read only
// shrinks: a run cut short continues where it stopped, and a file that cannot be read is
// recorded once, not retried forever.
import type { AttachmentTextPage } from '../../shared/jobs.js';
import { extractKind, type ExtractResult } from './extract.js';
import type { Extractor } from './extractor.js';

/** A stored content no outcome has been recorded for, named by its first attachment. */
export interface PendingContent {
  contentId: number;
  /** Where a scan continues after this one (pending's `after`): a content or attachment id. */
  cursor: number;
  size: number;
  contentType: string;
  fileName: string;
}

export interface AttachmentTextStore {
  /**
   * Up to `limit` contents without an outcome, in cursor order after `after` (a scan resumes
   * there instead of probing every content already done again); only those of `emailIds` when given.
   */
  pending(limit: number, options?: { emailIds?: readonly number[]; after?: number }): Promise<PendingContent[]>;
  countPending(): Promise<number>;
  content(c: PendingContent): Promise<Buffer>;
  /** Stores outcomes and re-indexes the messages holding them, and `emailIds` too. */
  save(
    results: ReadonlyArray<{ contentId: number; result: ExtractResult }>,
    emailIds?: readonly number[],
  ): Promise<void>;
}

export interface ExtractSummary {
  /** Contents looked at. */
  contents: number;
  /** Of those, how many per status ('ok', 'encrypted', 'failed', ...). */
  byStatus: Record<string, number>;
  /** Of the 'ok' ones, cut by a bound. */
  truncated: number;
}

const emptySummary = (): ExtractSummary => ({ contents: 0, byStatus: {}, truncated: 0 });

async function readAll(
  store: AttachmentTextStore,
  extractor: Extractor,
  batch: PendingContent[],
  summary: ExtractSummary,
) {
  const results: Array<{ contentId: number; result: ExtractResult }> = [];
  for (const c of batch) {
    // Unsupported and oversized contents are decided by their metadata: no bytes are read.
    const skip = extractKind(c.contentType, c.fileName) === null || c.size > extractor.limits.maxBytes;
    const bytes = skip ? Buffer.alloc(0) : await store.content(c);
    const result =
      extractKind(c.contentType, c.fileName) === null
        ? ({ status: 'unsupported', text: '', truncated: false } as const)
        : c.size > extractor.limits.maxBytes
          ? ({ status: 'too large', text: '', truncated: false } as const)
          : await extractor.extract(bytes, c.contentType, c.fileName);
    results.push({ contentId: c.contentId, result });
    const key = result.status.startsWith('failed') ? 'failed' : result.status;
    summary.byStatus[key] = (summary.byStatus[key] ?? 0) + 1;
    if (result.truncated) summary.truncated++;
    summary.contents++;
  }
  return results;
}

/**
 * After an import batch: reads the new contents of these (new) messages and indexes the
 * messages, including those whose contents had been read before for another message.
 */
export async function indexNewMessages(
  store: AttachmentTextStore,
  extractor: Extractor,
  emailIds: readonly number[],
): Promise<ExtractSummary> {
  const summary = emptySummary();
  if (emailIds.length === 0) return summary;
  const pending = await store.pending(Number.MAX_SAFE_INTEGER, { emailIds });
  await store.save(await readAll(store, extractor, pending, summary), emailIds);
  return summary;
}

export interface ReindexProgress {
  done: number;
  total: number;
}

/** Every stored content without an outcome, in batches (each saved as it is finished). */
export async function reindexAttachments(
  store: AttachmentTextStore,
  extractor: Extractor,
  options: { batchSize?: number; onProgress?: (p: ReindexProgress) => void } = {},
): Promise<ExtractSummary> {
  const summary = emptySummary();
  const total = await store.countPending();
  options.onProgress?.({ done: 0, total });
  let after = 0;
  for (;;) {
    const batch = await store.pending(options.batchSize ?? 25, { after });
    if (batch.length === 0) break;
    after = batch.at(-1)!.cursor;
    await store.save(await readAll(store, extractor, batch, summary));
    options.onProgress?.({ done: summary.contents, total: Math.max(total, summary.contents) });
  }
  return summary;
}

/** One page of a stored text, without splitting a surrogate pair at either end. */
/**
 * What each store reads for the attachmentText job: the attachment, and its attachment_texts row
 * (null columns when it has none). `B` is how the store returns the truncated flag.
 */
export type AttachmentTextRow<B> = AttachmentTextPage['attachment'] & {
  status: string | null;
  text: string | null;
  truncated: B | null;
};

export function pageOfText(
  attachment: AttachmentTextPage['attachment'],
  status: string | null,
  text: string,
  truncated: boolean,
  offset: number,
  maxChars: number | undefined,
): AttachmentTextPage {
  const totalChars = text.length;
  let start = Math.min(Math.max(0, offset), totalChars);
  let end = maxChars === undefined ? totalChars : Math.min(totalChars, start + Math.max(0, maxChars));
  const low = (i: number) => i > 0 && i < totalChars && (text.charCodeAt(i) & 0xfc00) === 0xdc00;
  if (low(start)) start++;
  if (low(end) && end > start) end--;
  return {
    attachment,
    status: status ?? 'not extracted',
    text: text.slice(start, end),
    offset: start,
    totalChars,
    truncated,
  };
}
