// The operation on a message's own bytes (docs/evidence.md, "Originals").
import type { OpenApiOperation } from './model.js';
import { ACCEPT_RANGES, NOSNIFF, SANDBOX } from './attachments.js';
import { byStatus, COMMON, COMMON_HEADERS, headerRef, notModified, pathId, problem } from './responses.js';

const RAW_HEADERS = {
  'Content-Disposition': {
    description: 'attachment, named `{id}.eml`.',
    schema: { type: 'string', pattern: '^attachment;', maxLength: 80 },
  },
  'Repr-Digest': {
    description:
      "RFC 9530: the SHA-256 of the whole message (`sha-256=:<base64>:`), also in a 206 answer. The same digest, in hex, is the ETag and an export's manifest.",
    schema: { type: 'string', pattern: '^sha-256=:[A-Za-z0-9+/]{43}=:$', maxLength: 55 },
  },
  'Archive-Copy': {
    description:
      '`original`: the bytes as they arrived, kept at import or sync. `reconstructed`: the archive keeps no original of this message (Mail Archiver\'s database, or mail archived before originals were kept), so the message was rebuilt from its stored fields, as Mail Archiver\'s own "Export as EML" does; it makes no claim to be the original and carries an `X-Mail-Archive-Reconstructed` header of its own.',
    schema: { type: 'string', enum: ['original', 'reconstructed'] },
  },
  'Content-Security-Policy': SANDBOX,
  'X-Content-Type-Options': NOSNIFF,
  ETag: headerRef('ETag'),
  'Accept-Ranges': ACCEPT_RANGES,
};

const LENGTH = { type: 'integer', format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER };

/** GET /api/v1/emails/{id}/raw */
export function getRawEmail(): OpenApiOperation {
  return {
    operationId: 'getRawEmail',
    tags: ['Emails'],
    summary: "The message's own bytes",
    description:
      "The message as `message/rfc822`: on the embedded store the bytes exactly as they arrived (a file or an IMAP fetch as read; an mbox entry without its From_ line, its `>From` quoting undone), checked against the SHA-256 recorded when it was archived; on Mail Archiver's database the original where one is kept (mail this service imported, the GoBD fork's kept sources), otherwise a reconstruction (see `Archive-Copy`). Ranges and ETags as for attachment downloads. Logged in the access log as Download.",
    parameters: [pathId('id', 'Email id.')],
    responses: byStatus({
      '200': {
        description:
          'The message as `message/rfc822`. The body is not declared: it is a whole message of any size, untrusted bytes.',
        headers: {
          ...RAW_HEADERS,
          'Content-Length': { description: 'Size in bytes.', schema: LENGTH },
          ...COMMON_HEADERS,
        },
      },
      '206': {
        description:
          'Partial Content: the one byte range asked for with `Range: bytes=…` (with `If-Range`, only while the ETag still matches). Logged as Download only when the range starts at byte 0.',
        headers: {
          ...RAW_HEADERS,
          'Content-Range': headerRef('Content-Range'),
          'Content-Length': { description: 'Bytes in the range.', schema: LENGTH },
          ...COMMON_HEADERS,
        },
      },
      '304': notModified('the message'),
      '416': problem('Range Not Satisfiable: no byte of the requested range lies within the message.', {
        'Content-Range': headerRef('Content-Range'),
      }),
      '400': problem('`id` is not a 32-bit integer.'),
      ...COMMON,
      '404': problem(
        'The message does not exist, its account is not visible to the caller, or no original is kept for it (archived before originals were kept; `detail` says so, and importing its source again attaches it).',
      ),
      '409': problem(
        'An original is kept but failed its integrity check (its bytes no longer match the SHA-256 recorded when it was archived): it is not served as the original.',
      ),
    }),
  };
}
