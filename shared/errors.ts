// The project's error catalogue: every error class that crosses a module boundary, in one file.
// What each becomes at the front ends (HTTP status and problem type, MCP answer, CLI exit) is the
// table in docs/errors.md; gateway/problem.ts and gateway/mcp/tools.ts are where that happens.
//
// They live in shared/ because settings (shared/config.ts) and search input (shared/search-input.ts)
// throw them as well as the engine, and shared/ imports nothing of ours. Errors that cross the
// worker-thread boundary (structured clone keeps name, message and own properties, not the class)
// carry a `code` and are recognised by it: isInvalidInput, isArchiveUnavailable.
import type { Lane } from './jobs.js';

// --- Settings and input: the caller asked for something that cannot be ---

/** A setting is missing or malformed: start-up stops with its one-line message. */
export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(message: string) {
    // One line, whatever the parts it was built from (file names, JSON keys, parser messages).
    super(message.replace(/\s*[\r\n]+\s*/g, ' '));
  }
}

/** The code an InvalidInput keeps when it crosses the engine's thread boundary (engine/pool/worker.ts). */
const INVALID_INPUT = 'INVALID_INPUT';

/** A request parameter (or tool argument) that cannot be read: 400 naming `param`. */
export class InvalidInput extends Error {
  override name = 'InvalidInput';
  readonly code = INVALID_INPUT;
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(message);
  }
}

export const isInvalidInput = (err: unknown): err is Error =>
  err instanceof InvalidInput || (err as { code?: unknown } | null)?.code === INVALID_INPUT;

/** A `q` that has no reading (shared/query-language.ts); search input turns it into InvalidInput. */
export class QuerySyntaxError extends Error {
  override name = 'QuerySyntaxError';
}

// --- The archive ---

// Errors that mean "the operator asked for something that cannot be": the CLI prints the
// message as its one sentence; anything else is a bug and keeps its stack for the log.
export class StoreError extends Error {
  override name = 'StoreError';
}

/** The archive cannot be opened (no file at --db, not an archive, a newer schema): one line, exit 1. */
export class ArchiveOpenError extends Error {
  override name = 'ArchiveOpenError';
}

// The archive's database cannot be reached right now (a PostgreSQL server restarting, a network
// cut). Like EngineOverloaded, a temporary condition: the gateway answers 503 with Retry-After,
// and the next request tries again, so service resumes by itself once the database is back.
//
// It crosses the worker-thread boundary by structured clone, which keeps name, message and the
// `code` property (engine/pool/worker.ts), so the gateway recognises it by code, not by class.

export const ARCHIVE_UNAVAILABLE = 'ARCHIVE_UNAVAILABLE';

export class ArchiveUnavailable extends Error {
  override name = 'ArchiveUnavailable';
  readonly code = ARCHIVE_UNAVAILABLE;
  constructor() {
    super('The archive database cannot be reached right now.');
  }
}

export function isArchiveUnavailable(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === ARCHIVE_UNAVAILABLE;
}

// The PostgreSQL side index is far behind the archive (a first start on a Mail Archiver database,
// mail written while the service was away): a search would first index the rest, minutes at a
// million messages, and run into its time budget while the index builder thread does the same
// work. So it is answered at once: 503 with Retry-After and how far the build is. Crosses the
// worker-thread boundary by its code, like ArchiveUnavailable.

export const SEARCH_INDEX_BUILDING = 'SEARCH_INDEX_BUILDING';
/** Retry-After for SearchIndexBuilding: a build of a million messages takes minutes. */
export const SEARCH_INDEX_RETRY_SECONDS = 30;

export class SearchIndexBuilding extends Error {
  override name = 'SearchIndexBuilding';
  readonly code = SEARCH_INDEX_BUILDING;
  constructor(indexedThrough: number, highestId: number) {
    const share = highestId > 0 ? Math.floor((100 * indexedThrough) / highestId) : 0;
    super(
      `The search index of this archive is being built (${share} % of its messages so far); searches are ` +
        'answered once it is done, and messages, folders, statistics and attachments can be read meanwhile.',
    );
  }
}

export function isSearchIndexBuilding(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === SEARCH_INDEX_BUILDING;
}

// --- The engine's jobs (engine/pool/) ---

// The engine's "not now": a job refused because its lane already has as much waiting work as it
// may queue. Callers answer it as a temporary condition (HTTP 503 with Retry-After), never as a
// failure of the job itself: nothing ran, nothing changed.

/** What a client is told to wait. Queues are sized to drain in well under this. */
export const RETRY_AFTER_SECONDS = 1;

export class EngineOverloaded extends Error {
  override name = 'EngineOverloaded';
  readonly retryAfterSeconds = RETRY_AFTER_SECONDS;
  constructor(readonly lane: Lane) {
    super(`The engine's ${lane} lane is full; the job was not started.`);
  }
}

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
