// The access-log entries the chain benchmarks write (bench/access-log*.ts): one search each, as a
// search through the API logs it.
import type { AccessLogEntry } from '../../shared/jobs.js';

/** The n-th search entry of `userId`. */
export const searchEntry = (userId: number, n: number): AccessLogEntry => ({
  userId,
  type: 'Search',
  at: Date.now(),
  keyPrefix: 'ma_abcdefgh',
  clientIp: '192.0.2.10',
  searchParams: { q: `budget report ${n}`, from: '2024-01-01', pageSize: 20 },
  source: 'api',
});
