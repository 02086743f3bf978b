// Full-text rowids in sent-date order: key = sent second * 2^20 + slot. A date range is then
// a rowid range, which FTS5 applies itself, and ORDER BY rowid is ORDER BY sent date, id.
// Sent dates are kept to the second (as RFC 5322 writes them), so the order is exact; a
// second holds 2^20 slots, and only a millionth message in one second would spill into the
// next. Seconds are clamped to ±2^32 (years 1834 to 2106) to keep keys exact in a JS number.

export const SLOTS = 2 ** 20;
const LIMIT = 2 ** 32;

const clampSecond = (s: number) => Math.min(LIMIT - 1, Math.max(-LIMIT, s));

/** The first key of the second that holds this sent date. */
export function keyBase(sentMs: number): number {
  return clampSecond(Math.floor(sentMs / 1000)) * SLOTS;
}

/** Sent dates are stored to the second. */
export function toSecond(ms: number): number {
  return Math.floor(ms / 1000) * 1000;
}

/** Rowid bounds, both inclusive, for sent dates within [fromMs, toMs]. */
export function keyRange(fromMs: number | undefined, toMs: number | undefined): { low?: number; high?: number } {
  return {
    ...(fromMs !== undefined ? { low: clampSecond(Math.ceil(fromMs / 1000)) * SLOTS } : {}),
    ...(toMs !== undefined ? { high: (clampSecond(Math.floor(toMs / 1000)) + 1) * SLOTS - 1 } : {}),
  };
}
