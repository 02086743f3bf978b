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
