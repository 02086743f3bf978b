// The component schemas, generated from the zod DTOs and adjusted to what SPEC.md promises for
// the published schema (see gateway/api/openapi.ts).
import { z } from 'zod';
import { INT32_MAX, INT32_MIN } from '../../../shared/search-input.js';
import { DTO_SCHEMA_NAMES, DTO_SCHEMAS, SCHEMA_REF, type DtoSchemaName, type JsonSchema } from './model.js';

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
export function withPageBound(schemas: Record<string, JsonSchema>, maxPageSize: number): Record<string, JsonSchema> {
  let out = extend(schemas, 'PagedResultDtoOfEmailSummaryDto', { items: { maxItems: maxPageSize } });
  out = extend(out, 'ProblemDetails', { type: { format: 'uri', maxLength: 128 }, title: { maxLength: 64 } });
  return extend(out, 'StatsDto', { databaseSizeInMB: { pattern: '^(?:\\d+\\.\\d{2})?$', maxLength: 32 } });
}
