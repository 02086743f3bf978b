// Tool parameter schemas whose validation messages an agent can act on.
//
// The SDK validates arguments against these before a tool runs and answers a mismatch with an
// isError result that quotes our message ("Input validation error: Invalid arguments for tool
// get_email: id must be …"), so each message names the parameter and what it accepts.
import type { StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import { z } from 'zod';

const shown = (value: unknown) => (value === undefined ? 'nothing' : JSON.stringify(value));
/** "An email id, from search_emails." → "an email id, from search_emails", to end a sentence with. */
const asClause = (description: string) => description.charAt(0).toLowerCase() + description.slice(1).replace(/\.$/, '');

/** An int32 parameter, as SPEC.md types ids and page numbers. */
export function intParam(param: string, description: string) {
  return z
    .int32({
      error: (issue) =>
        issue.input === undefined
          ? `${param} is required: ${asClause(description)}`
          : `${param} must be a whole number (32-bit integer), not ${shown(issue.input)}`,
    })
    .meta({ description });
}

export function stringParam(param: string, description: string) {
  return z.string({ error: (issue) => `${param} must be a string, not ${shown(issue.input)}` }).meta({ description });
}

export function boolParam(param: string, description: string) {
  return z
    .boolean({ error: (issue) => `${param} must be true or false, not ${shown(issue.input)}` })
    .meta({ description });
}

export function enumParam<const T extends readonly [string, ...string[]]>(
  param: string,
  values: T,
  description: string,
) {
  return z
    .enum(values, { error: (issue) => `${param} must be one of ${values.join(', ')}, not ${shown(issue.input)}` })
    .meta({ description });
}

type JsonSchemaOptions = Parameters<StandardSchemaWithJSON['~standard']['jsonSchema']['input']>[0];

/**
 * The same schema, with its JSON Schema form computed once per gateway instead of once per
 * request. The v2 SDK converts a tool's zod schemas to JSON Schema on every tools/list and, for
 * the called tool's outputSchema, on every tools/call (to project the result for the revision),
 * and each request has its own McpServer, so nothing it memoizes outlives the request: that
 * conversion was the largest single cost of a get_email call. Validation stays zod's own; only
 * the Standard JSON Schema hook (`~standard.jsonSchema`, which the SDK reads) is memoized. The
 * cached documents are frozen so that a caller that tried to change one would fail loudly.
 */
export function withCachedJsonSchema<S extends StandardSchemaWithJSON>(schema: S): S {
  const standard = schema['~standard'];
  const cache = new Map<string, Record<string, unknown>>();
  const converter = (io: 'input' | 'output') => (options: JsonSchemaOptions) => {
    const key = `${io} ${options.target}`;
    let json = cache.get(key);
    if (!json) {
      json = deepFreeze(standard.jsonSchema[io](options));
      cache.set(key, json);
    }
    return json;
  };
  return {
    '~standard': { ...standard, jsonSchema: { input: converter('input'), output: converter('output') } },
  } as unknown as S;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
