// Summary rows of messages as one exported snapshot has them, kept by a thread while that
// snapshot serves its searches. A row read in a snapshot never changes in it, so a page whose
// rows are all here needs no snapshot import at all: its round trip only reads the present.
// The newest messages (the first page of most searches sorted by date) come back often.
import type { PgContext } from './context.js';

/** Rows kept per thread; at about 300 bytes a row, a few MB. */
const MAX_ROWS = 20_000;

const kept = new WeakMap<PgContext, { token: string; rows: Map<number, unknown> }>();

/** The rows this thread holds for the snapshot `token` (empty after a new snapshot). */
export function snapshotRows<R>(ctx: PgContext, token: string): Map<number, R> {
  let entry = kept.get(ctx);
  if (!entry || entry.token !== token) kept.set(ctx, (entry = { token, rows: new Map() }));
  if (entry.rows.size > MAX_ROWS) entry.rows.clear();
  return entry.rows as Map<number, R>;
}
