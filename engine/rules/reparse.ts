// Reparse (docs/reparse.md): what a store keeps of a message that the parser derived from its
// original, in one shape both sides of the comparison share, and which of those fields differ
// between what is stored and what a fresh parse of the kept original gives. Pure: the store reads
// the stored form, engine/import/reparse.ts computes the fresh one, and the store writes the
// fields named here.
import type { NewEmail } from './new-email.js';

/** A body as stored: the searchable text, and the longer or exact forms kept beside it (engine/rules/body.ts). */
export interface StoredBody {
  stored: string | null;
  untruncated: string | null;
  original: Uint8Array | null;
}

export interface StoredAttachment {
  fileName: string;
  contentType: string;
  size: number;
  isInline: boolean;
  /** SHA-256 of the content, lowercase hex: the content's identity in the store. */
  sha256: string;
  /**
   * The part's Content-ID (NewAttachment.contentId), null when it has none or the store kept none
   * (SQLite before migration 10): a fresh parse that finds one rewrites the attachment rows.
   */
  contentId: string | null;
}

/**
 * Every stored field of a message that comes from parsing it (its identity and place excluded):
 * NewEmail's header fields as stored (sentDate to the second), and what the store derives.
 */
export interface StoredForm extends Pick<
  NewEmail,
  'messageId' | 'subject' | 'from' | 'to' | 'cc' | 'bcc' | 'sentDate' | 'receivedDate' | 'isOutgoing'
> {
  hasAttachments: boolean;
  /** The normalised subject conversations group by, and whether it had a reply prefix (engine/rules/threads.ts). */
  threadSubject: string;
  threadReply: boolean;
  text: StoredBody;
  html: StoredBody;
  /** The full-text index's filter tags (engine/search/tags.ts). */
  ftsTags: string;
  /** In stored order. */
  attachments: StoredAttachment[];
  /** Normalised ids from References and In-Reply-To, sorted. */
  refs: string[];
}

/** A fresh form carries its attachments' bytes, for the store to write. */
export interface FreshForm extends StoredForm {
  attachments: Array<StoredAttachment & { content: Buffer }>;
}

/** The fields the summary counts, each a group of stored columns. */
export const REPARSE_FIELDS = [
  'messageId',
  'subject',
  'from',
  'to',
  'cc',
  'bcc',
  'sentDate',
  'receivedDate',
  'direction',
  'textBody',
  'htmlBody',
  'attachments',
  'threads',
  'tags',
] as const;
export type ReparseField = (typeof REPARSE_FIELDS)[number];

const sameBytes = (a: Uint8Array | null, b: Uint8Array | null) =>
  a === null || b === null ? a === b : Buffer.from(a).equals(Buffer.from(b));

const sameBody = (a: StoredBody, b: StoredBody) =>
  a.stored === b.stored && a.untruncated === b.untruncated && sameBytes(a.original, b.original);

const sameAttachments = (a: readonly StoredAttachment[], b: readonly StoredAttachment[]) =>
  a.length === b.length &&
  a.every(
    (x, i) =>
      x.fileName === b[i]!.fileName &&
      x.contentType === b[i]!.contentType &&
      x.size === b[i]!.size &&
      x.isInline === b[i]!.isInline &&
      x.sha256 === b[i]!.sha256 &&
      x.contentId === b[i]!.contentId,
  );

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * The fields in which `fresh` differs from `stored`, in REPARSE_FIELDS order; empty when the
 * message is stored as the parser reads it today. Derived columns count under their source:
 * hasAttachments under attachments, the conversation subject under subject (or threads when only
 * its normalisation changed), the filter tags under tags.
 */
export function changedFields(stored: StoredForm, fresh: StoredForm): ReparseField[] {
  const changed = new Set<ReparseField>();
  if (stored.messageId !== fresh.messageId) changed.add('messageId');
  if (stored.subject !== fresh.subject) changed.add('subject');
  for (const f of ['from', 'to', 'cc', 'bcc'] as const) if (stored[f] !== fresh[f]) changed.add(f);
  if (stored.sentDate !== fresh.sentDate) changed.add('sentDate');
  if (stored.receivedDate !== fresh.receivedDate) changed.add('receivedDate');
  if (stored.isOutgoing !== fresh.isOutgoing) changed.add('direction');
  if (!sameBody(stored.text, fresh.text)) changed.add('textBody');
  if (!sameBody(stored.html, fresh.html)) changed.add('htmlBody');
  if (stored.hasAttachments !== fresh.hasAttachments || !sameAttachments(stored.attachments, fresh.attachments))
    changed.add('attachments');
  if (!sameList(stored.refs, fresh.refs)) changed.add('threads');
  if (stored.threadSubject !== fresh.threadSubject || stored.threadReply !== fresh.threadReply)
    changed.add(changed.has('subject') ? 'subject' : 'threads');
  if (stored.ftsTags !== fresh.ftsTags) changed.add('tags');
  return REPARSE_FIELDS.filter((f) => changed.has(f));
}

/**
 * Whether the message's conversation must be looked at again: what links it (its Message-ID,
 * References, In-Reply-To) or what the subject fallback matches on changed.
 */
export const needsRelink = (fields: readonly ReparseField[]) =>
  fields.some((f) => f === 'messageId' || f === 'threads' || f === 'subject' || f === 'sentDate');

/** What a reparse pass found, message by message; kept with its progress so a resumed pass adds on. */
export interface ReparseCounts {
  /** Messages looked at. */
  examined: number;
  /** With an original whose fresh parse differs from what is stored (rewritten, or would be on a dry run). */
  changed: number;
  /** With an original whose fresh parse is what is stored. */
  unchanged: number;
  /** Archived before originals were kept: left as they are. */
  withoutOriginal: number;
  /** The original no longer parses (the parser refuses it): left as they are. */
  failed: number;
  /** The original failed its integrity check (engine/rules/originals.ts): left as they are. */
  damaged: number;
  /** Per field, the messages in which it changed. */
  fields: Record<ReparseField, number>;
}

export const emptyCounts = (): ReparseCounts => ({
  examined: 0,
  changed: 0,
  unchanged: 0,
  withoutOriginal: 0,
  failed: 0,
  damaged: 0,
  fields: Object.fromEntries(REPARSE_FIELDS.map((f) => [f, 0])) as Record<ReparseField, number>,
});
