// Aggregates over a SQLite archive (engine/rules/aggregate.ts has the rules). With the shared in-memory
// index current, the matches are its set (bitsets/count.ts, as a search counts them) and each
// match is counted into its group through a column of group numbers by message id, built by
// the builder thread beside the index (aggregate-columns.ts) and extended by a worker thread as
// mail is appended (dates come from the snapshot's own sent dates). Otherwise, and for tests and benchmarks (`reference`), plain SQL: the search's match
// source (engine/sqlite/search.ts) and GROUP BY over the same key functions.
import type { AggregateResultDto } from '../../shared/dto.js';
import type { AggregateQuery, GroupBy, Viewer } from '../../shared/jobs.js';
import { parseQuery } from '../../shared/query-language.js';
import {
  dayKey,
  dayOf,
  domainOf,
  fromAddress,
  isDateGrouping,
  topGroups,
  topOfPairs,
  toAddresses,
} from '../rules/aggregate.js';
import type { Db } from './open.js';
import { prepared } from './statements.js';
import { matchSet } from '../search/bitsets/count.js';
import { columnFor, type Column } from './aggregate-columns.js';
import { FtsSource } from './fts-source.js';
import { visibleAccountIds } from './accounts.js';
import { currentSnapshot } from './index-share.js';
import type { Snapshot } from '../search/bitsets/snapshot.js';
import type { SqlCondition } from '../search/compile.js';
import { sqlSource, type PlanOptions } from './search.js';

export function aggregateEmails(
  db: Db,
  viewer: Viewer,
  aggregate: AggregateQuery,
  options: PlanOptions = {},
): AggregateResultDto {
  const snap = options.reference ? undefined : currentSnapshot(db);
  return (snap && aggregateFromIndex(db, snap, viewer, aggregate)) ?? countSql(db, viewer, aggregate);
}

/** The aggregate counted with the in-memory index `snap`; undefined when it cannot answer (stale). */
export function aggregateFromIndex(
  db: Db,
  snap: Snapshot,
  viewer: Viewer,
  aggregate: AggregateQuery,
): AggregateResultDto | undefined {
  const { query } = aggregate;
  const root = query.q?.trim() ? parseQuery(query.q) : null;
  if (query.q?.trim() && !root) return undefined; // nothing can match: SQL says so
  const bits = matchSet(new FtsSource(db), snap, visibleAccountIds(db, viewer), query, root);
  return bits && countBits(db, snap, bits, aggregate);
}

// ---- With the in-memory index -------------------------------------------------------------

/** Group numbers of a date grouping by message id, from the snapshot's own sent dates. */
const dateColumns = new WeakMap<Snapshot, Map<GroupBy, Pick<Column, 'keys' | 'of'>>>();
function dateColumn(snap: Snapshot, groupBy: 'year' | 'month' | 'week'): Pick<Column, 'keys' | 'of'> {
  let cache = dateColumns.get(snap);
  if (!cache) dateColumns.set(snap, (cache = new Map()));
  let col = cache.get(groupBy);
  if (col) return col;
  const of = new Int32Array(snap.sent.length).fill(-1);
  const keys: string[] = [];
  const numbers = new Map<string, number>();
  const byDay = new Map<number, number>();
  for (let id = 0; id < snap.sent.length; id++) {
    const ms = snap.sent[id]!;
    if (Number.isNaN(ms)) continue;
    const day = dayOf(ms);
    let n = byDay.get(day);
    if (n === undefined) {
      const key = dayKey(groupBy, day);
      n = numbers.get(key);
      if (n === undefined) numbers.set(key, (n = keys.push(key) - 1));
      byDay.set(day, n);
    }
    of[id] = n;
  }
  col = { keys, of };
  cache.set(groupBy, col);
  return col;
}

/** Calls visit(id) for every id in the set whose sent date is within the query's dates. */
function eachMatch(snap: Snapshot, bits: Uint32Array, aggregate: AggregateQuery, visit: (id: number) => void): void {
  const { from, to } = aggregate.query;
  const sent = snap.sent;
  const low = from ?? -Infinity;
  const high = to ?? Infinity;
  const dated = from !== undefined || to !== undefined;
  for (let w = 0; w < bits.length; w++) {
    let word = bits[w]!;
    while (word !== 0) {
      const bit = word & -word;
      word ^= bit;
      const id = (w << 5) | (31 - Math.clz32(bit));
      if (dated) {
        const ms = sent[id]!;
        if (!(ms >= low && ms <= high)) continue;
      }
      visit(id);
    }
  }
}

function countBits(db: Db, snap: Snapshot, bits: Uint32Array, aggregate: AggregateQuery): AggregateResultDto {
  const { groupBy, limit } = aggregate;
  let total = 0;
  const col: Pick<Column, 'keys' | 'of' | 'starts' | 'members'> = isDateGrouping(groupBy)
    ? dateColumn(snap, groupBy)
    : columnFor(db, snap, groupBy === 'fromDomain' ? 'from' : groupBy);
  const counts = new Int32Array(col.keys.length);
  if (col.starts) {
    const { starts, members } = col as Required<Column>;
    eachMatch(snap, bits, aggregate, (id) => {
      total++;
      for (let i = starts[id]!; i < starts[id + 1]!; i++) counts[members[i]!]!++;
    });
  } else {
    const of = col.of;
    eachMatch(snap, bits, aggregate, (id) => {
      total++;
      const n = of[id]!;
      if (n >= 0) counts[n]!++;
    });
  }
  if (groupBy !== 'fromDomain') return topGroups(groupBy, total, col.keys, counts, limit);
  const byDomain = new Map<string, number>();
  for (let n = 0; n < counts.length; n++) {
    if (counts[n] === 0) continue;
    const domain = domainOf(col.keys[n]!);
    byDomain.set(domain, (byDomain.get(domain) ?? 0) + counts[n]!);
  }
  return topGroups(groupBy, total, [...byDomain.keys()], [...byDomain.values()], limit);
}

// ---- Plain SQL ------------------------------------------------------------------------------

const withFunctions = new WeakSet<Db>();
/** The key rules of engine/rules/aggregate.ts as SQL functions of this connection. */
function registerFunctions(db: Db): void {
  if (withFunctions.has(db)) return;
  const options = { deterministic: true };
  db.function('mag_from_address', options, (v: unknown) => fromAddress(v as string | null));
  db.function('mag_from_domain', options, (v: unknown) => {
    const a = fromAddress(v as string | null);
    return a === null ? null : domainOf(a);
  });
  db.function('mag_to_addresses', options, (v: unknown) => JSON.stringify(toAddresses(v as string | null)));
  withFunctions.add(db);
}

/** The group key of a row of `e`, in SQL (`to` is a table of keys instead: json_each). */
const KEY_SQL: Record<Exclude<GroupBy, 'to'>, string> = {
  from: 'mag_from_address(e.from_addr)',
  fromDomain: 'mag_from_domain(e.from_addr)',
  folder: 'e.folder',
  account: 'CAST(e.account_id AS TEXT)',
  hasAttachments: "CASE WHEN e.has_attachments THEN 'true' ELSE 'false' END",
  year: "strftime('%Y', e.sent_date / 1000, 'unixepoch')",
  month: "strftime('%Y-%m', e.sent_date / 1000, 'unixepoch')",
  week: "strftime('%G-W%V', e.sent_date / 1000, 'unixepoch')",
};

function countSql(db: Db, viewer: Viewer, aggregate: AggregateQuery): AggregateResultDto {
  const { query, groupBy, limit } = aggregate;
  const source = sqlSource(db, viewer, query);
  if (source.kind === 'none') return topGroups(groupBy, 0, [], [], limit);
  const conditions: SqlCondition[] = source.kind === 'table' ? source.filters : [...source.fts, ...source.extra];
  const from = source.kind === 'table' ? 'FROM emails e' : 'FROM email_fts f JOIN emails e ON e.fts_key = f.rowid';
  const where = conditions.length ? conditions.map((c) => `(${c.sql})`).join(' AND ') : '1';
  const params = conditions.flatMap((c) => c.params);
  registerFunctions(db);
  const total = prepared(db, `SELECT count(*) ${from} WHERE ${where}`)
    .pluck()
    .get(...params) as number;
  const rows = (
    groupBy === 'to'
      ? prepared(
          db,
          `SELECT j.value AS key, count(*) AS count ${from}, json_each(mag_to_addresses(e.to_addr)) j
            WHERE ${where} GROUP BY j.value`,
        )
      : prepared(
          db,
          `SELECT key, count(*) AS count FROM (SELECT ${KEY_SQL[groupBy]} AS key ${from} WHERE ${where})
            WHERE key IS NOT NULL GROUP BY key`,
        )
  ).all(...params) as Array<{ key: string; count: number }>;
  return topOfPairs(groupBy, total, rows, limit);
}
