// The operations on attachments: the bytes (whole or a range) and the text found inside.
import type { Settings } from '../../../shared/config.js';
import type { OpenApiOperation } from './model.js';
import { attachmentPathIds, byStatus, COMMON, COMMON_HEADERS, headerRef, notModified, problem } from './responses.js';

export const NOSNIFF = { description: '`nosniff`.', schema: { type: 'string', enum: ['nosniff'] } };
export const SANDBOX = {
  description: '`sandbox`: the bytes are never rendered as an active document.',
  schema: { type: 'string', enum: ['sandbox'] },
};
export const ACCEPT_RANGES = {
  description: '`bytes`: ranges are served.',
  schema: { type: 'string', enum: ['bytes'] },
};
/** The most characters extraction keeps of one attachment (engine/attachments/extract.ts). */
const EXTRACTED_TEXT_MAX_CHARS = 1_000_000;

/** The headers of an attachment's bytes, whole or in part. */
const DOWNLOAD_HEADERS = {
  'Content-Disposition': {
    description:
      'attachment, with the stored file name (`filename` and RFC 8187 `filename*`). As long as the archived file name makes it.',
    schema: { type: 'string', pattern: '^attachment;' },
  },
  'Content-Security-Policy': SANDBOX,
  'X-Content-Type-Options': NOSNIFF,
  ETag: headerRef('ETag'),
  'Accept-Ranges': ACCEPT_RANGES,
};

/** "enabled" or "disabled", as the descriptions say it. */
const downloadsAre = (settings: Settings) => (settings.Api.AllowAttachmentDownloads ? 'enabled' : 'disabled');

/** GET /api/v1/emails/{id}/attachments/{attachmentId} */
export function downloadAttachment(settings: Settings): OpenApiOperation {
  const downloads = downloadsAre(settings);
  return {
    operationId: 'downloadAttachment',
    tags: ['Emails'],
    summary: 'Download an attachment',
    description:
      "The attachment's raw bytes with its stored content type (`application/octet-stream` when none, or no well-formed one, was stored) and file name. " +
      `The bytes are untrusted. Attachment downloads are ${downloads} on this server (\`Api:AllowAttachmentDownloads\`). Logged in the access log as Download.`,
    parameters: attachmentPathIds(),
    responses: byStatus({
      '200': {
        description:
          "The attachment's raw bytes. The body is not declared: its media type is the attachment's own stored `Content-Type`, whatever it is.",
        headers: {
          ...DOWNLOAD_HEADERS,
          'Content-Length': {
            description: 'Size of the attachment in bytes.',
            schema: { type: 'integer', format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
          },
          ...COMMON_HEADERS,
        },
      },
      '206': {
        description:
          'Partial Content: the one byte range asked for with `Range: bytes=…` (and, with `If-Range`, only while the ETag still matches). Several ranges are answered with the whole file (200). A resumed download is logged once: a range is logged as Download only when it starts at byte 0.',
        headers: {
          ...DOWNLOAD_HEADERS,
          'Content-Range': headerRef('Content-Range'),
          'Content-Length': {
            description: 'Bytes in the range.',
            schema: { type: 'integer', format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
          },
          ...COMMON_HEADERS,
        },
      },
      '304': notModified('the attachment'),
      '416': problem('Range Not Satisfiable: no byte of the requested range lies within the file.', {
        'Content-Range': headerRef('Content-Range'),
      }),
      '400': problem('`id` or `attachmentId` is not a 32-bit integer.'),
      ...COMMON,
      '403': problem('Attachment downloads are disabled on this server (`Api:AllowAttachmentDownloads` is false).'),
      '404': problem('The message or the attachment does not exist, or the account is not visible to the caller.'),
    }),
  };
}

/** GET /api/v1/emails/{id}/attachments/{attachmentId}/text */
export function getAttachmentText(settings: Settings): OpenApiOperation {
  const downloads = downloadsAre(settings);
  return {
    operationId: 'getAttachmentText',
    tags: ['Emails'],
    summary: 'The text inside an attachment',
    description:
      'The text found inside the attachment at import (or by `mail-archive reindex --attachments`): text/* and HTML files, PDF, DOCX and attached messages (message/rfc822). ' +
      'Extraction is bounded (the first 200 PDF pages, 1,000,000 characters); `X-Text-Truncated: true` says a bound cut it. Search it with `attachment:` in `q`. ' +
      `A download like the bytes: attachment downloads are ${downloads} on this server (\`Api:AllowAttachmentDownloads\`). Logged in the access log as Download.`,
    parameters: attachmentPathIds(),
    responses: byStatus({
      '200': {
        description: 'The extracted text as `text/plain; charset=utf-8`: untrusted content written by third parties.',
        headers: {
          'X-Text-Truncated': {
            description: '`true` when an extraction bound (pages, characters) cut the text, else `false`.',
            schema: { type: 'string', enum: ['true', 'false'] },
          },
          'X-Content-Type-Options': NOSNIFF,
          'Content-Security-Policy': SANDBOX,
          ...COMMON_HEADERS,
        },
        content: { 'text/plain': { schema: { type: 'string', maxLength: EXTRACTED_TEXT_MAX_CHARS } } },
      },
      '400': problem('`id` or `attachmentId` is not a 32-bit integer.'),
      ...COMMON,
      '403': problem('Attachment downloads are disabled on this server (`Api:AllowAttachmentDownloads` is false).'),
      '404': problem(
        'The message or the attachment does not exist, the account is not visible to the caller, or the attachment has no text (not read yet, encrypted, unsupported type, unreadable; `detail` says which).',
      ),
    }),
  };
}
