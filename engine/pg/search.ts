// Search over a PostgreSQL archive. (First cut: filters and sort keys; the query language `q` is
// compiled by the full implementation.)
import type { EmailSummaryDto, PagedResult } from '../../shared/dto.js';
import type { SearchQuery, SortKey } from '../../shared/jobs.js';
import { toSummary, type RawSummary } from '../store/summary.js';
import { summaryColumns, T, visibleAccounts, zonedTimestamp } from './columns.js';
import { join, raw, sql, type Sql } from './sql.js';
import type { PgContext } from './store.js';

type Viewer = { isAdmin: boolean; userId: number };

/** SQLite's NOCASE folds ASCII only and compares code points: lower() under "C" does the same. */
const SORT_COLUMNS: Record<Exclude<SortKey, 'relevance'>, string> = {
  sentDate: 'e."SentDate"',
  receivedDate: 'e."ReceivedDate"',
  subject: 'lower(e."Subject" COLLATE "C")',
  from: 'lower(e."From" COLLATE "C")',
  to: 'lower(e."To" COLLATE "C")',
};

export function filterConditions(ctx: PgContext, viewer: Viewer, query: SearchQuery): Sql[] {
  const filters: Sql[] = [];
  if (query.accountId !== undefined) filters.push(sql`e."MailAccountId" = ${query.accountId}`);
  if (query.folder !== undefined) filters.push(sql`e."FolderName" = ${query.folder}`);
  if (query.direction !== undefined) filters.push(sql`e."IsOutgoing" = ${query.direction === 'outgoing'}`);
  if (query.from !== undefined) filters.push(sql`e."SentDate" >= ${zonedTimestamp(query.from, ctx.zone)}`);
  if (query.to !== undefined) filters.push(sql`e."SentDate" <= ${zonedTimestamp(query.to, ctx.zone)}`);
  if (!viewer.isAdmin) filters.push(visibleAccounts(viewer, 'e."MailAccountId"'));
  return filters;
}

export async function searchEmails(
  ctx: PgContext,
  viewer: Viewer,
  query: SearchQuery,
): Promise<PagedResult<EmailSummaryDto>> {
  const page = (items: EmailSummaryDto[], totalItems: number): PagedResult<EmailSummaryDto> => ({
    items,
    page: query.page,
    pageSize: query.pageSize,
    totalItems,
    totalPages: Math.ceil(totalItems / query.pageSize),
  });
  if (query.q !== undefined && query.q.trim() !== '') throw new Error('q is not supported on PostgreSQL yet');
  const where = join(filterConditions(ctx, viewer, query), ' AND ', 'true');
  const [count] = await ctx.read<{ n: number }>(sql`SELECT count(*) AS n FROM ${T.emails} e WHERE ${where}`);
  const total = count!.n;
  const offset = (query.page - 1) * query.pageSize;
  if (offset >= total) return page([], total);
  const dir = raw(query.sortOrder === 'desc' ? 'DESC' : 'ASC');
  const sortBy = query.sortBy === 'relevance' ? 'sentDate' : query.sortBy;
  const rows = await ctx.read<RawSummary>(
    sql`SELECT ${summaryColumns(ctx.zone)} FROM ${T.emails} e WHERE ${where}
         ORDER BY ${raw(SORT_COLUMNS[sortBy])} ${dir}, e."Id" ${dir} LIMIT ${query.pageSize} OFFSET ${offset}`,
  );
  return page(rows.map(toSummary), total);
}
