// The engine's one door for the gateway (docs/architecture.md, "Boundaries"): the worker pool that
// runs every job, the errors a job can end in, the per-request signal, and the start-up steps
// server.ts takes before it listens. The gateway imports the engine only through this file
// (test/boundaries.test.ts holds it to that); the CLI, tests and benchmarks may reach further in.
export { EnginePool, LANE_NAMES, type Lane } from './pool/pool.js';
export { currentRequestSignal, withRequestSignal } from './pool/job-budget.js';
export { WARM_UP_PRINCIPAL } from './search/warm-up.js';
// The errors a job or the start-up can end in (the catalogue is shared/errors.ts; docs/errors.md).
export {
  ArchiveOpenError,
  ArchiveUnavailable,
  EngineOverloaded,
  EngineTimedOut,
  isArchiveUnavailable,
  isSearchIndexBuilding,
  JobAbandoned,
  SEARCH_INDEX_RETRY_SECONDS,
} from '../shared/errors.js';
export { prepareArchive, sharedSessionSecret } from './archive.js';
export { readOrCreateSecretFile } from './rules/secret-file.js';
export { CODE_CHALLENGE, clientDisplayName, newAuthorizationCode, secretHash } from './rules/oauth.js';
// Exports of a search (docs/export.md): the one package writer the CLI uses too.
export {
  DEFAULT_EXPORT_FORMAT,
  EXPORT_FORMATS,
  EXPORT_IDS_PER_BATCH,
  compactUtc,
  exportPackage,
  type ExportDescription,
  type ExportFormat,
  type ExportPackage,
} from './export/package.js';
