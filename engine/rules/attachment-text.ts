// Attachment text as both stores keep it (docs/import.md, "Attachment text"; ADR 16): what became
// of one attachment, the store interface that reading attachment text (engine/attachments/) writes
// through, and one page of a stored text. Each store implements AttachmentTextStore
// (engine/sqlite/attachment-text.ts, engine/postgres/attachment-text.ts).
import type { AttachmentTextPage } from '../../shared/jobs.js';

/** What became of one attachment: 'ok', or why there is no text (stored as said here). */
export type ExtractStatus =
  | 'ok'
  | 'encrypted'
  | 'too large'
  | 'timeout'
  | 'unsupported'
  | 'over budget' // not read: its message had spent its text budget (engine/attachments/budget.ts)
  | `failed: ${string}`;

export interface ExtractResult {
  status: ExtractStatus;
  /** The text ('' unless status is 'ok'). */
  text: string;
  /** True when a bound cut it: pages (PDF) or characters. */
  truncated: boolean;
}

/** A stored content no outcome has been recorded for, named by its first attachment. */
export interface PendingContent {
  contentId: number;
  /** Where a scan continues after this one (pending's `after`): a content or attachment id. */
  cursor: number;
  size: number;
  contentType: string;
  fileName: string;
  /** Asked for `emailIds`: which of those messages holds it (a content two of them hold is listed for each). */
  emailId?: number;
}

export interface AttachmentTextStore {
  /**
   * Up to `limit` contents without an outcome, in cursor order after `after` (a scan resumes
   * there instead of probing every content already done again). With `emailIds` only theirs,
   * once for each of those messages that holds it (`emailId`): one statement for a whole batch
   * of new messages, not one for each.
   */
  pending(limit: number, options?: { emailIds?: readonly number[]; after?: number }): Promise<PendingContent[]>;
  countPending(): Promise<number>;
  content(c: PendingContent): Promise<Buffer>;
  /**
   * Stores outcomes and re-indexes the messages holding them, and `emailIds` too (a store may
   * leave out those of them holding no text, whose entries the text cannot change).
   */
  save(
    results: ReadonlyArray<{ contentId: number; result: ExtractResult }>,
    emailIds?: readonly number[],
  ): Promise<void>;
}

/**
 * What each store reads for the attachmentText job: the attachment, and its attachment_texts row
 * (null columns when it has none). `B` is how the store returns the truncated flag.
 */
export type AttachmentTextRow<B> = AttachmentTextPage['attachment'] & {
  status: string | null;
  text: string | null;
  truncated: B | null;
};

/** One page of a stored text, without splitting a surrogate pair at either end. */
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
