// The answers that send a message's or an attachment's bytes, and a search's export: one code
// path for the REST API and the web pages, so both log, range, tag and label bytes alike. The
// caller decides who asks (a key or a session) and how errors are shown (problem+json or a page).
import type { Context } from 'koa';
import { Readable } from 'node:stream';
import { compactUtc, DEFAULT_EXPORT_FORMAT, EXPORT_FORMATS, type ExportFormat } from '../engine/index.js';
import type { Settings } from '../shared/config.js';
import { InvalidInput } from '../shared/errors.js';
import { parseSearchInput, type PageLimits } from '../shared/search-input.js';
import type { ArchiveService, Caller } from './archive-service.js';
import { contentDisposition } from './content-disposition.js';
import { answerNotModified } from './http/conditional.js';
import { requestedRange, type ByteRange } from './http/range.js';
import { Problem } from './problem.js';

/** An attachment's bytes and its text alike are refused while downloads are off. */
export function downloadsAllowed(settings: Settings): void {
  if (!settings.Api.AllowAttachmentDownloads) {
    throw new Problem(403, 'Attachment downloads are disabled on this server (Api:AllowAttachmentDownloads).');
  }
}

export const noSuchAttachment = (emailId: number, attachmentId: number) =>
  new Problem(404, `Attachment ${attachmentId} of email ${emailId} does not exist.`);

/**
 * An attachment's bytes, streamed chunk by chunk, with ETag and ranges; logged as a Download when
 * its first byte goes out. `inline` shows it in the browser instead of saving it (the web's
 * preview); `only` refuses, as a 404, an attachment whose media type it does not accept.
 */
export async function sendAttachment(
  ctx: Context,
  service: ArchiveService,
  caller: Caller,
  ids: { emailId: number; attachmentId: number },
  options: { inline?: boolean; only?: (mediaType: string) => boolean } = {},
): Promise<void> {
  const { emailId, attachmentId } = ids;
  const handle = await service.findAttachment(caller, emailId, attachmentId);
  if (!handle) throw noSuchAttachment(emailId, attachmentId);
  const type = storedMediaType(handle.contentType);
  if (options.only && !options.only(type)) throw noSuchAttachment(emailId, attachmentId);
  const etag = `"${handle.contentTag}"`;
  ctx.set('Accept-Ranges', 'bytes');
  if (answerNotModified(ctx, etag)) return;
  const range = requestedRange(ctx, handle.size, etag);
  // Start reading first: if the content cannot be read (or the engine is too busy to start),
  // the 500 or 503 answer must not carry the file's headers (Content-Disposition would make a
  // browser save the error as the file). Once the first chunk is read the rest is never refused.
  const body =
    ctx.method === 'HEAD' ? Readable.from([]) : await startedStream(service.content(handle, range ?? undefined));
  // HEAD reads no bytes, so it is not a download and is not logged as one; nor is a refused GET.
  // A resumed download is one download: a range is logged only when it starts at byte 0.
  if (ctx.method !== 'HEAD' && (range?.start ?? 0) === 0) service.recordDownload(caller, handle);
  download(ctx, handle.fileName, type, handle.size, range, options.inline ? 'inline' : 'attachment');
  ctx.body = body;
  ctx.length = range ? range.end - range.start + 1 : handle.size;
}

/**
 * A message's bytes (docs/evidence.md, "Originals"): the original as it arrived, or where the
 * store keeps none (Mail Archiver's) a reconstruction, said so in Archive-Copy. Downloaded like an
 * attachment: ETag and ranges, logged as a Download, never rendered.
 */
export async function sendOriginal(ctx: Context, service: ArchiveService, caller: Caller, id: number): Promise<void> {
  const copy = await service.messageCopy(caller, id);
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
  if (ctx.method !== 'HEAD' && (range?.start ?? 0) === 0) service.recordMessageDownload(caller, copy);
  download(ctx, `${id}.eml`, 'message/rfc822', bytes.length, range);
  ctx.body = range ? bytes.subarray(range.start, range.end + 1) : bytes;
}

/**
 * An export of a search (docs/export.md): every message it matches, with manifest.csv and
 * export.json, as one ZIP. `params` are the search's parameters as given (paging and order are the
 * export's own: oldest first, every page); `via` names the front end in export.json.
 */
export async function sendExport(
  ctx: Context,
  deps: { settings: Settings; service: ArchiveService; limits: PageLimits },
  caller: Caller,
  params: Record<string, unknown>,
  via: 'api' | 'web',
): Promise<void> {
  const { settings, service, limits } = deps;
  const format = exportFormat(params.format);
  // The messages carry their attachments: refused as attachment downloads are.
  downloadsAllowed(settings);
  const filters = Object.fromEntries(
    Object.entries(params).filter(([k]) => !['page', 'pageSize', 'sortBy', 'sortOrder', 'format'].includes(k)),
  );
  const query = parseSearchInput(filters, limits);
  const max = settings.Api.MaxExportMessages;
  const { total, ids } = await service.exportIds(caller, query, max);
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
  const principal = caller.key.principal;
  const { q, ...rest } = filters;
  const pkg = service.exportPackage(
    caller,
    ids,
    {
      format,
      query: typeof q === 'string' ? q : null,
      filters: Object.fromEntries(Object.entries(rest).filter(([k]) => !['snippets', 'include'].includes(k))),
      who: {
        username: principal?.username ?? 'unknown',
        keyPrefix: principal?.keyPrefix || null,
        via,
      },
      createdAt,
    },
    { parallel: Math.min(2, settings.Engine.Threads) },
  );
  // The first bytes are read before the status line: a refused first batch is still a 503.
  const body = await startedStream(pkg.stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>, () =>
    pkg.stream.destroy(),
  );
  service.recordExport(caller, filters, { format, export: true, matched: total });
  ctx.set(headers);
  ctx.body = body;
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
 * never rendered as an active document (CSP sandbox), and saved under `fileName` (or shown, for
 * `inline`); one range is a 206 with its Content-Range. `contentType` is set as given, not through
 * ctx.type, which looks values up as file extensions and appends "; charset=utf-8" to text
 * types, relabelling the bytes.
 */
function download(
  ctx: Context,
  fileName: string,
  contentType: string,
  size: number,
  range: ByteRange | null,
  disposition: 'attachment' | 'inline' = 'attachment',
): void {
  ctx.set({
    'Content-Disposition': contentDisposition(fileName, disposition),
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
 * ordinary 500 answer; later chunks stream as the client reads them.
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
