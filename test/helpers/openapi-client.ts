// Generates a typed client from the OpenAPI document the way a consumer of the API would:
// openapi-typescript turns the document into `paths`/`components` types, a small program uses
// them with openapi-fetch, the TypeScript compiler checks that program with strict options,
// and the emitted JavaScript is what the test runs against a live server.
//
// Everything is written to a temporary directory with a `node_modules` symlink to this
// repository's, so the program resolves `openapi-fetch` exactly as an installed package.
import { symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import openapiTSModule, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import type { OpenApiDocument } from '../../gateway/api/openapi.js';
import { SORT_KEYS } from '../../shared/jobs.js';

// The package's types declare `export =` for the default; at runtime the ESM default is the function.
const openapiTS = openapiTSModule as unknown as (source: object, options?: { silent?: boolean }) => Promise<ts.Node[]>;

export const SCHEMA_FILE = 'api-v1.ts';
export const CLIENT_FILE = 'client.ts';

/** Compiler options a strict consumer would use. */
export const STRICT_OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
  types: [],
  strict: true,
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true,
  noImplicitReturns: true,
  noUnusedLocals: true,
  skipLibCheck: true,
  declaration: false,
  sourceMap: false,
};

/**
 * The client program. Besides calling the API it pins the generated types down: every DTO
 * field optional, bodies `string | null`, enums for the search parameters. A type that
 * differs makes one of the `Equals` checks or `@ts-expect-error` lines a compile error.
 */
const CLIENT_TEMPLATE = String.raw`
import createClient from 'openapi-fetch';
import type { components, paths } from './api-v1.js';

type Schemas = components['schemas'];
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(_proof: T): void {}

// Every DTO field is optional; the bodies are null-capable; int32 and int64 are numbers.
assertType<Equals<Schemas['MailAccountDto']['id'], number | undefined>>(true);
assertType<Equals<Schemas['MailAccountDto']['name'], string | undefined>>(true);
assertType<Equals<Schemas['EmailDetailDto']['textBody'], string | null | undefined>>(true);
assertType<Equals<Schemas['EmailDetailDto']['htmlBody'], string | null | undefined>>(true);
assertType<Equals<Schemas['EmailDetailDto']['subject'], string | undefined>>(true);
assertType<Equals<Schemas['AttachmentDto']['size'], number | undefined>>(true);
assertType<Equals<Schemas['FolderNodeDto']['children'], Schemas['FolderNodeDto'][] | undefined>>(true);
assertType<Equals<Schemas['PagedResultDtoOfEmailSummaryDto']['items'], Schemas['EmailSummaryDto'][] | undefined>>(true);
assertType<Equals<Schemas['StatsDto']['databaseSizeInMB'], string | undefined>>(true);
assertType<Equals<Schemas['ProblemDetails']['status'], number | undefined>>(true);

type SearchQuery = NonNullable<paths['/api/v1/emails']['get']['parameters']['query']>;
// The sort keys are exactly those the server's validation accepts (SORT_KEYS), spec's five included.
assertType<Equals<SearchQuery['sortBy'], SORT_KEY_UNION | undefined>>(true);
assertType<'sentDate' | 'receivedDate' | 'subject' | 'from' | 'to' extends SearchQuery['sortBy'] ? true : false>(true);
assertType<Equals<SearchQuery['sortOrder'], 'asc' | 'desc' | undefined>>(true);
assertType<Equals<SearchQuery['direction'], 'incoming' | 'outgoing' | undefined>>(true);
assertType<Equals<SearchQuery['page'], number | undefined>>(true);
assertType<Equals<paths['/api/v1/emails/{id}']['get']['parameters']['path']['id'], number>>(true);

export interface Observed {
  template: string;
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

function observe(template: string, response: Response, body: unknown): Observed {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name.toLowerCase()] = value;
  });
  return { template, status: response.status, headers, body };
}

export async function run(baseUrl: string, apiKey: string) {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: 'Bearer ' + apiKey } });
  const observed: Observed[] = [];

  const accounts = await client.GET('/api/v1/accounts');
  observed.push(observe('/api/v1/accounts', accounts.response, accounts.data ?? accounts.error));
  const accountNames: string[] = (accounts.data ?? []).map((a) => a.name ?? '?');
  const firstAccountId: number | undefined = accounts.data?.[0]?.id;

  const folders = await client.GET('/api/v1/accounts/{id}/folders', { params: { path: { id: firstAccountId ?? 0 } } });
  observed.push(observe('/api/v1/accounts/{id}/folders', folders.response, folders.data ?? folders.error));
  const folderPaths: string[] = [];
  const walk = (nodes: Schemas['FolderNodeDto'][]): void => {
    for (const node of nodes) {
      folderPaths.push(node.fullPath ?? '');
      walk(node.children ?? []);
    }
  };
  walk(folders.data ?? []);

  const search = await client.GET('/api/v1/emails', {
    params: { query: { q: 'budget', from: '2024-01-01', to: '2024-12-31T23:59:59Z', sortBy: 'sentDate', sortOrder: 'asc', page: 1, pageSize: 10 } },
  });
  observed.push(observe('/api/v1/emails', search.response, search.data ?? search.error));
  const subjects: string[] = (search.data?.items ?? []).map((e) => e.subject ?? '');
  const totalItems: number | undefined = search.data?.totalItems;
  const withAttachments = search.data?.items?.find((e) => e.hasAttachments === true);

  const emailId: number = withAttachments?.id ?? -1;
  const detail = await client.GET('/api/v1/emails/{id}', { params: { path: { id: emailId } } });
  observed.push(observe('/api/v1/emails/{id}', detail.response, detail.data ?? detail.error));
  const textBody: string | null | undefined = detail.data?.textBody;
  const htmlBody: string | null | undefined = detail.data?.htmlBody;
  const attachments = (detail.data?.attachments ?? []).map((a) => ({ id: a.id ?? -1, fileName: a.fileName ?? '', size: a.size ?? -1 }));

  const stats = await client.GET('/api/v1/stats');
  observed.push(observe('/api/v1/stats', stats.response, stats.data ?? stats.error));
  const emailCount: number | undefined = stats.data?.emails;
  const databaseSizeInMB: string | undefined = stats.data?.databaseSizeInMB;

  // Error answers are typed as ProblemDetails.
  const missing = await client.GET('/api/v1/emails/{id}', { params: { path: { id: 2147483647 } } });
  observed.push(observe('/api/v1/emails/{id}', missing.response, missing.data ?? missing.error));
  const missingStatus: number | undefined = missing.error?.status;
  const missingTitle: string | undefined = missing.error?.title;

  const badSort = await client.GET('/api/v1/emails', {
    // @ts-expect-error: sortBy is an enum of the five sort keys, so the client cannot send 'size'.
    params: { query: { sortBy: 'size' } },
  });
  observed.push(observe('/api/v1/emails', badSort.response, badSort.data ?? badSort.error));
  const badSortDetail: string | undefined = badSort.error?.detail;

  // @ts-expect-error: the path parameter id is required.
  void (() => client.GET('/api/v1/emails/{id}', { params: { path: {} } }));
  // @ts-expect-error: the API is read-only; the client has no POST.
  void (() => client.POST('/api/v1/emails', {}));

  return {
    observed,
    accountNames,
    folderPaths,
    subjects,
    totalItems,
    emailId,
    textBody,
    htmlBody,
    attachments,
    emailCount,
    databaseSizeInMB,
    missingStatus,
    missingTitle,
    badSortDetail,
  };
}
`;

export const CLIENT_SOURCE = CLIENT_TEMPLATE.replace(
  'SORT_KEY_UNION',
  SORT_KEYS.map((k) => JSON.stringify(k)).join(' | '),
);

export interface GeneratedClient {
  /** The generated types, as openapi-typescript wrote them. */
  schemaSource: string;
  /** Compiler diagnostics of the program (schema + client), formatted; empty when it type-checks. */
  diagnostics: string[];
  /** file:// URL of the emitted client.js; undefined when the program did not type-check. */
  clientModule: string | undefined;
}

/** Generates types from `doc` into `dir`, writes the client program, type-checks and emits it. */
export async function generateClient(doc: OpenApiDocument, dir: string, repoRoot: string): Promise<GeneratedClient> {
  const ast = await openapiTS(structuredClone(doc), { silent: true });
  const schemaSource = astToString(ast);
  writeFileSync(join(dir, SCHEMA_FILE), schemaSource);
  writeFileSync(join(dir, CLIENT_FILE), CLIENT_SOURCE);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'generated-client', private: true, type: 'module' }));
  symlinkSync(resolve(repoRoot, 'node_modules'), join(dir, 'node_modules'), 'dir');

  const program = ts.createProgram({
    rootNames: [join(dir, SCHEMA_FILE), join(dir, CLIENT_FILE)],
    options: { ...STRICT_OPTIONS, outDir: join(dir, 'out'), rootDir: dir },
  });
  const all = [...ts.getPreEmitDiagnostics(program)];
  const host: ts.FormatDiagnosticsHost = {
    getCanonicalFileName: (f) => f,
    getCurrentDirectory: () => dir,
    getNewLine: () => '\n',
  };
  const diagnostics = all.map((d) => ts.formatDiagnostic(d, host).trim());
  if (diagnostics.length > 0) return { schemaSource, diagnostics, clientModule: undefined };
  const emitted = program.emit();
  if (emitted.emitSkipped) return { schemaSource, diagnostics: ['emit skipped'], clientModule: undefined };
  return { schemaSource, diagnostics, clientModule: pathToFileURL(join(dir, 'out', 'client.js')).href };
}
