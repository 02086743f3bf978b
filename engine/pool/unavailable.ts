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
