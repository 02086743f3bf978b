// What a search answered by the in-memory index must know of the present state (ADR 22): is
// there mail newer than the snapshot, whom may the viewer see now, and the date bounds in the
// index's units. Asking first costs a round trip of its own; instead the search guesses (the
// viewer's accounts as this thread last read them, the bounds computed here), reads the present
// in the same round trip as its page (snapshot-session.ts), and keeps its answer only when the
// guess was right: a permission change still applies to the very next search.
import type { SearchQuery, Viewer } from '../../shared/jobs.js';
import { T, zonedTimestamp } from './columns.js';
import { raw, reused, sql, type Sql } from './sql.js';
import type { PgContext } from './context.js';
import { wallClockMicros } from './wall-clock.js';

export interface Present {
  /** The highest message id now. */
  max: number;
  /** The viewer's accounts, ascending (null: an admin, every account). */
  visible: number[] | null;
  /** The query's date bounds as microseconds of SentDate's wall clock (null: none). */
  from: number | null;
  to: number | null;
}

/** A date bound in the index's units, read on the server. */
const boundSql = (ms: number | undefined, zone: string) =>
  ms === undefined ? raw('NULL::float8') : sql`(extract(epoch FROM ${zonedTimestamp(ms, zone)}) * 1000000)::float8`;

/** One statement that reads the present for this search. */
export const presentSql = (ctx: PgContext, viewer: Viewer, query: SearchQuery): Sql =>
  reused(sql`SELECT coalesce((SELECT max("Id") FROM ${T.emails}), 0)::float8 AS max,
             ${viewer.isAdmin ? raw('NULL::int[]') : sql`ARRAY(SELECT "MailAccountId" FROM ${T.userAccounts} WHERE "UserId" = ${viewer.userId} ORDER BY 1)`} AS visible,
             ${boundSql(query.from, ctx.zone)} AS "from", ${boundSql(query.to, ctx.zone)} AS "to"`);

/** Bounded, oldest out first: what one thread has seen lately. */
class Recent<K, V> extends Map<K, V> {
  constructor(readonly limit: number) {
    super();
  }
  override set(key: K, value: V): this {
    this.delete(key);
    super.set(key, value);
    if (this.size > this.limit) this.delete(this.keys().next().value!);
    return this;
  }
}

const visibleOf = new Recent<number, number[]>(1024);
const bounds = new Recent<string, number>(4096);

function bound(ms: number | undefined, zone: string): number | null | undefined {
  if (ms === undefined) return null;
  return bounds.get(`${zone} ${ms}`) ?? wallClockMicros(ms, zone);
}

/** The present as this thread expects it (nothing newer than `maxId`); undefined when it cannot tell. */
export function guessPresent(ctx: PgContext, viewer: Viewer, query: SearchQuery, maxId: number): Present | undefined {
  const visible = viewer.isAdmin ? null : visibleOf.get(viewer.userId);
  const from = bound(query.from, ctx.zone);
  const to = bound(query.to, ctx.zone);
  if (visible === undefined || from === undefined || to === undefined) return undefined;
  return { max: maxId, visible, from, to };
}

/** Remembers what the server said, for the next guess. */
export function learnPresent(ctx: PgContext, viewer: Viewer, query: SearchQuery, present: Present): void {
  if (!viewer.isAdmin && present.visible) visibleOf.set(viewer.userId, present.visible);
  if (query.from !== undefined && present.from !== null) bounds.set(`${ctx.zone} ${query.from}`, present.from);
  if (query.to !== undefined && present.to !== null) bounds.set(`${ctx.zone} ${query.to}`, present.to);
}

/** Whether an answer computed with `guess` is the one `actual` gives (new mail is checked apart). */
export const sameAnswerBasis = (guess: Present, actual: Present): boolean =>
  guess.from === actual.from &&
  guess.to === actual.to &&
  (guess.visible === null
    ? actual.visible === null
    : actual.visible !== null &&
      guess.visible.length === actual.visible.length &&
      guess.visible.every((id, i) => id === actual.visible![i]));
