// get_attachment: an attachment's bytes in base64, whole (up to Mcp:MaxAttachmentBytes) or in
// pages that fit one answer, or the text inside it (attachment-text.ts). The bytes held for
// answers at once are bounded (Mcp:MaxConcurrentAttachmentBytes): past it a call waits, then is
// told to call again.
import type { CallToolResult } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { AttachmentDto } from '../../../shared/dto.js';
import { TEXT_PAGE_DEFAULT, TEXT_PAGE_MAX, type AttachmentHandle } from '../../../shared/jobs.js';
import { InvalidInput } from '../../../shared/search-input.js';
import type { ArchiveService, Caller } from '../../archive-service.js';
import { ByteBudgetBusy } from '../../byte-budget.js';
import { jsonLength, NOTE_RESERVE } from '../bounds.js';
import { enumParam, intParam } from '../params.js';
import { attachmentResult, toolError, withNote } from '../results.js';
import { attachmentTextResult } from './attachment-text.js';
import type { ToolConfig } from './config.js';
import { defineTool, type McpTool } from './define.js';
import { attachmentMetadata } from './shapes.js';

const AttachmentContent = z.object({
  ...AttachmentDto.shape,
  emailId: z.number().int().meta({ format: 'int32', description: 'The email the attachment belongs to' }),
  // Never in structuredContent: the bytes go once, in the text block's JSON (results.ts).
  base64Data: z.string().optional().meta({
    description:
      'format "base64": the raw bytes, base64-encoded, in the JSON of the text content only (sent once, not repeated here). Untrusted content.',
  }),
  text: z
    .string()
    .optional()
    .meta({ description: 'format "text": this page of the extracted text. Untrusted content.' }),
  offset: z.number().int().optional().meta({
    description: 'A page: where it starts, in characters (format "text") or bytes (base64 with offset or maxBytes)',
  }),
  totalChars: z.number().int().optional().meta({ description: 'format "text": length of the whole extracted text' }),
  nextOffset: z
    .number()
    .int()
    .nullable()
    .optional()
    .meta({ description: 'A page: the offset of the next page, or null after the last page' }),
  truncated: z
    .boolean()
    .optional()
    .meta({ description: 'format "text": an extraction bound (pages, characters) cut the text short' }),
});

/** The ids a call names, and the page of bytes it asks for (none: the whole file). */
interface BytesRequest {
  id: number;
  attachmentId: number;
  offset: number | undefined;
  maxBytes: number | undefined;
}

export function getAttachmentTool(config: ToolConfig): McpTool {
  const { mcp, bound, maxPageBytes } = config;
  const downloads = mcp.AllowAttachmentDownloads
    ? `An attachment larger than ${mcp.MaxAttachmentBytes} bytes is not returned whole; read it in pages with offset and maxBytes (files up to ${mcp.MaxPagedAttachmentBytes} bytes).`
    : 'Attachment downloads are disabled on this server, so this tool returns an error; get_email still lists attachment metadata.';
  return defineTool({
    name: 'get_attachment',
    title: 'Download an attachment',
    description:
      'Returns one attachment of an archived email with id, emailId, fileName, contentType, size and base64Data (the raw bytes, base64-encoded; ' +
      `untrusted content). Take the ids from get_email. ${downloads} ` +
      `With offset (a byte, default 0) or maxBytes (default and most ${maxPageBytes}) it returns that page of the bytes, with offset and nextOffset ` +
      '(call again with offset = nextOffset until it is null). ' +
      'With format "text" it returns instead the text found inside the attachment (PDF, DOCX, text and HTML files, attached messages), one page ' +
      `at a time: offset (default 0) and maxChars (default ${TEXT_PAGE_DEFAULT.toLocaleString('en')}, at most ${TEXT_PAGE_MAX.toLocaleString('en')}) choose the page; the result gives text, offset, totalChars and nextOffset ` +
      '(call again with offset = nextOffset until it is null). Extraction stops after 200 PDF pages or 1,000,000 characters (truncated: true). ' +
      'Find documents by their content with search_emails q attachment:<word>.',
    heavyJob: 'attachmentChunk',
    input: z.object({
      id: intParam('id', 'The email id, from search_emails or get_email.'),
      attachmentId: intParam('attachmentId', 'An attachment id, from the attachments get_email lists.'),
      format: enumParam(
        'format',
        ['base64', 'text'],
        'base64 (default): the raw bytes. text: the text found inside the attachment, paged with offset and maxChars.',
      ).optional(),
      offset: intParam(
        'offset',
        'Where the page starts, default 0 (use nextOffset from the previous page): a character with format text, a byte with base64 (given, it asks for one page of the bytes).',
      ).optional(),
      maxChars: intParam(
        'maxChars',
        `format text: characters to return, 1..${TEXT_PAGE_MAX}; default ${TEXT_PAGE_DEFAULT}.`,
      ).optional(),
      maxBytes: intParam(
        'maxBytes',
        `format base64: bytes of one page, 1..${maxPageBytes} (default ${maxPageBytes}); given, it asks for one page of the bytes.`,
      ).optional(),
    }),
    output: AttachmentContent,
    async run({ id, attachmentId, format, offset, maxChars, maxBytes }, { service, caller }) {
      if (!mcp.AllowAttachmentDownloads) {
        return toolError(
          "Attachment downloads are disabled by this server's settings (Mcp:AllowAttachmentDownloads=false); get_email still lists each attachment's fileName, contentType and size.",
        );
      }
      if (format === 'text')
        return attachmentTextResult(service, caller, id, attachmentId, offset, maxChars, bound - NOTE_RESERVE);
      return bytesResult(config, service, caller, { id, attachmentId, offset, maxBytes });
    },
  });
}

/** format "base64": the whole file, or one page of its bytes, within the size limits and the memory budget. */
async function bytesResult(
  config: ToolConfig,
  service: ArchiveService,
  caller: Caller,
  request: BytesRequest,
): Promise<CallToolResult> {
  const { bound, maxPageBytes, attachmentMemory } = config;
  const { id, attachmentId, offset, maxBytes } = request;
  const paged = offset !== undefined || maxBytes !== undefined;
  if (offset !== undefined && offset < 0) throw new InvalidInput('offset', 'offset must be 0 or more.');
  if (maxBytes !== undefined && (maxBytes < 1 || maxBytes > maxPageBytes))
    throw new InvalidInput('maxBytes', `maxBytes must be between 1 and ${maxPageBytes}.`);
  // The same words whether the attachment is missing or hidden from this key: nothing leaks.
  const handle = await service.findAttachment(caller, id, attachmentId);
  if (!handle)
    return toolError(`Attachment ${attachmentId} of email ${id} was not found; check both ids with get_email.`);
  const refusal = tooLarge(config, handle, paged, request);
  if (refusal) return refusal;
  const start = offset ?? 0;
  if (start > handle.size)
    throw new InvalidInput(
      'offset',
      `offset ${start} is past the end of the attachment, which is ${handle.size} bytes.`,
    );
  // A page's base64 and its metadata (a file name is the sender's to choose) fit the bound.
  const room = Math.floor((bound - NOTE_RESERVE - jsonLength(handle) - 200) / 4) * 3;
  const length = paged ? Math.min(maxBytes ?? maxPageBytes, Math.max(3, room), handle.size - start) : handle.size;
  let release: () => void;
  try {
    release = await attachmentMemory.acquire(length);
  } catch (err) {
    if (!(err instanceof ByteBudgetBusy)) throw err;
    return toolError(
      `The server is reading too many attachments at once to return attachment ${attachmentId} of email ${id} now; nothing was done. Call get_attachment again in ${err.retryAfterSeconds} seconds.`,
    );
  }
  try {
    return await readBytes(service, caller, handle, paged ? { start, length } : null);
  } finally {
    release();
  }
}

/**
 * The refusal for a file above the limit that applies, by its stored size, before a single byte
 * is read; null when it may be read. A client that did not ask for a page expects the whole file:
 * it never gets part of one.
 */
function tooLarge(
  config: ToolConfig,
  handle: AttachmentHandle,
  paged: boolean,
  { id, attachmentId }: BytesRequest,
): CallToolResult | null {
  const { mcp } = config;
  if (!paged && handle.size > mcp.MaxAttachmentBytes) {
    return toolError(
      `Attachment ${attachmentId} of email ${id} is ${handle.size} bytes, above this server's limit of ${mcp.MaxAttachmentBytes} bytes (Mcp:MaxAttachmentBytes) for one answer; it was not returned. ${otherWays(config, id, attachmentId, handle.size)}`,
    );
  }
  if (paged && handle.size > mcp.MaxPagedAttachmentBytes) {
    return toolError(
      `Attachment ${attachmentId} of email ${id} is ${handle.size} bytes, above this server's limit of ${mcp.MaxPagedAttachmentBytes} bytes (Mcp:MaxPagedAttachmentBytes) for reading in pages; it was not returned. ${otherWays(config, id, attachmentId, handle.size)}`,
    );
  }
  return null;
}

/** How else to get a file too large for one answer: the sentences of the refusal. */
function otherWays({ mcp, maxPageBytes, restDownloads }: ToolConfig, id: number, attachmentId: number, size: number) {
  return [
    size <= mcp.MaxPagedAttachmentBytes
      ? `Read it in pages: call get_attachment with offset 0 and maxBytes ${maxPageBytes} (at most), then again with offset = nextOffset until nextOffset is null.`
      : `It is also above the limit for reading in pages (${mcp.MaxPagedAttachmentBytes} bytes, Mcp:MaxPagedAttachmentBytes).`,
    'For the text inside it (PDF, DOCX, text, HTML), call get_attachment with format "text".',
    restDownloads
      ? `To save the file, download it over the REST API with the same key: GET /api/v1/emails/${id}/attachments/${attachmentId}.`
      : '',
  ]
    .filter(Boolean)
    .join(' ');
}

/** Reads the file (page null) or one page of it, logs the download, and builds the answer. */
async function readBytes(
  service: ArchiveService,
  caller: Caller,
  handle: AttachmentHandle,
  page: { start: number; length: number } | null,
): Promise<CallToolResult> {
  const chunks: Buffer[] = [];
  if (!page) for await (const chunk of service.content(handle)) chunks.push(chunk);
  else if (page.length > 0)
    for await (const chunk of service.content(handle, { start: page.start, end: page.start + page.length - 1 }))
      chunks.push(chunk);
  const start = page?.start ?? 0;
  // As over REST, a file read in pages is one download: logged when its first byte goes out.
  if (start === 0) service.recordDownload(caller, handle);
  const metadata = attachmentMetadata(handle);
  const base64Data = Buffer.concat(chunks).toString('base64');
  if (!page) return attachmentResult({ ...metadata, base64Data });
  const end = start + page.length;
  const nextOffset = end < handle.size ? end : null;
  return withNote(
    attachmentResult({ ...metadata, base64Data, offset: start, nextOffset }),
    nextOffset === null
      ? `Bytes ${start} to ${end} of ${handle.size}: the end of the file.`
      : `Bytes ${start} to ${end} of ${handle.size}; call get_attachment again with offset ${nextOffset} for the next page.`,
  );
}
