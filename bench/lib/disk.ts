// Free space before a long write: a corpus of 10,000,000 messages takes over an hour to write, and
// a disk that fills at 80 % of it wastes that hour and leaves a partial file behind. A benchmark
// that writes one asks first and stops with a message that says how much it needs.
import { existsSync, statfsSync } from 'node:fs';

/**
 * Bytes a corpus takes per message, with room for its last step. SQLite: 2,692 bytes a message
 * at 8,575,000 (docs/performance.md, "Towards ten million"), and FTS5's final `optimize` writes
 * its index again into the WAL before the checkpoint. PostgreSQL: 4.4 GB at 1,000,000 (docs/performance.md) plus
 * the WAL the server keeps while writing.
 */
export const CORPUS_BYTES_PER_MESSAGE = { sqlite: 5_000, postgres: 6_000 } as const;

const gb = (bytes: number) => (bytes / 1e9).toFixed(1);

/** The free bytes of the file system holding `dir`, or undefined when `dir` is not on this machine. */
export function freeBytes(dir: string): number | undefined {
  if (!existsSync(dir)) return undefined;
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
}

/** Throws, saying what it needs and what there is, when `dir` has less than `bytes` free. */
export function ensureFreeSpace(dir: string, bytes: number, what: string): void {
  const free = freeBytes(dir);
  if (free === undefined || free >= bytes) return;
  throw new NotEnoughSpace(
    `${what} needs about ${gb(bytes)} GB free on ${dir}, which has ${gb(free)} GB: free some space, or ask for fewer messages.`,
  );
}

/** Not enough free disk for a corpus: its message is the whole story, no stack needed. */
export class NotEnoughSpace extends Error {
  override name = 'NotEnoughSpace';
}

/** Runs a corpus command's main step; a NotEnoughSpace ends it with its message and exit code 1. */
export async function orStopForSpace(main: () => unknown): Promise<void> {
  try {
    await main();
  } catch (err) {
    if (!(err instanceof NotEnoughSpace)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exitCode = 1;
  }
}
