// A page of matches from a snapshot: walk the messages in the requested order and keep those
// in the match set. Date order is the order of the full-text rowids (fts-key.ts), a date range
// a slice of it; the other sort keys are permutations SQL computed (engine/sqlite/index-build.ts). A walk reads
// about (offset + pageSize) / (share of the archive matching) messages, and never more than
// the archive: a few milliseconds at 1,000,000 messages, however many or few match.
import type { SearchQuery } from '../../../shared/jobs.js';
import { keyRange } from '../fts-key.js';
import { lowerBound } from './lower-bound.js';
import { KEY_POSITIONS, type Snapshot } from './snapshot.js';

/** The ids of the requested page, in order; undefined for relevance over text (relevancePageIds ranks it). */
export function pageIds(snap: Snapshot, bits: Uint32Array, query: SearchQuery, hasText: boolean): number[] | undefined {
  if (query.sortBy === 'relevance' && hasText) return undefined;
  const skip = (query.page - 1) * query.pageSize;
  const want = skip + query.pageSize;
  const desc = query.sortOrder === 'desc';
  const out: number[] = [];
  const has = (id: number) => (bits[id >>> 5]! & (1 << (id & 31))) !== 0;

  if (query.sortBy === 'sentDate' || query.sortBy === 'relevance') {
    const [start, end] = positionsInRange(snap, query);
    const { ids } = snap;
    let seen = 0;
    for (let p = desc ? end - 1 : start; desc ? p >= start : p < end; desc ? p-- : p++) {
      const id = ids[p]!;
      if (has(id) && seen++ >= skip) {
        out.push(id);
        if (seen >= want) break;
      }
    }
    return out;
  }

  const order = snap.orders[query.sortBy];
  const from = query.from ?? -Infinity;
  const to = query.to ?? Infinity;
  const dated = query.from !== undefined || query.to !== undefined;
  const { sent } = snap;
  let seen = 0;
  for (let i = desc ? order.length - 1 : 0; desc ? i >= 0 : i < order.length; desc ? i-- : i++) {
    const id = order[i]!;
    if (!has(id)) continue;
    if (dated) {
      const date = sent[id]!;
      if (!(date >= from && date <= to)) continue;
    }
    if (seen++ >= skip) {
      out.push(id);
      if (seen >= want) break;
    }
  }
  return out;
}

/**
 * The slice of the date order (positions in `keys`) that the query's date range covers. With
 * KEY_POSITIONS, `from` and `to` are in the units of `sent` (the store converts them).
 */
export function positionsInRange(snap: Snapshot, query: Pick<SearchQuery, 'from' | 'to'>): [number, number] {
  if (snap.keyKind === KEY_POSITIONS) {
    const { sent, ids } = snap;
    /** The first position whose message was sent after `bound` (or at it, when `inclusive`). */
    const first = (bound: number, inclusive: boolean) => {
      let lo = 0;
      let hi = snap.rows;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        const date = sent[ids[mid]!]!;
        if (inclusive ? date < bound : date <= bound) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    };
    return [
      query.from === undefined ? 0 : first(query.from, true),
      query.to === undefined ? snap.rows : first(query.to, false),
    ];
  }
  const range = keyRange(query.from, query.to);
  return [
    range.low === undefined ? 0 : lowerBound(snap.keys, range.low),
    range.high === undefined ? snap.rows : lowerBound(snap.keys, range.high + 1),
  ];
}

/** The newest matches of a relevance search, found once: the ranking may need a round trip between. */
export interface RelevanceWindow {
  /** Positions in date order, newest first; at most the window's size. */
  newest: number[];
  /** The position below the last one the walk looked at (where the older matches continue). */
  next: number;
  start: number;
  end: number;
}

/** The newest `window` matches in the query's date range, by walking the match set down from the newest message. */
export function relevanceWindow(
  snap: Snapshot,
  bits: Uint32Array,
  query: SearchQuery,
  window: number,
): RelevanceWindow {
  const { ids } = snap;
  const [start, end] = positionsInRange(snap, query);
  const newest: number[] = [];
  let p = end - 1;
  for (; p >= start && newest.length < window; p--) {
    const id = ids[p]!;
    if ((bits[id >>> 5]! & (1 << (id & 31))) !== 0) newest.push(p);
  }
  return { newest, next: p, start, end };
}

/**
 * A page of `sortBy=relevance` from a snapshot (relevance.ts): the newest `window` matches, as
 * `rank` orders them, then the older ones newest first; ascending is the exact reverse. The same
 * pages as the SQL path gives, with the window found by walking the match set down from the
 * newest message instead of asking FTS5 for it: for a prefix over thousands of words FTS5 merged
 * every one of their doclists just to list the window (100 ms for `a*` at 100,000 messages).
 * `rank` takes the window's full-text keys newest first and returns them in the page's order.
 */
export function relevancePageIds(
  snap: Snapshot,
  bits: Uint32Array,
  query: SearchQuery,
  total: number,
  window: number,
  rank: (keys: number[]) => number[],
): number[] {
  return rankedPageIds(snap, bits, query, total, relevanceWindow(snap, bits, query, window), rank);
}

/** relevancePageIds with its window already found (relevanceWindow). */
export function rankedPageIds(
  snap: Snapshot,
  bits: Uint32Array,
  query: SearchQuery,
  total: number,
  found: RelevanceWindow,
  rank: (keys: number[]) => number[],
): number[] {
  const { ids, keys } = snap;
  const has = (id: number) => (bits[id >>> 5]! & (1 << (id & 31))) !== 0;
  const { newest, start, end } = found;
  let p = found.next;
  const idOf = new Map(newest.map((q) => [keys[q]!, ids[q]!]));
  const ranked = rank(newest.map((q) => keys[q]!)).map((key) => idOf.get(key)!);
  const older = total - newest.length;
  let skip = (query.page - 1) * query.pageSize;
  const out: number[] = [];
  const full = () => out.length >= query.pageSize;
  /** The window's part of the page, from `skip` on in `ranked`. */
  const fromWindow = () => {
    for (let i = skip; i < ranked.length && !full(); i++) out.push(ranked[i]!);
    skip = Math.max(0, skip - ranked.length);
  };
  if (query.sortOrder === 'desc') {
    fromWindow();
    // The older matches continue the walk down from below the window.
    for (; p >= start && !full(); p--) {
      const id = ids[p]!;
      if (has(id) && skip-- <= 0) out.push(id);
    }
    return out;
  }
  // Ascending: the older matches, oldest first, up to the window's oldest message; then the window.
  const oldestInWindow = newest.length ? newest[newest.length - 1]! : end;
  if (skip < older) {
    for (let q = start; q < oldestInWindow && !full(); q++) {
      const id = ids[q]!;
      if (has(id) && skip-- <= 0) out.push(id);
    }
    skip = 0;
  } else {
    skip -= older;
  }
  fromWindow();
  return out;
}
