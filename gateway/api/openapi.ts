// The OpenAPI v1 document of the REST API (SPEC.md, “Resources and their fields”, “Endpoints”, “Errors” and “Versioning”).
//
// The component schemas are not written by hand: they are generated from the zod DTOs in
// shared/dto.ts, the same definitions the engine's results are typed with and the MCP tools
// publish, so the document cannot drift from the wire shapes. The generated JSON Schema is then
// adjusted to what SPEC.md promises for the *published* schema: every DTO field optional (no
// `required`), null-capable bodies kept (`nullable: true`), int32/int64/date-time formats kept,
// and nothing that would make adding a field in a later v1 release a breaking change
// (`additionalProperties: false` is dropped). The paths mirror gateway/api/router.ts and the
// search parameters mirror shared/search-input.ts.
//
// OpenAPI 3.0.3 is published (not 3.1): it is what zod's `openapi-3.0` target emits natively
// (`nullable: true`), and swagger-parser, openapi-typescript, koa2-swagger-ui and most other
// generators handle it without caveats. docs/openapi.md has the details.
import { z } from 'zod';
import type { Settings } from '../../shared/config.js';
import * as dto from '../../shared/dto.js';
import {
  AGGREGATE_LIMIT_DEFAULT,
  AGGREGATE_LIMIT_MAX,
  GROUP_BY,
  MAX_THREAD_LENGTH,
  SORT_KEYS,
  type SortKey,
} from '../../shared/jobs.js';
import {
  INCLUDE_FIELDS,
  INT32_MAX,
  INT32_MIN,
  MAX_DATE_PARAM_LENGTH,
  MAX_FOLDER_LENGTH,
  MAX_QUERY_LENGTH,
  RELEVANCE_WINDOW,
  SNIPPET_CHARS,
} from '../../shared/search-input.js';
import { COMPRESS_THRESHOLD_BYTES } from '../http/compress.js';

export const OPENAPI_VERSION = '3.0.3';
/** `info.version` of the v1 document (SPEC.md, “Versioning”). */
export const API_DOCUMENT_VERSION = '1.0.0';

/** The component names of SPEC.md, “Resources and their fields”, each the `.meta({ id })` of its zod schema. */
export const DTO_SCHEMAS = {
  MailAccountDto: dto.MailAccountDto,
  FolderNodeDto: dto.FolderNodeDto,
  EmailSummaryDto: dto.EmailSummaryDto,
  EmailDetailDto: dto.EmailDetailDto,
  AttachmentDto: dto.AttachmentDto,
  PagedResultDtoOfEmailSummaryDto: dto.PagedResultDtoOfEmailSummaryDto,
  StatsDto: dto.StatsDto,
  AggregateGroupDto: dto.AggregateGroupDto,
  AggregateResultDto: dto.AggregateResultDto,
  ProblemDetails: dto.ProblemDetails,
} as const satisfies Record<string, z.ZodType>;
export type DtoSchemaName = keyof typeof DTO_SCHEMAS;
export const DTO_SCHEMA_NAMES = Object.keys(DTO_SCHEMAS) as DtoSchemaName[];

export type JsonSchema = { [keyword: string]: unknown };

export interface OpenApiParameter {
  name: string;
  in: 'path' | 'query';
  required?: boolean;
  description: string;
  schema: JsonSchema;
}

export interface OpenApiResponse {
  description: string;
  headers?: Record<string, { $ref: string } | { description: string; schema: JsonSchema }>;
  content?: Record<string, { schema: JsonSchema }>;
}

export interface OpenApiOperation {
  operationId: string;
  tags: string[];
  summary: string;
  description: string;
  parameters?: OpenApiParameter[];
  responses: Record<string, OpenApiResponse | { $ref: string }>;
}

export interface OpenApiDocument {
  openapi: typeof OPENAPI_VERSION;
  info: { title: string; version: string; description: string };
  servers: Array<{ url: string; description: string; 'x-internal'?: boolean }>;
  tags: Array<{ name: string; description: string }>;
  security: Array<Record<string, string[]>>;
  paths: Record<string, { get: OpenApiOperation }>;
  components: {
    schemas: Record<string, JsonSchema>;
    securitySchemes: Record<string, JsonSchema>;
    responses: Record<string, OpenApiResponse>;
    headers: Record<string, { description: string; schema: JsonSchema }>;
  };
}

const SCHEMA_REF = '#/components/schemas/';
const ref = (name: DtoSchemaName) => ({ $ref: `${SCHEMA_REF}${name}` });

// ---------------------------------------------------------------------------------------------
// Components from the zod DTOs

/**
 * Keywords zod emits that the published schema leaves out: `required` (every DTO field is
 * optional in the published schema), `additionalProperties: false` (a later v1 release may add
 * fields), `$id` (not an OpenAPI 3.0 Schema Object keyword) and the ±2^53-1 bounds zod puts on
 * every `.int()`, which the int32/int64 formats already say better.
 */
function publishSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(publishSchema);
  if (!node || typeof node !== 'object') return node;
  const out: JsonSchema = { ...valueBounds(node as JsonSchema) };
  for (const [key, value] of Object.entries(node as JsonSchema)) {
    switch (key) {
      case '$id':
      case 'required':
        continue;
      case 'additionalProperties':
        if (value === false) continue;
        out[key] = publishSchema(value);
        continue;
      case 'minimum':
      case 'maximum':
        // zod's ±2^53-1 on every .int() gives way to the bounds of the format (valueBounds).
        if (Math.abs(value as number) === Number.MAX_SAFE_INTEGER) continue;
        out[key] = value;
        continue;
      case '$ref': {
        const name = /^#\/(?:definitions|\$defs)\/(.+)$/.exec(value as string)?.[1];
        if (!name) throw new Error(`openapi: unexpected $ref ${String(value)} in a DTO schema`);
        out[key] = `${SCHEMA_REF}${name}`;
        continue;
      }
      case 'properties':
        // A map from field name to schema: the names are data, only the values are schemas.
        out[key] = Object.fromEntries(
          Object.entries(value as JsonSchema).map(([field, s]) => [field, publishSchema(s)]),
        );
        continue;
      default:
        out[key] = typeof value === 'object' ? publishSchema(value) : value;
    }
  }
  return out;
}

/** The longest string toISOString() writes (a six-digit signed year): every date-time sent. */
const ISO_DATE_TIME_MAX = 27;

/**
 * The bounds every value of a DTO keeps, whatever the message said (docs/openapi.md, "Bounds"):
 * an int32 is one, an int64 is a count or a size (never negative, at most 2^53-1, what JSON
 * numbers carry exactly), and a date-time is what toISOString() writes. Free text (subject,
 * addresses, bodies, names) is as long as the archived message makes it: no bound is declared.
 */
function valueBounds(schema: JsonSchema): JsonSchema {
  if (schema.type === 'integer') {
    if (schema.format === 'int64') return { minimum: 0, maximum: Number.MAX_SAFE_INTEGER };
    return { format: 'int32', minimum: INT32_MIN, maximum: INT32_MAX };
  }
  if (schema.type === 'string' && schema.format === 'date-time') return { maxLength: ISO_DATE_TIME_MAX };
  return {};
}

let componentCache: Record<string, JsonSchema> | undefined;

/** The DTO component schemas, as published. Independent of settings, so built once. */
export function dtoComponentSchemas(): Record<string, JsonSchema> {
  if (componentCache) return componentCache;
  // One conversion over a holder object: every schema with a `.meta({ id })` becomes one
  // definition and every use of it (the recursive FolderNodeDto included) a $ref to it.
  const holder = z.object(DTO_SCHEMAS);
  const json = z.toJSONSchema(holder, {
    target: 'openapi-3.0',
    io: 'output',
    cycles: 'ref',
    reused: 'inline',
    unrepresentable: 'throw',
  }) as JsonSchema;
  const definitions = (json.definitions ?? json.$defs ?? {}) as Record<string, JsonSchema>;
  const schemas: Record<string, JsonSchema> = {};
  for (const name of DTO_SCHEMA_NAMES) {
    if (!definitions[name])
      throw new Error(`openapi: zod did not emit ${name}; is its .meta({ id }) still ${JSON.stringify(name)}?`);
  }
  for (const [name, schema] of Object.entries(definitions)) schemas[name] = publishSchema(schema) as JsonSchema;
  componentCache = schemas;
  return schemas;
}

// ---------------------------------------------------------------------------------------------
// Paths

const int32 = { type: 'integer', format: 'int32', minimum: INT32_MIN, maximum: INT32_MAX } as const;
const PROBLEM_JSON = 'application/problem+json';
const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });
const RATE_LIMIT_HEADERS = {
  'RateLimit-Limit': headerRef('RateLimit-Limit'),
  'RateLimit-Remaining': headerRef('RateLimit-Remaining'),
  'RateLimit-Reset': headerRef('RateLimit-Reset'),
};

/** Sent on every answer to a request from an origin in Api:AllowedOrigins (gateway/http/cors.ts). */
const CORS_HEADERS = { 'Access-Control-Allow-Origin': headerRef('Access-Control-Allow-Origin') };
const COMMON_HEADERS = { ...RATE_LIMIT_HEADERS, ...CORS_HEADERS };

function ok(description: string, schema: JsonSchema, headers: OpenApiResponse['headers'] = {}): OpenApiResponse {
  return { description, headers: { ...headers, ...COMMON_HEADERS }, content: { 'application/json': { schema } } };
}

/** 304 for a conditional GET whose If-None-Match names the current ETag (gateway/http/conditional.ts). */
function notModified(what: string): OpenApiResponse {
  return {
    description: `Not Modified: If-None-Match names the ETag of ${what}, which has not changed (archived mail never does). No body. Answered only after the key and visibility checks.`,
    headers: { ETag: headerRef('ETag'), ...COMMON_HEADERS },
  };
}

function problem(description: string, headers: OpenApiResponse['headers'] = {}): OpenApiResponse {
  return {
    description,
    headers: { ...headers, ...COMMON_HEADERS },
    content: { [PROBLEM_JSON]: { schema: ref('ProblemDetails') } },
  };
}

/** The responses every operation can give: shared components. */
const COMMON = {
  '401': { $ref: '#/components/responses/Unauthorized' },
  '406': { $ref: '#/components/responses/NotAcceptable' },
  '429': { $ref: '#/components/responses/TooManyRequests' },
  '500': { $ref: '#/components/responses/InternalServerError' },
  '503': { $ref: '#/components/responses/ServiceUnavailable' },
};

/** Responses in status order, as readers of the document expect them. */
function byStatus(responses: OpenApiOperation['responses']): OpenApiOperation['responses'] {
  return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => Number(a) - Number(b)));
}

function pathId(name: string, description: string): OpenApiParameter {
  return { name, in: 'path', required: true, description, schema: { ...int32 } };
}

/** The two path ids of an attachment route (its bytes, its text). */
const attachmentPathIds = (): OpenApiParameter[] => [
  pathId('id', 'Email id.'),
  pathId('attachmentId', 'Attachment id, from the `attachments` of the email.'),
];

/** What each accepted sort key orders by; typed so a new key cannot go undocumented. */
const SORT_KEY_MEANING: Record<SortKey, string> = {
  sentDate: 'sent date',
  receivedDate: 'received date',
  subject: 'subject, case-insensitive',
  from: 'sender, case-insensitive',
  to: 'recipient address, case-insensitive',
  relevance: `full-text rank of \`q\` among its newest ${RELEVANCE_WINDOW.toLocaleString('en')} matches (best first with \`desc\`, newest first among equals), then older matches newest first; without \`q\`, sent date`,
};

function searchParameters(settings: Settings): OpenApiParameter[] {
  const { DefaultPageSize, MaxPageSize } = settings.Api;
  const dateForms =
    'Accepted forms: a date `YYYY-MM-DD` or an ISO 8601 date-time such as `2024-03-05T09:30:00Z` (UTC when it names no offset). Published as a date-time string; an unparseable value is a 400.';
  return [
    {
      name: 'q',
      in: 'query',
      description: `Full-text query over subject, body, from, to, cc and bcc; all words must match, case- and accent-insensitively. Also: \`"exact phrase"\`, \`a OR b\`, \`-word\` or \`NOT word\`, \`(groups)\`, \`prefix*\`, field terms \`subject:\`, \`from:\`, \`to:\`, \`cc:\`, \`bcc:\`, \`body:\` (a word, prefix or quoted phrase; \`from:alice@example.com\` matches that exact address), \`has:attachment\`, \`filename:<word>\` \`thread:<id>\` (the conversation of message \`id\`; any message id of it works) and \`attachment:<word or "phrase" or prefix*>\` (the text inside attachments: PDF, DOCX, text, HTML, attached messages; plain words do not search it). A query with no sensible reading (such as an unmatched \`)\`) is a 400 naming q. At most ${MAX_QUERY_LENGTH} characters. See docs/search.md.`,
      schema: { type: 'string', maxLength: MAX_QUERY_LENGTH },
    },
    {
      name: 'from',
      in: 'query',
      description: `Earliest sent date, inclusive. A date means the start of that UTC day. ${dateForms}`,
      schema: { type: 'string', format: 'date-time', maxLength: MAX_DATE_PARAM_LENGTH },
    },
    {
      name: 'to',
      in: 'query',
      description: `Latest sent date, inclusive. A date means the whole of that UTC day. ${dateForms}`,
      schema: { type: 'string', format: 'date-time', maxLength: MAX_DATE_PARAM_LENGTH },
    },
    {
      name: 'accountId',
      in: 'query',
      description:
        "Restrict to one account, which must be visible to the caller (an account outside the caller's permitted accounts yields no results).",
      schema: { ...int32 },
    },
    {
      name: 'folder',
      in: 'query',
      description: `Restrict to one folder by its full path, e.g. \`INBOX/Invoices\`. At most ${MAX_FOLDER_LENGTH} characters.`,
      schema: { type: 'string', maxLength: MAX_FOLDER_LENGTH },
    },
    {
      name: 'direction',
      in: 'query',
      description: '`incoming` or `outgoing` (case-insensitive).',
      schema: { type: 'string', enum: ['incoming', 'outgoing'] },
    },
    {
      name: 'page',
      in: 'query',
      description: '1-based page number. A page past the last one is a 200 with an empty `items` array.',
      schema: { ...int32, minimum: 1, default: 1 },
    },
    {
      name: 'pageSize',
      in: 'query',
      description: `Results per page. 0 (the default) means \`Api:DefaultPageSize\`, ${DefaultPageSize} on this server. Other values are clamped to [1, \`Api:MaxPageSize\`], [1, ${MaxPageSize}] on this server.`,
      schema: { ...int32, default: 0 },
    },
    {
      name: 'sortBy',
      in: 'query',
      description: `Sort key (case-insensitive). Any other value is a 400. ${SORT_KEYS.map((k) => `\`${k}\`: ${SORT_KEY_MEANING[k]}`).join('; ')}.`,
      schema: { type: 'string', enum: [...SORT_KEYS], default: 'sentDate' },
    },
    {
      name: 'sortOrder',
      in: 'query',
      description: '`asc` or `desc` (case-insensitive).',
      schema: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
    },
    {
      name: 'snippets',
      in: 'query',
      description: `\`true\` adds a \`snippet\` to each item: up to about ${SNIPPET_CHARS} characters of the stored text body (or the subject) around the words of \`q\`, each matched word wrapped in \`<mark>\`…\`</mark>\`, everything else HTML-escaped (\`&\`, \`<\`, \`>\`), whitespace collapsed, \`…\` where the text was cut. Items get no snippet when \`q\` has no words for the subject or body (no \`q\`, or only negations, address or file-name terms, \`has:attachment\`); where the words matched only in an address, the snippet is the start of the body, unmarked. An addition to SPEC.md: without it items are exactly as SPEC.md describes. See docs/search.md.`,
      schema: { type: 'boolean', default: false },
    },
    {
      name: 'include',
      in: 'query',
      description:
        'Extra fields for each item, comma-separated or repeated (case-insensitive). `threadId`: the conversation each message belongs to (`EmailSummaryDto.threadId`). Without it items carry exactly the fields above. Any other name is a 400.',
      schema: { type: 'string', enum: [...INCLUDE_FIELDS] },
    },
  ];
}

const NOSNIFF = { description: '`nosniff`.', schema: { type: 'string', enum: ['nosniff'] } };
const SANDBOX = {
  description: '`sandbox`: the bytes are never rendered as an active document.',
  schema: { type: 'string', enum: ['sandbox'] },
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
  'Accept-Ranges': { description: '`bytes`: ranges are served.', schema: { type: 'string', enum: ['bytes'] } },
};

function paths(settings: Settings): OpenApiDocument['paths'] {
  const downloads = settings.Api.AllowAttachmentDownloads ? 'enabled' : 'disabled';
  return {
    '/api/v1/accounts': {
      get: {
        operationId: 'listAccounts',
        tags: ['Accounts'],
        summary: 'List mail accounts',
        description:
          'The mail accounts visible to the caller: all of them for an administrator, the assigned ones otherwise. Credentials are never returned.',
        responses: byStatus({
          '200': ok('The accounts visible to the caller.', { type: 'array', items: ref('MailAccountDto') }),
          ...COMMON,
        }),
      },
    },
    '/api/v1/accounts/{id}/folders': {
      get: {
        operationId: 'listFolders',
        tags: ['Accounts'],
        summary: "List an account's folders",
        description: "The account's folder tree: root folders, each with its sub-folders in `children`.",
        parameters: [pathId('id', 'Account id.')],
        responses: byStatus({
          '200': ok('The folder tree of the account.', { type: 'array', items: ref('FolderNodeDto') }),
          '400': problem('`id` is not a 32-bit integer.'),
          ...COMMON,
          '404': problem('The account does not exist or is not visible to the caller.'),
        }),
      },
    },
    '/api/v1/emails': {
      get: {
        operationId: 'searchEmails',
        tags: ['Emails'],
        summary: 'Search archived emails',
        description:
          'Full-text and filtered search over the messages of the accounts visible to the caller, one page at a time. Logged in the access log as Search.',
        parameters: searchParameters(settings),
        responses: byStatus({
          '200': ok(
            'One page of matching messages. A page past the last one has an empty `items` array.',
            ref('PagedResultDtoOfEmailSummaryDto'),
          ),
          '400': problem(
            'A malformed parameter, such as an unparseable date, a `from` after `to`, an unknown `sortBy` or a non-integer `page`.',
          ),
          ...COMMON,
        }),
      },
    },
    '/api/v1/emails/aggregate': {
      get: {
        operationId: 'aggregateEmails',
        tags: ['Emails'],
        summary: 'Count archived emails by group',
        description:
          'The messages a search would find (the same `q` and filters; only the accounts visible to the caller), counted by `groupBy`: the largest groups with exact counts, most messages first, equal counts ordered by key. ' +
          "`from`: the sender address (the first `<address>` of From, else its first address), lower-cased; `fromDomain`: its part after `@`; `to`: each distinct address of To, so a message counts once in each of its recipients' groups; `folder`: full path; `account`: account id; `year`, `month` (`2024-03`), `week` (ISO 8601 week of the sent date in UTC, `2024-W09`); `hasAttachments`: `true` or `false`. " +
          '`total` counts the matching messages once each. An addition to SPEC.md. Logged in the access log as Search, with its parameters. See docs/search.md.',
        parameters: [
          ...searchParameters(settings).filter((p) =>
            ['q', 'from', 'to', 'accountId', 'folder', 'direction'].includes(p.name),
          ),
          {
            name: 'groupBy',
            in: 'query',
            required: true,
            description: `What to group by (case-insensitive): ${GROUP_BY.map((g) => `\`${g}\``).join(', ')}. Any other value, or none, is a 400.`,
            schema: { type: 'string', enum: [...GROUP_BY] },
          },
          {
            name: 'limit',
            in: 'query',
            description: `How many of the largest groups to return. 0 (the default) means ${AGGREGATE_LIMIT_DEFAULT}; other values are clamped to [1, ${AGGREGATE_LIMIT_MAX}].`,
            schema: { ...int32, default: 0 },
          },
        ],
        responses: byStatus({
          '200': ok('The largest groups and the number of matching messages.', ref('AggregateResultDto')),
          '400': problem(
            'A malformed parameter: no or an unknown `groupBy`, an unparseable date, a non-integer `limit`.',
          ),
          ...COMMON,
        }),
      },
    },
    '/api/v1/emails/{id}': {
      get: {
        operationId: 'getEmail',
        tags: ['Emails'],
        summary: 'Get one email',
        description:
          'One message with cc, bcc, received date, message id, bodies and attachment metadata. `htmlBody` is raw and unsanitized: treat it as untrusted. Logged in the access log as Open.',
        parameters: [pathId('id', 'Email id.')],
        responses: byStatus({
          '200': ok('The message.', ref('EmailDetailDto'), { ETag: headerRef('ETag') }),
          '304': notModified('the message'),
          '400': problem('`id` is not a 32-bit integer.'),
          ...COMMON,
          '404': problem('The message does not exist or its account is not visible to the caller.'),
        }),
      },
    },
    '/api/v1/emails/{id}/thread': {
      get: {
        operationId: 'getThread',
        tags: ['Emails'],
        summary: "Get an email's conversation",
        description:
          'The conversation the message belongs to, oldest first (by sent date, then id), the message itself included: the messages of its account linked to it by Message-ID, References and In-Reply-To, or joined by subject (reply prefixes stripped, within 30 days). ' +
          `At most ${MAX_THREAD_LENGTH.toLocaleString('en')} messages (the oldest). Only messages the caller may see. Logged in the access log as Search, with \`thread\` (the id) as its parameter. See docs/search.md.`,
        parameters: [pathId('id', 'Email id: any message of the conversation.')],
        responses: byStatus({
          '200': ok('The messages of the conversation, oldest first.', {
            type: 'array',
            items: ref('EmailSummaryDto'),
            maxItems: MAX_THREAD_LENGTH,
          }),
          '400': problem('`id` is not a 32-bit integer.'),
          ...COMMON,
          '404': problem('The message does not exist or its account is not visible to the caller.'),
        }),
      },
    },
    '/api/v1/emails/{id}/attachments/{attachmentId}': {
      get: {
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
      },
    },
    '/api/v1/emails/{id}/attachments/{attachmentId}/text': {
      get: {
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
            description:
              'The extracted text as `text/plain; charset=utf-8`: untrusted content written by third parties.',
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
      },
    },
    '/api/v1/stats': {
      get: {
        operationId: 'getStats',
        tags: ['Stats'],
        summary: 'Archive statistics',
        description:
          'Counts of messages, accounts and attachments. Administrators see global totals and the database size; other keys see counts scoped to their assigned accounts and an empty `databaseSizeInMB`.',
        responses: byStatus({
          '200': ok('The statistics visible to the caller.', ref('StatsDto')),
          ...COMMON,
        }),
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The document

function build(settings: Settings): OpenApiDocument {
  const { RateLimitPerMinute } = settings.Api;
  return {
    openapi: OPENAPI_VERSION,
    info: {
      title: 'Mail Archive API',
      version: API_DOCUMENT_VERSION,
      description:
        'Read-only access to archived mail: accounts, folder trees, message search, message detail, attachment downloads and statistics. ' +
        "Every request needs `Authorization: Bearer <API key>`; cookies are not accepted. A key inherits exactly its owner's permissions, and anything " +
        'outside them is answered as if it did not exist (404). Errors are RFC 7807 `application/problem+json` documents. ' +
        `Requests are limited to ${RateLimitPerMinute} per minute per key (\`Api:RateLimitPerMinute\`). ` +
        'Every DTO field is optional in this document; clients should tolerate absent fields and fields added later in v1. ' +
        `JSON answers over ${COMPRESS_THRESHOLD_BYTES} bytes are compressed (gzip or br) when \`Accept-Encoding\` allows; message detail and attachments carry strong ETags; attachments serve byte ranges.`,
    },
    servers: [
      {
        url: '/',
        description:
          'This server, in whichever environment it is deployed (production, staging or local); every path carries the /api/v1 prefix.',
        'x-internal': false,
      },
    ],
    tags: [
      { name: 'Accounts', description: 'Mail accounts and their folders' },
      { name: 'Emails', description: 'Message search, detail and attachment downloads' },
      { name: 'Stats', description: 'Aggregate statistics' },
    ],
    security: [{ bearerAuth: [] }],
    paths: paths(settings),
    components: {
      schemas: withPageBound(dtoComponentSchemas(), settings.Api.MaxPageSize),
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'ma_ followed by 43 URL-safe base64 characters',
          description:
            'A per-user API key created in the web UI under API Keys: `ma_` followed by 43 URL-safe base64 characters (256 random bits). ' +
            'Send it as `Authorization: Bearer ma_…`. Missing, malformed, expired, revoked or unknown keys, and keys of inactive users, get a 401.',
        },
      },
      responses: {
        Unauthorized: problem(
          'The API key is missing, malformed, expired, revoked or unknown, or its owner is inactive.',
          {
            'WWW-Authenticate': headerRef('WWW-Authenticate'),
          },
        ),
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
      },
      headers: {
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
      },
    },
  };
}

/** `schemas` with these fields of one component extended by more keywords. */
function extend(
  schemas: Record<string, JsonSchema>,
  name: DtoSchemaName,
  fields: Record<string, JsonSchema>,
): Record<string, JsonSchema> {
  const schema = schemas[name]!;
  const properties = { ...(schema.properties as Record<string, JsonSchema>) };
  for (const [field, more] of Object.entries(fields)) properties[field] = { ...properties[field], ...more };
  return { ...schemas, [name]: { ...schema, properties } };
}

/**
 * The bounds of DTO fields the service writes itself (not the archived message): a search page
 * holds at most Api:MaxPageSize items, a problem's type and title come from gateway/problem.ts,
 * and databaseSizeInMB is a number with two decimals or empty.
 */
function withPageBound(schemas: Record<string, JsonSchema>, maxPageSize: number): Record<string, JsonSchema> {
  let out = extend(schemas, 'PagedResultDtoOfEmailSummaryDto', { items: { maxItems: maxPageSize } });
  out = extend(out, 'ProblemDetails', { type: { format: 'uri', maxLength: 128 }, title: { maxLength: 64 } });
  return extend(out, 'StatsDto', { databaseSizeInMB: { pattern: '^(?:\\d+\\.\\d{2})?$', maxLength: 32 } });
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

const documents = new Map<string, OpenApiDocument>();

/**
 * The OpenAPI v1 document for these settings. Built once per distinct set of the values it
 * mentions (page sizes, rate limit, attachment switch) and deeply frozen, since it is shared:
 * tools that modify a document in place (swagger-parser's dereference, for one) must be given
 * a copy (`structuredClone`).
 */
export function buildOpenApiDocument(settings: Settings): OpenApiDocument {
  const { DefaultPageSize, MaxPageSize, RateLimitPerMinute, AllowAttachmentDownloads } = settings.Api;
  const key = JSON.stringify([DefaultPageSize, MaxPageSize, RateLimitPerMinute, AllowAttachmentDownloads]);
  let doc = documents.get(key);
  if (!doc) {
    doc = deepFreeze(build(settings));
    documents.set(key, doc);
  }
  return doc;
}
