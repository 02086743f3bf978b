// REST API v1 (SPEC.md, “REST API”): six GET routes, each a thin adapter over ArchiveService.
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { Readable } from 'node:stream';
import type { Settings } from '../../shared/config.js';
import { compactUtc, DEFAULT_EXPORT_FORMAT, EXPORT_FORMATS, type ExportFormat } from '../../engine/index.js';
import type { JobKind } from '../../shared/jobs.js';
import { parseAggregateInput, parseInt32, parseSearchInput } from '../../shared/search-input.js';
import { hasText, noTextReason, type ArchiveService } from '../archive-service.js';
import { requireApiKey, type AuthState } from '../auth.js';
import { callerOf } from '../client.js';
import { contentDisposition } from '../content-disposition.js';
import { InvalidInput } from '../../shared/errors.js';
import { Problem } from '../problem.js';
import { answerNotModified } from '../http/conditional.js';
import { requestedRange, type ByteRange } from '../http/range.js';

export function apiRouter(settings: Settings, service: ArchiveService): Router<AuthState> {
  const router = new Router<AuthState>({ prefix: '/api/v1' });
  const limits = { defaultPageSize: settings.Api.DefaultPageSize, maxPageSize: settings.Api.MaxPageSize };
  const caller = (ctx: Context & { state: AuthState }) => callerOf(ctx, 'api');
  const idParam = (ctx: Context, name: string) => parseInt32(name, (ctx.params as Record<string, string>)[name]);
  /** An attachment's ids; its bytes and its text alike are refused while downloads are off. */
  const downloadsAllowed = () => {
    if (!settings.Api.AllowAttachmentDownloads) {
      throw new Problem(403, 'Attachment downloads are disabled on this server (Api:AllowAttachmentDownloads).');
    }
  };
  const attachmentIds = (ctx: Context) => {
    const ids = { emailId: idParam(ctx, 'id'), attachmentId: idParam(ctx, 'attachmentId') };
    downloadsAllowed();
    return ids;
  };
  const noSuchAttachment = (emailId: number, attachmentId: number) =>
    new Problem(404, `Attachment ${attachmentId} of email ${emailId} does not exist.`);

  // Admission (admission.ts) checks the key with the route's job; each route still refuses a
  // request that brought none. Attached to each route rather than with router.use(): a router-level
  // middleware layer matches every path, which made the gateway's "known path?" check (405 vs
  // 404) treat unknown paths such as /api/v1/nope as known and answer 405.
  const auth = requireApiKey;
  /**
   * For a route whose job runs on the query lane, named by its job kind (the lane is the engine's
   * to say, engine/pool/pool.ts JOB_KINDS): while that lane is full the request is refused at once
   * (503, EngineOverloaded), before its parameters are parsed or its job queued; cheap requests
   * keep flowing (docs/decisions.md, ADR 10). It runs inside admission, so a bad key is still a
   * 401 and the answer still carries its RateLimit headers (admission checks the key on its own
   * when no job carried the check), and before `auth`, as the shedding always has.
   */
  const shed =
    (kind: JobKind): Middleware =>
    async (_ctx, next) => {
      service.engine.admit(kind);
      await next();
    };

  router.get('/accounts', auth, async (ctx) => {
    ctx.body = await service.accounts(caller(ctx));
  });

  router.get('/accounts/:id/folders', shed('folders'), auth, async (ctx) => {
    const folders = await service.folders(caller(ctx), idParam(ctx, 'id'));
    if (!folders) throw new Problem(404, `Account ${ctx.params.id} does not exist.`);
    ctx.body = folders;
  });

  router.get('/emails', shed('search'), auth, async (ctx) => {
    const params = ctx.query as Record<string, unknown>;
    const query = parseSearchInput(params, limits);
    ctx.body = await service.search(caller(ctx), query, params);
  });

  // Before /emails/:id, which would take "aggregate" for an id.
  router.get('/emails/aggregate', shed('aggregate'), auth, async (ctx) => {
    const params = ctx.query as Record<string, unknown>;
    ctx.body = await service.aggregate(caller(ctx), parseAggregateInput(params), params);
  });

  // An export of a search (docs/export.md): every message it matches, with manifest.csv and
  // export.json, as one ZIP. Before /emails/:id, which would take "export" for an id.
  router.get('/emails/export', shed('exportIds'), auth, async (ctx) => {
    const params = ctx.query as Record<string, unknown>;
    const format = exportFormat(params.format);
    // The messages carry their attachments: refused as attachment downloads are.
    downloadsAllowed();
    // Paging and order are the export's own (oldest first, every page): what the caller sent is ignored.
    const filters = Object.fromEntries(
      Object.entries(params).filter(([k]) => !['page', 'pageSize', 'sortBy', 'sortOrder', 'format'].includes(k)),
    );
    const query = parseSearchInput(filters, limits);
    const max = settings.Api.MaxExportMessages;
    const { total, ids } = await service.exportIds(caller(ctx), query, max);
    if (!ids) {
      throw new Problem(
        422,
        `The search matches ${total} messages; an export holds at most ${max} (Api:MaxExportMessages). ` +
          'Narrow it with a date range (from, to), an account (accountId), a folder, or a query (q).',
      );
    }
    const createdAt = new Date();
    const headers = {
      'Content-Disposition': `attachment; filename="export-${compactUtc(createdAt).replace(/-/g, '')}.zip"`,
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
      'Content-Type': 'application/zip',
    };
    // HEAD reads no message: it is neither an export nor logged as one.
    if (ctx.method === 'HEAD') {
      ctx.set(headers);
      ctx.status = 200;
      return;
    }
    const principal = caller(ctx).key.principal;
    const { q, ...rest } = filters;
    const pkg = service.exportPackage(
      caller(ctx),
      ids,
      {
        format,
        query: typeof q === 'string' ? q : null,
        filters: Object.fromEntries(Object.entries(rest).filter(([k]) => !['snippets', 'include'].includes(k))),
        who: { username: principal?.username ?? 'unknown', keyPrefix: principal?.keyPrefix ?? null, via: 'api' },
        createdAt,
      },
      { parallel: Math.min(2, settings.Engine.Threads) },
    );
    // The first bytes are read before the status line: a refused first batch is still a 503 problem.
    const body = await startedStream(pkg.stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>, () =>
      pkg.stream.destroy(),
    );
    service.recordExport(caller(ctx), filters, { format, export: true, matched: total });
    ctx.set(headers);
    ctx.body = body;
  });

  router.get('/emails/:id', auth, async (ctx) => {
    // HEAD shows no content, so it is not an Open (the body is still built: it sizes Content-Length).
    // A 304 is: the client shows the message it holds, and the key was checked as for a 200.
    // The worker serialises and tags it: a message of tens of megabytes costs this thread a write.
    const email = await service.emailJson(caller(ctx), idParam(ctx, 'id'), { record: ctx.method !== 'HEAD' });
    if (!email) throw new Problem(404, `Email ${ctx.params.id} does not exist.`);
    if (answerNotModified(ctx, email.etag)) return;
    ctx.type = 'application/json';
    ctx.body = Buffer.from(email.json.buffer, email.json.byteOffset, email.json.byteLength);
  });

  router.get('/emails/:id/thread', auth, async (ctx) => {
    // HEAD shows no content, so, as for an email, it is not logged.
    const thread = await service.thread(caller(ctx), idParam(ctx, 'id'), { record: ctx.method !== 'HEAD' });
    if (!thread) throw new Problem(404, `Email ${ctx.params.id} does not exist.`);
    ctx.body = thread;
  });

  router.get('/emails/:id/attachments/:attachmentId', auth, async (ctx) => {
    const { emailId, attachmentId } = attachmentIds(ctx);
    const handle = await service.findAttachment(caller(ctx), emailId, attachmentId);
    if (!handle) throw noSuchAttachment(emailId, attachmentId);
    const etag = `"${handle.contentTag}"`;
    ctx.set('Accept-Ranges', 'bytes');
    if (answerNotModified(ctx, etag)) return;
    const range = requestedRange(ctx, handle.size, etag);
    // Start reading first: if the content cannot be read (or the engine is too busy to start),
    // the 500 or 503 problem must not carry the file's headers (Content-Disposition would make a
    // browser save the error as the file). Once the first chunk is read the rest is never refused.
    const body =
      ctx.method === 'HEAD' ? Readable.from([]) : await startedStream(service.content(handle, range ?? undefined));
    // HEAD reads no bytes, so it is not a download and is not logged as one; nor is a refused GET.
    // A resumed download is one download: a range is logged only when it starts at byte 0.
    if (ctx.method !== 'HEAD' && (range?.start ?? 0) === 0) service.recordDownload(caller(ctx), handle);
    download(ctx, handle.fileName, storedMediaType(handle.contentType), handle.size, range);
    ctx.body = body;
    ctx.length = range ? range.end - range.start + 1 : handle.size;
  });

  // A message's bytes (docs/evidence.md, "Originals"): the original as it arrived, or where the
  // store keeps none (Mail Archiver's) a reconstruction, said so in Archive-Copy. Downloaded like
  // an attachment: ETag and ranges, logged as a Download, never rendered.
  router.get('/emails/:id/raw', auth, async (ctx) => {
    const id = idParam(ctx, 'id');
    const copy = await service.messageCopy(caller(ctx), id);
    if (!copy) throw new Problem(404, `Email ${id} does not exist.`);
    // Kept but failing its check: the archive holds it and will not pass it off as the original.
    if (copy.damaged) throw new Problem(409, `Email ${id}: ${copy.note ?? 'its original failed its check.'}`);
    if (copy.copy === 'none' || !copy.bytes || !copy.sha256) {
      throw new Problem(404, `Email ${id} has no original. ${copy.note ?? ''}`.trim());
    }
    const bytes = Buffer.from(copy.bytes.buffer, copy.bytes.byteOffset, copy.bytes.byteLength);
    const etag = `"${copy.sha256}"`;
    ctx.set({
      'Accept-Ranges': 'bytes',
      // RFC 9530: the digest of the whole message, whatever range is sent.
      'Repr-Digest': `sha-256=:${Buffer.from(copy.sha256, 'hex').toString('base64')}:`,
      'Archive-Copy': copy.copy,
    });
    if (answerNotModified(ctx, etag)) return;
    const range = requestedRange(ctx, bytes.length, etag);
    if (ctx.method !== 'HEAD' && (range?.start ?? 0) === 0) service.recordMessageDownload(caller(ctx), copy);
    download(ctx, `${id}.eml`, 'message/rfc822', bytes.length, range);
    ctx.body = range ? bytes.subarray(range.start, range.end + 1) : bytes;
  });

  // The text found inside an attachment (docs/import.md, "Attachment text"). A download like the
  // bytes: refused when downloads are, logged as Download; never HTML, whatever the file was.
  router.get('/emails/:id/attachments/:attachmentId/text', auth, async (ctx) => {
    const { emailId, attachmentId } = attachmentIds(ctx);
    const page = await service.attachmentText(caller(ctx), emailId, attachmentId, { record: ctx.method !== 'HEAD' });
    if (!page) throw noSuchAttachment(emailId, attachmentId);
    if (!hasText(page)) {
      throw new Problem(
        404,
        `Attachment ${attachmentId} of email ${emailId} has no text (${noTextReason(page.status)}).`,
      );
    }
    ctx.set({
      'X-Content-Type-Options': 'nosniff',
      'Content-Security-Policy': 'sandbox',
      'X-Text-Truncated': page.truncated ? 'true' : 'false',
    });
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = page.text;
  });

  router.get('/stats', shed('stats'), auth, async (ctx) => {
    ctx.body = await service.stats(caller(ctx));
  });

  return router;
}

// type "/" subtype *( OWS ";" OWS parameter ), RFC 9110 section 8.3.1, printable ASCII only.
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const MEDIA_TYPE = new RegExp(
  `^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*${TOKEN}=(?:${TOKEN}|"(?:[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\[\\x20-\\x7e])*"))*$`,
);

/** The stored content type when it is a well-formed media type, else application/octet-stream. */
export function storedMediaType(stored: string | null | undefined): string {
  const value = (stored ?? '').trim();
  return MEDIA_TYPE.test(value) ? value : 'application/octet-stream';
}

/**
 * What every download answers with besides its bytes: they are untrusted, so never sniffed and
 * never rendered as an active document, and saved under `fileName`; one range is a 206 with its
 * Content-Range. `contentType` is set as given, not through ctx.type, which looks values up as
 * file extensions and appends "; charset=utf-8" to text types, relabelling the bytes.
 */
function download(ctx: Context, fileName: string, contentType: string, size: number, range: ByteRange | null): void {
  ctx.set({
    'Content-Disposition': contentDisposition(fileName),
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': 'sandbox',
    'Content-Type': contentType,
  });
  if (!range) return;
  ctx.status = 206;
  ctx.set('Content-Range', `bytes ${range.start}-${range.end}/${size}`);
}

/**
 * Reads the first chunk before the status line is sent, so a failure there is still an
 * ordinary 500 problem; later chunks stream as the client reads them.
 */
async function startedStream(chunks: AsyncIterator<Buffer>, onStop?: () => void): Promise<Readable> {
  const first = await chunks.next();
  async function* rest() {
    try {
      if (!first.done) yield first.value;
      for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield next.value;
    } finally {
      // Ended early (the client left and the body was destroyed): stop the source too.
      await chunks.return?.();
      onStop?.();
    }
  }
  return Readable.from(rest(), { objectMode: false });
}

/** The export's format parameter (docs/export.md): eml-zip when absent. */
function exportFormat(value: unknown): ExportFormat {
  if (value === undefined || value === '') return DEFAULT_EXPORT_FORMAT;
  if (typeof value === 'string' && (EXPORT_FORMATS as readonly string[]).includes(value)) return value as ExportFormat;
  throw new InvalidInput(
    'format',
    `format must be one of ${EXPORT_FORMATS.join(', ')} (default ${DEFAULT_EXPORT_FORMAT}).`,
  );
}
