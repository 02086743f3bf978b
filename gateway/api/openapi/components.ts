// The components every operation refers to: the security scheme, the shared responses (401,
// 406, 429, 500, 503) and the headers.
import type { Settings } from '../../../shared/config.js';
import { INT32_MAX } from '../../../shared/search-input.js';
import type { OpenApiDocument } from './model.js';
import { headerRef, problem } from './responses.js';

type Components = OpenApiDocument['components'];

export const SECURITY_SCHEMES: Components['securitySchemes'] = {
  bearerAuth: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'ma_ followed by 43 URL-safe base64 characters',
    description:
      'A per-user API key created in the web UI under API Keys: `ma_` followed by 43 URL-safe base64 characters (256 random bits). ' +
      'Send it as `Authorization: Bearer ma_…`. Missing, malformed, expired, revoked or unknown keys, and keys of inactive users, get a 401.',
  },
};

/** The responses every operation can give (COMMON in responses.ts refers to them). */
export function commonResponses(settings: Settings): Components['responses'] {
  const { RateLimitPerMinute } = settings.Api;
  return {
    Unauthorized: problem('The API key is missing, malformed, expired, revoked or unknown, or its owner is inactive.', {
      'WWW-Authenticate': headerRef('WWW-Authenticate'),
    }),
    TooManyRequests: problem(
      `The rate limit of ${RateLimitPerMinute} requests per minute for this key (or client IP, without a key) is spent.`,
      {
        'Retry-After': headerRef('Retry-After'),
      },
    ),
    NotAcceptable: problem(
      'Not Acceptable: `Accept` allows neither `application/json` nor `application/problem+json` (nor `text/plain` for attachment text). Attachment bytes are served whatever `Accept` says.',
    ),
    InternalServerError: problem(
      'An unexpected error. The body says nothing about the internals; the error is logged on the server.',
    ),
    ServiceUnavailable: problem(
      'The server is overloaded: it already holds as much work as it may queue (Engine:MaxQueue), so the request was refused without being started. Retry after Retry-After seconds.',
      {
        'Retry-After': headerRef('Retry-After'),
      },
    ),
  };
}

export const HEADERS: Components['headers'] = {
  'WWW-Authenticate': {
    description:
      'The RFC 6750 challenge: `Bearer realm="mail-archive", resource_metadata="…"`, with `error="invalid_token", error_description="<the reason>"` when a presented key was rejected (docs/mcp.md, "When a key is refused").',
    schema: { type: 'string', pattern: '^Bearer ', maxLength: 1024 },
  },
  'Retry-After': {
    description:
      'Seconds to wait before retrying: until the rate-limit window resets (429), or for the server to drain its queue (503).',
    schema: { type: 'integer', format: 'int32', minimum: 1, maximum: 60 },
  },
  'RateLimit-Limit': {
    description: 'Requests allowed per one-minute window.',
    schema: { type: 'integer', format: 'int32', minimum: 1, maximum: INT32_MAX },
  },
  'RateLimit-Remaining': {
    description: 'Requests left in the current window.',
    schema: { type: 'integer', format: 'int32', minimum: 0, maximum: INT32_MAX },
  },
  'RateLimit-Reset': {
    description: 'Seconds until the current window ends.',
    schema: { type: 'integer', format: 'int32', minimum: 0, maximum: 60 },
  },
  ETag: {
    description:
      'A strong validator of the content (a message\'s JSON, an attachment\'s bytes); a compressed answer has the coding appended (`"…-gzip"`). Send it back in `If-None-Match` (or `If-Range`).',
    schema: { type: 'string', pattern: '^"[!#-~]+"$', maxLength: 80 },
  },
  'Content-Range': {
    description: '`bytes <first>-<last>/<size>` (206), or `bytes */<size>` (416).',
    schema: { type: 'string', pattern: '^bytes (?:\\d+-\\d+|\\*)/\\d+$', maxLength: 64 },
  },
  'Access-Control-Allow-Origin': {
    description:
      "The request's `Origin`, when it is one of `Api:AllowedOrigins` (CORS; none by default). Absent otherwise.",
    schema: { type: 'string', format: 'uri', maxLength: 2048 },
  },
};
