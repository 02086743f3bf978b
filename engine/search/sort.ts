// How each sort key of SPEC.md's sortBy orders messages in SQL; the in-memory index keeps the
// same orders (engine/sqlite/index-build.ts), so both produce the same pages.
import type { SortKey } from '../../shared/jobs.js';

export const SORT_COLUMNS: Record<Exclude<SortKey, 'relevance'>, string> = {
  sentDate: 'e.sent_date',
  receivedDate: 'e.received_date',
  subject: 'e.subject COLLATE NOCASE',
  from: 'e.from_addr COLLATE NOCASE',
  to: 'e.to_addr COLLATE NOCASE',
};
