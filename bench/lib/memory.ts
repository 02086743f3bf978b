// Memory of a server process under benchmark: its resident set, and (once the engine reports
// it) the size of the engine's search state.
import { readFileSync } from 'node:fs';
import type { RunningServer } from './server.js';

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
 * The bytes the engine holds for search (in-memory indexes, caches) across its workers.
 * The engine does not report this yet: when it does (through /readyz or a metric), read it here
 * and every benchmark that prints memory shows it next to the RSS.
 */
export async function searchStateBytes(_server: RunningServer): Promise<number | undefined> {
  return undefined;
}

export const mib = (bytes: number | undefined) =>
  bytes === undefined ? 'n/a' : `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
