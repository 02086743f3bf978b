// Piscina worker entry. Each thread opens its own connection once; better-sqlite3 caches the
// prepared statements per connection, so every query is prepared once per thread.
import { workerData } from 'node:worker_threads';
import type { Job, JobKind, JobResult } from '../shared/jobs.js';
import { openArchive, type Db } from './db/open.js';
import { runJob } from './handlers.js';

export interface WorkerData {
  dbPath: string;
  faultInjection?: boolean;
}

let db: Db | undefined;

function connection(): Db {
  db ??= openArchive((workerData as WorkerData).dbPath);
  return db;
}

export default function run<K extends JobKind>(job: Job<K>): JobResult<K> {
  if (job.kind === 'fault' && (workerData as WorkerData).faultInjection) {
    const { mode } = job as Job<'fault'>;
    if (mode === 'exit') process.exit(1); // ends this worker thread only
    throw new Error('injected fault');
  }
  return runJob(connection(), job);
}
