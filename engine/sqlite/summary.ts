// The columns and mapping of EmailSummaryDto, shared by search and detail reads.
import type { EmailSummaryDto, PagedResult } from '../../shared/dto.js';
import { iso } from '../rules/time.js';

export const SUMMARY_COLUMNS = `e.id, e.account_id, e.subject, e.from_addr, e.to_addr, e.sent_date,
  e.is_outgoing, e.has_attachments, e.folder`;

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
