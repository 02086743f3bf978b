// Access-log entries are collected off the request path and written in batches by a worker.
// A failed write keeps its entries for the next attempt; close() drains everything, so a clean
// shutdown loses nothing. The entries kept are bounded (Server:AccessLogMaxBacklog): once that
// many wait, the service refuses reads (503) until writes succeed again, because every read must
// be recorded (docs/security.md, "Mail shaped by an attacker", item 10), and /readyz reports the backlog.
import type { Logger } from 'pino';
import type { EnginePool } from '../engine/index.js';
import type { AccessLogEntry } from '../shared/jobs.js';

export interface AccessLogOptions {
  /** Write as soon as this many entries wait. */
  maxBatch?: number;
  /** Otherwise write this long after the first waiting entry. */
  intervalMs?: number;
  /** Entries that may wait at most; past it reads are refused (full). Default 10,000. */
  maxBacklog?: number;
}

export const DEFAULT_ACCESS_LOG_BACKLOG = 10_000;

export class AccessLogWriter {
  readonly #engine: EnginePool;
  readonly #logger: Logger;
  readonly #maxBatch: number;
  readonly #intervalMs: number;
  readonly #maxBacklog: number;
  #pending: AccessLogEntry[] = [];
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> = Promise.resolve();
  #failedWrites = 0;
  /** Entries handed to a write that has not ended yet: still unrecorded. */
  #writingEntries = 0;

  constructor(engine: EnginePool, logger: Logger, options: AccessLogOptions = {}) {
    this.#engine = engine;
    this.#logger = logger;
    this.#maxBatch = options.maxBatch ?? 200;
    this.#intervalMs = options.intervalMs ?? 1000;
    this.#maxBacklog = options.maxBacklog ?? DEFAULT_ACCESS_LOG_BACKLOG;
  }

  /** True when the backlog has reached its bound: reads must be refused until it shrinks. */
  get full(): boolean {
    return this.#pending.length + this.#writingEntries >= this.#maxBacklog;
  }

  /** What /readyz shows: the entries waiting, the bound, and whether reads are refused. */
  get backlog(): { status: 'ok' | 'backlog' | 'full'; pending: number; max: number } {
    const pending = this.#pending.length + this.#writingEntries;
    return { status: this.full ? 'full' : pending > this.#maxBatch ? 'backlog' : 'ok', pending, max: this.#maxBacklog };
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
      this.#writingEntries += batch.length;
      this.#writing = this.#writing.then(async () => {
        try {
          await this.#engine.run({ kind: 'accessLog', entries: batch });
          this.#writingEntries -= batch.length;
        } catch (err) {
          this.#writingEntries -= batch.length;
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
