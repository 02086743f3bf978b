// What both front ends do with an authenticated caller: run the engine job and record the
// access. A REST route and an MCP tool are thin adapters over these methods.
import type { EnginePool } from '../engine/pool.js';
import type { AttachmentHandle, Principal, SearchQuery } from '../shared/jobs.js';
import type { AccessLogWriter } from './access-log.js';

export interface Caller {
  principal: Principal;
  clientIp: string;
  source: 'api' | 'mcp';
}

export class ArchiveService {
  constructor(
    readonly engine: EnginePool,
    private readonly accessLog: AccessLogWriter,
  ) {}

  accounts(caller: Caller) {
    return this.engine.run({ kind: 'accounts', principal: caller.principal });
  }

  folders(caller: Caller, accountId: number) {
    return this.engine.run({ kind: 'folders', principal: caller.principal, accountId });
  }

  /** `params` are the search parameters as the caller gave them, for the access log. */
  async search(caller: Caller, query: SearchQuery, params: Record<string, unknown>) {
    const result = await this.engine.run({ kind: 'search', principal: caller.principal, query });
    this.#log(caller, 'Search', {
      searchParams: params,
      ...(query.accountId !== undefined ? { accountId: query.accountId } : {}),
    });
    return result;
  }

  /** `record: false` reads without logging an Open (a REST HEAD shows no content). */
  async email(caller: Caller, id: number, options: { record?: boolean } = {}) {
    const email = await this.engine.run({ kind: 'detail', principal: caller.principal, id });
    if (email && options.record !== false) this.#log(caller, 'Open', { emailId: email.id, accountId: email.accountId });
    return email;
  }

  /** Resolves a visible attachment without logging: a front end may still refuse it (size limit, busy engine). */
  findAttachment(caller: Caller, emailId: number, attachmentId: number) {
    return this.engine.run({ kind: 'attachment', principal: caller.principal, emailId, attachmentId });
  }

  /** Logs a download of an attachment found by findAttachment, once its bytes are going out. */
  recordDownload(caller: Caller, handle: AttachmentHandle): void {
    this.#log(caller, 'Download', { emailId: handle.emailId, accountId: handle.accountId });
  }

  /**
   * The attachment's bytes, one stored chunk at a time, so memory stays flat for any size. Only
   * the first chunk may be refused by a busy engine; the pool admits the rest once it has started.
   */
  async *content(handle: AttachmentHandle): AsyncGenerator<Buffer> {
    for (let seq = 0; seq < handle.chunkCount; seq++) {
      const chunk = await this.engine.run({ kind: 'attachmentChunk', contentId: handle.contentId, seq });
      if (!chunk) throw new Error(`attachment content ${handle.contentId} is missing chunk ${seq}`);
      yield Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    }
  }

  stats(caller: Caller) {
    return this.engine.run({ kind: 'stats', principal: caller.principal });
  }

  #log(
    caller: Caller,
    type: 'Search' | 'Open' | 'Download',
    extra: { emailId?: number; accountId?: number; searchParams?: Record<string, unknown> },
  ): void {
    this.accessLog.record({
      userId: caller.principal.userId,
      type,
      at: Date.now(),
      keyPrefix: caller.principal.keyPrefix,
      clientIp: caller.clientIp,
      source: caller.source,
      ...extra,
    });
  }
}
