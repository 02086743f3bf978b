// Parsing for the importer on every core (docs/import.md, "Parsing on every core"): messages are
// parsed, and their originals hashed and compressed, in worker threads while this thread reads
// the source and writes; the writer takes the results in the order the messages were read, so an
// import stores exactly what one parsed here would, in the same order.
//
// A short import (a single file, a sync pass with a few new messages) never pays for threads: the
// first messages are parsed here, and the threads start only when the import proves long.
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { WORKER_EXEC_ARGV } from '../threads/worker-argv.js';
import { packOriginal } from '../rules/originals.js';
import { parseMessage, type ParseContext, type ParsedMessage } from './parse.js';

export interface ParseTask {
  raw: Uint8Array;
  ctx: ParseContext;
  /** Hash and compress the bytes as the original (engine/rules/originals.ts) beside parsing them. */
  keepOriginal: boolean;
  /** The writer's per-message preparation (MailWriter.prepare), run after parsing. */
  prepare?: string;
}

type Prepare = (email: ParsedMessage) => void;
/** Each thread loads a writer's prepare module once. */
const prepares = new Map<string, Promise<Prepare>>();
const loadPrepare = (url: string): Promise<Prepare> => {
  let loaded = prepares.get(url);
  if (!loaded) prepares.set(url, (loaded = import(url).then((m: { default: Prepare }) => m.default)));
  return loaded;
};

const asBuffer = (bytes: Uint8Array): Buffer =>
  Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/** The work of one message, wherever it runs: parsed, and its original packed when kept. */
export async function runParseTask(task: ParseTask): Promise<ParsedMessage> {
  const raw = asBuffer(task.raw);
  const email = await parseMessage(raw, task.ctx);
  if (task.keepOriginal) email.packedOriginal = packOriginal(raw);
  if (task.prepare) (await loadPrepare(task.prepare))(email);
  return email;
}

/** What a parse thread answers: the record, or why the message could not be parsed. */
export type ParseAnswer = { email: ParsedMessage } | { error: string; name: string };

/** On a parse thread: a message's own failure is an answer; only the thread's failure rejects. */
export async function answerParseTask(task: ParseTask): Promise<ParseAnswer> {
  try {
    return { email: await runParseTask(task) };
  } catch (err) {
    return { error: (err as Error).message, name: (err as Error).name };
  }
}

/**
 * The parse threads themselves failed (a thread that cannot start or died): the import stops
 * with it rather than counting every message after it as unparseable.
 */
export class ParserFailed extends Error {
  override name = 'ParserFailed';
}

/** A message's own failure, as thrown on the thread. */
class ParseFailure extends Error {
  constructor(message: string, name: string) {
    super(message);
    this.name = name;
  }
}

/**
 * A result that crossed from a worker: its Buffers arrive as plain Uint8Arrays (structured
 * clone), which the writers' Buffer calls need back as Buffers (no copy).
 */
function revive(email: ParsedMessage): ParsedMessage {
  for (const a of email.attachments) a.content = asBuffer(a.content);
  if (email.packedOriginal) email.packedOriginal.data = asBuffer(email.packedOriginal.data);
  if (email.searchDocument) email.searchDocument = asBuffer(email.searchDocument);
  const bodies = email.packedBodies;
  if (bodies) {
    if (bodies.text !== null && typeof bodies.text !== 'string') bodies.text = asBuffer(bodies.text);
    if (bodies.html !== null && typeof bodies.html !== 'string') bodies.html = asBuffer(bodies.html);
  }
  return email;
}

export interface ParserOptions {
  /**
   * Worker threads to parse on; 0 parses on this thread only. Default: one per core but one, the
   * core this thread needs to read and write: on 2 cores one thread imported 3,000 to 3,200
   * msg/s, two 2,800 (they took the writer's core from it), none 2,600.
   */
  threads?: number;
  /** Messages parsed on this thread before the threads start (default 200). */
  inlineFirst?: number;
}

/**
 * Messages read ahead of the one being written, at most: two of the importer's write batches, so
 * that the threads parse the next batch while this thread writes one (with fewer, they sat idle
 * through every write).
 */
const AHEAD_MESSAGES = 1000;
/** Raw bytes of the messages read ahead, at most: a run of large messages stays in bounds. */
const AHEAD_BYTES = 64 * 1024 * 1024;

/**
 * Messages sent to a thread at once, at most (and their bytes): one hand-over per message cost a
 * thread more than a third of its time in waiting for the next one and in the hand-over itself.
 */
const BATCH_MESSAGES = 32;
const BATCH_BYTES = 1024 * 1024;

interface Waiting {
  task: ParseTask;
  resolve: (email: ParsedMessage) => void;
  reject: (err: unknown) => void;
}

export class MessageParser {
  readonly threads: number;
  readonly #inlineFirst: number;
  #pool: Piscina | undefined;
  #seen = 0;
  #batch: Waiting[] = [];
  #batchBytes = 0;
  /** The results of the messages in #batch. */
  readonly #unsent = new Set<Promise<unknown>>();

  constructor(options: ParserOptions = {}) {
    this.threads = Math.max(0, options.threads ?? availableParallelism() - 1);
    this.#inlineFirst = Math.max(0, options.inlineFirst ?? 200);
  }

  /** How many messages may be read ahead of the one being written. */
  get ahead(): { messages: number; bytes: number } {
    return this.#pool ? { messages: AHEAD_MESSAGES, bytes: AHEAD_BYTES } : { messages: 1, bytes: 0 };
  }

  /**
   * The message's record. On the threads it is parsed once its batch is sent: when the batch is
   * full, or when the writer is about to wait for it (send; inOrder calls it).
   */
  parse(task: ParseTask): Promise<ParsedMessage> {
    if (!this.#pool && this.threads > 0 && ++this.#seen > this.#inlineFirst) {
      this.#pool = new Piscina({
        filename: new URL('./parse-worker.js', import.meta.url).href,
        execArgv: WORKER_EXEC_ARGV,
        minThreads: this.threads,
        maxThreads: this.threads,
        // Everything submitted waits its turn: the importer bounds how much that is (ahead).
        maxQueue: Number.POSITIVE_INFINITY,
        // Every batch read ahead goes to a thread at once (parse-worker.ts takes them in turn):
        // the pool hands over more only when this thread is free, and while it writes it is not.
        concurrentTasksPerWorker: Math.ceil(AHEAD_MESSAGES / BATCH_MESSAGES / this.threads) + 1,
      });
    }
    if (!this.#pool) return runParseTask(task);
    const parsed = new Promise<ParsedMessage>((resolve, reject) => {
      this.#batch.push({ task, resolve, reject });
      this.#batchBytes += task.raw.byteLength;
    });
    this.#unsent.add(parsed);
    if (this.#batch.length >= BATCH_MESSAGES || this.#batchBytes >= BATCH_BYTES) this.#send();
    return parsed;
  }

  /**
   * Sends the batch that `parsed` waits in, if it is not sent yet: the writer is about to wait
   * for it. (Sending whenever the writer waits would send batches of one message.)
   */
  send(parsed: Promise<unknown>): void {
    if (this.#unsent.has(parsed)) this.#send();
  }

  #send(): void {
    const batch = this.#batch;
    if (batch.length === 0 || !this.#pool) return;
    this.#batch = [];
    this.#batchBytes = 0;
    this.#unsent.clear();
    (this.#pool.run(batch.map((w) => w.task)) as Promise<ParseAnswer[]>).then(
      (answers) =>
        answers.forEach((answer, i) => {
          if ('error' in answer) batch[i]!.reject(new ParseFailure(answer.error, answer.name));
          else batch[i]!.resolve(revive(answer.email));
        }),
      (err: unknown) => {
        const failed = new ParserFailed(`The importer's parse threads failed: ${(err as Error).message}`, {
          cause: err,
        });
        for (const w of batch) w.reject(failed);
      },
    );
  }

  async close(): Promise<void> {
    const pool = this.#pool;
    this.#pool = undefined;
    for (const w of this.#batch) w.reject(new ParserFailed('The import ended before this message was parsed.'));
    this.#batch = [];
    this.#unsent.clear();
    await pool?.destroy();
  }
}

/** What became of one message read: its parse, settled (never a pending rejection). */
export type Parsed<T> = { item: T; ok: true; email: ParsedMessage } | { item: T; ok: false; error: unknown };

/**
 * `items` with each one's `work` started as it is read and the outcomes given back in the
 * order read; at most `parser.ahead` items (and their bytes) are in flight. With one in flight it
 * is the plain loop: read, parse, hand over.
 */
export async function* inOrder<T>(
  items: AsyncIterable<T> | Iterable<T>,
  parser: MessageParser,
  bytesOf: (item: T) => number,
  work: (item: T) => Promise<ParsedMessage>,
): AsyncGenerator<Parsed<T>> {
  const queue: Array<{ bytes: number; work: Promise<ParsedMessage> | undefined; outcome: Promise<Parsed<T>> }> = [];
  let bytes = 0;
  const start = (item: T) => {
    let started: Promise<ParsedMessage> | undefined;
    let outcome: Promise<Parsed<T>>;
    try {
      started = work(item);
      outcome = started.then(
        (email) => ({ item, ok: true as const, email }),
        (error: unknown) => ({ item, ok: false as const, error }),
      );
    } catch (error) {
      outcome = Promise.resolve({ item, ok: false as const, error });
    }
    const size = bytesOf(item);
    bytes += size;
    queue.push({ bytes: size, work: started, outcome });
  };
  const next = async () => {
    const head = queue.shift()!;
    bytes -= head.bytes;
    if (head.work) parser.send(head.work);
    return head.outcome;
  };
  for await (const item of items) {
    start(item);
    const { messages, bytes: most } = parser.ahead;
    while (queue.length >= messages || (queue.length > 1 && bytes >= most)) yield await next();
  }
  while (queue.length > 0) yield await next();
}
