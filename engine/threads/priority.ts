// Background threads (the query lane, the index builders) run at a lower priority than the event
// loop and the interactive thread, so cheap requests keep their latency while they work. Linux
// only, where a nice value belongs to one thread; elsewhere it would lower the whole process.
import { setPriority } from 'node:os';

export const BACKGROUND_NICE = 10;

/** Lowers the calling thread's priority; where that is not permitted it stays as it is. */
export function lowerThreadPriority(): void {
  if (process.platform !== 'linux') return;
  try {
    setPriority(BACKGROUND_NICE);
  } catch {
    // not permitted here (a sandbox): normal priority
  }
}
