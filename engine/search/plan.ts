// The search planner: builds and runs the SQL for one page of results and its exact count.
//
// With a text query and the default sort (sent date), the full-text index drives: its rowids are
// sent_date * 4096 + slot (engine/db/migrations.ts), so `ORDER BY f.rowid DESC LIMIT 20` reads
// the newest 20 matches and stops, however many messages match. Other sorts join and sort.
// Exact counts are cached per worker, keyed by the archive's generation (bumped by every import
// and permission change), so a cached count is never stale.
import type { EmailSummaryDto, PagedResult } from '../../shared/dto.js';
import type { Principal, SearchQuery, SortKey } from '../../shared/jobs.js';
import type { Db } from '../db/open.js';
import { visibleAccountsClause } from '../store/accounts.js';
import { SUMMARY_COLUMNS, toSummary, type RawSummary } from '../store/summary.js';
import { FTS_SLOTS } from '../store/writer.js';
import { compileSearch, type SqlCondition } from './compile.js';

type Viewer = Pick<Principal, 'isAdmin' | 'userId'>;

const SORT_COLUMNS: Record<Exclude<SortKey, 'relevance'>, string> = {
  sentDate: 'e.sent_date',
  receivedDate: 'e.received_date',
  subject: 'e.subject COLLATE NOCASE',
  from: 'e.from_addr COLLATE NOCASE',
  to: 'e.to_addr COLLATE NOCASE',
};

/** A slot overflow moves a full-text rowid past its millisecond; a minute of slack covers any. */
const ROWID_SLACK_MS = 60_000;

/** Exact counts by (generation, viewer, filters). Per worker thread; bounded. */
const countCache = new Map<string, number>();
const COUNT_CACHE_SIZE = 2000;

function cachedCount(db: Db, key: string, count: () => number): number {
  const generation = db.prepare('SELECT generation FROM archive_state WHERE id = 1').pluck().get() as number;
  const full = `${generation}\u0000${key}`;
  const hit = countCache.get(full);
  if (hit !== undefined) {
    countCache.delete(full); // refresh its place in the LRU order
    countCache.set(full, hit);
    return hit;
  }
  const value = count();
  countCache.set(full, value);
  if (countCache.size > COUNT_CACHE_SIZE) countCache.delete(countCache.keys().next().value!);
  return value;
}

export function searchEmails(db: Db, viewer: Viewer, query: SearchQuery): PagedResult<EmailSummaryDto> {
  const page = (items: EmailSummaryDto[], totalItems: number): PagedResult<EmailSummaryDto> => ({
    items,
    page: query.page,
    pageSize: query.pageSize,
    totalItems,
    totalPages: Math.ceil(totalItems / query.pageSize),
  });
  const compiled = compileSearch(query.q);
  if (compiled.kind === 'none') return page([], 0);
  const match = compiled.kind === 'query' ? compiled.match : null;

  // Conditions on the message row, in the order most likely to use an index.
  const visible = visibleAccountsClause(viewer, 'e.account_id');
  const filters: SqlCondition[] = [];
  if (query.accountId !== undefined) filters.push({ sql: 'e.account_id = ?', params: [query.accountId] });
  if (query.folder !== undefined) filters.push({ sql: 'e.folder = ?', params: [query.folder] });
  if (query.direction !== undefined) filters.push({ sql: 'e.is_outgoing = ?', params: [query.direction === 'outgoing' ? 1 : 0] });
  if (query.from !== undefined) filters.push({ sql: 'e.sent_date >= ?', params: [query.from] });
  if (query.to !== undefined) filters.push({ sql: 'e.sent_date <= ?', params: [query.to] });
  if (visible.params.length) filters.push(visible);
  if (compiled.kind === 'query') filters.push(...compiled.conditions);

  const offset = (query.page - 1) * query.pageSize;
  const desc = query.sortOrder === 'desc';
  const dir = desc ? 'DESC' : 'ASC';
  const where = (conds: SqlCondition[]) => (conds.length ? conds.map((c) => `(${c.sql})`).join(' AND ') : '1');
  const params = (conds: SqlCondition[]) => conds.flatMap((c) => c.params);
  const cacheKey = JSON.stringify([viewer.isAdmin ? 'admin' : viewer.userId, match, filters]);

  if (match === null) {
    const sortBy = query.sortBy === 'relevance' ? 'sentDate' : query.sortBy; // nothing to rank by
    const total = cachedCount(db, cacheKey, () =>
      db.prepare(`SELECT count(*) FROM emails e WHERE ${where(filters)}`).pluck().get(...params(filters)) as number,
    );
    if (offset >= total) return page([], total);
    const rows = db
      .prepare(
        `SELECT ${SUMMARY_COLUMNS} FROM emails e WHERE ${where(filters)}
         ORDER BY ${SORT_COLUMNS[sortBy]} ${dir}, e.id ${dir} LIMIT ? OFFSET ?`,
      )
      .all(...params(filters), query.pageSize, offset) as RawSummary[];
    return page(rows.map(toSummary), total);
  }

  // The index narrows the date range itself; the exact bounds stay as row filters.
  const ftsConds: SqlCondition[] = [{ sql: 'f.email_fts MATCH ?', params: [match] }];
  if (query.from !== undefined) ftsConds.push({ sql: 'f.rowid >= ?', params: [query.from * FTS_SLOTS] });
  if (query.to !== undefined) ftsConds.push({ sql: 'f.rowid < ?', params: [(query.to + ROWID_SLACK_MS) * FTS_SLOTS] });
  const all = [...ftsConds, ...filters];
  const joinedFrom = 'FROM email_fts f JOIN emails e ON e.fts_key = f.rowid';

  const total = cachedCount(db, cacheKey, () =>
    filters.length === 0
      ? (db.prepare(`SELECT count(*) FROM email_fts f WHERE ${where(ftsConds)}`).pluck().get(...params(ftsConds)) as number)
      : (db.prepare(`SELECT count(*) ${joinedFrom} WHERE ${where(all)}`).pluck().get(...params(all)) as number),
  );
  if (offset >= total) return page([], total);

  let order: string;
  if (query.sortBy === 'sentDate') order = `f.rowid ${dir}`;
  else if (query.sortBy === 'relevance') order = `f.rank ${desc ? 'ASC' : 'DESC'}, f.rowid DESC`; // bm25: lower is better
  else order = `${SORT_COLUMNS[query.sortBy]} ${dir}, e.id ${dir}`;
  const rows = db
    .prepare(`SELECT ${SUMMARY_COLUMNS} ${joinedFrom} WHERE ${where(all)} ORDER BY ${order} LIMIT ? OFFSET ?`)
    .all(...params(all), query.pageSize, offset) as RawSummary[];
  return page(rows.map(toSummary), total);
}
