// The engine as the gateway sees it: typed jobs in, typed results out, on worker threads.
import { Piscina } from 'piscina';
import type { Job, JobKind, JobResult } from '../shared/jobs.js';
import { openArchive } from './db/open.js';
import type { WorkerData } from './worker.js';

export interface EnginePoolOptions {
  dbPath: string;
  threads: number;
  /** Tasks that may wait for a free thread before run() rejects; default: unbounded. */
  maxQueue?: number;
  /** Let `fault` jobs crash a worker (tests of failure handling only). */
  faultInjection?: boolean;
}

export class EnginePool {
  readonly #piscina: Piscina;

  constructor(options: EnginePoolOptions) {
    // Create and migrate the file once, here, so the workers never race to do it.
    openArchive(options.dbPath).close();
    const workerData: WorkerData = { dbPath: options.dbPath, faultInjection: options.faultInjection ?? false };
    this.#piscina = new Piscina({
      filename: new URL('./worker.js', import.meta.url).href,
      minThreads: options.threads,
      maxThreads: options.threads,
      idleTimeout: Number.POSITIVE_INFINITY,
      workerData,
      ...(options.maxQueue !== undefined ? { maxQueue: options.maxQueue } : {}),
    });
  }

  run<K extends JobKind>(job: Job<K>): Promise<JobResult<K>> {
    return this.#piscina.run(job) as Promise<JobResult<K>>;
  }

  get threads(): number {
    return this.#piscina.threads.length;
  }

  async close(): Promise<void> {
    await this.#piscina.close();
  }
}
