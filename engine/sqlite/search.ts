// The search planner: one page of results and its exact count.
//
// First choice: the shared in-memory index (bitsets/, ADR 13), when it describes the archive as
// it is: the count is set operations, the page a walk in the requested order (for relevance, the
// newest RELEVANCE_WINDOW matches ranked by relevance.ts, then the older ones). Otherwise, SQL:
// with a text query the full-text index drives. Its rowids are in sent-date order
// (fts-key.ts), so `ORDER BY f.rowid DESC LIMIT 20` reads the newest 20 matches and stops,
// however many messages match; dates become a rowid range and account, folder, direction and
// visibility become hidden tags in the same MATCH (tags.ts), so counting needs no join.
// Other sorts join and sort. Without a text query, the emails table's indexes serve.
// Exact counts are cached per worker, keyed by the archive's generation (bumped by every
// import and permission change), so a cached count is never stale.
import type { EmailSummaryDto, PagedResult } from '../../shared/dto.js';
import type { SearchQuery, Viewer as SharedViewer } from '../../shared/jobs.js';
import type { Db } from './open.js';
import { prepared } from './statements.js';
import { visibleAccountIds, visibleAccountsClause } from './accounts.js';
import { pageOf, toSummary, type RawSummary } from '../rules/summary.js';
import { SUMMARY_COLUMNS } from './summary-columns.js';
import { keyRange } from '../search/fts-key.js';
import { accountTag, directionTag, folderTag } from '../search/tags.js';
import { compileSearch, ftsExpression, type SqlCondition } from '../search/compile.js';
import { attachmentPhraseKeys } from './attachment-phrase.js';
import { SORT_COLUMNS } from '../search/sort.js';
import { countMatches } from '../search/bitsets/count.js';
import { currentSnapshot } from './index-share.js';
import { pageIds, relevancePageIds } from '../search/bitsets/page.js';
import { parseQuery } from '../../shared/query-language.js';
import { RELEVANCE_WINDOW } from '../../shared/search-input.js';
import { lowerBound } from '../search/bitsets/lower-bound.js';
import type { Snapshot } from '../search/bitsets/snapshot.js';
import { tokenize } from '../search/unicode61.js';
import { rankedLeaves, rankWindow, subjectLeaf, type RelevanceTerm } from '../search/relevance.js';
import { rankedSets, termsFromSets } from '../search/bitsets/ranked.js';
import { FtsSource } from './fts-source.js';

type Viewer = SharedViewer;

/** Exact counts by (generation, viewer, filters), per connection (one per worker); bounded. */
const countCaches = new WeakMap<Db, Map<string, number>>();
const COUNT_CACHE_SIZE = 2000;

function cachedCount(db: Db, key: string, count: () => number, options: PlanOptions): number {
  if (options.reference) return count();
  let cache = countCaches.get(db);
  if (!cache) countCaches.set(db, (cache = new Map()));
  const generation = prepared(db, 'SELECT generation FROM archive_state WHERE id = 1').pluck().get() as number;
  const full = `${generation}\u0000${key}`;
  const hit = cache.get(full);
  if (hit !== undefined) {
    cache.delete(full); // refresh its place in the LRU order
    cache.set(full, hit);
    return hit;
  }
  const value = count();
  cache.set(full, value);
  if (cache.size > COUNT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
  return value;
}

/** Re-exported: the planner is where the window is applied (shared/search-input.ts says why). */
export { RELEVANCE_WINDOW };

/** N of the idf: the messages in the archive (counted once per generation). */
function archiveSize(db: Db, options: PlanOptions): number {
  return cachedCount(
    db,
    'relevance:N',
    () => prepared(db, 'SELECT count(*) FROM emails').pluck().get() as number,
    options,
  );
}

type TextLeaf = Parameters<typeof ftsExpression>[0];

/**
 * The terms of a relevance ranking over `window` (full-text rowids). From the in-memory index
 * when it is current: each term's set (kept, or FTS5's answer cached for the snapshot), so its
 * count is a popcount and the window's membership bit tests. Else from FTS5: a count per term
 * (cached per generation) and the term's rowids over the window's range. Both give the same
 * numbers, so the two paths rank alike.
 */
function relevanceTerms(
  db: Db,
  snap: Snapshot | undefined,
  leaves: TextLeaf[],
  window: number[],
  options: PlanOptions,
): RelevanceTerm[] {
  if (window.length === 0 || leaves.length === 0) return [];
  if (snap) {
    const idOf = new Map<number, number>();
    for (const key of window) {
      const at = lowerBound(snap.keys, key);
      if (snap.keys[at] === key) idOf.set(key, snap.ids[at]!);
    }
    const sets = idOf.size === window.length ? rankedSets(new FtsSource(db), snap, leaves) : undefined;
    if (!sets) return relevanceTerms(db, undefined, leaves, window, options); // the archive moved on
    let subjects: Map<number, string[]> | undefined;
    return termsFromSets(
      sets,
      (key) => idOf.get(key)!,
      () => (subjects ??= windowSubjects(db, window)),
    );
  }
  const low = Math.min(...window);
  const high = Math.max(...window);
  const inRange = (expression: string) =>
    new Set(
      prepared(db, 'SELECT rowid FROM email_fts WHERE email_fts MATCH ? AND rowid >= ? AND rowid <= ?')
        .pluck()
        .all(expression, low, high) as number[],
    );
  return leaves.map((leaf) => {
    const expression = ftsExpression(leaf);
    const subject = subjectLeaf(leaf);
    const text = inRange(expression);
    const inSubject = subject === null ? new Set<number>() : subject === leaf ? text : inRange(ftsExpression(subject));
    return {
      docs: cachedCount(
        db,
        JSON.stringify(['relevance:n', expression]),
        () => prepared(db, 'SELECT count(*) FROM email_fts WHERE email_fts MATCH ?').pluck().get(expression) as number,
        options,
      ),
      inText: (key) => text.has(key),
      inSubject: (key) => inSubject.has(key),
    };
  });
}

/** The window's subjects as FTS5 stores them: their tokens (unicode61.ts), by full-text rowid. */
function windowSubjects(db: Db, window: number[]): Map<number, string[]> {
  const rows = prepared(
    db,
    `SELECT fts_key AS k, subject FROM emails WHERE fts_key IN (SELECT value FROM json_each(?))`,
  ).all(JSON.stringify(window)) as Array<{ k: number; subject: string | null }>;
  return new Map(rows.map((r) => [r.k, tokenize(r.subject ?? '')]));
}

/** Summaries of these messages (by id or by full-text rowid), in this order. */
function summariesOf(db: Db, ids: number[], by: 'id' | 'fts_key' = 'id'): EmailSummaryDto[] {
  if (ids.length === 0) return [];
  const rows = prepared(
    db,
    `SELECT ${SUMMARY_COLUMNS}, e.${by} AS k FROM emails e WHERE e.${by} IN (${ids.map(() => '?').join(',')})`,
  ).all(...ids) as Array<RawSummary & { k: number }>;
  const byId = new Map(rows.map((r) => [r.k, r]));
  return ids.flatMap((id) => {
    const row = byId.get(id);
    return row ? [toSummary(row)] : [];
  });
}

/** `reference`: count with plain SQL, no cache and no in-memory index (tests and benchmarks). */
export interface PlanOptions {
  reference?: boolean;
}

/** The exact number of messages a search finds, computed the slow, obvious way. */
export function exactCount(db: Db, viewer: Viewer, query: SearchQuery): number {
  return searchEmails(db, viewer, { ...query, page: 1, pageSize: 1 }, { reference: true }).totalItems;
}

/**
 * Where SQL finds a search's matches (dates, filters and visibility included): the emails table
 * with conditions on `e` when there is no text to match; else the full-text index `f`, whose
 * MATCH carries the filters as tags (tags.ts) and whose rowid range is the dates, joined to `e`
 * for `extra` conditions (the query's parts FTS5 cannot run). `none`: nothing can match.
 */
export type SqlSource =
  | { kind: 'none' }
  | { kind: 'table'; filters: SqlCondition[] }
  | { kind: 'fts'; fts: SqlCondition[]; extra: SqlCondition[] };

export function sqlSource(
  db: Db,
  viewer: Viewer,
  query: SearchQuery,
  compiled: ReturnType<typeof compileSearch> = compileSearch(query.q, (node) => attachmentPhraseKeys(db, node)),
): SqlSource {
  if (compiled.kind === 'none') return { kind: 'none' };
  const match = compiled.kind === 'query' ? compiled.match : null;
  const extra = compiled.kind === 'query' ? compiled.conditions : [];
  if (match === null) {
    const visible = visibleAccountsClause(viewer, 'e.account_id');
    const filters: SqlCondition[] = [];
    if (query.accountId !== undefined) filters.push({ sql: 'e.account_id = ?', params: [query.accountId] });
    if (query.folder !== undefined) filters.push({ sql: 'e.folder = ?', params: [query.folder] });
    if (query.direction !== undefined)
      filters.push({ sql: 'e.is_outgoing = ?', params: [query.direction === 'outgoing' ? 1 : 0] });
    if (query.from !== undefined) filters.push({ sql: 'e.sent_date >= ?', params: [query.from] });
    if (query.to !== undefined) filters.push({ sql: 'e.sent_date <= ?', params: [query.to] });
    if (visible.params.length) filters.push(visible);
    filters.push(...extra);
    return { kind: 'table', filters };
  }
  const tags: string[] = [];
  if (query.accountId !== undefined) tags.push(`{tags} : "${accountTag(query.accountId)}"`);
  if (query.folder !== undefined) tags.push(`{tags} : "${folderTag(query.folder)}"`);
  if (query.direction !== undefined) tags.push(`{tags} : "${directionTag(query.direction === 'outgoing')}"`);
  const accounts = visibleAccountIds(db, viewer);
  if (accounts) {
    if (accounts.length === 0) return { kind: 'none' };
    tags.push(`{tags} : (${accounts.map((a) => `"${accountTag(a)}"`).join(' OR ')})`);
  }
  const fts: SqlCondition[] = [{ sql: 'f.email_fts MATCH ?', params: [[match, ...tags].join(' AND ')] }];
  const range = keyRange(query.from, query.to);
  if (range.low !== undefined) fts.push({ sql: 'f.rowid >= ?', params: [range.low] });
  if (range.high !== undefined) fts.push({ sql: 'f.rowid <= ?', params: [range.high] });
  return { kind: 'fts', fts, extra };
}

/** What every step of one search reads: the query, who asks, and the page it wants. */
interface Search {
  db: Db;
  viewer: Viewer;
  query: SearchQuery;
  options: PlanOptions;
  offset: number;
  desc: boolean;
  dir: 'ASC' | 'DESC';
  /** The viewer as a count-cache key: admins share one count, others count per user and grant. */
  viewerKey: unknown[];
  /** The shared in-memory index when it is current (engine/search/bitsets); else SQL counts. */
  snap: Snapshot | undefined;
  /** The parsed `q`, or null without text. */
  root: ReturnType<typeof parseQuery> | null;
}

const where = (conds: SqlCondition[]) => (conds.length ? conds.map((c) => `(${c.sql})`).join(' AND ') : '1');
const params = (conds: SqlCondition[]) => conds.flatMap((c) => c.params);
const pageFor = (s: Search, items: EmailSummaryDto[], totalItems: number) => pageOf(s.query, items, totalItems);

export function searchEmails(
  db: Db,
  viewer: Viewer,
  query: SearchQuery,
  options: PlanOptions = {},
): PagedResult<EmailSummaryDto> {
  const compiled = compileSearch(query.q);
  if (compiled.kind === 'none') return pageOf(query, [], 0);
  const desc = query.sortOrder === 'desc';
  const s: Search = {
    db,
    viewer,
    query,
    options,
    offset: (query.page - 1) * query.pageSize,
    desc,
    dir: desc ? 'DESC' : 'ASC',
    viewerKey: [viewer.isAdmin ? 'admin' : viewer.userId, viewer.oauth?.accountIds ?? null],
    snap: options.reference ? undefined : currentSnapshot(db),
    root: query.q?.trim() ? parseQuery(query.q) : null,
  };
  const fromIndex = indexPage(s);
  if (fromIndex) return fromIndex;

  // Compiled again, its attachment: terms matched now (engine/sqlite/attachment-phrase.ts): the
  // index above needed none of that.
  const source = sqlSource(db, viewer, query);
  if (source.kind === 'none') return pageFor(s, [], 0);
  if (source.kind === 'table') return tablePage(s, source.filters);
  return textPage(s, source.fts, source.extra);
}

/** The count and the page from the shared in-memory index; undefined when it cannot count this. */
function indexPage(s: Search): PagedResult<EmailSummaryDto> | undefined {
  const { db, snap, query } = s;
  if (!snap) return undefined;
  const matched = countMatches(new FtsSource(db), snap, visibleAccountIds(db, s.viewer), query, s.root);
  if (!matched) return undefined;
  if (s.offset >= matched.total) return pageFor(s, [], matched.total);
  const ids =
    pageIds(snap, matched.bits, query, s.root !== null) ??
    relevancePageIds(snap, matched.bits, query, matched.total, RELEVANCE_WINDOW, (window) =>
      rankWindow(window, relevanceTerms(db, snap, rankedLeaves(s.root), window, s.options), snap.rows, s.desc),
    );
  return pageFor(s, summariesOf(db, ids), matched.total);
}

/** No text to match: filters on the emails table, sorted through its indexes. */
function tablePage(s: Search, filters: SqlCondition[]): PagedResult<EmailSummaryDto> {
  const { db, query } = s;
  const sortBy = query.sortBy === 'relevance' ? 'sentDate' : query.sortBy; // nothing to rank by
  const total = cachedCount(
    db,
    JSON.stringify([s.viewerKey, filters]),
    () =>
      prepared(db, `SELECT count(*) FROM emails e WHERE ${where(filters)}`)
        .pluck()
        .get(...params(filters)) as number,
    s.options,
  );
  if (s.offset >= total) return pageFor(s, [], total);
  const rows = prepared(
    db,
    `SELECT ${SUMMARY_COLUMNS} FROM emails e WHERE ${where(filters)}
       ORDER BY ${SORT_COLUMNS[sortBy]} ${s.dir}, e.id ${s.dir} LIMIT ? OFFSET ?`,
  ).all(...params(filters), query.pageSize, s.offset) as RawSummary[];
  return pageFor(s, rows.map(toSummary), total);
}

/** The join from the full-text index to the messages, for conditions FTS5 cannot run. */
const JOINED = 'FROM email_fts f JOIN emails e ON e.fts_key = f.rowid';

/**
 * Text to match: every filter the index can apply is in the MATCH itself (`fts`); `extra` is what
 * needs the emails table. Counted, then paged by the sort asked for.
 */
function textPage(s: Search, fts: SqlCondition[], extra: SqlCondition[]): PagedResult<EmailSummaryDto> {
  const { db, query } = s;
  const all = [...fts, ...extra];
  const total = cachedCount(
    db,
    JSON.stringify([s.viewerKey, all]),
    () =>
      extra.length === 0
        ? (prepared(db, `SELECT count(*) FROM email_fts f WHERE ${where(fts)}`)
            .pluck()
            .get(...params(fts)) as number)
        : (prepared(db, `SELECT count(*) ${JOINED} WHERE ${where(all)}`)
            .pluck()
            .get(...params(all)) as number),
    s.options,
  );
  if (s.offset >= total) return pageFor(s, [], total);
  if (query.sortBy === 'relevance')
    return pageFor(s, summariesOf(db, relevanceKeys(s, all, extra, total), 'fts_key'), total);
  if (query.sortBy === 'sentDate') return pageFor(s, sentDateRows(s, fts, extra).map(toSummary), total);
  return pageFor(s, otherSortRows(s, fts, extra, total, query.sortBy).map(toSummary), total);
}

/**
 * The page's full-text keys by relevance: the newest RELEVANCE_WINDOW matches are ranked
 * (relevance.ts); older ones follow, newest first (asc is the reverse). FTS5 reads the newest
 * matches first and stops.
 */
function relevanceKeys(s: Search, all: SqlCondition[], extra: SqlCondition[], total: number): number[] {
  const { db, query, desc, dir, offset } = s;
  const from = extra.length ? JOINED : 'FROM email_fts f';
  const newest = prepared(
    db,
    `SELECT f.rowid ${from} WHERE ${where(all)} ORDER BY f.rowid DESC LIMIT ${RELEVANCE_WINDOW}`,
  )
    .pluck()
    .all(...params(all)) as number[];
  const windowRows = rankWindow(
    newest,
    relevanceTerms(db, s.snap, rankedLeaves(s.root), newest, s.options),
    s.snap ? s.snap.rows : archiveSize(db, s.options),
    desc,
  ).map((key) => [key] as const);
  const inWindow = windowRows.length;
  const older = total - inWindow;
  const keys: number[] = [];
  const olderKeys = (limit: number, skip: number) =>
    prepared(db, `SELECT f.rowid ${from} WHERE ${where(all)} ORDER BY f.rowid ${dir} LIMIT ? OFFSET ?`)
      .pluck()
      .all(...params(all), limit, desc ? inWindow + skip : skip) as number[];
  const segments = desc
    ? [
        { n: inWindow, keys: (limit: number, skip: number) => windowRows.slice(skip, skip + limit).map((r) => r[0]) },
        { n: older, keys: olderKeys },
      ]
    : [
        { n: older, keys: olderKeys },
        { n: inWindow, keys: (limit: number, skip: number) => windowRows.slice(skip, skip + limit).map((r) => r[0]) },
      ];
  let skip = offset;
  for (const segment of segments) {
    const want = query.pageSize - keys.length;
    if (want <= 0) break;
    if (skip >= segment.n) {
      skip -= segment.n;
      continue;
    }
    keys.push(...segment.keys(Math.min(want, segment.n - skip), skip));
    skip = 0;
  }
  return keys;
}

/** By sent date, the full-text index's own order. */
function sentDateRows(s: Search, fts: SqlCondition[], extra: SqlCondition[]): RawSummary[] {
  const { db, query, dir, offset } = s;
  if (extra.length === 0) {
    // The index alone decides the page; only its rows are joined (a deep page skips
    // thousands of index entries without touching the emails table for them).
    return prepared(
      db,
      `SELECT ${SUMMARY_COLUMNS} FROM (
           SELECT f.rowid AS k FROM email_fts f WHERE ${where(fts)} ORDER BY f.rowid ${dir} LIMIT ? OFFSET ?
         ) p JOIN emails e ON e.fts_key = p.k
         ORDER BY p.k ${dir}`,
    ).all(...params(fts), query.pageSize, offset) as RawSummary[];
  }
  const all = [...fts, ...extra];
  return prepared(
    db,
    `SELECT ${SUMMARY_COLUMNS} ${JOINED} WHERE ${where(all)} ORDER BY f.rowid ${dir} LIMIT ? OFFSET ?`,
  ).all(...params(all), query.pageSize, offset) as RawSummary[];
}

/**
 * Another sort key: either sort the matches, or walk the key's index and keep the rows that
 * match, whichever reads fewer rows. Sorting reads every match; the walk reads about
 * (offset + pageSize) / share-of-archive-matching rows, plus one pass to list the matches.
 */
function otherSortRows(
  s: Search,
  fts: SqlCondition[],
  extra: SqlCondition[],
  total: number,
  sortBy: keyof typeof SORT_COLUMNS,
): RawSummary[] {
  const { db, query, dir, offset } = s;
  const all = [...fts, ...extra];
  const order = `${SORT_COLUMNS[sortBy]} ${dir}, e.id ${dir}`;
  const archive = cachedCount(
    db,
    'archive',
    () => prepared(db, 'SELECT count(*) FROM emails').pluck().get() as number,
    s.options,
  );
  const walkRows = ((offset + query.pageSize) * archive) / total;
  return walkRows < total
    ? // `+e.fts_key` keeps SQLite from driving the query by the match list: the sort index drives.
      (prepared(
        db,
        `SELECT ${SUMMARY_COLUMNS} FROM emails e
           WHERE +e.fts_key IN (SELECT f.rowid FROM email_fts f WHERE ${where(fts)}) AND ${where(extra)}
           ORDER BY ${order} LIMIT ? OFFSET ?`,
      ).all(...params(fts), ...params(extra), query.pageSize, offset) as RawSummary[])
    : (prepared(db, `SELECT ${SUMMARY_COLUMNS} ${JOINED} WHERE ${where(all)} ORDER BY ${order} LIMIT ? OFFSET ?`).all(
        ...params(all),
        query.pageSize,
        offset,
      ) as RawSummary[]);
}
