// The search a query thread runs once the first search index is posted, before any user's. A
// thread's first search paid for what no later one pays: its code's first, unoptimised run, its
// store's statements prepared, and the newest messages' rows read from disk. At 1,000,000
// messages that made the first search after a start take 24 ms (46 ms with the page cache
// dropped) where the next took 6 to 12 (docs/performance.md, "Cold start"); each PM2 reload
// handed that to a user. The pool sends this job to each query thread (engine/pool/warm-up.ts),
// and each store answers it with its own key lookup and search (engine/sqlite/handlers.ts,
// engine/postgres/handlers.ts) from this one query: the commonest word sorted by date, the
// request a first user most often makes and the one whose rows are the archive's newest. It warms
// the search, not the request around it: that is the gateway's own first search, sent once these
// are over (gateway/warm-up.ts).
import type { JobResult, Principal, SearchQuery } from '../../shared/jobs.js';
import type { Snapshot } from './bitsets/snapshot.js';

/**
 * Who the warm-up searches as: an administrator, so that it reads what the widest viewer reads.
 * No key has id 0 and the search job writes no access log (the gateway does), so it leaves no trace.
 */
export const WARM_UP_PRINCIPAL: Principal = { userId: 0, username: 'warm-up', isAdmin: true, keyId: 0, keyPrefix: '' };

/**
 * The key hash the warm-up looks up before it searches, as a user's first search looks up its key:
 * all zeros, which no key's SHA-256 is, so the lookup finds nothing and writes nothing.
 */
export const NO_KEY_HASH = '0'.repeat(64);

/** The warm-up's query on `snap`; undefined when the index keeps no word (an empty archive). */
function warmUpQuery(snap: Snapshot): SearchQuery | undefined {
  const word = snap.commonestWord();
  if (word === undefined) return undefined;
  return { q: word, page: 1, pageSize: 20, sortBy: 'sentDate', sortOrder: 'desc' };
}

/** Whether this thread has run its warm-up search (each thread has its own copy of this module). */
let warm = false;

/**
 * What a thread does with a warm-up job, the same on both stores: answer at once (it has warmed
 * already; its index keeps no word, so there is nothing to warm; or it holds no index yet, and
 * then, with no `thread` in the answer, a later round comes back), or run `query`, then
 * warmedUp(). `snap` is the index the thread holds, undefined when none is current.
 */
export function warmUpStep(
  thread: number,
  snap: Snapshot | undefined,
): { answer: JobResult<'warmUp'> } | { query: SearchQuery } {
  if (warm) return { answer: { word: null, thread } };
  if (!snap) return { answer: { word: null } };
  const query = warmUpQuery(snap);
  if (query) return { query };
  warm = true;
  return { answer: { word: null, thread } };
}

/** Called once the thread's warm-up search has run; its answer to the pool. */
export function warmedUp(
  query: SearchQuery,
  totalItems: number,
  startedMs: number,
  thread: number,
): JobResult<'warmUp'> {
  warm = true;
  return { word: query.q!, totalItems, ms: performance.now() - startedMs, thread };
}
