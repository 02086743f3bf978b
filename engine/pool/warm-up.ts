// Getting each query thread its warm-up search (engine/search/warm-up.ts). Piscina gives a job
// to whichever thread is idle; it cannot be told which thread to use. So the warm-ups were sent
// together, one per thread, and each idle thread took one. But a thread that was busy at that
// moment left its warm-up to another thread, and never ran one. Readiness pings every lane
// (gateway/ops/health.ts) and a PM2 reload brings searches at once, so this happened: two
// warm-ups on one thread, and the first search on the other still slow (docs/performance.md,
// "The first search after a start"). So a round is sent only when every thread of the lane is
// idle and nothing waits. Then Piscina puts the round's jobs on different threads. A thread
// that has run its warm-up answers another at once, without searching. Rounds go on until each
// thread has run one, and stop after a few at most.
import type { JobResult } from '../../shared/jobs.js';

/** Rounds sent at most. A round finds every thread idle, so one is enough unless a thread is replaced. */
export const WARM_UP_ROUNDS = 3;

export interface WarmUpLane {
  /** The lane's threads now, and whether all of them are idle with nothing waiting. */
  threads(): number;
  idle(): boolean;
  /** Sends one warm-up job. */
  send(): Promise<JobResult<'warmUp'>>;
}

export class WarmUps {
  readonly #lane: WarmUpLane;
  readonly #log: ((line: string) => void) | undefined;
  /** Threads that have run their warm-up search. */
  readonly #warmed = new Set<number>();
  #rounds = 0;
  #started = false;
  #sending = false;
  #done = false;
  /** The word the warm-ups searched, once the last round ended (undefined: none searched). */
  #word: string | undefined;
  readonly #finished: Promise<string | undefined>;
  #finish!: (word: string | undefined) => void;

  constructor(lane: WarmUpLane, log?: (line: string) => void) {
    this.#lane = lane;
    this.#log = log;
    this.#finished = new Promise((resolve) => (this.#finish = resolve));
  }

  /** Settles when the warm-ups are over, with the word they searched (undefined if none did). */
  get finished(): Promise<string | undefined> {
    return this.#finished;
  }

  /** No more rounds: the pool is closing, or they are done. */
  stop(): void {
    this.#done = true;
    this.#finish(this.#word);
  }

  /** Called when the first search index is posted. */
  start(): void {
    this.#started = true;
    this.poke();
  }

  /** Called when a job of the lane ends: the lane may now be idle. */
  poke(): void {
    if (!this.#started || this.#done || this.#sending || !this.#lane.idle()) return;
    if (this.#rounds++ >= WARM_UP_ROUNDS) return this.stop();
    this.#sending = true;
    // All sent in this tick, while every thread is idle: Piscina gives each its own thread.
    const round = Array.from({ length: this.#lane.threads() }, () => this.#one());
    void Promise.all(round).then(() => {
      this.#sending = false;
      if (this.#warmed.size >= this.#lane.threads()) this.stop();
      else this.poke();
    });
  }

  async #one(): Promise<void> {
    try {
      const r = await this.#lane.send();
      if (r.thread === undefined) return; // no index on that thread: it is not warmed
      this.#warmed.add(r.thread);
      if (r.word === null) return; // warmed already, or nothing to warm
      this.#word = r.word;
      this.#log?.(
        `search index: warm-up search of "${r.word}" (${r.totalItems} messages) in ${r.ms!.toFixed(1)} ms on thread ${r.thread}`,
      );
    } catch {
      // A pool closing, or a thread that failed: the first user's search is only slower.
    }
  }
}
