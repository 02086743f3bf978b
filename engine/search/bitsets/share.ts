// How the worker threads share one snapshot. A builder thread (engine/sqlite/index-builder.ts), started by the
// pool, owns the building; it posts each finished snapshot's SharedArrayBuffer on a
// BroadcastChannel private to that pool, and every query thread adopts it: the memory is
// shared, not copied. A thread that starts later asks for the current one ('hello') and, when
// the pool's count says one was posted, waits for it before its first job (settled()).
//
// A snapshot is used only while it describes the archive as it is: the same highest message id
// and the same rewrite counter (migration 3). Otherwise the planner counts with SQL, exactly as
// before, until the builder has caught up. Permission changes need nothing here: who sees which
// account is read on every query.
import { BroadcastChannel, receiveMessageOnPort, threadId, type MessagePort } from 'node:worker_threads';
import { Snapshot } from './snapshot.js';

/**
 * A snapshot as posted: its buffer and, for a store whose snapshot is a database snapshot too
 * (PostgreSQL), the token that lets a search read the database in that same state.
 */
export type SnapshotMessage =
  { hello: true } | { buffer: SharedArrayBuffer; token?: string; origin?: SnapshotOrigin; serial?: string };

/**
 * How the builder came by a snapshot (what /readyz reports): a full build, a saved file loaded
 * as it was (persist.ts), or an earlier snapshot caught up with what changed since; `fromFile`
 * while no full build has happened since a saved file was loaded.
 */
export interface SnapshotOrigin {
  kind: 'built' | 'loaded' | 'caught up';
  fromFile: boolean;
}

/**
 * How many snapshots a pool's builder has posted: one Int32 in a SharedArrayBuffer that the pool
 * gives its builder and every thread. A thread that starts after a post missed that message and
 * asks for it ('hello'); the count tells it, without waiting, that an answer is on its way.
 */
export const newPostCount = (): Int32Array => new Int32Array(new SharedArrayBuffer(4));

/**
 * Which buffer a post carries, numbered by the builder that posts it. A SharedArrayBuffer arrives
 * as a new object at every message, though its memory is the same, so a thread could not tell a
 * snapshot posted again (to each thread that starts; on PostgreSQL with each new token) from a new
 * one, and read its dictionary again: 35 ms at a million messages, paid by the next search.
 */
const serials = new WeakMap<SharedArrayBuffer, string>();
let lastSerial = 0;

/** A builder's post: counted before it is sent, so that a thread that sees the count can wait for it. */
export function postSnapshot(
  bc: BroadcastChannel,
  posted: Int32Array | undefined,
  message: Omit<Exclude<SnapshotMessage, { hello: true }>, 'serial'>,
): void {
  let serial = serials.get(message.buffer);
  // With the posting thread's id: numbers from another builder on the channel never collide.
  if (serial === undefined) serials.set(message.buffer, (serial = `${threadId}.${++lastSerial}`));
  if (posted) Atomics.add(posted, 0, 1);
  bc.postMessage({ ...message, serial } satisfies SnapshotMessage);
}

/** How long a starting thread waits for a posted snapshot (a builder busy with a full build answers late). */
const SETTLE_MS = 2000;

/**
 * One thread's view of a pool's channel. Piscina's idle threads wait on Atomics, not in the
 * event loop, so messages are taken synchronously (receiveMessageOnPort) before each search;
 * a listener takes those the event loop delivers while the thread awaits something.
 */
export class SnapshotFollower {
  readonly #bc: BroadcastChannel;
  #snapshot: Snapshot | undefined;
  #serial: string | undefined;
  #token: string | undefined;
  #origin: SnapshotOrigin | undefined;
  readonly #posted: Int32Array | undefined;
  #arrived: (() => void) | undefined;

  constructor(channel: string, posted?: Int32Array) {
    this.#posted = posted;
    this.#bc = new BroadcastChannel(channel);
    // A thread whose event loop runs (a PostgreSQL thread awaits its queries) has messages
    // delivered to a listener, and only those it has not delivered are left to take.
    this.#bc.onmessage = (event) => this.#take((event as { data: SnapshotMessage }).data);
    this.#bc.unref();
    this.#bc.postMessage({ hello: true } satisfies SnapshotMessage);
  }

  #take(message: SnapshotMessage): void {
    if (!('buffer' in message)) return;
    try {
      if (!this.#snapshot || message.serial === undefined || message.serial !== this.#serial)
        this.#snapshot = new Snapshot(message.buffer);
      this.#serial = message.serial;
      this.#token = message.token;
      this.#origin = message.origin;
      this.#arrived?.();
    } catch {
      // not a snapshot: ignored (the pool's channel carries nothing else)
    }
  }

  /** The newest snapshot posted (and its token), or undefined before the first. */
  latest(): { snapshot: Snapshot; token: string | undefined; origin?: SnapshotOrigin } | undefined {
    // Node accepts a BroadcastChannel here (docs of receiveMessageOnPort); @types/node says MessagePort.
    const port = this.#bc as unknown as MessagePort;
    for (let m = receiveMessageOnPort(port); m; m = receiveMessageOnPort(port))
      this.#take(m.message as SnapshotMessage);
    if (!this.#snapshot) return undefined;
    return { snapshot: this.#snapshot, token: this.#token, ...(this.#origin ? { origin: this.#origin } : {}) };
  }

  /**
   * Resolves once this thread holds the snapshot its builder has posted (at once when none was
   * posted yet), or after SETTLE_MS. A thread opening its store awaits this, so that its first
   * search counts with an index that was current before the thread started, not by SQL.
   */
  async settled(): Promise<void> {
    if (!this.#posted || Atomics.load(this.#posted, 0) === 0 || this.latest()) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, SETTLE_MS);
      this.#arrived = () => {
        clearTimeout(timer);
        this.#arrived = undefined;
        resolve();
      };
    });
  }

  close(): void {
    this.#bc.close();
  }
}
