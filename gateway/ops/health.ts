// Readiness: can this process serve archive requests right now? (docs/metrics.md)
//
// Each check answers `{ status, ... }`; the answer's status is the worst of them. A check that
// fails makes the process "unavailable" (503); one whose loss the service absorbs (Redis: rate
// limits fall back to per-process counters) makes it "degraded" (still 200). A PostgreSQL
// archive adds `postgres`: the primary down makes the process unavailable (every request needs
// it for the key check), a replica down only degraded (reads fall back to the primary).
import type { Redis } from 'ioredis';
import { performance } from 'node:perf_hooks';
import { type EnginePool, type Lane, LANE_NAMES } from '../../engine/index.js';
import type { JobResult, PostgresHealth, SearchIndexInfo } from '../../shared/jobs.js';

/** A lane that has not answered a ping in this time is reported as wedged. */
export const PING_TIMEOUT_MS = 2000;
/** A ping answered this recently is reused, so a flood of probes costs the pool nothing more. */
export const PING_REUSE_MS = 1000;

/**
 * `busy`: the ping waited longer than PING_TIMEOUT_MS, but the lane finished other jobs
 * meanwhile: it is saturated (and sheds what does not fit, ADR 10), not wedged. A process that
 * is merely busy stays in rotation: under a site-wide flood every process is busy, and taking
 * them all out would turn overload into an outage.
 */
export type LaneStatus = 'ok' | 'busy' | 'timeout' | 'error' | 'closed';
export interface LaneCheck {
  status: LaneStatus;
  /** Round trip of the ping, when it answered. */
  ms?: number;
}
export interface Readiness {
  status: 'ok' | 'degraded' | 'unavailable';
  checkedAt: string;
  checks: {
    pool: { status: 'ok' | 'busy' | 'unavailable'; lanes: Record<Lane, LaneCheck> };
    redis: { status: 'ok' | 'down' | 'not configured' };
    /** Present for a PostgreSQL archive (Database:Path is a postgres:// URL). */
    postgres?: PostgresCheck;
    /** Present with Engine:SearchMemoryMB > 0 (engine/search/bitsets; on PostgreSQL engine/postgres/search-snapshot.ts). */
    searchIndex?: SearchIndexInfo;
    /** Access-log entries waiting to be written; `full`: reads are refused until they are. */
    accessLog?: { status: 'ok' | 'backlog' | 'full'; pending: number; max: number };
  };
}

/**
 * `ok`: primary and every replica answer and are in rotation; `degraded`: the primary answers
 * but a replica does not (or is still out of rotation), so reads run on the others or the
 * primary; `down`: the primary does not answer; `unknown`: no lane answered its ping.
 */
export type PostgresCheck = { status: 'ok' | 'degraded' | 'down' | 'unknown' } & Partial<PostgresHealth>;

export function postgresCheck(health: PostgresHealth | undefined): PostgresCheck {
  if (!health) return { status: 'unknown' };
  const status =
    health.primary.status !== 'ok'
      ? 'down'
      : health.replicas.every((r) => r.status === 'ok' && r.inRotation)
        ? 'ok'
        : 'degraded';
  return { status, ...health };
}

/** Pings one lane; concurrent checks share one ping, so a wedged lane never queues more than one. */
class LaneProbe {
  #inFlight: Promise<LaneCheck> | undefined;
  #last: { at: number; check: LaneCheck } | undefined;
  /** The lane's completed-job count when the ping in flight was sent. */
  #completedAtPing = 0;
  /** What the last answered ping said (the PostgreSQL servers' state), and when. */
  lastResult: { at: number; result: JobResult<'ping'> } | undefined;

  constructor(
    private readonly engine: EnginePool,
    private readonly lane: Lane,
  ) {}

  async check(): Promise<LaneCheck> {
    if (this.engine.closed) return { status: 'closed' };
    const now = performance.now();
    if (this.#last && now - this.#last.at < PING_REUSE_MS) return this.#last.check;
    if (!this.#inFlight) {
      this.#completedAtPing = this.engine.stats(this.lane).completed;
      this.#inFlight = this.#ping().finally(() => (this.#inFlight = undefined));
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<LaneCheck>((resolve) => {
      timer = setTimeout(() => {
        const progressed = !this.engine.closed && this.engine.stats(this.lane).completed > this.#completedAtPing;
        resolve({ status: progressed ? 'busy' : 'timeout' });
      }, PING_TIMEOUT_MS);
    });
    try {
      return await Promise.race([this.#inFlight, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  async #ping(): Promise<LaneCheck> {
    const started = performance.now();
    let check: LaneCheck;
    try {
      const result = await this.engine.ping(this.lane);
      check = { status: 'ok', ms: Math.round((performance.now() - started) * 10) / 10 };
      this.lastResult = { at: performance.now(), result };
    } catch {
      check = { status: 'error' };
    }
    this.#last = { at: performance.now(), check };
    return check;
  }
}

type RedisStatus = Readiness['checks']['redis']['status'];

export class ReadinessCheck {
  readonly #probes: Record<Lane, LaneProbe>;
  #redisInFlight: Promise<RedisStatus> | undefined;
  #redisLast: { at: number; status: RedisStatus } | undefined;

  constructor(
    engine: EnginePool,
    private readonly redis: Redis | undefined,
    private readonly options: {
      postgres?: boolean;
      accessLog?: () => NonNullable<Readiness['checks']['accessLog']>;
    } = {},
  ) {
    this.#probes = Object.fromEntries(LANE_NAMES.map((lane) => [lane, new LaneProbe(engine, lane)])) as Record<
      Lane,
      LaneProbe
    >;
  }

  async run(): Promise<Readiness> {
    const [lanes, redis] = await Promise.all([this.#lanes(), this.#redis()]);
    const statuses = Object.values(lanes).map((l) => l.status);
    const pool = statuses.every((s) => s === 'ok')
      ? 'ok'
      : statuses.every((s) => s === 'ok' || s === 'busy')
        ? 'busy'
        : 'unavailable';
    const postgres = this.options.postgres ? this.#postgres() : undefined;
    // Informational: searches are exact with or without it, so it never changes the status.
    const searchIndex = this.#probes.query.lastResult?.result.searchIndex;
    const accessLog = this.options.accessLog?.();
    const status =
      pool === 'unavailable' || postgres?.status === 'down' || accessLog?.status === 'full'
        ? 'unavailable'
        : pool === 'busy' || redis === 'down' || postgres?.status === 'degraded' || accessLog?.status === 'backlog'
          ? 'degraded'
          : 'ok';
    return {
      status,
      checkedAt: new Date().toISOString(),
      checks: {
        pool: { status: pool, lanes },
        redis: { status: redis },
        ...(postgres ? { postgres } : {}),
        ...(searchIndex ? { searchIndex } : {}),
        ...(accessLog ? { accessLog } : {}),
      },
    };
  }

  /** The freshest report of the servers any lane's ping brought back (each lane has its own pools). */
  #postgres(): PostgresCheck {
    const latest = LANE_NAMES.map((lane) => this.#probes[lane].lastResult)
      .filter((r) => r !== undefined && performance.now() - r.at < PING_TIMEOUT_MS + PING_REUSE_MS)
      .sort((a, b) => b!.at - a!.at)[0];
    return postgresCheck(latest?.result.postgres);
  }

  async #lanes(): Promise<Record<Lane, LaneCheck>> {
    const checks = await Promise.all(LANE_NAMES.map((lane) => this.#probes[lane].check()));
    return Object.fromEntries(LANE_NAMES.map((lane, i) => [lane, checks[i]!])) as Record<Lane, LaneCheck>;
  }

  /** PING, bounded by the connection's command timeout; fails at once while disconnected. */
  #redis(): Promise<RedisStatus> {
    const redis = this.redis;
    if (!redis) return Promise.resolve('not configured');
    if (this.#redisLast && performance.now() - this.#redisLast.at < PING_REUSE_MS)
      return Promise.resolve(this.#redisLast.status);
    return (this.#redisInFlight ??= (async () => {
      let status: RedisStatus;
      try {
        status = (await redis.ping()) === 'PONG' ? 'ok' : 'down';
      } catch {
        status = 'down';
      }
      this.#redisLast = { at: performance.now(), status };
      this.#redisInFlight = undefined;
      return status;
    })());
  }
}
