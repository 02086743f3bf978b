// Binary search over the sorted arrays of a snapshot (keys, ids, words), for every store's builder
// and for the searches that read the snapshot.

/** The first position at or after `from` whose value is not below `value` (numbers or words). */
export function lowerBound<T extends number | string>(sorted: ArrayLike<T>, value: T, from = 0): number {
  let lo = from;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * lowerBound for a value known to be near `from`: steps of 1, 2, 4, … then a binary search in the
 * last step, so the cost grows with the log of the distance, not of the array. Walking a sorted
 * list of values through a sorted array (a word's full-text rowids through the snapshot's keys)
 * then costs about the log of the average gap per value, and touches memory in order.
 */
export function gallop(sorted: ArrayLike<number>, value: number, from = 0): number {
  const n = sorted.length;
  if (from >= n || sorted[from]! >= value) return from;
  let lo = from; // sorted[lo] < value
  let step = 1;
  let hi = lo + step;
  while (hi < n && sorted[hi]! < value) {
    lo = hi;
    step *= 2;
    hi = lo + step;
  }
  // sorted[lo] < value <= sorted[hi] (or hi is past the end)
  lo += 1;
  hi = Math.min(hi, n);
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
