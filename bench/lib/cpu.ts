// CPU time of processes, read from /proc (Linux): what a workload costs the machine, which a
// shared or busy machine changes far less than its latency or throughput. Elsewhere: undefined.
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** utime + stime of one process (all its threads), in ms; undefined where /proc cannot tell. */
export function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/**
 * CPU of the PostgreSQL server processes serving `database` (their command line names it, as
 * the server sets it for each connection), in ms: the queries' own work on the server. A
 * connection that ends between two readings takes its time with it, so the postmaster's count of
 * its ended children is added (utime and stime of reaped children): a builder's refresh reads on a
 * connection of its own and closes it. That count is the whole server's, any database's.
 */
export function postgresCpuMs(database: string): number | undefined {
  let total = 0;
  let seen = false;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return undefined;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (!stat.includes('(postgres)')) continue;
      const fields = stat.split(') ')[1]!.split(' ');
      const parent = Number(fields[1]);
      if (parent === 1 || !readFileSync(`/proc/${parent}/stat`, 'utf8').includes('(postgres)'))
        total += ((Number(fields[13]) + Number(fields[14])) * 1000) / TICKS_PER_SECOND; // the postmaster
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(` ${database} `)) continue;
      total += processCpuMs(Number(entry)) ?? 0;
      seen = true;
    } catch {
      // the process ended meanwhile
    }
  }
  return seen ? total : undefined;
}
