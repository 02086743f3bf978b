// Tool parameter schemas whose validation messages an agent can act on.
//
// The SDK validates arguments against these before a tool runs and answers a mismatch with an
// isError result that quotes our message ("Input validation error: Invalid arguments for tool
// get_email: id must be …"), so each message names the parameter and what it accepts.
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
