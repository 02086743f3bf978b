// The execArgv every worker thread of ours starts with (the engine pool's, the importer's parsers).

/**
 * Piscina loads a worker's module with require() first and import() only if that throws. On
 * Node 20.19+ require() of our ES module succeeds through require(esm), and once, under a full
 * test run, Node 20 aborted the whole process in that path (an assertion in
 * CreateRequiredModuleFacade). Turning require(esm) off in the workers sends Piscina to import(),
 * the ordinary way to load an ES module; nothing in a worker relies on require(esm).
 */
const NO_REQUIRE_ESM = '--no-experimental-require-module';
export const WORKER_EXEC_ARGV = process.allowedNodeEnvironmentFlags.has(NO_REQUIRE_ESM)
  ? [...process.execArgv, NO_REQUIRE_ESM]
  : process.execArgv;
