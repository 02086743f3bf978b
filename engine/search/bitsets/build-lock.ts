// Who builds the saved index (persist.ts) when several processes of one host start together
// (PM2 cluster mode): the one that creates `<file>.lock` first (O_EXCL, atomic on local
// filesystems); the others serve by SQL and load the file once the builder has written it.
//
// Not proper-lockfile: it proves a holder alive by touching the lock from a timer, and a SQLite
// build holds its thread's event loop for minutes, so the lock would look abandoned in the
// middle of every long build. Here the lock names its holder's pid and when that process
// started, and it is abandoned when that process is gone (same host: PM2 runs a cluster on one).
// The start time tells a live holder from a new process that got its pid, so a live holder keeps
// the lock however long its build takes (a full PostgreSQL build passes an hour at 6 to 10M
// messages); only a lock whose holder cannot be checked (another host, no /proc, a lock of an
// earlier version) is given up by age, after MAX_HOLD_MS.
import { closeSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { threadId } from 'node:worker_threads';
import { randomUUID } from 'node:crypto';

/** A lock whose holder cannot be checked is abandoned this long after it was taken. */
const MAX_HOLD_MS = 60 * 60 * 1000;
/** Even a holder proven alive gives way after this: a build wedged for a day is not a build. */
const MAX_LIVE_HOLD_MS = 24 * 60 * 60 * 1000;

interface Holder {
  pid: number;
  host: string;
  token: string;
  /** When the holder's process started (processStart), where it can be read. */
  started?: string;
}

/**
 * When a process of this host started, as Linux gives it: field 22 of /proc/<pid>/stat, in clock
 * ticks since boot (a pid taken again by a later process has a later start). undefined where there
 * is no /proc, or no such process.
 */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // The command name (field 2) is in parentheses and may hold spaces or parentheses itself.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

export class BuildLock {
  readonly #path: string;
  readonly #token = `${process.pid}-${threadId}-${randomUUID()}`;
  #held = false;

  constructor(file: string) {
    this.#path = `${file}.lock`;
  }

  get held(): boolean {
    return this.#held;
  }

  /**
   * Takes the lock if it is free or abandoned; true when this thread holds it, or when no lock
   * can be made here at all.
   */
  tryTake(): boolean {
    if (this.#held) return true;
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(this.#path, 'wx', 0o600);
        try {
          const started = processStart(process.pid);
          const holder: Holder = {
            pid: process.pid,
            host: hostname(),
            token: this.#token,
            ...(started ? { started } : {}),
          };
          writeSync(fd, JSON.stringify(holder));
        } finally {
          closeSync(fd);
        }
        this.#held = true;
        return true;
      } catch (err) {
        // A directory where no lock can be made (read-only) holds no file either: nobody there
        // can share a build, so this process builds its own (and its save fails, logged).
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return true;
        if (!this.#abandoned()) return false;
        rmSync(this.#path, { force: true });
      }
    }
    return false;
  }

  /** Gives the lock back (only if it is still ours). */
  release(): void {
    if (!this.#held) return;
    this.#held = false;
    if (this.#holder()?.token === this.#token) rmSync(this.#path, { force: true });
  }

  #holder(): Holder | undefined {
    try {
      return JSON.parse(readFileSync(this.#path, 'utf8')) as Holder;
    } catch {
      return undefined;
    }
  }

  #abandoned(): boolean {
    let age: number;
    try {
      age = Date.now() - statSync(this.#path).mtimeMs;
    } catch {
      return true; // gone meanwhile
    }
    if (age > MAX_LIVE_HOLD_MS) return true;
    const holder = this.#holder();
    // Written but not yet filled (its creator is between open and write): not abandoned yet.
    if (!holder) return age > 10_000;
    if (holder.host !== hostname()) return age > MAX_HOLD_MS;
    if (!alive(holder.pid)) return true;
    const started = holder.started === undefined ? undefined : processStart(holder.pid);
    // Its pid is alive: the holder itself when the start matches, a later process when not.
    if (started !== undefined) return started !== holder.started;
    return age > MAX_HOLD_MS;
  }
}

/**
 * Removes the lock if a thread of this process held it: the pool calls this after stopping its
 * builder thread, which may have been stopped between taking the lock and giving it back (the
 * holder's pid is alive, so no other thread of this process could ever take it over).
 */
export function releaseLockOfThread(file: string, thread: number): void {
  const path = `${file}.lock`;
  try {
    const holder = JSON.parse(readFileSync(path, 'utf8')) as Holder;
    if (holder.token.startsWith(`${process.pid}-${thread}-`)) rmSync(path, { force: true });
  } catch {
    // no lock, or not ours to judge
  }
}

/** Whether a process of this host with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
