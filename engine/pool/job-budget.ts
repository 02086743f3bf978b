// Every engine job runs within a time budget (Engine:JobTimeoutSeconds) and is cancelled when
// the client it works for has gone away. A job still waiting is taken off its lane's queue; one
// already running is stopped by terminating its worker thread (Piscina replaces it): a thread
// inside a synchronous better-sqlite3 query cannot be interrupted any other way. On PostgreSQL
// the server's statement_timeout, set to the same budget, ends the query a dropped connection
// leaves running (engine/postgres/connect.ts).
//
// The gateway marks the work it does for one request with that request's AbortSignal
// (withRequestSignal); the pool picks it up for every job submitted within, so no front end has
// to pass it through each call.
import { AsyncLocalStorage } from 'node:async_hooks';

/** What a client is told to wait after a job ran out of time. */
export const TIMED_OUT_RETRY_SECONDS = 5;

/** A job ran past its budget and was stopped: answered 503 with Retry-After, never a 500. */
export class EngineTimedOut extends Error {
  override name = 'EngineTimedOut';
  readonly retryAfterSeconds = TIMED_OUT_RETRY_SECONDS;
  constructor(readonly budgetMs: number) {
    super(`The job ran longer than its budget of ${budgetMs} ms and was stopped.`);
  }
}

/** The job was cancelled because the client it worked for went away: nobody reads the answer. */
export class JobAbandoned extends Error {
  override name = 'JobAbandoned';
  constructor() {
    super('The client went away; its job was cancelled.');
  }
}

const requestSignal = new AsyncLocalStorage<AbortSignal>();

/** Runs `fn` with `signal` as the request signal of every job it submits. */
export function withRequestSignal<T>(signal: AbortSignal, fn: () => T): T {
  return requestSignal.run(signal, fn);
}

export function currentRequestSignal(): AbortSignal | undefined {
  return requestSignal.getStore();
}

/** Why a job's signal fired: its own budget, or the client's going away. */
export const TIMEOUT_REASON = Symbol('job budget');
