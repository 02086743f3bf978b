// Aggregates (docs/search.md, "Aggregates"): the rules both stores follow, so
// that they group alike. A message's group keys are derived from its columns here; each store
// then counts its matches by them (SQLite: engine/sqlite/aggregate.ts, PostgreSQL:
// engine/postgres/aggregate.ts, in SQL with the same patterns).
//
// - from: the sender's address, lower-cased (ASCII letters only, as both stores can do alike):
//   the first `<address>` of the From field, else its first bare address; a From with no address
//   is in no group.
// - fromDomain: the part of that address after its last `@`.
// - to: every distinct address of the To field (as `to:` finds them), each counted once per
//   message; a message with three recipients is in three groups.
// - folder: the full folder path; account: the account id; hasAttachments: `true`/`false`.
// - year, month, week: of the sent date in UTC: `2024`, `2024-03`, `2024-W09` (ISO 8601 week:
//   weeks start on Monday and week 1 holds the year's first Thursday, so 2024-12-30 is 2025-W01).
import type { AggregateResultDto } from '../../shared/dto.js';
import type { GroupBy } from '../../shared/jobs.js';

/** Whitespace as both stores' regular expressions see it: ASCII only. */
const WS = ' \\t\\r\\n\\f\\v';
/** An address between angle brackets: `Name <alice@example.com>`. */
export const ANGLE_ADDRESS = `<([^<>@${WS}]+@[^<>${WS}]+)>`;
/** A bare address, as `to:`/`from:` find them (engine/search/tags.ts), whitespace ASCII. */
export const BARE_ADDRESS = `([^${WS}@<>"',;()]+@[^${WS}@<>"',;()]+\\.[^${WS}@<>"',;()]+)`;
const ANGLE = new RegExp(ANGLE_ADDRESS);
const BARE = new RegExp(BARE_ADDRESS);
const BARE_ALL = new RegExp(BARE_ADDRESS, 'g');

/** Lower-cases ASCII letters only (PostgreSQL: translate), whatever the database's locale. */
export const asciiLower = (text: string): string => text.replace(/[A-Z]+/g, (s) => s.toLowerCase());
export const UPPER_ASCII = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** The sender's address of a From field, or null. */
export function fromAddress(field: string | null): string | null {
  if (!field) return null;
  const found = ANGLE.exec(field)?.[1] ?? BARE.exec(field)?.[1];
  return found === undefined ? null : asciiLower(found);
}

export const domainOf = (address: string): string => address.slice(address.lastIndexOf('@') + 1);

/** Every distinct address of a To field. */
export function toAddresses(field: string | null): string[] {
  if (!field) return [];
  return [...new Set(Array.from(field.matchAll(BARE_ALL), (m) => asciiLower(m[1]!)))];
}

const DAY_MS = 86_400_000;
const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** The UTC day number of epoch milliseconds (days since 1970-01-01). */
export const dayOf = (ms: number): number => Math.floor(ms / DAY_MS);

/** The key of a UTC day for a date grouping. */
export function dayKey(groupBy: 'year' | 'month' | 'week', day: number): string {
  const date = new Date(day * DAY_MS);
  if (groupBy === 'year') return pad(date.getUTCFullYear(), 4);
  if (groupBy === 'month') return `${pad(date.getUTCFullYear(), 4)}-${pad(date.getUTCMonth() + 1, 2)}`;
  // ISO week: the week's Thursday decides the year.
  const weekday = (date.getUTCDay() + 6) % 7; // Monday 0
  const thursday = new Date((day - weekday + 3) * DAY_MS);
  const year = thursday.getUTCFullYear();
  const week = Math.floor((dayOf(thursday.getTime()) - dayOf(Date.UTC(year, 0, 1))) / 7) + 1;
  return `${pad(year, 4)}-W${pad(week, 2)}`;
}

export const isDateGrouping = (g: GroupBy): g is 'year' | 'month' | 'week' =>
  g === 'year' || g === 'month' || g === 'week';

/**
 * Code point order (UTF-8 byte order, PostgreSQL's "C" collation) rather than JavaScript's
 * UTF-16 code unit order, which puts U+E000..U+FFFF after the astral planes.
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x - y;
  }
  return a.length - b.length;
}

/** Orders groups: most messages first, equal counts by key. */
export const byCountThenKey = (a: { key: string; count: number }, b: { key: string; count: number }): number =>
  b.count - a.count || compareCodePoints(a.key, b.key);

/**
 * The answer from every group's count: the `limit` largest, or for a date grouping the `limit`
 * latest periods in time order (docs/search.md, "Aggregates"). Only the groups that can make the
 * list are sorted (those at least as large as the limit-th largest count), so a grouping by
 * sender over 100,000 senders sorts their counts, not their names.
 */
export function topGroups(
  groupBy: GroupBy,
  total: number,
  keys: ArrayLike<string>,
  counts: ArrayLike<number>,
  limit: number,
): AggregateResultDto {
  const present: number[] = [];
  for (let i = 0; i < counts.length; i++) if (counts[i]! > 0) present.push(i);
  const group = (i: number) => ({ key: keys[i]!, count: counts[i]! });
  if (isDateGrouping(groupBy)) {
    // A series over time is read in time order, and its newest periods matter most. The keys
    // (2024, 2024-03, 2024-W09) sort as their periods do.
    const latest = present
      .map(group)
      .sort((a, b) => compareCodePoints(a.key, b.key))
      .slice(-limit);
    return { groupBy, total, distinctGroups: present.length, groups: latest };
  }
  if (present.length <= limit)
    return { groupBy, total, distinctGroups: present.length, groups: present.map(group).sort(byCountThenKey) };
  // Every group above the limit-th largest count is in; of those at that count (often thousands
  // of senders with one message each), the smallest keys fill the rest, kept sorted as they come.
  const threshold = Int32Array.from(present, (i) => counts[i]!).sort()[present.length - limit]!;
  const above = present.filter((i) => counts[i]! > threshold).map(group);
  const need = limit - above.length;
  const ties: string[] = [];
  for (const i of present) {
    if (counts[i] !== threshold) continue;
    const key = keys[i]!;
    if (ties.length === need && compareCodePoints(key, ties[need - 1]!) >= 0) continue;
    let lo = 0;
    let hi = ties.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareCodePoints(ties[mid]!, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    ties.splice(lo, 0, key);
    if (ties.length > need) ties.pop();
  }
  const groups = [...above.sort(byCountThenKey), ...ties.map((key) => ({ key, count: threshold }))];
  return { groupBy, total, distinctGroups: present.length, groups };
}

/** The same answer from (key, count) pairs, as SQL returns them. */
export function topOfPairs(
  groupBy: GroupBy,
  total: number,
  rows: ReadonlyArray<{ key: string; count: number }>,
  limit: number,
): AggregateResultDto {
  return topGroups(
    groupBy,
    total,
    rows.map((r) => r.key),
    rows.map((r) => Number(r.count)),
    limit,
  );
}
