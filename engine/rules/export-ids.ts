// Every id a search matches, for an export (docs/evidence.md, "Exports"): the search itself, by
// sent date oldest first (ties by id), read in pages so that no one answer holds every summary.
import type { SearchQuery } from '../../shared/jobs.js';

/** Summaries per page while collecting an export's ids. */
export const EXPORT_ID_PAGE_SIZE = 5000;

/** Page `page` of the search, in export order, without what only a reader of a page needs. */
export function exportPageQuery(query: SearchQuery, page: number): SearchQuery {
  return {
    ...query,
    page,
    pageSize: EXPORT_ID_PAGE_SIZE,
    sortBy: 'sentDate',
    sortOrder: 'asc',
    snippets: false,
    includeThreadId: false,
  };
}
