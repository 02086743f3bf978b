// The engine as the gateway sees it: typed jobs in, typed results out, on worker threads.
//
// Two lanes, each its own Piscina pool on the same file. Searches and other scans go to the
// query lane (Engine:Threads threads); the key check every request starts with, and the other
// point reads, go to a one-thread interactive lane. A burst of heavy searches then queues only
// behind itself: `GET /accounts` or an MCP `tools/list` never waits for someone's full-text scan.
import { Piscina } from 'piscina';
import type { Job, JobKind, JobResult } from '../shared/jobs.js';
import { openArchive } from './db/open.js';
import type { WorkerData } from './worker.js';

export interface EnginePoolOptions {
  dbPath: string;
  /** Threads of the query lane. */
  threads: number;
  /** Threads of the interactive lane; default 1. */
  interactiveThreads?: number;
  /** Tasks that may wait for a free thread (per lane) before run() rejects; default: unbounded. */
  maxQueue?: number;
  /** Let `fault` jobs crash a worker (tests of failure handling only). */
  faultInjection?: boolean;
}

export const LANE_NAMES = ['interactive', 'query'] as const;
export type Lane = (typeof LANE_NAMES)[number];

/** One lane as metrics read it at scrape time; times are milliseconds. */
export interface LaneStats {
  threads: number;
  busyThreads: number;
  queueSize: number;
  completed: number;
  /** Since the lane started. */
  durationMs: number;
  /** Percentiles of run and queue-wait time over the lane's lifetime (Piscina's histograms). */
  runTime: { mean: number; p50: number; p90: number; p99: number };
  waitTime: { mean: number; p50: number; p90: number; p99: number };
}

/** Every job kind names its lane; a new kind that forgets to is a compile error. */
const LANES: Record<JobKind, Lane> = {
  authenticate: 'interactive',
  sessionUser: 'interactive',
  accounts: 'interactive',
  detail: 'interactive',
  attachment: 'interactive',
  accessLog: 'interactive',
  listKeysFor: 'interactive',
  createKeyFor: 'interactive',
  revokeKeyAs: 'interactive',
  search: 'query',
  folders: 'query',
  stats: 'query',
  attachmentChunk: 'query',
  login: 'query', // scrypt: deliberately slow, so it stays off the interactive lane
  fault: 'query',
  ping: 'interactive', // readiness sends it to every lane with ping(lane)
};

export class EnginePool {
  readonly #lanes: Record<Lane, Piscina>;
  #closed = false;

  constructor(options: EnginePoolOptions) {
    // Create and migrate the file once, here, so the workers never race to do it.
    openArchive(options.dbPath).close();
    const workerData: WorkerData = { dbPath: options.dbPath, faultInjection: options.faultInjection ?? false };
    const lane = (threads: number) =>
      new Piscina({
        filename: new URL('./worker.js', import.meta.url).href,
        minThreads: threads,
        maxThreads: threads,
        idleTimeout: Number.POSITIVE_INFINITY,
        workerData,
        ...(options.maxQueue !== undefined ? { maxQueue: options.maxQueue } : {}),
      });
    this.#lanes = { interactive: lane(options.interactiveThreads ?? 1), query: lane(options.threads) };
  }

  run<K extends JobKind>(job: Job<K>): Promise<JobResult<K>> {
    return this.#lanes[LANES[job.kind]].run(job) as Promise<JobResult<K>>;
  }

  /** Threads of the query lane. */
  get threads(): number {
    return this.#lanes.query.threads.length;
  }

  /** Runs the readiness job on one lane's own threads. */
  ping(lane: Lane): Promise<JobResult<'ping'>> {
    return this.#lanes[lane].run({ kind: 'ping' }) as Promise<JobResult<'ping'>>;
  }

  /** True once close() was called (Piscina itself would start new threads for a later run). */
  get closed(): boolean {
    return this.#closed;
  }

  stats(lane: Lane): LaneStats {
    const pool = this.#lanes[lane];
    const summary = ({ mean, p50, p90, p99 }: LaneStats['runTime']) => ({ mean, p50, p90, p99 });
    return {
      threads: pool.threads.length,
      busyThreads: pool.threads.length - pool.idleThreads,
      queueSize: pool.queueSize,
      completed: pool.completed,
      durationMs: pool.duration,
      runTime: summary(pool.histogram.runTime),
      waitTime: summary(pool.histogram.waitTime),
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([this.#lanes.interactive.close(), this.#lanes.query.close()]);
  }
}
