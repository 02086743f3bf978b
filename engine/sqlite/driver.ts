// The SQLite driver: better-sqlite3, in the major version this Node.js can run safely.
//
// better-sqlite3 12 wraps its objects in Node's raw ObjectWrap. On Node 24 that wrapper's
// destructor asserts that a Node environment is current, and the garbage collector can run it
// when none is (a worker thread's final GC, or mid-run), which aborts the whole process
// (SIGABRT in Statement::~Statement). Version 13 is built on Node-API 10 and does not do that,
// but Node-API 10 exists only from Node 22.14: on Node 20 version 13 crashes at once. So both are
// installed (13 under the alias better-sqlite3-napi, prebuilt, nothing to compile) and the
// choice is made here, once, by the Node-API level of the running Node. Their APIs are the same.
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

const require = createRequire(import.meta.url);

/** Node-API 10 first shipped in Node 22.14 and 23.6. */
export const DRIVER_PACKAGE = Number(process.versions.napi) >= 10 ? 'better-sqlite3-napi' : 'better-sqlite3';

const Database = require(DRIVER_PACKAGE) as typeof BetterSqlite3;
export default Database;
