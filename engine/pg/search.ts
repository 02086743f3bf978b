// Search over a PostgreSQL archive: the same filters, sorts and query language as the SQLite
// store (engine/search/plan.ts), with `q` compiled to a tsquery over the service's own
// side-index (search-index.ts). Filters stay on ArchivedEmails' columns, which Mail Archiver
// keeps current (a folder move changes FolderName only). Differences: docs/search.md.
import type { EmailSummaryDto, PagedResult } from '../../shared/dto.js';
import type { SearchQuery, SortKey } from '../../shared/jobs.js';
import { compileSearch } from '../search/compile.js';
import { toSummary, type RawSummary } from '../store/summary.js';
import { summaryColumns, T, visibleAccounts, zonedTimestamp } from './columns.js';
import { compileTsQuery, DOCS, ensureSearchIndex } from './search-index.js';
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
  const filters = filterConditions(ctx, viewer, query);
  let from: Sql = sql`${T.emails} e`;
  let rank: Sql | null = null;
  const hasText = query.q !== undefined && query.q.trim() !== '';
  if (hasText) {
    const tsq = compileTsQuery(query.q!);
    if (tsq === null) return page([], 0);
    await ensureSearchIndex(ctx);
    from = sql`${T.emails} e JOIN ${DOCS} d ON d.email_id = e."Id"`;
    filters.push(sql`d.doc @@ ${tsq}::tsquery`);
    // As on SQLite, a query with no positive part (`-spam`) has nothing to rank: date order.
    const compiled = compileSearch(query.q);
    if (compiled.kind === 'query' && compiled.match !== null) rank = sql`ts_rank(d.doc, ${tsq}::tsquery)`;
  }
  const where = join(filters, ' AND ', 'true');
  const [count] = await ctx.read<{ n: number }>(sql`SELECT count(*) AS n FROM ${from} WHERE ${where}`);
  const total = count!.n;
  const offset = (query.page - 1) * query.pageSize;
  if (offset >= total) return page([], total);
  const desc = query.sortOrder === 'desc';
  const dir = raw(desc ? 'DESC' : 'ASC');
  let order: Sql;
  if (query.sortBy === 'relevance' && rank !== null) {
    // Most relevant first for desc; ties newest first in either order (as on SQLite).
    order = sql`${rank} ${dir}, e."SentDate" DESC, e."Id" DESC`;
  } else {
    const sortBy = query.sortBy === 'relevance' ? 'sentDate' : query.sortBy;
    order = sql`${raw(SORT_COLUMNS[sortBy])} ${dir}, e."Id" ${dir}`;
  }
  const rows = await ctx.read<RawSummary>(
    sql`SELECT ${summaryColumns(ctx.zone)} FROM ${from} WHERE ${where}
         ORDER BY ${order} LIMIT ${query.pageSize} OFFSET ${offset}`,
  );
  return page(rows.map(toSummary), total);
}
