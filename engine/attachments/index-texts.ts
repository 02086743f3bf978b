// Reading attachment text into the archive, the same on both stores: the importer after each
// committed batch, and `mail-archive reindex --attachments` for what is already stored. Every
// content looked at gets a stored outcome (text or a status), so the set still to read only
// shrinks: a run cut short continues where it stopped, and a file that cannot be read is
// recorded once, not retried forever.
import type { AttachmentTextStore, ExtractResult, PendingContent } from '../rules/attachment-text.js';
import { extractKind } from './extract.js';
import type { Extractor } from './extractor.js';
import { TextBudget } from './budget.js';

export interface ExtractSummary {
  /** Contents looked at. */
  contents: number;
  /** Of those, how many per status ('ok', 'encrypted', 'failed', ...). */
  byStatus: Record<string, number>;
  /** Of the 'ok' ones, cut by a bound. */
  truncated: number;
  /** Contents left unread because the pass had spent its budget (reindex --attachments reads them). */
  deferred?: number;
}

const emptySummary = (): ExtractSummary => ({ contents: 0, byStatus: {}, truncated: 0 });

type Outcome = { contentId: number; result: ExtractResult };

const OVER_BUDGET: ExtractResult = { status: 'over budget', text: '', truncated: false };

/** One content's outcome: decided by its metadata when it can be, else read by the extractor. */
async function readOne(
  store: AttachmentTextStore,
  extractor: Extractor,
  c: PendingContent,
  within: { maxChars: number; timeoutMs: number } | null,
): Promise<ExtractResult> {
  // Unsupported and oversized contents are decided by their metadata: no bytes are read.
  if (extractKind(c.contentType, c.fileName) === null) return { status: 'unsupported', text: '', truncated: false };
  if (c.size > extractor.limits.maxBytes) return { status: 'too large', text: '', truncated: false };
  if (within === null) return OVER_BUDGET;
  return extractor.extract(await store.content(c), c.contentType, c.fileName, within);
}

function count(summary: ExtractSummary, result: ExtractResult): void {
  const key = result.status.startsWith('failed') ? 'failed' : result.status;
  summary.byStatus[key] = (summary.byStatus[key] ?? 0) + 1;
  if (result.truncated) summary.truncated++;
  summary.contents++;
}

/**
 * Outcomes are saved in small batches (by count and by characters), so the text held in memory
 * at once is bounded however many attachments a run reads.
 */
class Saver {
  #results: Outcome[] = [];
  #chars = 0;
  constructor(
    private readonly store: AttachmentTextStore,
    private readonly maxResults = SAVE_EVERY_RESULTS,
    private readonly maxChars = SAVE_EVERY_CHARS,
  ) {}
  async add(outcome: Outcome): Promise<void> {
    this.#results.push(outcome);
    this.#chars += outcome.result.text.length;
    if (this.#results.length >= this.maxResults || this.#chars >= this.maxChars) await this.flush();
  }
  async flush(emailIds?: readonly number[]): Promise<void> {
    const results = this.#results;
    this.#results = [];
    this.#chars = 0;
    if (results.length > 0 || (emailIds && emailIds.length > 0)) await this.store.save(results, emailIds);
  }
}

/** Outcomes per save: the text held before it is stored stays small. */
export const SAVE_EVERY_RESULTS = 25;
export const SAVE_EVERY_CHARS = 4_000_000;

/**
 * After an import batch: reads the new contents of these (new) messages and indexes the
 * messages, including those whose contents had been read before for another message. Each
 * message spends from `budget` (budget.ts): past its characters or time its remaining
 * attachments are recorded as 'over budget'; past the pass's, the rest is left unread.
 * `bytes` gives each message's raw size when its text is also bounded by it (TextBudget).
 */
export async function indexNewMessages(
  store: AttachmentTextStore,
  extractor: Extractor,
  emailIds: readonly number[],
  budget: TextBudget = new TextBudget(),
  bytes?: ReadonlyMap<number, number>,
): Promise<ExtractSummary> {
  const summary = emptySummary();
  if (emailIds.length === 0) return summary;
  const saver = new Saver(store);
  const seen = new Set<number>();
  const perAttachment = { maxChars: extractor.limits.maxChars, timeoutMs: extractor.limits.timeoutMs };
  const held = new Map<number, PendingContent[]>();
  for (const c of await store.pending(Number.MAX_SAFE_INTEGER, { emailIds })) {
    const list = held.get(c.emailId!);
    if (list) list.push(c);
    else held.set(c.emailId!, [c]);
  }
  for (const emailId of emailIds) {
    const pending = (held.get(emailId) ?? []).filter((c) => !seen.has(c.contentId));
    const message = budget.message(bytes?.get(emailId));
    for (const c of pending) {
      if (budget.spent) {
        summary.deferred = (summary.deferred ?? 0) + 1;
        continue;
      }
      seen.add(c.contentId);
      const result = await readOne(store, extractor, c, message.next(perAttachment));
      message.charge(result.text.length);
      count(summary, result);
      await saver.add({ contentId: c.contentId, result });
    }
  }
  await saver.flush(emailIds);
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
    const results: Outcome[] = [];
    for (const c of batch) {
      const result = await readOne(store, extractor, c, {
        maxChars: extractor.limits.maxChars,
        timeoutMs: extractor.limits.timeoutMs,
      });
      count(summary, result);
      results.push({ contentId: c.contentId, result });
    }
    await store.save(results);
    options.onProgress?.({ done: summary.contents, total: Math.max(total, summary.contents) });
  }
  return summary;
}
