// The OpenAPI v1 document (SPEC.md, “Resources and their fields”, “Endpoints”, “Errors” and “Versioning”): it validates, it names and shapes
// the components as the spec says, it declares every operation, parameter and status, and a
// client generated from it type-checks and talks to the running server, whose answers all
// conform to the document.
import SwaggerParser from '@apidevtools/swagger-parser';
import anyTest, { type TestFn } from 'ava';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  API_DOCUMENT_VERSION,
  buildOpenApiDocument,
  DTO_SCHEMA_NAMES,
  type JsonSchema,
  type OpenApiDocument,
  type OpenApiOperation,
  type OpenApiParameter,
  type OpenApiResponse,
} from '../gateway/api/openapi.js';
import { createGateway, type Gateway } from '../gateway/app.js';
import { createLogger } from '../gateway/logger.js';
import { defaultSettings, type Settings } from '../shared/config.js';
import { MAX_THREAD_LENGTH, SORT_KEYS } from '../shared/jobs.js';
import { Extractor } from '../engine/attachments/extractor.js';
import { reindexAttachments } from '../engine/attachments/index-texts.js';
import { importPaths } from '../engine/import/importer.js';
import { createFixture, tempDir, type Fixture } from './helpers/fixture.js';
import { withAdmin } from './helpers/store.js';
import { generateClient, type GeneratedClient } from './helpers/openapi-client.js';
import { headersOf, OpenApiConformance, type ObservedResponse } from './helpers/openapi-conformance.js';

// dist/test/openapi.test.js → the repository root, whose node_modules the generated client uses.
const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

interface Live {
  gateway: Gateway;
  server: Server;
  baseUrl: string;
}

interface Context {
  settings: Settings;
  doc: OpenApiDocument;
  f: Fixture;
  generated: GeneratedClient;
  /** The standard server. */
  main: Live;
  /** Attachment downloads off and a budget of 2 requests per minute, on the same engine pool. */
  strict: Live;
  conformance: OpenApiConformance;
  cleanupClient: () => void;
}
const test = anyTest as TestFn<Context>;

const OPERATIONS: Record<string, { operationId: string; tag: string; params: string[]; statuses: string[] }> = {
  '/api/v1/accounts': {
    operationId: 'listAccounts',
    tag: 'Accounts',
    params: [],
    statuses: ['200', '401', '406', '429', '500', '503'],
  },
  '/api/v1/accounts/{id}/folders': {
    operationId: 'listFolders',
    tag: 'Accounts',
    params: ['id'],
    statuses: ['200', '400', '401', '404', '406', '429', '500', '503'],
  },
  '/api/v1/emails': {
    operationId: 'searchEmails',
    tag: 'Emails',
    // SPEC.md's ten, then our additions (docs/search.md), which change nothing unless given.
    params: [
      'q',
      'from',
      'to',
      'accountId',
      'folder',
      'direction',
      'page',
      'pageSize',
      'sortBy',
      'sortOrder',
      'snippets',
      'include',
    ],
    statuses: ['200', '400', '401', '406', '429', '500', '503'],
  },
  // Additive to SPEC.md: aggregates (docs/search.md, "Aggregates").
  '/api/v1/emails/aggregate': {
    operationId: 'aggregateEmails',
    tag: 'Emails',
    params: ['q', 'from', 'to', 'accountId', 'folder', 'direction', 'groupBy', 'limit'],
    statuses: ['200', '400', '401', '406', '429', '500', '503'],
  },
  // Additive to SPEC.md: exports (docs/export.md).
  '/api/v1/emails/export': {
    operationId: 'exportEmails',
    tag: 'Emails',
    params: ['q', 'from', 'to', 'accountId', 'folder', 'direction', 'format'],
    statuses: ['200', '400', '401', '403', '406', '422', '429', '500', '503'],
  },
  '/api/v1/emails/{id}': {
    operationId: 'getEmail',
    tag: 'Emails',
    params: ['id'],
    statuses: ['200', '304', '400', '401', '404', '406', '429', '500', '503'],
  },
  // Additive to SPEC.md: conversations (docs/decisions.md, ADR 14).
  '/api/v1/emails/{id}/thread': {
    operationId: 'getThread',
    tag: 'Emails',
    params: ['id'],
    statuses: ['200', '400', '401', '404', '406', '429', '500', '503'],
  },
  '/api/v1/emails/{id}/attachments/{attachmentId}': {
    operationId: 'downloadAttachment',
    tag: 'Emails',
    params: ['id', 'attachmentId'],
    statuses: ['200', '206', '304', '400', '401', '403', '404', '406', '416', '429', '500', '503'],
  },
  '/api/v1/emails/{id}/attachments/{attachmentId}/text': {
    operationId: 'getAttachmentText',
    tag: 'Emails',
    params: ['id', 'attachmentId'],
    statuses: ['200', '400', '401', '403', '404', '406', '429', '500', '503'],
  },
  // Additive to SPEC.md: the message's own bytes (docs/evidence.md, "Originals").
  '/api/v1/emails/{id}/raw': {
    operationId: 'getRawEmail',
    tag: 'Emails',
    params: ['id'],
    statuses: ['200', '206', '304', '400', '401', '404', '406', '409', '416', '429', '500', '503'],
  },
  '/api/v1/stats': {
    operationId: 'getStats',
    tag: 'Stats',
    params: [],
    statuses: ['200', '401', '406', '429', '500', '503'],
  },
};

async function listen(gateway: Gateway): Promise<Live> {
  const server = createServer(gateway.app.callback());
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return { gateway, server, baseUrl: `http://127.0.0.1:${port}` };
}

async function stop(live: Live | undefined): Promise<void> {
  if (!live) return;
  live.server.closeAllConnections();
  await new Promise<void>((ok) => live.server.close(() => ok()));
  await live.gateway.close();
}

/** A 32-bit integer, bounded as every id and integer parameter is. */
const INT32 = { type: 'integer', format: 'int32', minimum: -2_147_483_648, maximum: 2_147_483_647 };

function operation(doc: OpenApiDocument, path: string): OpenApiOperation {
  const op = doc.paths[path]?.get;
  if (!op) throw new Error(`no GET ${path}`);
  return op;
}

function param(doc: OpenApiDocument, path: string, name: string): OpenApiParameter {
  const p = operation(doc, path).parameters?.find((x) => x.name === name);
  if (!p) throw new Error(`no parameter ${name} on ${path}`);
  return p;
}

/** Every object reachable from `node`, for "no such keyword anywhere" checks. */
function* objects(node: unknown): Generator<JsonSchema> {
  if (Array.isArray(node)) for (const n of node) yield* objects(n);
  else if (node && typeof node === 'object') {
    yield node as JsonSchema;
    for (const v of Object.values(node)) yield* objects(v);
  }
}

async function observe(
  live: Live,
  template: string,
  path: string,
  key?: string,
): Promise<ObservedResponse & { bytes: Buffer }> {
  const response = await fetch(`${live.baseUrl}${path}`, key ? { headers: { Authorization: `Bearer ${key}` } } : {});
  const bytes = Buffer.from(await response.arrayBuffer());
  const headers = headersOf(response);
  const json = /json/.test(headers['content-type'] ?? '');
  return {
    template,
    status: response.status,
    headers,
    body: json ? JSON.parse(bytes.toString('utf8')) : undefined,
    bytes,
  };
}

test.before(async (t) => {
  const f = createFixture();
  const settings = defaultSettings({ Api: { Enabled: true }, Database: { Path: f.dbPath }, Engine: { Threads: 1 } });
  const doc = buildOpenApiDocument(settings);
  const dir = tempDir('mag-openapi-client-');
  const main = await listen(createGateway(settings, { logger: createLogger({ level: 'silent' }) }));
  const strictSettings = defaultSettings({
    Api: { Enabled: true, AllowAttachmentDownloads: false, RateLimitPerMinute: 2 },
    Database: { Path: f.dbPath },
    Engine: { Threads: 1 },
  });
  const strict = await listen(
    createGateway(strictSettings, { engine: main.gateway.engine, logger: createLogger({ level: 'silent' }) }),
  );
  t.context = {
    settings,
    doc,
    f,
    main,
    strict,
    conformance: new OpenApiConformance(doc),
    generated: await generateClient(doc, dir.dir, REPO_ROOT),
    cleanupClient: dir.cleanup,
  };
});

test.after.always(async (t) => {
  await stop(t.context.strict);
  await stop(t.context.main);
  t.context.f?.cleanup();
  t.context.cleanupClient?.();
});

// ---------------------------------------------------------------------------------------------
// The document itself

test('the document validates with swagger-parser, and swagger-parser does reject a broken one', async (t) => {
  const { doc } = t.context;
  const api = await SwaggerParser.validate(structuredClone(doc) as never);
  t.is((api as { openapi?: string }).openapi, '3.0.3');
  t.is(api.info.version, API_DOCUMENT_VERSION);

  // Control: a dangling $ref and a path parameter that is not required both fail validation.
  const dangling = structuredClone(doc) as unknown as { components: { schemas: Record<string, unknown> } };
  delete dangling.components.schemas.AttachmentDto;
  await t.throwsAsync(SwaggerParser.validate(dangling as never));
  const optionalPathId = structuredClone(doc);
  (optionalPathId.paths['/api/v1/emails/{id}']!.get.parameters![0] as { required?: boolean }).required = false;
  await t.throwsAsync(SwaggerParser.validate(optionalPathId as never));
});

test('info, servers, tags and bearer security', (t) => {
  const { doc } = t.context;
  t.is(doc.openapi, '3.0.3');
  t.is(doc.info.version, '1.0.0');
  t.truthy(doc.info.title);
  t.true(doc.servers.length > 0);
  for (const s of doc.servers) t.true(s.url.startsWith('/'), `relative server url, got ${s.url}`);
  t.deepEqual(doc.security, [{ bearerAuth: [] }]);
  t.like(doc.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer' });
  t.regex(String(doc.components.securitySchemes.bearerAuth!.bearerFormat), /ma_/);
  t.deepEqual(doc.tags.map((x) => x.name).sort(), ['Accounts', 'Emails', 'Stats']);
});

test('components: the eight schema names of SPEC.md, “Resources and their fields” and the aggregate result, every field optional', (t) => {
  const { schemas } = t.context.doc.components;
  t.deepEqual(Object.keys(schemas).sort(), [...DTO_SCHEMA_NAMES].sort());
  t.deepEqual([...DTO_SCHEMA_NAMES].sort(), [
    'AggregateGroupDto',
    'AggregateResultDto',
    'AttachmentDto',
    'EmailDetailDto',
    'EmailSummaryDto',
    'FolderNodeDto',
    'MailAccountDto',
    'PagedResultDtoOfEmailSummaryDto',
    'ProblemDetails',
    'StatsDto',
  ]);
  for (const [name, schema] of Object.entries(schemas)) {
    t.is(schema.type, 'object', name);
    for (const node of objects(schema)) {
      t.false(Array.isArray(node.required), `${name} has a required array`);
      t.false('$id' in node, `${name} has $id`);
      t.not(node.additionalProperties, false, `${name} is closed`);
    }
  }
});

test('components: fields, formats, nullability and references as SPEC.md, “Resources and their fields” lists them', (t) => {
  const s = t.context.doc.components.schemas as Record<string, { properties: Record<string, JsonSchema> }>;
  const props = (name: string) => s[name]!.properties;
  const int32 = { type: 'integer', format: 'int32' };
  const dateTime = { type: 'string', format: 'date-time' };

  t.deepEqual(Object.keys(props('MailAccountDto')), [
    'id',
    'name',
    'emailAddress',
    'provider',
    'isEnabled',
    'lastSync',
  ]);
  t.like(props('MailAccountDto').id, int32);
  t.like(props('MailAccountDto').isEnabled, { type: 'boolean' });
  t.like(props('MailAccountDto').lastSync, dateTime);

  t.deepEqual(Object.keys(props('FolderNodeDto')), ['name', 'fullPath', 'totalCount', 'level', 'children']);
  t.like(props('FolderNodeDto').level, int32);
  t.deepEqual(props('FolderNodeDto').children, {
    type: 'array',
    items: { $ref: '#/components/schemas/FolderNodeDto' },
  });

  const summary = [
    'id',
    'accountId',
    'subject',
    'from',
    'to',
    'sentDate',
    'isOutgoing',
    'hasAttachments',
    'folderName',
  ];
  // SPEC.md's fields, Mail Archiver's read flag where the archive has it (docs/compat.md), then
  // the additions a search item carries only when asked for (snippets=true, include=threadId);
  // like every field, optional in the document.
  t.deepEqual(Object.keys(props('EmailSummaryDto')), [
    ...summary,
    'isRead',
    'snippet',
    'snippetAttachment',
    'threadId',
  ]);
  t.like(props('EmailSummaryDto').isRead, { type: 'boolean' });
  t.like(props('EmailDetailDto').isRead, { type: 'boolean' });
  t.like(props('EmailSummaryDto').snippet, { type: 'string' });
  t.like(props('EmailSummaryDto').threadId, int32);
  t.like(props('EmailSummaryDto').snippetAttachment, {
    type: 'object',
    properties: { id: int32, fileName: { type: 'string' } },
  });
  t.like(props('EmailSummaryDto').accountId, int32);
  t.like(props('EmailSummaryDto').sentDate, dateTime);
  t.falsy(props('EmailSummaryDto').sentDate!.nullable);

  t.deepEqual(Object.keys(props('EmailDetailDto')), [
    ...summary,
    'isRead',
    'cc',
    'bcc',
    'receivedDate',
    'messageId',
    'textBody',
    'htmlBody',
    'attachments',
  ]);
  t.like(props('EmailDetailDto').textBody, { type: 'string', nullable: true });
  t.like(props('EmailDetailDto').htmlBody, { type: 'string', nullable: true });
  t.like(props('EmailDetailDto').receivedDate, dateTime);
  t.falsy(props('EmailDetailDto').subject!.nullable);
  t.like(props('EmailDetailDto').attachments, { type: 'array', items: { $ref: '#/components/schemas/AttachmentDto' } });

  t.deepEqual(Object.keys(props('AttachmentDto')), ['id', 'fileName', 'contentType', 'size']);
  t.like(props('AttachmentDto').size, { type: 'integer', format: 'int64' });

  t.deepEqual(Object.keys(props('PagedResultDtoOfEmailSummaryDto')), [
    'items',
    'page',
    'pageSize',
    'totalItems',
    'totalPages',
  ]);
  t.like(props('PagedResultDtoOfEmailSummaryDto').items, {
    type: 'array',
    items: { $ref: '#/components/schemas/EmailSummaryDto' },
  });
  for (const k of ['page', 'pageSize', 'totalItems', 'totalPages'])
    t.like(props('PagedResultDtoOfEmailSummaryDto')[k], int32, k);

  t.deepEqual(Object.keys(props('StatsDto')), ['emails', 'accounts', 'attachments', 'databaseSizeInMB']);
  for (const k of ['emails', 'accounts', 'attachments']) t.like(props('StatsDto')[k], int32, k);
  t.like(props('StatsDto').databaseSizeInMB, { type: 'string' });

  t.deepEqual(Object.keys(props('ProblemDetails')), ['type', 'title', 'status', 'detail', 'instance']);
  t.like(props('ProblemDetails').type, { type: 'string', format: 'uri' });
  t.like(props('ProblemDetails').status, { type: 'integer' });

  // zod's ±(2^53-1) on every .int() gives way to the bounds of each format (docs/openapi.md,
  // "Bounds"): an int32 is one; an int64 is a count or size, never negative, exact in JSON.
  for (const node of objects(s)) {
    if (node.format === 'int32') t.like(node, { minimum: -2_147_483_648, maximum: 2_147_483_647 });
    if (node.format === 'int64') t.like(node, { minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
    if (node.format === 'date-time') t.is(node.maxLength, 27, 'what toISOString() writes at most');
  }
});

test('paths: the six GET operations of SPEC.md, “REST API”, the conversation route and the attachment text, with ids, tags, parameters and statuses', (t) => {
  const { doc } = t.context;
  t.deepEqual(Object.keys(doc.paths).sort(), Object.keys(OPERATIONS).sort());
  const ids = new Set<string>();
  for (const [path, expected] of Object.entries(OPERATIONS)) {
    const item = doc.paths[path] as Record<string, unknown>;
    t.deepEqual(Object.keys(item), ['get'], `${path} offers GET only`);
    const op = operation(doc, path);
    t.is(op.operationId, expected.operationId);
    ids.add(op.operationId);
    t.deepEqual(op.tags, [expected.tag]);
    t.truthy(op.summary, `${path} summary`);
    t.truthy(op.description, `${path} description`);
    t.deepEqual(
      (op.parameters ?? []).map((p) => p.name),
      expected.params,
      `${path} parameters`,
    );
    t.deepEqual(Object.keys(op.responses).sort(), [...expected.statuses].sort(), `${path} statuses`);
    for (const p of op.parameters ?? []) {
      t.truthy(p.description, `${path} ${p.name} description`);
      if (p.in === 'path') {
        t.true(p.required, `${path} ${p.name} required`);
        t.deepEqual(p.schema, INT32, `${path} ${p.name} int32`);
      } else {
        t.is(p.in, 'query');
        // Every query parameter is optional but an aggregate's groupBy (additive to SPEC.md).
        t.is(Boolean(p.required), p.name === 'groupBy', `${path} ${p.name} optional`);
      }
    }
    for (const status of expected.statuses.filter((s) => !['200', '206', '304'].includes(s))) {
      const res = t.context.conformance.declared(path, Number(status))!;
      t.deepEqual(
        res.content,
        { 'application/problem+json': { schema: { $ref: '#/components/schemas/ProblemDetails' } } },
        `${path} ${status}`,
      );
    }
  }
  t.is(ids.size, Object.keys(OPERATIONS).length, 'operationIds are unique');
});

test('success responses: the DTOs as application/json, the attachment bytes with no declared body', (t) => {
  const { doc } = t.context;
  const schemaOf = (path: string) =>
    (operation(doc, path).responses['200'] as OpenApiResponse).content?.['application/json']?.schema;
  t.deepEqual(schemaOf('/api/v1/accounts'), { type: 'array', items: { $ref: '#/components/schemas/MailAccountDto' } });
  t.deepEqual(schemaOf('/api/v1/accounts/{id}/folders'), {
    type: 'array',
    items: { $ref: '#/components/schemas/FolderNodeDto' },
  });
  t.deepEqual(schemaOf('/api/v1/emails'), { $ref: '#/components/schemas/PagedResultDtoOfEmailSummaryDto' });
  t.deepEqual(schemaOf('/api/v1/emails/{id}'), { $ref: '#/components/schemas/EmailDetailDto' });
  t.deepEqual(schemaOf('/api/v1/stats'), { $ref: '#/components/schemas/StatsDto' });
  t.deepEqual(schemaOf('/api/v1/emails/{id}/thread'), {
    type: 'array',
    items: { $ref: '#/components/schemas/EmailSummaryDto' },
    maxItems: MAX_THREAD_LENGTH,
  });
  const download = operation(doc, '/api/v1/emails/{id}/attachments/{attachmentId}').responses['200'] as OpenApiResponse;
  t.is(download.content, undefined);
  t.truthy(download.headers?.['Content-Disposition']);
  t.truthy(download.headers?.['Content-Length']);
});

test('401 carries WWW-Authenticate; 429 and 503 carry Retry-After and the RateLimit-* headers', (t) => {
  const { doc, conformance } = t.context;
  for (const path of Object.keys(OPERATIONS)) {
    const unauthorized = conformance.declared(path, 401)!;
    t.truthy(unauthorized.headers?.['WWW-Authenticate'], path);
    const tooMany = conformance.declared(path, 429)!;
    const busy = conformance.declared(path, 503)!;
    for (const h of ['Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']) {
      t.truthy(tooMany.headers?.[h], `${path} ${h}`);
      t.truthy(busy.headers?.[h], `${path} 503 ${h}`);
    }
  }
  t.like(doc.components.headers['Retry-After'], { schema: { type: 'integer' } });
  t.like(doc.components.headers['WWW-Authenticate'], { schema: { type: 'string' } });
});

test('GET /api/v1/emails parameters: types, formats, enums and defaults as SPEC.md, “Query parameters of GET /api/v1/emails” lists them', (t) => {
  const { doc, settings } = t.context;
  const p = (name: string) => param(doc, '/api/v1/emails', name);
  t.like(p('q').schema, { type: 'string' });
  for (const name of ['from', 'to']) {
    t.deepEqual(p(name).schema, { type: 'string', format: 'date-time', maxLength: 64 }, name);
    t.regex(p(name).description, /YYYY-MM-DD/);
    t.regex(p(name).description, /date-time/);
  }
  t.deepEqual(p('accountId').schema, INT32);
  t.deepEqual(p('folder').schema, { type: 'string', maxLength: 1024 });
  t.deepEqual(p('direction').schema, { type: 'string', enum: ['incoming', 'outgoing'] });
  t.like(p('page').schema, { type: 'integer', format: 'int32', default: 1 });
  t.like(p('pageSize').schema, { type: 'integer', format: 'int32', default: 0 });
  t.regex(p('pageSize').description, /Api:DefaultPageSize/);
  t.regex(p('pageSize').description, /Api:MaxPageSize/);
  t.true(p('pageSize').description.includes(`[1, ${settings.Api.MaxPageSize}]`));
  // The spec's five keys, and exactly the keys the shared validation accepts (which may extend them).
  t.like(p('sortBy').schema, { type: 'string', default: 'sentDate' });
  const sortKeys = p('sortBy').schema.enum as string[];
  for (const k of ['sentDate', 'receivedDate', 'subject', 'from', 'to']) t.true(sortKeys.includes(k), k);
  t.deepEqual(sortKeys, [...SORT_KEYS]);
  for (const k of sortKeys) t.true(p('sortBy').description.includes(`\`${k}\``), k);
  t.deepEqual(p('sortOrder').schema, { type: 'string', enum: ['asc', 'desc'], default: 'desc' });
});

test('the document is built once per settings, frozen, and reflects the page-size settings', (t) => {
  const { settings, doc } = t.context;
  t.is(buildOpenApiDocument(settings), doc);
  t.is(buildOpenApiDocument({ ...settings, Api: { ...settings.Api } }), doc, 'equal settings share the document');
  t.true(Object.isFrozen(doc) && Object.isFrozen(doc.components.schemas.EmailDetailDto));
  t.throws(() => {
    (doc.info as { version: string }).version = '2.0.0';
  });
  const other = buildOpenApiDocument(defaultSettings({ Api: { DefaultPageSize: 7, MaxPageSize: 42 } }));
  t.not(other, doc);
  const pageSize = param(other, '/api/v1/emails', 'pageSize').description;
  t.true(pageSize.includes('7') && pageSize.includes('[1, 42]'), pageSize);
  // The components differ only in the bound of a search page (Api:MaxPageSize).
  const items = (d: typeof doc) =>
    (d.components.schemas.PagedResultDtoOfEmailSummaryDto!.properties as Record<string, JsonSchema>).items;
  t.like(items(other), { maxItems: 42 });
  t.like(items(doc), { maxItems: settings.Api.MaxPageSize });
  t.deepEqual(
    { ...other.components.schemas, PagedResultDtoOfEmailSummaryDto: undefined },
    { ...doc.components.schemas, PagedResultDtoOfEmailSummaryDto: undefined },
  );
});

// ---------------------------------------------------------------------------------------------
// A generated client, and the live server

test('the conformance checker rejects undeclared statuses, fields, headers and wrong types', (t) => {
  const { conformance } = t.context;
  const headers = {
    'content-type': 'application/json',
    'ratelimit-limit': '1',
    'ratelimit-remaining': '0',
    'ratelimit-reset': '1',
  };
  t.deepEqual(
    conformance.problems({
      template: '/api/v1/stats',
      status: 200,
      headers,
      body: { emails: 1, databaseSizeInMB: '' },
    }),
    [],
  );
  t.not(conformance.problems({ template: '/api/v1/stats', status: 418, headers, body: {} }).length, 0);
  t.not(
    conformance.problems({ template: '/api/v1/stats', status: 200, headers, body: { emails: 1, password: 'x' } })
      .length,
    0,
  );
  t.not(conformance.problems({ template: '/api/v1/stats', status: 200, headers, body: { emails: 2 ** 40 } }).length, 0);
  t.not(
    conformance.problems({
      template: '/api/v1/stats',
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: {},
    }).length,
    0,
  );
  t.not(
    conformance.problems({ template: '/api/v1/emails/{id}', status: 200, headers, body: { sentDate: 'yesterday' } })
      .length,
    0,
  );
  t.deepEqual(
    conformance.problems({
      template: '/api/v1/emails/{id}',
      status: 200,
      headers: { ...headers, etag: '"x"' },
      body: { textBody: null },
    }),
    [],
  );
  t.not(
    conformance.problems({ template: '/api/v1/emails/{id}', status: 200, headers, body: { subject: null } }).length,
    0,
  );
  t.not(
    conformance.problems({
      template: '/api/v1/accounts/{id}/folders',
      status: 200,
      headers,
      body: [{ children: [{ level: 'x' }] }],
    }).length,
    0,
  );
});

test('a client generated with openapi-typescript + openapi-fetch type-checks under strict options', (t) => {
  const { generated } = t.context;
  t.deepEqual(generated.diagnostics, []);
  t.truthy(generated.clientModule);
  for (const name of DTO_SCHEMA_NAMES) t.true(generated.schemaSource.includes(`${name}: {`), name);
  t.regex(generated.schemaSource, /"\/api\/v1\/emails\/\{id\}\/attachments\/\{attachmentId\}": \{/);
  t.regex(generated.schemaSource, /textBody\?: string \| null;/);
});

test('the generated client calls the running server, and every answer conforms to the document', async (t) => {
  const { generated, main, f, conformance } = t.context;
  if (!generated.clientModule) return t.fail(`client did not compile: ${generated.diagnostics.join('\n')}`);
  const client = (await import(generated.clientModule)) as {
    run(
      baseUrl: string,
      key: string,
    ): Promise<{
      observed: ObservedResponse[];
      accountNames: string[];
      folderPaths: string[];
      subjects: string[];
      totalItems: number | undefined;
      emailId: number;
      textBody: string | null | undefined;
      htmlBody: string | null | undefined;
      attachments: Array<{ id: number; fileName: string; size: number }>;
      emailCount: number | undefined;
      databaseSizeInMB: string | undefined;
      missingStatus: number | undefined;
      missingTitle: string | undefined;
      badSortDetail: string | undefined;
    }>;
  };
  const r = await client.run(main.baseUrl, f.keys.admin);

  t.deepEqual([...r.accountNames].sort(), ['Personal', 'Shared', 'Work']);
  t.true(r.folderPaths.length > 0);
  t.deepEqual(r.subjects, ['Family reunion', 'Quarterly budget review', 'Re: Quarterly budget review']);
  t.is(r.totalItems, 3);
  t.is(r.emailId, f.emails.budget as number);
  t.is(r.textBody, 'Please review the attached budget spreadsheet.');
  t.is(r.htmlBody, '<p>Please review the attached <b>budget</b> spreadsheet.</p>');
  t.deepEqual(r.attachments.map((a) => a.fileName).sort(), ['budget "Q1" €.xlsx', 'notes.txt']);
  t.is(r.attachments.find((a) => a.fileName === 'notes.txt')?.size, Buffer.byteLength('line one\nline two\n'));
  t.is(r.emailCount, Object.keys(f.emails).length);
  t.not(r.databaseSizeInMB, '');
  t.is(r.missingStatus, 404);
  t.is(r.missingTitle, 'Not Found');
  t.regex(r.badSortDetail ?? '', /sortBy/);

  t.deepEqual(
    r.observed.map((o) => `${o.template} ${o.status}`),
    [
      '/api/v1/accounts 200',
      '/api/v1/accounts/{id}/folders 200',
      '/api/v1/emails 200',
      '/api/v1/emails/{id} 200',
      '/api/v1/stats 200',
      '/api/v1/emails/{id} 404',
      '/api/v1/emails 400',
    ],
  );
  for (const o of r.observed) t.deepEqual(conformance.problems(o), [], `${o.template} ${o.status}`);
});

test('the attachment download, 400, 401, 403, 404 and 429 answers of the running server conform to the document', async (t) => {
  const { main, strict, f, conformance } = t.context;
  const attachment = `/api/v1/emails/${f.emails.budget}/attachments/${f.attachments['budget:notes.txt']}`;
  const template = '/api/v1/emails/{id}/attachments/{attachmentId}';

  const download = await observe(main, template, attachment, f.keys.admin);
  t.is(download.status, 200);
  t.is(download.bytes.toString('utf8'), 'line one\nline two\n');
  t.regex(download.headers['content-disposition'] ?? '', /notes\.txt/);

  const checks: Array<ObservedResponse & { expected: number }> = [
    { ...download, expected: 200 },
    {
      ...(await observe(main, template, `/api/v1/emails/${f.emails.budget}/attachments/abc`, f.keys.admin)),
      expected: 400,
    },
    {
      ...(await observe(main, '/api/v1/accounts/{id}/folders', '/api/v1/accounts/x1/folders', f.keys.admin)),
      expected: 400,
    },
    { ...(await observe(main, '/api/v1/emails', '/api/v1/emails?from=2024-13-45', f.keys.admin)), expected: 400 },
    { ...(await observe(main, '/api/v1/accounts', '/api/v1/accounts')), expected: 401 },
    { ...(await observe(main, '/api/v1/stats', '/api/v1/stats', f.keys.revoked)), expected: 401 },
    {
      ...(await observe(main, template, `/api/v1/emails/${f.emails.budget}/attachments/999999`, f.keys.admin)),
      expected: 404,
    },
    {
      ...(await observe(
        main,
        '/api/v1/accounts/{id}/folders',
        `/api/v1/accounts/${f.accounts.personal}/folders`,
        f.keys.alice,
      )),
      expected: 404,
    },
    { ...(await observe(strict, template, attachment, f.keys.bob)), expected: 403 },
    { ...(await observe(strict, '/api/v1/stats', '/api/v1/stats', f.keys.bob)), expected: 200 },
    { ...(await observe(strict, '/api/v1/stats', '/api/v1/stats', f.keys.bob)), expected: 429 },
  ];
  for (const c of checks) {
    t.is(c.status, c.expected, `${c.template} expected ${c.expected}`);
    t.deepEqual(conformance.problems(c), [], `${c.template} ${c.status}`);
  }
  t.regex(checks[4]!.headers['www-authenticate'] ?? '', /^Bearer/);
  t.truthy(checks.at(-1)!.headers['retry-after']);
  // A non-admin key's stats: databaseSizeInMB is the empty string, and still conforms.
  t.like(checks.at(-2)!.body, { databaseSizeInMB: '' });
});

test('the attachment text route: 200 text/plain, 404 and 403 answers conform to the document', async (t) => {
  const { main, strict, f, conformance } = t.context;
  // The fixture's attachments were written without the importer: read their text first.
  const extractor = new Extractor();
  await withAdmin(f.dbPath, (admin) => reindexAttachments(admin.attachmentTexts(), extractor));
  await extractor.close();
  const template = '/api/v1/emails/{id}/attachments/{attachmentId}/text';
  const url = `/api/v1/emails/${f.emails.budget}/attachments/${f.attachments['budget:notes.txt']}/text`;
  const ok = await observe(main, template, url, f.keys.admin);
  t.is(ok.status, 200);
  t.is(ok.headers['content-type'], 'text/plain; charset=utf-8');
  t.is(ok.bytes.toString('utf8'), 'line one\nline two');
  const checks = [
    { ...ok, body: ok.bytes.toString('utf8') }, // a text body, checked against its declared string schema
    await observe(main, template, `/api/v1/emails/${f.emails.budget}/attachments/999999/text`, f.keys.admin),
    await observe(main, template, `/api/v1/emails/${f.emails.budget}/attachments/x/text`, f.keys.admin),
    await observe(strict, template, url, f.keys.admin),
  ];
  t.deepEqual(
    checks.map((c) => c.status),
    [200, 404, 400, 403],
  );
  for (const c of checks) t.deepEqual(conformance.problems(c), [], `${c.template} ${c.status}`);
});

test("a message's own bytes: 200, 206, 404 (no original kept) and 400 answers conform to the document", async (t) => {
  const { conformance } = t.context;
  // A fixture of its own: the other tests count the shared fixture's messages.
  const f = createFixture();
  t.teardown(() => f.cleanup());
  const file = fileURLToPath(new URL('../../test/fixtures/mail/outgoing.eml', import.meta.url));
  await withAdmin(f.dbPath, (admin) => importPaths(admin, [file], { accountId: f.accounts.work, folder: 'Raw' }));
  const settings = defaultSettings({ Api: { Enabled: true }, Database: { Path: f.dbPath }, Engine: { Threads: 1 } });
  const main = await listen(createGateway(settings, { logger: createLogger({ level: 'silent' }) }));
  t.teardown(() => stop(main));
  const page = await observe(main, '/api/v1/emails', '/api/v1/emails?folder=Raw', f.keys.admin);
  const id = (page.body as { items: Array<{ id: number }> }).items[0]!.id;
  const template = '/api/v1/emails/{id}/raw';
  const ok = await observe(main, template, `/api/v1/emails/${id}/raw`, f.keys.admin);
  t.is(ok.status, 200);
  t.is(ok.headers['content-type'], 'message/rfc822');
  t.is(ok.headers['archive-copy'], 'original');
  const ranged = await fetch(`${main.baseUrl}/api/v1/emails/${id}/raw`, {
    headers: { Authorization: `Bearer ${f.keys.admin}`, Range: 'bytes=0-9' },
  });
  const part = { template, status: ranged.status, headers: headersOf(ranged), body: undefined };
  await ranged.arrayBuffer();
  t.is(part.status, 206);
  const checks = [
    ok,
    part,
    // The fixture's own messages were written without an original.
    await observe(main, template, `/api/v1/emails/${f.emails.budget}/raw`, f.keys.admin),
    await observe(main, template, '/api/v1/emails/x/raw', f.keys.admin),
  ];
  t.deepEqual(
    checks.map((c) => c.status),
    [200, 206, 404, 400],
  );
  for (const c of checks) t.deepEqual(conformance.problems(c), [], `${c.template} ${c.status}`);
});
