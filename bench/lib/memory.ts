// Memory of a server process under benchmark: its resident set, and (once the engine reports
// it) the size of the engine's search state.
import { readFileSync } from 'node:fs';
import { searchIndexOf, type RunningServer } from './server.js';

/** Resident set size of a process in bytes, from /proc (Linux); undefined elsewhere. */
export function rssBytes(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}

/**
 * The bytes of the engine's shared search index (one SharedArrayBuffer for all its threads), as
 * /readyz reports it; undefined when there is none (PostgreSQL, or Engine:SearchMemoryMB = 0).
 */
export async function searchStateBytes(server: RunningServer): Promise<number | undefined> {
  return (await searchIndexOf(server))?.bytes;
}

export const mib = (bytes: number | undefined) =>
  bytes === undefined ? 'n/a' : `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
