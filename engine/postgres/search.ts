// Search over a PostgreSQL archive: the same filters, sorts and query language as the SQLite
// store (engine/sqlite/search.ts), with `q` compiled to a tsquery over the service's own
// side-index (search-index.ts). Filters stay on ArchivedEmails' columns, which Mail Archiver
// keeps current (a folder move changes FolderName only). Differences: docs/search.md.
import type { SearchQuery, Viewer } from '../../shared/jobs.js';
import type { EmailSummaryDto, PagedResult } from '../../shared/dto.js';
import { hasReadTerm, parseQuery } from '../../shared/query-language.js';
import { readTermsUnsupported } from '../../shared/search-input.js';
import { compileSearch } from '../search/compile.js';
import { allSnippetTermsOf, lacksMarks, withAttachmentSnippets, withSnippets } from '../search/snippet.js';
import { attachmentTextsOf } from './attachment-text.js';
import { pageOf, toSummary, type RawSummary } from '../rules/summary.js';
import { SORT_COLUMNS, summaryColumns, T, visibleAccounts, zonedTimestamp } from './columns.js';
import { compileMatch, compileTsQuery, DOCS, ensureSearchIndex } from './search-index.js';
import { ensureThreads, threadCondition, threadIdsOf } from './threads.js';
import { join, planned, raw, sql, type Sql } from './sql.js';
import { indexedSearch } from './search-snapshot.js';
import type { PgContext } from './context.js';

/** The date walk reads at most this share of the matches' number of messages (searchEmails). */
const WALK_CAP_SHARE = 0.5;
/** And is tried only when an even spread of the matches would read this many times fewer. */
const WALK_MARGIN = 4;

export function filterConditions(ctx: PgContext, viewer: Viewer, query: SearchQuery): Sql[] {
  const filters: Sql[] = [];
  if (query.accountId !== undefined) filters.push(sql`e."MailAccountId" = ${query.accountId}`);
  if (query.folder !== undefined) filters.push(sql`e."FolderName" = ${query.folder}`);
  if (query.direction !== undefined) filters.push(sql`e."IsOutgoing" = ${query.direction === 'outgoing'}`);
  if (query.from !== undefined) filters.push(sql`e."SentDate" >= ${zonedTimestamp(query.from, ctx.zone)}`);
  if (query.to !== undefined) filters.push(sql`e."SentDate" <= ${zonedTimestamp(query.to, ctx.zone)}`);
  if (!viewer.isAdmin || viewer.oauth?.accountIds) filters.push(visibleAccounts(viewer, 'e."MailAccountId"'));
  return filters;
}

export async function searchEmails(
  ctx: PgContext,
  viewer: Viewer,
  query: SearchQuery,
): Promise<PagedResult<EmailSummaryDto>> {
  const page = (items: EmailSummaryDto[], totalItems: number) => pageOf(query, items, totalItems);
  const filters = filterConditions(ctx, viewer, query);
  const offset = (query.page - 1) * query.pageSize;
  const desc = query.sortOrder === 'desc';
  const dir = raw(desc ? 'DESC' : 'ASC');
  const sortBy = query.sortBy === 'relevance' ? 'sentDate' : query.sortBy;
  const byKey = sql`${raw(SORT_COLUMNS[sortBy])} ${dir}, e."Id" ${dir}`;

  if (query.q === undefined || query.q.trim() === '') {
    const indexed = await indexedSearch(ctx, viewer, query);
    if (indexed) return indexed;
    const where = join(filters, ' AND ', 'true');
    const [count] = await ctx.read<{ n: number }>(sql`SELECT count(*) AS n FROM ${T.emails} e WHERE ${where}`);
    const total = count!.n;
    if (offset >= total) return page([], total);
    const rows = await ctx.read<RawSummary>(
      sql`SELECT ${summaryColumns(ctx)} FROM ${T.emails} e WHERE ${where}
           ORDER BY ${byKey} LIMIT ${query.pageSize} OFFSET ${offset}`,
    );
    return page(rows.map(toSummary), total);
  }

  // is:read / is:unread need Mail Archiver's IsRead column (open upstream PR 501).
  if (!ctx.isRead && hasReadTerm(parseQuery(query.q))) throw readTermsUnsupported();
  if (parseQuery(query.q) === null) return page([], 0); // nothing searchable: nothing matches
  // The in-memory index, when it has a snapshot to answer from (search-snapshot.ts, ADR 22).
  const indexed = await indexedSearch(ctx, viewer, query);
  if (indexed) return indexed;
  const { pairs } = await ensureSearchIndex(ctx);
  const compiledMatch = compileMatch(query.q, threadCondition, pairs)!;
  if (compiledMatch.hasThread) await ensureThreads(ctx);
  const where = join(filters, ' AND ', 'true');
  const matches = compiledMatch.sql;
  // Counting a common word, the planner picks a sequential scan of the side index, which reads
  // and unpacks every document (1.5 s at 1M messages); the GIN bitmap it rejects takes 0.7 s.
  const [count] = await ctx.read<{ n: number }>(
    planned(
      sql`SELECT count(*) AS n FROM ${T.emails} e JOIN ${DOCS} d ON d.email_id = e."Id" WHERE ${where} AND ${matches}`,
      { enable_seqscan: 'off' },
    ),
  );
  const total = count!.n;
  if (offset >= total) return page([], total);
  // As on SQLite, a query with no positive part (`-spam`) has nothing to rank: date order. A
  // query with thread: or is: terms has no single tsquery to rank by: it is sorted by date too.
  const positive = () => {
    const compiled = compileSearch(query.q);
    return compiled.kind === 'query' && compiled.match !== null;
  };
  const ranked = query.sortBy === 'relevance' && !compiledMatch.bySql && positive();
  const tsq = ranked ? compileTsQuery(query.q) : null;

  // Sorted by date, two plans, chosen with the exact count as on SQLite (engine/sqlite/search.ts).
  // Many matches: walk IX_ArchivedEmails_SentDate newest first and probe the side-index per
  // message. Few: list the matches from the GIN index first and sort only them. The planner's
  // own guess misjudges a rare word sorted by date (it walks the whole date index: 290 ms instead
  // of 8 on 100,000 messages). A probe reads the message's document (TOAST, decompressed), about
  // what listing a match and reading its row costs, so the walk pays when it is expected to read
  // far fewer messages than there are matches: (offset + pageSize) * archive / total if matches
  // were spread evenly in time. They are not always: `subject:client` on the bench corpus (1,754
  // matches) walked 47,560 messages for a page, 1.6 s against 66 ms for the list. So the walk
  // reads at most WALK_CAP_SHARE of the matches' number of messages and, if that ends before the
  // page is full, the list answers: at worst one and a half times the list's cost.
  // Other keys have no index on Mail Archiver's table to walk: the planner sorts the matches.
  if (!ranked && sortBy === 'sentDate') {
    // The table's size as the planner knows it; before its first ANALYZE, the highest id.
    const [size] = await ctx.read<{ n: number }>(
      sql`SELECT coalesce((SELECT nullif(greatest(reltuples, -1), -1) FROM pg_class
                            WHERE oid = 'mail_archiver."ArchivedEmails"'::regclass),
                          (SELECT max("Id") FROM ${T.emails}), ${total})::float8 AS n`,
    );
    const walkRows = ((offset + query.pageSize) * (size?.n ?? total)) / total;
    const cap = Math.ceil(total * WALK_CAP_SHARE);
    if (walkRows * WALK_MARGIN < cap) {
      const rows = await ctx.read<RawSummary>(
        sql`SELECT ${summaryColumns(ctx)}
              FROM (SELECT * FROM ${T.emails} e WHERE ${where} ORDER BY ${byKey} LIMIT ${cap}) e
             WHERE EXISTS (SELECT 1 FROM ${DOCS} d WHERE d.email_id = e."Id" AND ${matches})
             ORDER BY ${byKey} LIMIT ${query.pageSize} OFFSET ${offset}`,
      );
      // A full page, or the last one: the walk saw every match up to it.
      if (rows.length === query.pageSize || offset + rows.length === total) return page(rows.map(toSummary), total);
    }
    const rows = await ctx.read<RawSummary>(
      sql`WITH m AS MATERIALIZED (SELECT d.email_id FROM ${DOCS} d WHERE ${matches})
          SELECT ${summaryColumns(ctx)} FROM m JOIN ${T.emails} e ON e."Id" = m.email_id
           WHERE ${where} ORDER BY ${byKey} LIMIT ${query.pageSize} OFFSET ${offset}`,
    );
    return page(rows.map(toSummary), total);
  }
  // Most relevant first for desc; ties newest first in either order (as on SQLite).
  const order = ranked ? sql`ts_rank(d.doc, ${tsq}::tsquery) ${dir}, e."SentDate" DESC, e."Id" DESC` : byKey;
  const rows = await ctx.read<RawSummary>(
    sql`SELECT ${summaryColumns(ctx)} FROM ${T.emails} e JOIN ${DOCS} d ON d.email_id = e."Id"
         WHERE ${where} AND ${matches} ORDER BY ${order} LIMIT ${query.pageSize} OFFSET ${offset}`,
  );
  return page(rows.map(toSummary), total);
}

/**
 * A search job's answer: the page, with what the query asked for beyond SPEC.md added to its
 * items: snippets from Mail Archiver's text body (what `q` searched), include=threadId.
 */
export async function searchPage(
  ctx: PgContext,
  viewer: Viewer,
  query: SearchQuery,
): Promise<PagedResult<EmailSummaryDto>> {
  const result = await searchEmails(ctx, viewer, query);
  if (result.items.length === 0) return result;
  let items = result.items;
  const ids = items.map((i) => i.id);
  const terms = query.snippets ? allSnippetTermsOf(query.q) : null;
  if (terms?.body) {
    const rows = await ctx.read<{ id: number; body: string | null }>(
      sql`SELECT e."Id" AS id, e."Body" AS body FROM ${T.emails} e WHERE e."Id" = ANY(${ids}::int[])`,
    );
    items = withSnippets(items, terms.body, new Map(rows.map((r) => [r.id, r.body])));
  }
  // Words found inside attachments (attachment: terms): the snippet is from there, naming the file.
  const unmarked = terms?.attachments ? items.filter(lacksMarks).map((i) => i.id) : [];
  if (terms?.attachments && unmarked.length > 0)
    items = withAttachmentSnippets(items, terms.attachments, await attachmentTextsOf(ctx, unmarked));
  if (query.includeThreadId) {
    const threads = await threadIdsOf(ctx, ids);
    items = items.map((i) => ({ ...i, threadId: threads.get(i.id) ?? i.id }));
  }
  return items === result.items ? result : { ...result, items };
}
