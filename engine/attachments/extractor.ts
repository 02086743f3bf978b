// Runs extract.ts in a worker thread of its own, one attachment at a time, and enforces the time
// bound from outside: an attachment that takes longer than limits.timeoutMs gets status
// 'timeout' and the thread is terminated (a PDF that loops in pdf.js never yields, so nothing
// inside the thread could stop it). The thread is reused while healthy and started again on the
// next attachment after a timeout or a crash. Its heap is capped, so a decompression bomb ends
// that thread ('failed: ...'), not the importing process.
import { Worker } from 'node:worker_threads';
import type { ExtractResult } from '../rules/attachment-text.js';
import { DEFAULT_LIMITS, extractKind, quickVerdict, type ExtractLimits } from './extract.js';
import type { ExtractRequest } from './extract-worker.js';

const WORKER_HEAP_MB = 512;
/** How long a new thread may take to load its readers before extraction gives up on it. */
const STARTUP_MS = 60_000;

interface Thread {
  worker: Worker;
  /** True once the thread has loaded its readers; false if it died or took too long. */
  ready: Promise<boolean>;
}

export class Extractor {
  readonly limits: ExtractLimits;
  #thread: Thread | undefined;
  #seq = 0;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(limits: Partial<ExtractLimits> = {}) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
  }

  /**
   * The text of one attachment; never rejects (failures are statuses). `within` narrows this
   * call's character and time bounds (what is left of its message's budget, budget.ts).
   */
  extract(
    bytes: Uint8Array,
    contentType: string,
    fileName: string,
    within: Partial<Pick<ExtractLimits, 'maxChars' | 'timeoutMs'>> = {},
  ): Promise<ExtractResult> {
    // Cheap verdicts need no thread.
    const kind = extractKind(contentType, fileName);
    if (kind === null) return Promise.resolve({ status: 'unsupported', text: '', truncated: false });
    if (bytes.length > this.limits.maxBytes)
      return Promise.resolve({ status: 'too large', text: '', truncated: false });
    const quick = quickVerdict(bytes, kind);
    if (quick) return Promise.resolve(quick);
    const limits = { ...this.limits, ...within };
    const run = this.#queue.then(() => this.#run(bytes, contentType, fileName, limits));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #run(bytes: Uint8Array, contentType: string, fileName: string, limits: ExtractLimits): Promise<ExtractResult> {
    const thread = (this.#thread ??= this.#start());
    const { worker } = thread;
    worker.ref();
    if (!(await thread.ready)) {
      this.#discard(worker);
      return { status: 'failed: the extractor thread did not start', text: '', truncated: false };
    }
    const id = ++this.#seq;
    return new Promise<ExtractResult>((resolve) => {
      const done = (result: ExtractResult, healthy: boolean) => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        if (healthy) worker.unref();
        else this.#discard(worker);
        resolve(result);
      };
      const onMessage = (m: { id: number; result: ExtractResult }) => {
        if (m.id === id) done(m.result, true);
      };
      const onError = (err: Error) =>
        done(
          {
            status:
              (err as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY'
                ? 'failed: reading it needed more memory than allowed'
                : `failed: the extractor stopped (${err.message})`,
            text: '',
            truncated: false,
          },
          false,
        );
      const onExit = () => done({ status: 'failed: the extractor stopped', text: '', truncated: false }, false);
      const timer = setTimeout(() => done({ status: 'timeout', text: '', truncated: false }, false), limits.timeoutMs);
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
      const copy = new Uint8Array(bytes); // transferred: the caller's buffer stays usable
      worker.postMessage({ id, bytes: copy, contentType, fileName, limits } satisfies ExtractRequest, [copy.buffer]);
    });
  }

  #start(): Thread {
    const worker = new Worker(new URL('./extract-worker.js', import.meta.url), {
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
      stdout: true, // pdf.js may print warnings; they are not ours to show
      stderr: true,
    });
    worker.stdout.resume();
    worker.stderr.resume();
    worker.unref();
    const ready = new Promise<boolean>((resolve) => {
      const settle = (ok: boolean) => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onFailure);
        worker.off('exit', onFailure);
        resolve(ok);
      };
      const onMessage = (m: { ready?: boolean }) => {
        if (m.ready) settle(true);
      };
      const onFailure = () => settle(false);
      const timer = setTimeout(() => settle(false), STARTUP_MS);
      worker.on('message', onMessage);
      worker.on('error', onFailure);
      worker.on('exit', onFailure);
    });
    return { worker, ready };
  }

  #discard(worker: Worker): void {
    if (this.#thread?.worker === worker) this.#thread = undefined;
    void worker.terminate();
  }

  /** Ends the thread; a later extract starts a new one. */
  async close(): Promise<void> {
    await this.#queue;
    const thread = this.#thread;
    this.#thread = undefined;
    if (thread) await thread.worker.terminate();
  }
}
