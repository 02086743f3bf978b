// Fixed-window rate limits (SPEC.md, “Limits”), one policy per front end.
//
// Which partition a request is charged to is admission's decision (admission.ts). With
// Redis:Url set, counters live in Redis and every process of a cluster shares one budget; when
// Redis is unreachable each process falls back to its own in-memory window, logs that once,
// and goes back to Redis as soon as it answers again. The in-memory store (memory-windows.ts)
// holds at most MEMORY_PARTITION_CAP partitions and, when full, forgets the cheapest one rather
// than refusing a new client.
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { MemoryWindows } from './memory-windows.js';
import { Problem } from './problem.js';

const WINDOW_SECONDS = 60;
/** A Redis command that has not answered in this time has failed (a hung or unreachable server). */
export const REDIS_COMMAND_TIMEOUT_MS = 1000;
/** After a Redis failure, requests go straight to the in-memory window for this long. */
export const REDIS_RETRY_AFTER_MS = 2000;
/** Partitions the in-memory store holds at most; past it, the cheapest to forget is evicted. */
export const MEMORY_PARTITION_CAP = 50_000;

export interface RateLimitPolicy {
  /** Also the Redis key prefix: `Api` and `Mcp` never share a budget. */
  name:
    | 'Api'
    | 'Mcp'
    | 'McpFree'
    | 'AuthFailIp'
    | 'LoginUser'
    | 'LoginUserAll'
    | 'LoginIp'
    | 'OAuthRegister'
    | 'OAuthMetadataFetch'
    | 'OAuthRevoke'
    | 'WebReading';
  pointsPerMinute: number;
}

export class RateLimiter {
  readonly #policy: RateLimitPolicy;
  readonly #redis: RateLimiterRedis | undefined;
  readonly #memory: MemoryWindows;
  readonly #logger: Logger;
  #usingFallback = false;
  #rejected = 0;
  /** Until then, do not ask Redis: it just failed, and each attempt can cost a command timeout. */
  #skipRedisUntil = 0;

  constructor(policy: RateLimitPolicy, logger: Logger, redis?: Redis, cap = MEMORY_PARTITION_CAP) {
    this.#policy = policy;
    this.#logger = logger;
    this.#memory = new MemoryWindows(policy.pointsPerMinute, WINDOW_SECONDS * 1000, cap);
    this.#redis = redis
      ? new RateLimiterRedis({
          points: policy.pointsPerMinute,
          duration: WINDOW_SECONDS,
          keyPrefix: `rl:${policy.name}`,
          storeClient: redis,
          rejectIfRedisNotReady: true,
        })
      : undefined;
  }

  get policy(): RateLimitPolicy['name'] {
    return this.#policy.name;
  }

  /** Requests refused with a 429 since start; metrics read it at scrape time. */
  get rejected(): number {
    return this.#rejected;
  }

  /** Partitions the in-memory store holds (for tests and metrics). */
  get memoryPartitions(): number {
    return this.#memory.size;
  }

  /** Spends one point; resolves to the window's state, or rejects with a 429 Problem. */
  async consume(partition: string): Promise<RateLimiterRes> {
    try {
      return await this.#call(
        () => this.#redis!.consume(partition),
        () => this.#memory.consume(partition),
      );
    } catch (err) {
      throw err instanceof RateLimiterRes ? this.#tooMany(err) : err;
    }
  }

  /** Rejects with a 429 Problem when the partition has spent its budget; spends nothing. */
  async check(partition: string): Promise<void> {
    const res = await this.#peek(partition);
    if (res && res.consumedPoints >= this.#policy.pointsPerMinute) {
      throw this.#tooMany(new RateLimiterRes(0, res.msBeforeNext, res.consumedPoints));
    }
  }

  /** True when the partition has spent its budget in this window; spends nothing. */
  async spent(partition: string): Promise<boolean> {
    const res = await this.#peek(partition);
    return res !== null && res.consumedPoints >= this.#policy.pointsPerMinute;
  }

  /** The partition's window, or null before its first point; neither spends nor tracks it. */
  #peek(partition: string): Promise<RateLimiterRes | null> {
    return this.#call(
      () => this.#redis!.get(partition),
      () => this.#memory.get(partition),
    );
  }

  /**
   * Runs one limiter operation on Redis when it is configured and answering, else on this
   * process's in-memory windows. A RateLimiterRes rejection (budget spent) passes through.
   */
  async #call<T>(onRedis: () => Promise<T>, inMemory: () => T): Promise<T> {
    if (!this.#redis || Date.now() < this.#skipRedisUntil) return inMemory();
    try {
      const out = await onRedis();
      this.#backOnRedis();
      return out;
    } catch (err) {
      if (err instanceof RateLimiterRes) {
        this.#backOnRedis();
        throw err;
      }
      // Redis failed: serve from this process's own window instead of failing the request.
      this.#skipRedisUntil = Date.now() + REDIS_RETRY_AFTER_MS;
      if (!this.#usingFallback) {
        this.#usingFallback = true;
        this.#logger.warn(
          { policy: this.#policy.name, err: (err as Error).message },
          'rate limiter: Redis unreachable, using per-process limits',
        );
      }
      return inMemory();
    }
  }

  headers(res: RateLimiterRes): Record<string, string> {
    return {
      'RateLimit-Limit': String(this.#policy.pointsPerMinute),
      'RateLimit-Remaining': String(Math.max(0, res.remainingPoints)),
      'RateLimit-Reset': String(Math.max(0, Math.ceil(res.msBeforeNext / 1000))),
    };
  }

  #backOnRedis(): void {
    if (this.#usingFallback) {
      this.#usingFallback = false;
      this.#logger.info({ policy: this.#policy.name }, 'rate limiter: Redis is back, sharing limits again');
    }
  }

  #tooMany(res: RateLimiterRes): Problem {
    this.#rejected++;
    const retryAfter = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
    return new Problem(
      429,
      `Rate limit of ${this.#policy.pointsPerMinute} requests per minute exceeded; retry in ${retryAfter} s.`,
      { ...this.headers(res), 'Retry-After': String(retryAfter) },
    );
  }
}

/** One Redis connection for every policy of this process; fails fast while Redis is down. */
export function connectRedis(url: string, logger: Logger): Redis {
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    // Without it, a Redis that stops answering (paused, overloaded, cut off without a reset)
    // holds every request that consults the rate limiter for as long as the socket stays open.
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  });
  let down = false;
  client.on('error', (err: Error) => {
    if (!down) logger.warn({ err: err.message }, 'Redis connection error');
    down = true;
  });
  client.on('ready', () => {
    if (down) logger.info('Redis connection restored');
    down = false;
  });
  return client;
}
