// Piscina worker entry. Each thread opens its own connection once and keeps its prepared
// statements on it (sqlite/statements.ts), so every query is compiled once per thread.
import { Piscina } from 'piscina';
import { isEncodedDetail } from '../rules/encoded-detail.js';
import { lowerThreadPriority } from '../threads/priority.js';
import { workerData } from 'node:worker_threads';
import {
  sessionAuth,
  type AuthedJob,
  type AuthedResult,
  type AuthResult,
  type Job,
  type JobKind,
  type JobResult,
  type OwnedKind,
} from '../../shared/jobs.js';
import { openStore } from '../archive.js';
import { mailSanitizerReady } from '../rules/mail-html.js';
import { type ArchiveStore } from '../store-contract.js';
import { setPhraseScanWords } from '../sqlite/attachment-phrase.js';

export interface WorkerData {
  /** Database:Path: a SQLite file or a postgres:// URL (engine/archive.ts chooses the store). */
  dbPath: string;
  timeZone?: string;
  readReplicas?: readonly string[];
  faultInjection?: boolean;
  lane?: 'interactive' | 'query';
  /** The pool's channel for the shared search index (engine/search/bitsets/share.ts), on either store. */
  searchChannel?: string;
  /** The pool's count of snapshots posted on that channel (share.ts newPostCount). */
  searchPosted?: Int32Array;
  /** Engine:JobTimeoutSeconds in milliseconds (PostgreSQL's statement_timeout). */
  statementTimeoutMs?: number;
  /** Engine:PhraseScanWords (engine/sqlite/attachment-phrase.ts). */
  phraseScanWords?: number;
}

/**
 * Query threads run at a lower CPU priority (nice 10), so when searches keep every core busy the
 * event loop and the interactive thread are still scheduled at once: cheap requests keep their
 * latency under a flood. Linux only, where a nice value belongs to one thread; elsewhere it
 * would lower the whole process.
 */
if ((workerData as WorkerData).lane === 'query') lowerThreadPriority();
const { phraseScanWords } = workerData as WorkerData;
if (phraseScanWords !== undefined) setPhraseScanWords(phraseScanWords);

let store: Promise<ArchiveStore> | undefined;

function connection(): Promise<ArchiveStore> {
  const data = workerData as WorkerData;
  store ??= openStore({
    path: data.dbPath,
    timeZone: data.timeZone,
    readReplicas: data.readReplicas,
    searchChannel: data.searchChannel,
    searchPosted: data.searchPosted,
    ...(data.statementTimeoutMs !== undefined ? { statementTimeoutMs: data.statementTimeoutMs } : {}),
  });
  // A store that failed to open is tried again by the next job, not kept as a failure.
  store.catch(() => (store = undefined));
  return store;
}

// Opened when the thread starts, not at its first job: opening is what subscribes the thread to
// the shared search index (a 'hello' the builder answers asynchronously), and a thread that
// subscribed only as its first search began answered that search by SQL, and its first /readyz
// with "building", though the index was long current. A failure here is retried by the first job.
void connection();

/**
 * Errors cross the thread boundary by structured clone, which keeps only what plain Errors
 * have: message, stack, a standard name, and `cause`; an own `code` property and a custom name
 * (ArchiveUnavailable) are dropped. Rethrow as an Error that keeps message and stack and
 * carries name and code in `cause` as a plain object, which the clone keeps; the pool puts
 * them back (restoreError in engine/pool/pool.ts), so the gateway recognises ArchiveUnavailable by
 * its code and logs what went wrong.
 */
function portable(err: unknown): Error {
  if (!(err instanceof Error)) return new Error(String(err));
  const code = (err as { code?: unknown }).code;
  const out = new Error(err.message, {
    cause: { portableError: true, name: err.name, ...(typeof code === 'string' ? { code } : {}) },
  });
  out.name = err.name;
  out.stack = err.stack ?? '';
  return out;
}

/**
 * An AuthedJob (shared/jobs.ts): the key check, then the job it admits as the key's principal.
 * Both are ordinary jobs of the store, so this holds for either store. A failing check, or an
 * error of the check itself, ends it; an error of the admitted job comes back beside the genuine
 * key's outcome, for the gateway to charge the key's budget before it answers with the error.
 */
async function authed(store: ArchiveStore, job: AuthedJob): Promise<AuthedResult> {
  const auth = await check(store, job);
  if (!auth.ok) return { auth };
  try {
    return { auth, result: await store.run({ ...job.job, principal: auth.principal } as Job<OwnedKind>) };
  } catch (err) {
    return { auth, error: portable(err) };
  }
}

/** The key's outcome, or a web session's: a session whose user is gone, inactive or re-passworded is refused. */
async function check(store: ArchiveStore, job: AuthedJob): Promise<AuthResult> {
  if (job.session === undefined) return store.run({ kind: 'authenticate', keyHash: job.keyHash ?? '', now: job.now });
  const user = await store.run({ kind: 'sessionUser', ...job.session });
  return sessionAuth(user);
}

export default async function run(job: Job | AuthedJob): Promise<unknown> {
  await mailSanitizerReady;
  if (job.kind !== 'authed') return movingDetail(await runJob(job));
  try {
    const out = await authed(await connection(), job);
    return 'result' in out ? movingDetail(out, out.result) : out;
  } catch (err) {
    throw portable(err);
  }
}

/**
 * `result`, set to move rather than copy the JSON bytes of an encoded detail (inside `result`, or
 * `result` itself) to the gateway thread: posting it then costs nothing per byte of the message.
 */
function movingDetail(result: unknown, inner: unknown = result): unknown {
  if (!isEncodedDetail(inner) || inner.json.byteLength !== inner.json.buffer.byteLength) return result;
  return Piscina.move({
    get [Piscina.transferableSymbol]() {
      return inner.json.buffer;
    },
    get [Piscina.valueSymbol]() {
      return result;
    },
  } as unknown as ArrayBuffer);
}

async function runJob<K extends JobKind>(job: Job<K>): Promise<JobResult<K>> {
  if (job.kind === 'fault' && (workerData as WorkerData).faultInjection) {
    const fault = job as Job<'fault'>;
    if (fault.mode === 'exit') process.exit(1); // ends this worker thread only
    if (fault.mode === 'hold') {
      // Blocks this thread, as a long query would, until released (or for `ms` at most).
      Atomics.wait(fault.release ?? new Int32Array(new SharedArrayBuffer(4)), 0, 0, fault.ms);
      return null as JobResult<K>;
    }
    throw new Error('injected fault');
  }
  let result: JobResult<K>;
  try {
    result = await (await connection()).run(job);
  } catch (err) {
    throw portable(err);
  }
  // Attachment chunks move to the gateway thread instead of being copied (flat memory on big
  // downloads). Both stores give each chunk its own ArrayBuffer, so moving it is safe.
  if (
    job.kind === 'attachmentChunk' &&
    result instanceof Uint8Array &&
    result.byteLength === result.buffer.byteLength
  ) {
    return Piscina.move(result) as unknown as JobResult<K>;
  }
  return result;
}
