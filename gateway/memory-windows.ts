// The in-memory store of the rate limits: one fixed window per partition, bounded in number.
//
// A store without a bound lets a flood of distinct clients (addresses, or anything else a
// partition is named by) grow it until the process runs out of memory. A bound that refuses new
// partitions once full is worse: a flood of clients seen once fills it and every client not yet
// seen is refused until the windows end (docs/security.md, item 1). So this store evicts instead, and
// evicts what is cheapest to forget, in two segments (a segmented LRU):
//
//   probation  partitions that have spent one point. Forgetting one gives its client at most
//              one request more. New partitions enter here; the oldest is evicted first.
//   protected  partitions that came back for a second point: the clients whose budgets matter.
//              Evicted (least recently used first) only when probation is empty, which takes
//              as many repeat clients in one window as the store's cap.
//
// A flood of one-off clients therefore only churns probation: every new client is admitted with
// a budget of its own, and the budgets of clients that repeat (including one that has spent its
// budget and is being refused) are kept. Eviction can only ever give a budget back, never take
// one away, so a full store never refuses anyone.
import { RateLimiterRes } from 'rate-limiter-flexible';

interface Window {
  consumed: number;
  /** Epoch milliseconds at which this window ends and the budget is whole again. */
  endsAt: number;
}

export class MemoryWindows {
  readonly #probation = new Map<string, Window>();
  readonly #protected = new Map<string, Window>();

  constructor(
    private readonly points: number,
    private readonly durationMs: number,
    private readonly cap: number,
  ) {}

  /** Partitions held now (both segments). */
  get size(): number {
    return this.#probation.size + this.#protected.size;
  }

  /** Spends one point of `key`'s window; returns its state, or throws it once the budget is spent. */
  consume(key: string, now = Date.now()): RateLimiterRes {
    let window = this.#protected.get(key);
    if (window) {
      // Most recently used last: Map keeps insertion order, so re-inserting moves it to the end.
      this.#protected.delete(key);
      this.#protected.set(key, window);
    } else if ((window = this.#probation.get(key))) {
      this.#probation.delete(key);
      this.#protected.set(key, window);
    } else {
      if (this.size >= this.cap) this.#evictOne();
      window = { consumed: 0, endsAt: now + this.durationMs };
      this.#probation.set(key, window);
    }
    if (now >= window.endsAt) {
      window.consumed = 0;
      window.endsAt = now + this.durationMs;
    }
    window.consumed++;
    const res = new RateLimiterRes(
      Math.max(0, this.points - window.consumed),
      window.endsAt - now,
      window.consumed,
      window.consumed === 1,
    );
    if (window.consumed > this.points) throw res;
    return res;
  }

  /** `key`'s window, or null when it has none running; neither spends a point nor adds `key`. */
  get(key: string, now = Date.now()): RateLimiterRes | null {
    const window = this.#protected.get(key) ?? this.#probation.get(key);
    if (!window || now >= window.endsAt) return null;
    return new RateLimiterRes(Math.max(0, this.points - window.consumed), window.endsAt - now, window.consumed, false);
  }

  #evictOne(): void {
    const segment = this.#probation.size > 0 ? this.#probation : this.#protected;
    const oldest = segment.keys().next();
    if (!oldest.done) segment.delete(oldest.value);
  }
}
