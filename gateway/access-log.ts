// Access-log entries are collected off the request path and written in batches by a worker.
// A failed write keeps its entries for the next attempt; close() drains everything, so a clean
// shutdown loses nothing.
import type { Logger } from 'pino';
import type { EnginePool } from '../engine/index.js';
import type { AccessLogEntry } from '../shared/jobs.js';

export interface AccessLogOptions {
  /** Write as soon as this many entries wait. */
  maxBatch?: number;
  /** Otherwise write this long after the first waiting entry. */
  intervalMs?: number;
}

export class AccessLogWriter {
  readonly #engine: EnginePool;
  readonly #logger: Logger;
  readonly #maxBatch: number;
  readonly #intervalMs: number;
  #pending: AccessLogEntry[] = [];
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> = Promise.resolve();
  #failedWrites = 0;

  constructor(engine: EnginePool, logger: Logger, options: AccessLogOptions = {}) {
    this.#engine = engine;
    this.#logger = logger;
    this.#maxBatch = options.maxBatch ?? 200;
    this.#intervalMs = options.intervalMs ?? 1000;
  }

  record(entry: AccessLogEntry): void {
    this.#pending.push(entry);
    if (this.#pending.length >= this.#maxBatch) void this.flush();
    else if (!this.#timer) {
      this.#timer = setTimeout(() => void this.flush(), this.#intervalMs);
      this.#timer.unref();
    }
  }

  get pending(): number {
    return this.#pending.length;
  }

  /** Batch writes that failed (their entries kept for a retry) since start; read by metrics. */
  get failedWrites(): number {
    return this.#failedWrites;
  }

  /** Writes what is waiting now; resolves when that write (and any before it) is done. */
  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const batch = this.#pending;
    this.#pending = [];
    if (batch.length > 0) {
      this.#writing = this.#writing.then(async () => {
        try {
          await this.#engine.run({ kind: 'accessLog', entries: batch });
        } catch (err) {
          this.#failedWrites++;
          this.#logger.error({ err, entries: batch.length }, 'access log write failed; will retry');
          this.#pending.unshift(...batch);
          if (!this.#timer) {
            this.#timer = setTimeout(() => void this.flush(), this.#intervalMs);
            this.#timer.unref();
          }
        }
      });
    }
    return this.#writing;
  }

  /** Drains every waiting entry; gives up only after repeated failures, and says so. */
  async close(): Promise<void> {
    for (let attempt = 0; attempt < 5 && this.#pending.length > 0; attempt++) await this.flush();
    await this.#writing;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pending.length > 0)
      this.#logger.error({ lost: this.#pending.length }, 'access log entries could not be written');
  }
}
