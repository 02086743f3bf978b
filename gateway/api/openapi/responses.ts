// The building blocks of an operation: response objects (JSON, problem+json, 304), the headers
// every answer carries, the responses every operation can give, and path ids.
import { INT32_MAX, INT32_MIN } from '../../../shared/search-input.js';
import { ref, type OpenApiOperation, type OpenApiParameter, type JsonSchema, type OpenApiResponse } from './model.js';

export const int32 = { type: 'integer', format: 'int32', minimum: INT32_MIN, maximum: INT32_MAX } as const;
const PROBLEM_JSON = 'application/problem+json';
export const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });
const RATE_LIMIT_HEADERS = {
  'RateLimit-Limit': headerRef('RateLimit-Limit'),
  'RateLimit-Remaining': headerRef('RateLimit-Remaining'),
  'RateLimit-Reset': headerRef('RateLimit-Reset'),
};

/** Sent on every answer to a request from an origin in Api:AllowedOrigins (gateway/http/cors.ts). */
const CORS_HEADERS = { 'Access-Control-Allow-Origin': headerRef('Access-Control-Allow-Origin') };
export const COMMON_HEADERS = { ...RATE_LIMIT_HEADERS, ...CORS_HEADERS };

export function ok(description: string, schema: JsonSchema, headers: OpenApiResponse['headers'] = {}): OpenApiResponse {
  return { description, headers: { ...headers, ...COMMON_HEADERS }, content: { 'application/json': { schema } } };
}

/** 304 for a conditional GET whose If-None-Match names the current ETag (gateway/http/conditional.ts). */
export function notModified(what: string): OpenApiResponse {
  return {
    description: `Not Modified: If-None-Match names the ETag of ${what}, which has not changed (archived mail never does). No body. Answered only after the key and visibility checks.`,
    headers: { ETag: headerRef('ETag'), ...COMMON_HEADERS },
  };
}

export function problem(description: string, headers: OpenApiResponse['headers'] = {}): OpenApiResponse {
  return {
    description,
    headers: { ...headers, ...COMMON_HEADERS },
    content: { [PROBLEM_JSON]: { schema: ref('ProblemDetails') } },
  };
}

/** The responses every operation can give: shared components. */
export const COMMON = {
  '401': { $ref: '#/components/responses/Unauthorized' },
  '406': { $ref: '#/components/responses/NotAcceptable' },
  '429': { $ref: '#/components/responses/TooManyRequests' },
  '500': { $ref: '#/components/responses/InternalServerError' },
  '503': { $ref: '#/components/responses/ServiceUnavailable' },
};

/** Responses in status order, as readers of the document expect them. */
export function byStatus(responses: OpenApiOperation['responses']): OpenApiOperation['responses'] {
  return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => Number(a) - Number(b)));
}

export function pathId(name: string, description: string): OpenApiParameter {
  return { name, in: 'path', required: true, description, schema: { ...int32 } };
}

/** The two path ids of an attachment route (its bytes, its text). */
export const attachmentPathIds = (): OpenApiParameter[] => [
  pathId('id', 'Email id.'),
  pathId('attachmentId', 'Attachment id, from the `attachments` of the email.'),
];
