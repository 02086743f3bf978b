// A message's summary and detail as both stores map them from rows of the same column names
// (EmailSummaryDto, EmailDetailDto), and SPEC.md's page envelope.
import type { AttachmentDto, EmailDetailDto, EmailSummaryDto, PagedResult } from '../../shared/dto.js';
import { resolveBody } from './body.js';
import { iso } from './time.js';

export interface RawSummary {
  id: number;
  account_id: number;
  subject: string;
  from_addr: string;
  to_addr: string;
  sent_date: number;
  is_outgoing: number;
  has_attachments: number;
  folder: string;
  /** Mail Archiver's read flag, where the store has it (a PostgreSQL archive with "IsRead"). */
  is_read?: boolean;
}

export const toSummary = (r: RawSummary): EmailSummaryDto => ({
  id: r.id,
  accountId: r.account_id,
  subject: r.subject,
  from: r.from_addr,
  to: r.to_addr,
  sentDate: iso(r.sent_date),
  isOutgoing: r.is_outgoing === 1,
  hasAttachments: r.has_attachments === 1,
  folderName: r.folder,
  // Additive (not in SPEC.md), and only where the store has the flag: elsewhere items carry
  // exactly SPEC.md's fields.
  ...(typeof r.is_read === 'boolean' ? { isRead: r.is_read } : {}),
});

/** One page of search results in SPEC.md's envelope; totalPages from the exact count. */
export function pageOf(
  query: { page: number; pageSize: number },
  items: EmailSummaryDto[],
  totalItems: number,
): PagedResult<EmailSummaryDto> {
  return {
    items,
    page: query.page,
    pageSize: query.pageSize,
    totalItems,
    totalPages: Math.ceil(totalItems / query.pageSize),
  };
}

/** A message's detail row, in the column names both stores select (engine/postgres/handlers.ts too). */
export interface RawDetail extends RawSummary {
  cc_addr: string;
  bcc_addr: string;
  received_date: number;
  message_id: string;
  text_body: string | null;
  html_body: string | null;
  text_untruncated: string | null;
  html_untruncated: string | null;
  text_original: Buffer | null;
  html_original: Buffer | null;
}

/** The detail DTO from either store's row: the body fallback chain of SPEC.md, “EmailDetailDto”. */
export function toDetail(row: RawDetail, attachments: AttachmentDto[]): EmailDetailDto {
  return {
    ...toSummary(row),
    cc: row.cc_addr,
    bcc: row.bcc_addr,
    receivedDate: iso(row.received_date),
    messageId: row.message_id,
    textBody: resolveBody(row.text_original, row.text_untruncated, row.text_body),
    htmlBody: resolveBody(row.html_original, row.html_untruncated, row.html_body),
    attachments,
  };
}
