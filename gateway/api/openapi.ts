// The OpenAPI v1 document of the REST API (SPEC.md, “Resources and their fields”, “Endpoints”,
// “Errors” and “Versioning”).
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
//
// One file per concern under openapi/: model.ts (the document's shape and component names),
// dto-schemas.ts (components from the zod DTOs), responses.ts (response and header building
// blocks), search-parameters.ts, one file per group of operations (accounts.ts, emails.ts,
// attachments.ts) and components.ts (the shared responses and headers). This file assembles them.
import type { Settings } from '../../shared/config.js';
import { COMPRESS_THRESHOLD_BYTES } from '../http/compress.js';
import { getStats, listAccounts, listFolders } from './openapi/accounts.js';
import { downloadAttachment, getAttachmentText } from './openapi/attachments.js';
import { getRawEmail } from './openapi/raw.js';
import { commonResponses, HEADERS, SECURITY_SCHEMES } from './openapi/components.js';
import { dtoComponentSchemas, withPageBound } from './openapi/dto-schemas.js';
import { aggregateEmails, getEmail, getThread, searchEmails } from './openapi/emails.js';
import { exportEmails } from './openapi/export.js';
import { API_DOCUMENT_VERSION, OPENAPI_VERSION, type OpenApiDocument } from './openapi/model.js';

export { dtoComponentSchemas } from './openapi/dto-schemas.js';
export {
  API_DOCUMENT_VERSION,
  DTO_SCHEMA_NAMES,
  DTO_SCHEMAS,
  OPENAPI_VERSION,
  type DtoSchemaName,
  type JsonSchema,
  type OpenApiDocument,
  type OpenApiOperation,
  type OpenApiParameter,
  type OpenApiResponse,
} from './openapi/model.js';

/** The paths, in the order readers see them; each mirrors its route in gateway/api/router.ts. */
function paths(settings: Settings): OpenApiDocument['paths'] {
  return {
    '/api/v1/accounts': { get: listAccounts() },
    '/api/v1/accounts/{id}/folders': { get: listFolders() },
    '/api/v1/emails': { get: searchEmails(settings) },
    '/api/v1/emails/aggregate': { get: aggregateEmails(settings) },
    '/api/v1/emails/export': { get: exportEmails(settings) },
    '/api/v1/emails/{id}': { get: getEmail() },
    '/api/v1/emails/{id}/thread': { get: getThread() },
    '/api/v1/emails/{id}/raw': { get: getRawEmail() },
    '/api/v1/emails/{id}/attachments/{attachmentId}': { get: downloadAttachment(settings) },
    '/api/v1/emails/{id}/attachments/{attachmentId}/text': { get: getAttachmentText(settings) },
    '/api/v1/stats': { get: getStats() },
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
      securitySchemes: SECURITY_SCHEMES,
      responses: commonResponses(settings),
      headers: HEADERS,
    },
  };
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
