// Helper threads for work that must stay synchronous end to end. The index build reads inside one
// read transaction, on the builder thread and in the CLI's last import step, and hands its parts
// to a few helper threads meanwhile; awaiting them would let other work use the connection in the
// middle of that transaction. So the caller blocks: each helper posts its answer on a port of its
// own, then counts itself done in shared memory; the caller sleeps on that count (Atomics.wait)
// and takes the answers with receiveMessageOnPort, which needs no event loop.
//
// A helper that dies without answering (out of memory, killed) raises no event the blocked caller
// could see, so helpers also beat once per unit of work: when none has beaten for `stallMs`, the
// caller stops them all and gets no answers, and does the work itself.
import { MessageChannel, receiveMessageOnPort, Worker, workerData, type MessagePort } from 'node:worker_threads';
import { WORKER_EXEC_ARGV } from './worker-argv.js';

/** What a helper gets, beside its own input. */
interface HelperData<I> {
  input: I;
  port: MessagePort;
  /** [0]: helpers done; [1 + slot]: this helper's beats. */
  signal: Int32Array;
  slot: number;
}

type Answer<O> = { ok: O } | { error: string };

/** Helpers started by startHelpers; `wait` blocks until they are all done. */
export interface Helpers<O> {
  /** Each helper's answer in input order, or undefined if one failed or stalled. */
  wait(): O[] | undefined;
  /** Why the last wait gave no answers (a failure's message, or the stall). */
  readonly failure: string | undefined;
}

export function startHelpers<I, O>(file: URL, inputs: readonly I[], o: { stallMs: number }): Helpers<O> {
  const signal = new Int32Array(new SharedArrayBuffer(4 * (inputs.length + 1)));
  const helpers = inputs.map((input, slot) => {
    const { port1, port2 } = new MessageChannel();
    const data: HelperData<I> = { input, port: port2, signal, slot };
    // A thread made from a thread of lowered priority (the builder's) inherits it on Linux.
    const worker = new Worker(file, { workerData: data, transferList: [port2], execArgv: WORKER_EXEC_ARGV });
    worker.unref();
    worker.on('error', () => {}); // seen by the caller as a helper that never answers
    return { worker, port: port1 };
  });
  let failure: string | undefined;
  const stop = () => {
    for (const h of helpers) {
      void h.worker.terminate();
      h.port.close();
    }
  };
  return {
    get failure() {
      return failure;
    },
    wait() {
      let beats = -1;
      let lastBeat = performance.now();
      for (;;) {
        const done = Atomics.load(signal, 0);
        if (done === inputs.length) break;
        Atomics.wait(signal, 0, done, Math.min(1000, o.stallMs));
        let now = 0;
        for (let i = 1; i < signal.length; i++) now += Atomics.load(signal, i);
        if (now !== beats) {
          beats = now;
          lastBeat = performance.now();
        } else if (performance.now() - lastBeat > o.stallMs && Atomics.load(signal, 0) < inputs.length) {
          failure = `a helper thread made no progress for ${Math.round(o.stallMs / 1000)} s`;
          stop();
          return undefined;
        }
      }
      const answers = helpers.map((h) => receiveMessageOnPort(h.port)?.message as Answer<O> | undefined);
      stop();
      const ok: O[] = [];
      for (const answer of answers) {
        if (answer && 'ok' in answer) ok.push(answer.ok);
        else {
          failure = answer ? answer.error : 'a helper thread ended without an answer';
          return undefined;
        }
      }
      return ok;
    },
  };
}

/**
 * The helper's side: runs `work` on this thread's input and answers. `beat` shows progress;
 * `work` returns its answer and the buffers to hand over rather than copy.
 */
export function helperMain<I, O>(work: (input: I, beat: () => void) => { answer: O; transfer?: ArrayBuffer[] }): void {
  const data = workerData as HelperData<I>;
  const beat = () => void Atomics.add(data.signal, 1 + data.slot, 1);
  try {
    const { answer, transfer } = work(data.input, beat);
    data.port.postMessage({ ok: answer } satisfies Answer<O>, transfer ?? []);
  } catch (err) {
    data.port.postMessage({ error: err instanceof Error ? err.message : String(err) } satisfies Answer<O>);
  } finally {
    Atomics.add(data.signal, 0, 1);
    Atomics.notify(data.signal, 0);
  }
}
