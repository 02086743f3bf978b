// The engine's one door for the gateway (docs/architecture.md, "Boundaries"): the worker pool that
// runs every job, the errors a job can end in, the per-request signal, and the start-up steps
// server.ts takes before it listens. The gateway imports the engine only through this file
// (test/boundaries.test.ts holds it to that); the CLI, tests and benchmarks may reach further in.
export { EnginePool, LANE_NAMES, type Lane } from './pool.js';
export { currentRequestSignal, EngineTimedOut, JobAbandoned, withRequestSignal } from './job-budget.js';
export { EngineOverloaded } from './overloaded.js';
export { ArchiveUnavailable, isArchiveUnavailable } from './unavailable.js';
export { ArchiveOpenError } from './db/open.js';
export { prepareArchive, sharedSessionSecret } from './archive.js';
export { readOrCreateSecretFile } from './secret-file.js';
export { CODE_CHALLENGE, clientDisplayName, newAuthorizationCode, secretHash } from './oauth.js';
