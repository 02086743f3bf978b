// The engine as the gateway sees it: typed jobs in, typed results out, on worker threads.
//
// Two lanes, each its own Piscina pool on the same file. Searches and other scans go to the
// query lane (Engine:Threads threads); key checks and the other point reads go to the
// interactive lane (one thread, two on PostgreSQL: defaultInteractiveThreads). A burst of heavy
// searches then queues only behind itself: `GET /accounts` or an MCP `tools/list` never waits
// for someone's full-text scan. A key check that travels with the job it admits (runAuthed) runs
// on that job's lane.
//
// Each lane holds at most its threads' worth of running jobs plus `maxQueue` waiting ones, and
// takes no job that would have to wait while the longest-waiting one has already waited
// `maxQueueWaitMs`; a job past either is refused at once with EngineOverloaded (docs/decisions.md,
// ADR 10), so a flood is shed instead of making every request wait until clients time out.
//
// The waiting jobs wait here, first come first served, and a lane's Piscina pool is handed at
// most its threads and one more (#handable). Piscina's own queue is not fair under a steady load:
// when a thread frees it starts the first waiting job and moves the next one to the back of the
// queue (all of ours are there: a job with an AbortSignal waits in its `skipQueue`), so with a
// few clients keeping a lane busy some jobs went to the back over and over and waited for
// seconds (docs/performance.md, "Reading one message on PostgreSQL").
import { Piscina } from 'piscina';
import type { AuthedJob, AuthedResult, Job, JobKind, JobResult, OwnedKind } from '../../shared/jobs.js';
import { storeKind } from '../archive.js';
import { openArchive } from '../sqlite/open.js';
import { type Lane } from '../../shared/jobs.js';
import { EngineOverloaded, EngineTimedOut, JobAbandoned } from '../../shared/errors.js';
import { INTERACTIVE_DETAIL_MAX_BYTES, isMovedToQueryLane } from '../rules/large-detail.js';
import { currentRequestSignal, TIMEOUT_REASON } from './job-budget.js';
import { Worker } from 'node:worker_threads';
import { createHash } from 'node:crypto';
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';
import { join, resolve } from 'node:path';
import type { BuilderData } from '../sqlite/index-builder.js';
import type { PgBuilderData } from '../postgres/search-snapshot-builder.js';
import { releaseLockOfThread } from '../search/bitsets/build-lock.js';
import { newPostCount } from '../search/bitsets/share.js';
import type { WorkerData } from './worker.js';
import { WarmUps } from './warm-up.js';
import { WORKER_EXEC_ARGV } from '../threads/worker-argv.js';

export type { Lane } from '../../shared/jobs.js';

export interface EnginePoolOptions {
  /** Database:Path: a SQLite file or a postgres:// URL. */
  dbPath: string;
  /** Database:TimeZone and Database:ReadReplicas, for a PostgreSQL archive. */
  timeZone?: string;
  readReplicas?: readonly string[];
  /** Threads of the query lane. */
  threads: number;
  /** Threads of the interactive lane; default: defaultInteractiveThreads. */
  interactiveThreads?: number;
  /** Jobs that may wait for a free thread, per lane, before run() refuses more; default: unbounded. */
  maxQueue?: Partial<Record<Lane, number>>;
  /**
   * Refuse a job that would have to wait while the longest-waiting job of its lane has already
   * waited this long (milliseconds); default: no such limit.
   */
  maxQueueWaitMs?: number;
  /** Let `fault` jobs crash or hold a worker (tests of failure handling only). */
  faultInjection?: boolean;
  /**
   * Memory for the shared search index (engine/search/bitsets; for PostgreSQL ADR 22), in
   * bytes; 0 turns it off. Default: 768 MiB.
   */
  searchMemoryBytes?: number;
  /** Engine:PhraseScanWords: how many words of a message's attachment text a phrase is matched in. */
  phraseScanWords?: number;
  /**
   * Engine:SearchIndexFile: where the search index is saved so a restart loads it (ADR 23).
   * Unset: beside a SQLite archive (`<archive>.index`), for PostgreSQL in the working directory's
   * `data/` (defaultPostgresIndexFile); '': not saved.
   */
  searchIndexFile?: string;
  /**
   * Where the index builder's lines go (loaded, saved, ignored and why), `warn` for the ones an
   * operator should act on; default: nowhere.
   */
  log?: (line: string, level?: 'warn') => void;
  /**
   * Engine:JobTimeoutSeconds in milliseconds: a job not finished this long after it was submitted
   * is cancelled (engine/pool/job-budget.ts) and rejects with EngineTimedOut. Default: no budget.
   */
  jobTimeoutMs?: number;
}

/** Per call: a budget other than the pool's, or the signal of the client the job works for. */
export interface RunOptions {
  budgetMs?: number;
  signal?: AbortSignal;
}

export const LANE_NAMES: readonly Lane[] = ['interactive', 'query'];

/** One lane as metrics read it at scrape time; times are milliseconds. */
export interface LaneStats {
  threads: number;
  busyThreads: number;
  queueSize: number;
  completed: number;
  /** Jobs refused because the lane was full (EngineOverloaded), since the lane started. */
  refused: number;
  /** Since the lane started. */
  durationMs: number;
  /**
   * Percentiles of run and queue-wait time over the lane's lifetime: run time is Piscina's
   * histogram, wait time the pool's own (jobs wait in the pool's queue, not in Piscina's).
   */
  runTime: { mean: number; p50: number; p90: number; p99: number };
  waitTime: { mean: number; p50: number; p90: number; p99: number };
}

/** Jobs that read a message's bodies, and are therefore sized before they run on the interactive lane. */
type SizedKind = 'detail' | 'detailJson' | 'messageView';

/**
 * What the pool does with a job kind, one row per kind (docs/architecture.md, "The life of an
 * engine job"); a new kind that forgets its row is a compile error.
 * - `lane`: where it runs. Front ends shed by kind (`admit`: REST routes and MCP tools name the
 *   kind their job is), so this row is the only place a kind's lane is said.
 * - `shed`: whether a full lane refuses it (`mayShed`): always, never (an access-log batch
 *   refused would be lost), or only the first chunk of a download (later ones belong to a
 *   download whose headers are sent).
 * - `keepIfAbandoned`: not cancelled when its client goes away: writes a user asked for
 *   (stopping a thread mid-transaction would roll it back, and the user may well reload to see
 *   it done) and the access log, whose batch is sent from whatever request happened to fill it.
 *   The access log has no budget either: a batch cancelled would be records lost.
 * - `sized`: a detail, read on the interactive lane only when its bodies are small
 *   (engine/rules/large-detail.ts).
 */
type JobKindPolicy<K extends JobKind> = {
  lane: Lane;
  shed?: 'never' | 'first chunk only';
  keepIfAbandoned?: true;
} & (K extends SizedKind ? { sized: true } : { sized?: never });

export const JOB_KINDS: { readonly [K in JobKind]: JobKindPolicy<K> } = {
  authenticate: { lane: 'interactive' },
  sessionUser: { lane: 'interactive' },
  endSessions: { lane: 'interactive', keepIfAbandoned: true },
  accounts: { lane: 'interactive' },
  detail: { lane: 'interactive', sized: true },
  detailJson: { lane: 'interactive', sized: true }, // sized as detail is
  messageView: { lane: 'interactive', sized: true }, // a detail and its HTML made safe, sized as detail is
  thread: { lane: 'interactive' }, // one conversation by index, bounded (MAX_THREAD_LENGTH)
  attachment: { lane: 'interactive' },
  attachmentText: { lane: 'interactive' },
  accessLog: { lane: 'interactive', shed: 'never', keepIfAbandoned: true },
  // pages of up to 2 x KEYS_PAGE_SIZE rows and their counts: never ahead of a key check
  listKeysFor: { lane: 'query' },
  createKeyFor: { lane: 'interactive', keepIfAbandoned: true },
  revokeKeyAs: { lane: 'interactive', keepIfAbandoned: true },
  search: { lane: 'query' },
  searchView: { lane: 'query' }, // a search, and the accounts and a folder tree beside it
  aggregate: { lane: 'query' }, // a scan of the matches, like a search's count
  folders: { lane: 'query' },
  stats: { lane: 'query' },
  attachmentChunk: { lane: 'query', shed: 'first chunk only' },
  // up to MESSAGE_COPY_BATCH_BYTES read and decompressed, or rebuilt: a scan's cost, not a point read's
  messageCopies: { lane: 'query', shed: 'first chunk only' },
  exportIds: { lane: 'query' }, // a search's count and every id it matches
  login: { lane: 'query', keepIfAbandoned: true }, // scrypt: deliberately slow, so it stays off the interactive lane
  fault: { lane: 'query' }, // unless the job names a lane
  ping: { lane: 'interactive' }, // readiness sends it to every lane with ping(lane)
  warmUp: { lane: 'query' }, // sent by the pool itself until each query thread has run one (warm-up.ts)
  oauthClient: { lane: 'interactive' },
  oauthRegister: { lane: 'interactive', keepIfAbandoned: true },
  oauthIssueCode: { lane: 'interactive', keepIfAbandoned: true },
  oauthToken: { lane: 'interactive', keepIfAbandoned: true },
  oauthRevoke: { lane: 'interactive', keepIfAbandoned: true },
};

/** Each kind's lane (JOB_KINDS). */
export const LANES = Object.fromEntries(
  Object.entries(JOB_KINDS).map(([kind, policy]) => [kind, policy.lane]),
) as Record<JobKind, Lane>;

const isSized = (kind: JobKind): kind is SizedKind => JOB_KINDS[kind].sized === true;

const laneOf = (job: Job): Lane => (job.kind === 'fault' ? (job.lane ?? 'query') : LANES[job.kind]);

/**
 * Jobs that are never refused, whatever the queue: an access-log batch refused would be lost,
 * and a chunk after the first belongs to a download whose headers are already sent, so refusing
 * it would cut the file short. The first chunk (of the file, or of a range) is read before the
 * headers and may be refused.
 */
function mayShed(job: Job): boolean {
  const shed = JOB_KINDS[job.kind].shed;
  if (shed === 'never') return false;
  if (job.kind === 'attachmentChunk' && shed === 'first chunk only') return job.first === true || job.seq === 0;
  if (job.kind === 'messageCopies' && shed === 'first chunk only') return job.first === true;
  // A test's hold stands for work already admitted, so it fills a lane exactly whatever else runs.
  if (job.kind === 'fault') return job.mode !== 'hold';
  return true;
}

/**
 * How long a running job whose client went away may go on before its thread is stopped: about
 * what a replacement thread costs its lane (#submit).
 */
export const ABANDONED_GRACE_MS = 250;

/** Waiting jobs per thread that are always accepted, however long the longest has waited. */
export const SHORT_QUEUE_PER_THREAD = 8;

const DEFAULT_SEARCH_MEMORY = 768 * 1024 * 1024;

/**
 * Threads of the interactive lane: one on SQLite, whose point reads run synchronously on their
 * thread in well under a millisecond; two on PostgreSQL, whose jobs spend most of their time
 * waiting for the server (a key check and a message detail are two round trips, an access-log
 * batch a transaction). With one thread every such wait held all the others: with 8 clients
 * reading messages it was busy most of the time while doing little, and each access-log batch
 * stopped every read behind it (docs/performance.md, "Reading one message on PostgreSQL"). Each
 * thread has its own connections (engine/postgres/store.ts).
 */
export function defaultInteractiveThreads(dbPath: string): number {
  return storeKind(dbPath) === 'postgres' ? 2 : 1;
}
let pools = 0;

/** Engine:SearchIndexFile resolved (EnginePoolOptions.searchIndexFile); undefined: not saved. */
export function savedIndexFile(dbPath: string, setting: string | undefined, cwd = process.cwd()): string | undefined {
  if (setting !== undefined) return setting === '' ? undefined : setting;
  if (storeKind(dbPath) === 'postgres') return defaultPostgresIndexFile(dbPath, cwd);
  return dbPath !== ':memory:' ? `${dbPath}.index` : undefined;
}

/**
 * Where a PostgreSQL archive's index is saved when Engine:SearchIndexFile is unset: a database
 * has no file to sit beside, so `data/` under the working directory, where the SQLite default
 * archive goes too. Named by the database and a hash of host, port and name, so two databases
 * never share a file (a file of another would only be ignored, and rebuilt over, at each start);
 * the name alone is kept readable, the hash tells apart the same name on two servers.
 */
export function defaultPostgresIndexFile(url: string, cwd = process.cwd()): string {
  const u = new URL(url);
  // A socket directory comes as a query parameter (`?host=/run/postgresql`); a host name is case-blind.
  const host = u.searchParams.get('host') || u.hostname.toLowerCase() || 'localhost';
  // Without a database in the URL, pg connects to the one named like the user.
  const database = decodeURIComponent(u.pathname.slice(1)) || decodeURIComponent(u.username);
  const hash = createHash('sha256')
    .update(`${host}:${u.port || '5432'}/${database}`)
    .digest('hex')
    .slice(0, 12);
  const name = database.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40);
  return join(resolve(cwd, 'data'), `postgres-${name}-${hash}.index`);
}

/** The search index's builder thread. It only reads; if it fails, searches are counted by SQL. */
function startBuilder(file: string, data: BuilderData | PgBuilderData): Worker {
  const worker = new Worker(new URL(file, import.meta.url), { workerData: data });
  worker.unref();
  worker.on('error', () => {}); // a failed build leaves searches on SQL, which is always exact
  return worker;
}

export class EnginePool {
  readonly #lanes: Record<Lane, Piscina>;
  #closed = false;
  /**
   * Running plus waiting jobs per lane, by when they were submitted (a Map keeps insertion
   * order): counted here so the bound is exact whatever Piscina's state, and timed so that the
   * queue's delay can be read.
   */
  readonly #inFlight: Record<Lane, Map<number, number>> = { interactive: new Map(), query: new Map() };
  /** Jobs waiting for a thread, in the order they came (#dispatch hands them over). */
  readonly #waiting: Record<Lane, Array<{ id: number; start: () => void }>> = { interactive: [], query: [] };
  /** Jobs handed to the lane's Piscina pool and not yet settled, in that order: at most #handable while open. */
  readonly #handed: Record<Lane, Set<number>> = { interactive: new Set(), query: new Set() };
  /** From submission to being handed over, in microseconds (stats().waitTime). */
  readonly #waitTimes: Record<Lane, RecordableHistogram> = { interactive: createHistogram(), query: createHistogram() };
  #nextJob = 0;
  readonly #threads: Record<Lane, number>;
  readonly #capacity: Record<Lane, number>;
  readonly #maxWaitMs: number;
  readonly #refused: Record<Lane, number> = { interactive: 0, query: 0 };
  readonly #budgetMs: number;
  #movedDetails = 0;
  /** Jobs cancelled, per lane and reason, since the pool started (metrics, tests). */
  readonly #cancelled: Record<Lane, { timedOut: number; abandoned: number }> = {
    interactive: { timedOut: 0, abandoned: 0 },
    query: { timedOut: 0, abandoned: 0 },
  };
  /** Builds the shared search index (engine/sqlite/index-builder.ts, engine/postgres/search-snapshot-builder.ts). */
  #builder: Worker | undefined;
  #searchIndexError: string | undefined;
  /** Each query thread's warm-up search, once the first index is posted. */
  readonly #warmUps: WarmUps;
  /** Where the builder saves the index (savedIndexFile), for the build lock it may leave behind. */
  readonly #indexFile: string | undefined;

  constructor(options: EnginePoolOptions) {
    // Create and migrate a SQLite file once, here, so the workers never race to do it. A
    // PostgreSQL archive is checked by prepareArchive() (engine/archive.ts) before the pool starts.
    if (storeKind(options.dbPath) === 'sqlite') openArchive(options.dbPath).close();
    const searchMemory = options.searchMemoryBytes ?? DEFAULT_SEARCH_MEMORY;
    // On PostgreSQL with read replicas, the index is built from the first replica and its
    // searches read that replica's snapshot (ADR 22), so reads stay off the primary.
    const channel = searchMemory > 0 ? `mag-search-${process.pid}-${++pools}` : undefined;
    const posted = channel ? newPostCount() : undefined;
    const lane = (name: Lane, threads: number) => {
      const workerData: WorkerData = {
        dbPath: options.dbPath,
        ...(options.timeZone !== undefined ? { timeZone: options.timeZone } : {}),
        ...(options.readReplicas !== undefined ? { readReplicas: options.readReplicas } : {}),
        faultInjection: options.faultInjection ?? false,
        lane: name,
        ...(channel ? { searchChannel: channel, searchPosted: posted! } : {}),
        ...(Number.isFinite(options.jobTimeoutMs) ? { statementTimeoutMs: options.jobTimeoutMs } : {}),
        ...(options.phraseScanWords !== undefined ? { phraseScanWords: options.phraseScanWords } : {}),
      };
      return new Piscina({
        filename: new URL('./worker.js', import.meta.url).href,
        execArgv: WORKER_EXEC_ARGV,
        minThreads: threads,
        maxThreads: threads,
        idleTimeout: Number.POSITIVE_INFINITY,
        workerData,
      });
    };
    const threads = {
      interactive: options.interactiveThreads ?? defaultInteractiveThreads(options.dbPath),
      query: options.threads,
    };
    this.#threads = threads;
    this.#maxWaitMs = options.maxQueueWaitMs ?? Number.POSITIVE_INFINITY;
    this.#budgetMs = options.jobTimeoutMs ?? Number.POSITIVE_INFINITY;
    this.#lanes = { interactive: lane('interactive', threads.interactive), query: lane('query', threads.query) };
    const indexFile = savedIndexFile(options.dbPath, options.searchIndexFile);
    this.#indexFile = channel ? indexFile : undefined;
    const saving = indexFile !== undefined ? { indexFile } : {};
    if (channel && storeKind(options.dbPath) === 'sqlite')
      this.#builder = startBuilder('../sqlite/index-builder.js', {
        dbPath: options.dbPath,
        channel,
        posted: posted!,
        maxBytes: searchMemory,
        ...saving,
      });
    else if (channel)
      this.#builder = startBuilder('../postgres/search-snapshot-builder.js', {
        url: options.dbPath,
        ...(options.readReplicas?.length ? { snapshotUrl: options.readReplicas[0]! } : {}),
        timeZone: options.timeZone ?? 'UTC',
        channel,
        posted: posted!,
        maxBytes: searchMemory,
        ...saving,
      });
    const query = this.#lanes.query;
    this.#warmUps = new WarmUps(
      {
        threads: () => query.threads.length,
        idle: () =>
          !this.#closed &&
          this.#waiting.query.length === 0 &&
          query.queueSize === 0 &&
          query.idleThreads === query.threads.length,
        // Outside admission and the lanes' counts: the pool's own work, a few ms per thread, once.
        send: () => query.run({ kind: 'warmUp' }) as Promise<JobResult<'warmUp'>>,
      },
      options.log,
    );
    this.#builder?.on('message', (m: { error?: string; log?: string; level?: 'warn'; built?: unknown }) => {
      if (m.error !== undefined) this.#searchIndexError = m.error;
      if (m.log !== undefined) options.log?.(m.log, m.level);
      // The builder says so after posting its snapshot, which each thread's channel then holds.
      if (m.built !== undefined) this.#warmUps.start();
    });
    // The bound is ours, not Piscina's maxQueue, which would refuse the jobs that must never be.
    const bound = (l: Lane) => threads[l] + (options.maxQueue?.[l] ?? Number.POSITIVE_INFINITY);
    this.#capacity = { interactive: bound('interactive'), query: bound('query') };
  }

  /** Rejects with EngineOverloaded, without starting the job, when its lane is full. */
  async run<K extends JobKind>(job: Job<K>, options: RunOptions = {}): Promise<JobResult<K>> {
    if (isSized(job.kind) && laneOf(job as Job) === 'interactive') {
      const sized = { ...(job as Job<SizedKind>), interactiveMaxBytes: INTERACTIVE_DETAIL_MAX_BYTES };
      const out = await this.#submit(sized, 'interactive', true, options);
      if (!isMovedToQueryLane(out)) return out as JobResult<K>;
      return (await this.#moved(job as Job<SizedKind>, options)) as JobResult<K>;
    }
    return this.#submit(job as Job, laneOf(job as Job), mayShed(job as Job), options) as Promise<JobResult<K>>;
  }

  /** A detail too large for the interactive lane, read again on the query lane (engine/rules/large-detail.ts). */
  #moved(job: Job<SizedKind>, options: RunOptions): Promise<unknown> {
    this.#movedDetails++;
    const { interactiveMaxBytes: _limit, ...plain } = job;
    return this.#submit(plain, 'query', true, options);
  }

  /** Detail jobs moved from the interactive lane to the query lane for their size, since the pool started. */
  get movedDetails(): number {
    return this.#movedDetails;
  }

  /**
   * A key check and the job it admits, in one crossing (AuthedJob, shared/jobs.ts): on that
   * job's lane, and refused with EngineOverloaded, unstarted, when that job would be.
   */
  async runAuthed<K extends OwnedKind>(job: AuthedJob<K>): Promise<AuthedResult<K>> {
    const lane = LANES[job.job.kind];
    const sized =
      isSized(job.job.kind) && lane === 'interactive'
        ? { ...job, job: { ...job.job, interactiveMaxBytes: INTERACTIVE_DETAIL_MAX_BYTES } }
        : job;
    const out = (await this.#submit(sized, lane, true, {})) as AuthedResult<K>;
    if ('error' in out) restored(out.error);
    if ('result' in out && out.auth.ok && isMovedToQueryLane(out.result)) {
      const detail = { ...(job.job as unknown as Job<SizedKind>), principal: out.auth.principal };
      return { ...out, result: (await this.#moved(detail, {})) as JobResult<K> };
    }
    return out;
  }

  #submit(job: Job | AuthedJob, lane: Lane, shed: boolean, options: RunOptions): Promise<unknown> {
    const kind = job.kind === 'authed' ? job.job.kind : job.kind;
    const client = JOB_KINDS[kind].keepIfAbandoned ? undefined : (options.signal ?? currentRequestSignal());
    if (client?.aborted) {
      this.#cancelled[lane].abandoned++;
      return Promise.reject(new JobAbandoned());
    }
    if (shed && this.#full(lane)) {
      this.#refused[lane]++;
      return Promise.reject(new EngineOverloaded(lane));
    }
    const id = this.#nextJob++;
    const inFlight = this.#inFlight[lane];
    const submitted = performance.now();
    inFlight.set(id, submitted);
    // A test's hold stands for admitted work of any length; a test that means to time it gives a budget.
    const unbounded = kind === 'accessLog' || (job.kind === 'fault' && job.mode === 'hold');
    const budgetMs = options.budgetMs ?? (unbounded ? Number.POSITIVE_INFINITY : this.#budgetMs);
    // Piscina takes an aborted job off the queue, or terminates the thread running it and starts
    // another: the lane keeps its threads either way.
    const cancel = new AbortController();
    const timer = Number.isFinite(budgetMs) ? setTimeout(() => cancel.abort(TIMEOUT_REASON), budgetMs) : undefined;
    timer?.unref();
    // A job still waiting leaves the queue at once. A running one is let finish for a while
    // first: stopping it costs its lane a thread until Piscina has started another (about 200 ms
    // on a 2-vCPU VM, measured), and most jobs, and every interactive one, end long before that.
    // Stopping them at once let any client that hung up early, with any token, keep the
    // interactive lane's one thread restarting, and everyone's key checks waiting on it.
    let grace: NodeJS.Timeout | undefined;
    const gone = () => {
      if (!this.#running(lane, id)) return cancel.abort(new JobAbandoned());
      grace = setTimeout(() => cancel.abort(new JobAbandoned()), ABANDONED_GRACE_MS);
      grace.unref();
    };
    client?.addEventListener('abort', gone, { once: true });
    const ran = this.#inTurn(
      lane,
      id,
      () => {
        this.#waitTimes[lane].record(Math.max(1, Math.round((performance.now() - submitted) * 1000)));
        // Aborted once handed over, Piscina takes it off its queue or stops its thread.
        return this.#lanes[lane].run(job, { signal: cancel.signal }) as Promise<unknown>;
      },
      cancel.signal,
    );
    return ran
      .catch((err: unknown) => {
        if (cancel.signal.aborted && (err as { name?: unknown } | null)?.name === 'AbortError') {
          const timedOut = cancel.signal.reason === TIMEOUT_REASON;
          this.#cancelled[lane][timedOut ? 'timedOut' : 'abandoned']++;
          throw timedOut ? new EngineTimedOut(budgetMs) : new JobAbandoned();
        }
        return restoreError(err);
      })
      .finally(() => {
        clearTimeout(timer);
        clearTimeout(grace);
        client?.removeEventListener('abort', gone);
        inFlight.delete(id);
        if (lane === 'query') this.#warmUps.poke();
      });
  }

  /**
   * Calls `hand` (which gives the job to the lane's Piscina pool) once the lane has a thread for
   * it, after every job asked before it (#dispatch); settles as that does. `cancel` takes a job
   * still waiting out of the queue, rejected with an AbortError as Piscina rejects one.
   */
  #inTurn(lane: Lane, id: number, hand: () => Promise<unknown>, cancel?: AbortSignal): Promise<unknown> {
    const handed = this.#handed[lane];
    const waiting = this.#waiting[lane];
    return new Promise<unknown>((resolve, reject) => {
      const start = () => {
        handed.add(id);
        hand()
          .finally(() => {
            handed.delete(id);
            this.#dispatch(lane);
          })
          .then(resolve, reject);
      };
      if (waiting.length === 0 && (handed.size < this.#handable(lane) || this.#closed)) return start();
      const entry = { id, start };
      waiting.push(entry);
      cancel?.addEventListener(
        'abort',
        () => {
          const at = waiting.indexOf(entry);
          if (at === -1) return; // handed over meanwhile
          waiting.splice(at, 1);
          reject(Object.assign(new Error('The job left the queue.'), { name: 'AbortError' }));
        },
        { once: true },
      );
    });
  }

  /** Hands waiting jobs to the lane's threads in the order they came, one per free thread (all once closing). */
  #dispatch(lane: Lane): void {
    const waiting = this.#waiting[lane];
    while (waiting.length > 0 && (this.#handed[lane].size < this.#handable(lane) || this.#closed))
      waiting.shift()!.start();
  }

  /**
   * Jobs a lane's Piscina pool may hold: its threads and one waiting. Piscina starts a waiting job
   * the moment a thread frees, before it answers the job that ended; the pool's own hand-over
   * comes a moment later, when the thread has gone to sleep, and waking it again cost a quarter
   * of the rate of sub-millisecond jobs (SQLite's point reads). One waiting job is never
   * reordered: Piscina sends a job to the back only when another waits beside it.
   */
  #handable(lane: Lane): number {
    return this.#threads[lane] + 1;
  }

  /**
   * Whether a job has a thread: it is one of the first jobs handed to the lane's Piscina pool, as
   * many as the lane has threads (Piscina starts what it holds in the order handed: #handable).
   * (While a stopped thread is being replaced the lane has one fewer: a job handed over meanwhile
   * counts as running and leaves after the grace instead of at once.)
   */
  #running(lane: Lane, id: number): boolean {
    let ahead = 0;
    for (const handed of this.#handed[lane]) {
      if (handed === id) return true;
      if (++ahead >= this.#threads[lane]) return false;
    }
    return false;
  }

  /** Thread ids of a lane's workers now (a stopped thread's replacement has a new one). */
  threadIds(lane: Lane): number[] {
    return this.#lanes[lane].threads.map((t) => t.threadId);
  }

  /** Jobs cancelled on a lane since the pool started: past their budget, or left by their client. */
  cancelled(lane: Lane): { timedOut: number; abandoned: number } {
    return { ...this.#cancelled[lane] };
  }

  /** Jobs of a lane submitted and not yet settled (running plus waiting). */
  inFlight(lane: Lane): number {
    return this.#inFlight[lane].size;
  }

  /**
   * Throws EngineOverloaded when a job of this kind would be refused now, so a front end can
   * shed a request before spending more work on it. The job itself may still be refused later,
   * when the lane fills in between.
   */
  admit(kind: JobKind): void {
    const lane = LANES[kind];
    if (this.#full(lane)) {
      this.#refused[lane]++;
      throw new EngineOverloaded(lane);
    }
  }

  /**
   * A new job would not start soon: the lane holds its threads plus its whole queue, or the
   * queue is longer than SHORT_QUEUE_PER_THREAD per thread and its longest-waiting job has
   * already waited maxQueueWaitMs. A count alone cannot tell a queue of sub-millisecond reads
   * from one of multi-second scans; the wait can, so a burst of cheap searches is queued while a
   * flood of costly ones is shed. A short queue is always accepted: a few clients running costly
   * searches back to back can only queue that many, so they are served, slowly, not refused.
   */
  #full(lane: Lane): boolean {
    const inFlight = this.#inFlight[lane];
    if (inFlight.size >= this.#capacity[lane]) return true;
    const threads = this.#threads[lane];
    if (inFlight.size < threads * (1 + SHORT_QUEUE_PER_THREAD) || !Number.isFinite(this.#maxWaitMs)) return false;
    // Jobs start in the order they came: the first not running has waited longest.
    for (const [id, submitted] of inFlight) {
      if (!this.#running(lane, id)) return performance.now() - submitted > this.#maxWaitMs;
    }
    return false;
  }

  /** The last error the search index's builder reported (it keeps trying; searches use SQL meanwhile). */
  get searchIndexError(): string | undefined {
    return this.#searchIndexError;
  }

  /** Threads of the query lane. */
  get threads(): number {
    return this.#lanes.query.threads.length;
  }

  /** Runs the readiness job on one lane's own threads, in its turn. */
  ping(lane: Lane): Promise<JobResult<'ping'>> {
    // In turn, behind the jobs waiting: a lane whose queue keeps a ping waiting is busy (readiness).
    const ping = () => this.#lanes[lane].run({ kind: 'ping' }) as Promise<unknown>;
    return (this.#inTurn(lane, this.#nextJob++, ping) as Promise<JobResult<'ping'>>).catch(restoreError).finally(() => {
      if (lane === 'query') this.#warmUps.poke();
    });
  }

  /** True once close() was called (Piscina itself would start new threads for a later run). */
  get closed(): boolean {
    return this.#closed;
  }

  stats(lane: Lane): LaneStats {
    const pool = this.#lanes[lane];
    const summary = ({ mean, p50, p90, p99 }: LaneStats['runTime']) => ({ mean, p50, p90, p99 });
    const waits = this.#waitTimes[lane];
    const ms = (us: number) => us / 1000;
    return {
      threads: pool.threads.length,
      busyThreads: pool.threads.length - pool.idleThreads,
      queueSize: this.#waiting[lane].length + pool.queueSize,
      completed: pool.completed,
      refused: this.#refused[lane],
      durationMs: pool.duration,
      runTime: summary(pool.histogram.runTime),
      waitTime: {
        mean: ms(waits.mean),
        p50: ms(waits.percentile(50)),
        p90: ms(waits.percentile(90)),
        p99: ms(waits.percentile(99)),
      },
    };
  }

  /**
   * Settles once each query thread has run its warm-up search (engine/pool/warm-up.ts), with the
   * word searched; undefined when none could be (no index, or the pool closed first).
   */
  get warmedUp(): Promise<string | undefined> {
    return this.#warmUps.finished;
  }

  async close(): Promise<void> {
    this.#closed = true;
    // What waits is handed over, so that Piscina's close lets it finish as it did before.
    for (const lane of LANE_NAMES) this.#dispatch(lane);
    this.#warmUps.stop();
    const builderThread = this.#builder?.threadId;
    await Promise.all([this.#lanes.interactive.close(), this.#lanes.query.close(), this.#builder?.terminate()]);
    if (this.#indexFile !== undefined && builderThread !== undefined)
      releaseLockOfThread(this.#indexFile, builderThread);
  }
}

/**
 * An error from a worker thread (thrown, or an AuthedResult's `error`) with the name and code it
 * had there (engine/pool/worker.ts carries them in `cause`, which survives the structured clone): the
 * gateway tells ArchiveUnavailable (503, Retry-After) from a fault (500) by that code.
 */
function restoreError(err: unknown): never {
  throw restored(err);
}

function restored(err: unknown): unknown {
  const cause = (err as { cause?: { portableError?: unknown; name?: unknown; code?: unknown } } | null)?.cause;
  if (err instanceof Error && cause?.portableError === true) {
    if (typeof cause.name === 'string') err.name = cause.name;
    if (typeof cause.code === 'string') Object.assign(err, { code: cause.code });
    delete (err as { cause?: unknown }).cause;
  }
  return err;
}
