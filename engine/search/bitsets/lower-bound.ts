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
