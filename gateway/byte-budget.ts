// A semaphore counted in bytes: how much attachment content the process holds for answers that
// are being built at once (MCP get_attachment encodes a whole file as base64 in memory). Past it,
// a read waits its turn for a short while, then is refused as busy: 200 concurrent calls for a
// 9.9 MB file once took the process to 5.1 GB.

export class ByteBudgetBusy extends Error {
  override name = 'ByteBudgetBusy';
  constructor(readonly retryAfterSeconds: number) {
    super('Too much attachment content is being read at once.');
  }
}

interface Waiter {
  bytes: number;
  grant: () => void;
}

export class ByteBudget {
  #used = 0;
  readonly #waiting: Waiter[] = [];

  /** `capacity` bytes in use at most; a read waits at most `maxWaitMs` for its share. */
  constructor(
    readonly capacity: number,
    readonly maxWaitMs: number,
  ) {}

  get used(): number {
    return this.#used;
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Resolves with a release function once `bytes` fit (a read larger than the whole budget
   * runs alone); rejects with ByteBudgetBusy after maxWaitMs. Waiters are served in order, so a
   * large read is not starved by small ones.
   */
  acquire(bytes: number): Promise<() => void> {
    const want = Math.min(bytes, this.capacity);
    const release = () => {
      this.#used -= want;
      this.#drain();
    };
    if (this.#waiting.length === 0 && this.#used + want <= this.capacity) {
      this.#used += want;
      return Promise.resolve(once(release));
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        bytes: want,
        grant: () => {
          clearTimeout(timer);
          resolve(once(release));
        },
      };
      const timer = setTimeout(() => {
        this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
        reject(new ByteBudgetBusy(Math.max(1, Math.ceil(this.maxWaitMs / 1000))));
        this.#drain();
      }, this.maxWaitMs);
      this.#waiting.push(waiter);
    });
  }

  #drain(): void {
    while (this.#waiting.length > 0 && this.#used + this.#waiting[0]!.bytes <= this.capacity) {
      const next = this.#waiting.shift()!;
      this.#used += next.bytes;
      next.grant();
    }
  }
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
