// The shape of the OpenAPI v1 document, the version it is published as, and the component
// names of the DTOs (each the `.meta({ id })` of its zod schema in shared/dto.ts).
import type { z } from 'zod';
import * as dto from '../../../shared/dto.js';

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

export const SCHEMA_REF = '#/components/schemas/';
/** A reference to a DTO component. */
export const ref = (name: DtoSchemaName) => ({ $ref: `${SCHEMA_REF}${name}` });
