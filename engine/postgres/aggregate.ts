// Aggregates over a PostgreSQL archive: the search's matches (search.ts: the same filters and
// side-index match) grouped in SQL by the rules of engine/rules/aggregate.ts, written as the same
// regular expressions. Dates: SentDate is wall-clock time in Mail Archiver's display zone
// (docs/compat.md, "Timestamps"), so it is turned into UTC before its year, month or ISO week is
// taken. The top groups are chosen in SQL, ties ordered by key under "C" (code point order); for
// a date grouping the latest periods, in time order (engine/rules/aggregate.ts, topGroups).
import type { AggregateResultDto } from '../../shared/dto.js';
import type { AggregateQuery, GroupBy, Viewer } from '../../shared/jobs.js';
import { ANGLE_ADDRESS, BARE_ADDRESS, isDateGrouping, UPPER_ASCII } from '../rules/aggregate.js';
import { T } from './columns.js';
import { filterConditions } from './search.js';
import { compileMatch, DOCS, ensureSearchIndex } from './search-index.js';
import { parseQuery } from '../../shared/query-language.js';
import { join, raw, sql, type Sql } from './sql.js';
import type { PgContext } from './context.js';
import { ensureThreads, threadCondition } from './threads.js';

/** ASCII letters lower-cased, whatever the database's locale (asciiLower). */
const lowerAscii = (expression: Sql): Sql =>
  sql`translate(${expression}, ${UPPER_ASCII}::text, ${UPPER_ASCII.toLowerCase()}::text)`;
const fromAddress = sql`${lowerAscii(
  sql`coalesce(substring(e."From" from ${ANGLE_ADDRESS}::text), substring(e."From" from ${BARE_ADDRESS}::text))`,
)}`;

function keyOf(groupBy: Exclude<GroupBy, 'to'>, zone: string): Sql {
  const utc = sql`((e."SentDate" AT TIME ZONE ${zone}::text) AT TIME ZONE 'UTC')`;
  switch (groupBy) {
    case 'from':
      return fromAddress;
    case 'fromDomain':
      return sql`substring(${fromAddress} from '@([^@]*)$')`;
    case 'folder':
      return raw('e."FolderName"');
    case 'account':
      return raw('e."MailAccountId"::text');
    case 'hasAttachments':
      return raw(`CASE WHEN e."HasAttachments" THEN 'true' ELSE 'false' END`);
    case 'year':
      return sql`to_char(${utc}, 'YYYY')`;
    case 'month':
      return sql`to_char(${utc}, 'YYYY-MM')`;
    case 'week':
      return sql`to_char(${utc}, 'IYYY-"W"IW')`;
  }
}

export async function aggregateEmails(
  ctx: PgContext,
  viewer: Viewer,
  aggregate: AggregateQuery,
): Promise<AggregateResultDto> {
  const { query, groupBy, limit } = aggregate;
  const empty = { groupBy, total: 0, distinctGroups: 0, groups: [] };
  const conditions = filterConditions(ctx, viewer, query);
  let source = sql`FROM ${T.emails} e`;
  if (query.q !== undefined && query.q.trim() !== '') {
    if (parseQuery(query.q) === null) return empty; // nothing searchable: nothing matches
    const { pairs } = await ensureSearchIndex(ctx);
    const match = compileMatch(query.q, threadCondition, pairs)!;
    if (match.hasThread) await ensureThreads(ctx);
    source = sql`FROM ${T.emails} e JOIN ${DOCS} d ON d.email_id = e."Id"`;
    conditions.push(match.sql);
  }
  const where = join(conditions, ' AND ', 'true');
  const keyed =
    groupBy === 'to'
      ? sql`SELECT a.key ${source}
              CROSS JOIN LATERAL (SELECT DISTINCT ${lowerAscii(raw('m[1]'))} AS key
                                    FROM regexp_matches(e."To", ${BARE_ADDRESS}::text, 'g') AS m) a
             WHERE ${where}`
      : sql`SELECT ${keyOf(groupBy, ctx.zone)} AS key ${source} WHERE ${where}`;
  const [count] = await ctx.read<{ n: number }>(sql`SELECT count(*)::int AS n ${source} WHERE ${where}`);
  const order = isDateGrouping(groupBy) ? sql`key COLLATE "C" DESC` : sql`count DESC, key COLLATE "C"`;
  const rows = await ctx.read<{ key: string; count: number; groups: number }>(
    sql`SELECT key, count, count(*) OVER ()::int AS groups
          FROM (SELECT key, count(*)::int AS count FROM (${keyed}) k WHERE key IS NOT NULL GROUP BY key) g
         ORDER BY ${order} LIMIT ${limit}::int`,
  );
  // The latest periods were chosen newest first; they are answered oldest first.
  if (isDateGrouping(groupBy)) rows.reverse();
  return {
    groupBy,
    total: count!.n,
    distinctGroups: rows[0]?.groups ?? 0,
    groups: rows.map((r) => ({ key: r.key, count: r.count })),
  };
}
