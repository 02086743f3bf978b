// Prometheus metrics of one gateway (docs/metrics.md lists them all).
//
// One Registry per gateway rather than prom-client's global one: tests start many gateways in
// one process, and each must count only its own traffic. What other parts of the gateway already
// count (pool, access log, rate limiters, Redis) is read when Prometheus scrapes, through
// collect() callbacks, so nothing on the request path does metrics work for them.
//
// Label values come only from fixed sets: route templates, HTTP methods, status codes, tool
// names, lane and policy names, failure reasons. Never a key, a key prefix, a user name, a
// query or a raw path.
import type { Redis } from 'ioredis';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { type EnginePool, LANE_NAMES } from '../../engine/index.js';
import type { AccessLogWriter } from '../access-log.js';
import { AUTH_FAILURE_REASONS, type AuthFailureReason } from '../auth.js';
import type { RateLimiter } from '../rate-limit.js';

export interface MetricSources {
  engine: EnginePool;
  accessLog: AccessLogWriter;
  /** Every rate-limit policy of this gateway. */
  limiters: readonly RateLimiter[];
  redis?: Redis;
}

/** Seconds; from a cached point read (a few ms) to a slow search or a large download. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const QUANTILES = [
  ['0.5', 'p50'],
  ['0.9', 'p90'],
  ['0.99', 'p99'],
] as const;

export class GatewayMetrics {
  readonly registry = new Registry();
  readonly #requests: Histogram<'method' | 'route' | 'status'>;
  readonly #toolCalls: Histogram<'tool' | 'status'>;
  readonly #authFailures: Counter<'reason'>;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    // Under PM2 cluster mode every process answers scrapes of the shared port with its own
    // numbers; this label tells their series apart (docs/metrics.md, "PM2 cluster mode").
    const instance = process.env.NODE_APP_INSTANCE;
    if (instance !== undefined) this.registry.setDefaultLabels({ pm2_instance: instance });
    collectDefaultMetrics({ register: this.registry });

    this.#requests = new Histogram({
      name: 'mail_archive_http_request_duration_seconds',
      help: 'HTTP requests by method, route template and status: time until the response was sent.',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.#toolCalls = new Histogram({
      name: 'mail_archive_mcp_tool_call_duration_seconds',
      help: 'MCP tools/call requests by tool name and HTTP status.',
      labelNames: ['tool', 'status'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.#authFailures = new Counter({
      name: 'mail_archive_auth_failures_total',
      help: 'API-key authentication failures (401) by reason.',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of AUTH_FAILURE_REASONS) this.#authFailures.inc({ reason }, 0);

    const { engine, accessLog, limiters, redis } = sources;
    new Counter({
      name: 'mail_archive_rate_limit_rejections_total',
      help: 'Requests refused with 429 by rate-limit policy.',
      labelNames: ['policy'],
      registers,
      collect() {
        this.reset();
        for (const limiter of limiters) this.inc({ policy: limiter.policy }, limiter.rejected);
      },
    });

    const perLane = (read: (lane: (typeof LANE_NAMES)[number]) => number) =>
      function (this: Gauge<'lane'> | Counter<'lane'>) {
        this.reset();
        if (engine.closed) return;
        for (const lane of LANE_NAMES) this.inc({ lane }, read(lane));
      };
    new Gauge({
      name: 'mail_archive_pool_threads',
      help: 'Worker threads per lane.',
      labelNames: ['lane'],
      registers,
      collect: perLane((lane) => engine.stats(lane).threads),
    });
    new Gauge({
      name: 'mail_archive_pool_busy_threads',
      help: 'Worker threads per lane running a job (or still starting) at scrape time.',
      labelNames: ['lane'],
      registers,
      collect: perLane((lane) => engine.stats(lane).busyThreads),
    });
    new Gauge({
      name: 'mail_archive_pool_queue_size',
      help: 'Jobs per lane waiting for a free thread at scrape time.',
      labelNames: ['lane'],
      registers,
      collect: perLane((lane) => engine.stats(lane).queueSize),
    });
    new Counter({
      name: 'mail_archive_pool_jobs_completed_total',
      help: 'Jobs per lane that finished (successfully or not).',
      labelNames: ['lane'],
      registers,
      collect: perLane((lane) => engine.stats(lane).completed),
    });
    new Counter({
      name: 'mail_archive_pool_jobs_refused_total',
      help: 'Jobs per lane refused because the lane was full (answered 503 with Retry-After).',
      labelNames: ['lane'],
      registers,
      collect: perLane((lane) => engine.stats(lane).refused),
    });
    new Counter({
      name: 'mail_archive_pool_busy_seconds_total',
      help: 'Thread time per lane spent running jobs; rate() divided by the threads is the utilisation.',
      labelNames: ['lane'],
      registers,
      collect: perLane((lane) => busyMs(engine, lane) / 1000),
    });
    new Gauge({
      name: 'mail_archive_pool_utilization',
      help: 'Share (0..1) of the lane thread time spent running jobs since the lane started.',
      labelNames: ['lane'],
      registers,
      collect: perLane((lane) => {
        const stats = engine.stats(lane);
        const capacity = stats.durationMs * stats.threads;
        return capacity > 0 ? Math.min(1, busyMs(engine, lane) / capacity) : 0;
      }),
    });
    for (const [kind, help] of [
      ['run', 'running'],
      ['wait', 'waiting in the queue'],
    ] as const) {
      new Gauge({
        name: `mail_archive_pool_job_${kind}_seconds`,
        help: `Percentiles of the time jobs spent ${help}, per lane, since the lane started.`,
        labelNames: ['lane', 'quantile'],
        registers,
        collect() {
          this.reset();
          if (engine.closed) return;
          for (const lane of LANE_NAMES) {
            const stats = engine.stats(lane);
            if (stats.completed === 0) continue; // an empty histogram has no percentiles
            const summary = kind === 'run' ? stats.runTime : stats.waitTime;
            for (const [quantile, key] of QUANTILES)
              if (Number.isFinite(summary[key])) this.set({ lane, quantile }, summary[key] / 1000);
          }
        },
      });
    }

    new Gauge({
      name: 'mail_archive_access_log_pending_entries',
      help: 'Access-log entries waiting to be written.',
      registers,
      collect() {
        this.set(accessLog.pending);
      },
    });
    new Counter({
      name: 'mail_archive_access_log_write_failures_total',
      help: 'Access-log batch writes that failed; their entries are kept and retried.',
      registers,
      collect() {
        this.reset();
        this.inc(accessLog.failedWrites);
      },
    });
    if (redis) {
      new Gauge({
        name: 'mail_archive_redis_connected',
        help: '1 while the Redis connection for shared rate limits is ready, else 0 (per-process limits).',
        registers,
        collect() {
          this.set(redis.status === 'ready' ? 1 : 0);
        },
      });
    }
  }

  observeRequest(labels: { method: string; route: string; status: number }, seconds: number): void {
    this.#requests.observe(labels, seconds);
  }

  observeToolCall(labels: { tool: string; status: number }, seconds: number): void {
    this.#toolCalls.observe(labels, seconds);
  }

  countAuthFailure(reason: AuthFailureReason): void {
    this.#authFailures.inc({ reason });
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/**
 * Thread time spent running jobs: Piscina's run-time mean times the jobs completed. Piscina's
 * own `utilization` is not used: in piscina 5.3 it divides seconds by milliseconds and so reads
 * a thousand times too low.
 */
function busyMs(engine: EnginePool, lane: (typeof LANE_NAMES)[number]): number {
  const stats = engine.stats(lane);
  const busy = stats.runTime.mean * stats.completed;
  return stats.completed > 0 && Number.isFinite(busy) ? busy : 0;
}
