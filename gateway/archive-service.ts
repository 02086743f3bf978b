// What both front ends do for a caller: run the engine job as the caller's key and record the
// access. A REST route and an MCP tool are thin adapters over these methods. Every job that
// reads as someone goes through the caller's KeyCheck (auth.ts), which checks the key in the
// same job the first time.
import {
  ArchiveUnavailable,
  currentRequestSignal,
  exportPackage,
  type EnginePool,
  type ExportDescription,
  type ExportPackage,
} from '../engine/index.js';
import {
  ATTACHMENT_CHUNK_BYTES,
  type AttachmentHandle,
  type AggregateQuery,
  type AttachmentTextPage,
  type MessageCopy,
  type SearchQuery,
} from '../shared/jobs.js';
import type { AccessLogWriter } from './access-log.js';
import type { KeyCheck } from './auth.js';
import { loggedParams } from '../shared/search-input.js';

// The access log's view of search parameters is shared with the CLI (engine/cli/commands/search.ts).
export { loggedParams };

/** Whether a page describes text that was found (else its status says why there is none). */
export const hasText = (page: AttachmentTextPage) => page.status === 'ok' && page.totalChars > 0;

/** Why an attachment has no text, as the end of a sentence. */
export function noTextReason(status: string): string {
  if (status === 'ok') return 'none was found in it';
  if (status === 'not extracted')
    return 'it has not been read yet; an operator runs mail-archive reindex --attachments';
  if (status === 'encrypted') return 'it is encrypted';
  if (status === 'too large') return 'it is larger than the extraction limit';
  if (status === 'timeout') return 'reading it took longer than the extraction limit';
  if (status === 'over budget')
    return 'it was not read: its message had spent the attachment-text budget one message has (Import:AttachmentText* settings)';
  if (status === 'unsupported') return 'its type is not one text is read from';
  return status.replace(/^failed: /, 'reading it failed: ');
}

export interface Caller {
  key: KeyCheck;
  clientIp: string;
  source: 'api' | 'mcp' | 'web';
}

export class ArchiveService {
  constructor(
    readonly engine: EnginePool,
    private readonly accessLog: AccessLogWriter,
  ) {}

  accounts(caller: Caller) {
    return caller.key.run({ kind: 'accounts' });
  }

  folders(caller: Caller, accountId: number) {
    return caller.key.run({ kind: 'folders', accountId });
  }

  /**
   * `params` are the search parameters as the caller gave them; the access log keeps the known
   * ones only, with anything that looks like an API key redacted (a key pasted into a URL must
   * not land in the database).
   */
  async search(caller: Caller, query: SearchQuery, params: Record<string, unknown>) {
    this.#recordable();
    const result = await caller.key.run({ kind: 'search', query });
    this.#logSearch(caller, params, query.accountId);
    return result;
  }

  /**
   * The web's search page: the search (logged as `search` logs it), the accounts the caller sees
   * and, with `folderTreeOf`, that account's folder tree, from one job.
   */
  async searchView(caller: Caller, query: SearchQuery, params: Record<string, unknown>, folderTreeOf?: number) {
    this.#recordable();
    const view = await caller.key.run({
      kind: 'searchView',
      query,
      ...(folderTreeOf !== undefined ? { folderTreeOf } : {}),
    });
    this.#logSearch(caller, params, query.accountId);
    return view;
  }

  /** The top groups of a search's matches; logged as the search it is (Search, with its parameters). */
  async aggregate(caller: Caller, aggregate: AggregateQuery, params: Record<string, unknown>) {
    const result = await caller.key.run({ kind: 'aggregate', aggregate });
    this.#logSearch(caller, params, aggregate.query.accountId);
    return result;
  }

  /** `record: false` reads without logging an Open (a REST HEAD shows no content). */
  async email(caller: Caller, id: number, options: { record?: boolean } = {}) {
    this.#recordable();
    const email = await caller.key.run({ kind: 'detail', id });
    if (email && options.record !== false) this.#log(caller, 'Open', { emailId: email.id, accountId: email.accountId });
    return email;
  }

  /**
   * The detail as the REST answer's JSON bytes and ETag, serialised on a worker thread
   * (engine/rules/encoded-detail.ts); logged as `email` logs it.
   */
  async emailJson(caller: Caller, id: number, options: { record?: boolean } = {}) {
    this.#recordable();
    const email = await caller.key.run({ kind: 'detailJson', id });
    if (email && options.record !== false) this.#log(caller, 'Open', { emailId: email.id, accountId: email.accountId });
    return email;
  }

  /**
   * A message as the web shows it to a person: its detail and its HTML body made safe
   * (engine/rules/mail-html.ts), `cid:` images pointing at `partUrl`. Logged as an Open, as
   * `email` is, unless `record` is false (the body's frame, shown as part of an Open already logged).
   */
  async messageView(caller: Caller, id: number, options: { remoteImages: boolean; partUrl: string; record?: boolean }) {
    this.#recordable();
    const view = await caller.key.run({
      kind: 'messageView',
      id,
      remoteImages: options.remoteImages,
      partUrl: options.partUrl,
    });
    if (view && options.record !== false)
      this.#log(caller, 'Open', { emailId: view.email.id, accountId: view.email.accountId });
    return view;
  }

  /**
   * The conversation of a message, oldest first; null when the message is missing or hidden.
   * Logged as a Search (it lists messages, as a search does) with the message id in its parameters.
   */
  async thread(caller: Caller, id: number, options: { record?: boolean; excerpts?: boolean } = {}) {
    this.#recordable();
    const items = await caller.key.run({ kind: 'thread', id, ...(options.excerpts ? { excerpts: true } : {}) });
    if (items && options.record !== false) {
      const accountId = items.find((i) => i.id === id)?.accountId;
      this.#log(caller, 'Search', { searchParams: { thread: id }, ...(accountId !== undefined ? { accountId } : {}) });
    }
    return items;
  }

  /** Resolves a visible attachment without logging: a front end may still refuse it (size limit, busy engine). */
  findAttachment(caller: Caller, emailId: number, attachmentId: number) {
    this.#recordable();
    return caller.key.run({ kind: 'attachment', emailId, attachmentId });
  }

  /** Logs a download of an attachment found by findAttachment, once its bytes are going out. */
  recordDownload(caller: Caller, handle: AttachmentHandle): void {
    this.#log(caller, 'Download', { emailId: handle.emailId, accountId: handle.accountId });
  }

  /**
   * A page of the text found inside a visible attachment (null: missing or hidden). Logged as a
   * Download when text goes out: reading what a file says is reading the file.
   */
  async attachmentText(
    caller: Caller,
    emailId: number,
    attachmentId: number,
    page: { offset?: number; maxChars?: number; record?: boolean } = {},
  ) {
    this.#recordable();
    const result = await caller.key.run({
      kind: 'attachmentText',
      emailId,
      attachmentId,
      ...(page.offset !== undefined ? { offset: page.offset } : {}),
      ...(page.maxChars !== undefined ? { maxChars: page.maxChars } : {}),
    });
    if (result && hasText(result) && page.record !== false)
      this.#log(caller, 'Download', { emailId: result.attachment.emailId, accountId: result.attachment.accountId });
    return result;
  }

  /**
   * The attachment's bytes, one stored chunk at a time, so memory stays flat for any size; with a
   * range (inclusive ends), only the chunks that cover it are read. Only the first chunk read may
   * be refused by a busy engine; the pool admits the rest once the download has started.
   */
  async *content(handle: AttachmentHandle, range?: { start: number; end: number }): AsyncGenerator<Buffer> {
    const first = range ? Math.floor(range.start / ATTACHMENT_CHUNK_BYTES) : 0;
    const last = range ? Math.floor(range.end / ATTACHMENT_CHUNK_BYTES) : handle.chunkCount - 1;
    for (let seq = first; seq <= last; seq++) {
      const job = {
        kind: 'attachmentChunk',
        contentId: handle.contentId,
        seq,
        ...(seq === first ? { first: true } : {}),
      } as const;
      const chunk = await this.engine.run(job);
      if (!chunk) throw new Error(`attachment content ${handle.contentId} is missing chunk ${seq}`);
      let bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      if (range) {
        const base = seq * ATTACHMENT_CHUNK_BYTES;
        bytes = bytes.subarray(Math.max(0, range.start - base), range.end + 1 - base);
      }
      yield bytes;
    }
  }

  /**
   * One message's bytes (docs/evidence.md): the original where it is kept; on a store that keeps
   * none (Mail Archiver's), a reconstruction; otherwise copy 'none' with the reason. null: missing
   * or hidden. Not logged here: the route logs a Download once bytes go out.
   */
  async messageCopy(caller: Caller, id: number): Promise<MessageCopy | null> {
    this.#recordable();
    const { copies } = await caller.key.run({ kind: 'messageCopies', ids: [id], reconstruct: false, first: true });
    return copies[0] ?? null;
  }

  /** Logs a download of a message's bytes (its original or its reconstruction). */
  recordMessageDownload(caller: Caller, copy: MessageCopy): void {
    this.#log(caller, 'Download', { emailId: copy.id, accountId: copy.accountId });
  }

  /**
   * Every id a search matches, oldest first, for an export; `ids` is null when more than `max`
   * match (only `total` is counted then). Not logged here: the export is, once it starts.
   */
  exportIds(caller: Caller, query: SearchQuery, max: number) {
    this.#recordable();
    return caller.key.run({ kind: 'exportIds', query, max });
  }

  /**
   * The export package of `ids` (docs/export.md), as the caller: the originals where kept,
   * reconstructions otherwise, read a batch at a time as the stream is read. Each message is
   * logged as a Download once its bytes are taken by the stream; the request's signal (a client
   * that leaves) stops the batches.
   */
  exportPackage(
    caller: Caller,
    ids: readonly number[],
    description: ExportDescription,
    options: { parallel?: number } = {},
  ): ExportPackage {
    const signal = currentRequestSignal();
    return exportPackage(
      {
        ids,
        batch: async (from, to, first) => {
          const { copies, next } = await caller.key.run({
            kind: 'messageCopies',
            ids: ids.slice(from, to),
            reconstruct: true,
            ...(first ? { first: true } : {}),
          });
          return { copies, next: from + next };
        },
      },
      description,
      {
        ...(signal ? { signal } : {}),
        ...(options.parallel !== undefined ? { parallel: options.parallel } : {}),
        onWritten: (copy) => this.recordMessageDownload(caller, copy),
        // Every exported message is logged: the export waits while the log's backlog is half full
        // rather than fill it and have every other read refused (#recordable).
        pace: async () => {
          for (let waiting = this.accessLog.backlog.pending; waiting * 2 >= this.accessLog.backlog.max;) {
            await this.accessLog.flush();
            const now = this.accessLog.backlog.pending;
            if (now >= waiting) throw new ArchiveUnavailable(); // its writes fail: stop, as reads are refused
            waiting = now;
          }
        },
      },
    );
  }

  /** Logs an export as the search it ran (Search, with its parameters and format). */
  recordExport(caller: Caller, params: Record<string, unknown>, extra: Record<string, unknown>): void {
    const accountId = Number(params.accountId);
    this.#log(caller, 'Search', {
      searchParams: { ...loggedParams(params), ...extra },
      ...(Number.isInteger(accountId) && params.accountId !== undefined ? { accountId } : {}),
    });
  }

  stats(caller: Caller) {
    return caller.key.run({ kind: 'stats' });
  }

  /**
   * Every read is recorded: while the access log cannot take more entries (its writes fail and
   * its backlog is full), reads are refused as the database being out of reach is (503 with
   * Retry-After; a tool error on MCP), before anything is read.
   */
  #recordable(): void {
    if (this.accessLog.full) throw new ArchiveUnavailable();
  }

  /** A search as the access log keeps it: the parameters as given (known ones only, keys redacted). */
  #logSearch(caller: Caller, params: Record<string, unknown>, accountId: number | undefined): void {
    this.#log(caller, 'Search', {
      searchParams: loggedParams(params),
      ...(accountId !== undefined ? { accountId } : {}),
    });
  }

  #log(
    caller: Caller,
    type: 'Search' | 'Open' | 'Download',
    extra: { emailId?: number; accountId?: number; searchParams?: Record<string, unknown> },
  ): void {
    // Logged only after a job succeeded, so its key was found genuine. Not when the client had
    // gone before the job ended (a running job may finish after that, engine/pool/pool.ts): nothing
    // was shown to anyone, as when the job is stopped.
    if (currentRequestSignal()?.aborted) return;
    if (!caller.key.recorded) return; // the gateway's own warm-up request (warm-up.ts)
    const principal = caller.key.principal;
    if (!principal) throw new Error(`${type} logged before the caller's key was checked`);
    this.accessLog.record({
      userId: principal.userId,
      type,
      at: Date.now(),
      keyPrefix: principal.keyPrefix,
      clientIp: caller.clientIp,
      source: caller.source,
      ...extra,
    });
  }
}
