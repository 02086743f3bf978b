// The shapes of tool results (MCP `CallToolResult`).
//
// The text block always carries the result exactly as SPEC.md, “MCP server” describes it, as compact
// JSON: that is what most clients hand to the model. structuredContent must be a JSON object, so
// an object result is sent as is, while a list or a nullable result is wrapped (`{items: [...]}`,
// `{email: ...}`) for the tool's declared outputSchema.
import type { CallToolResult } from '@modelcontextprotocol/server';

/** An object result: the same JSON as text and as structuredContent. */
export function objectResult(value: object): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(value) }],
    structuredContent: value as Record<string, unknown>,
  };
}

/** A result that is not an object (a list, or null): text as SPEC.md gives it, wrapped as structuredContent. */
export function wrappedResult(value: unknown, structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: structured };
}

/** A tool-level error: one sentence telling the agent what happened and what to do instead. */
export function toolError(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/**
 * get_attachment's bytes, sent once: the text block is SPEC.md's result with base64Data, as every
 * client reads it; structuredContent carries the same fields without base64Data (it is optional
 * in the output schema, which says where the bytes are). Both copies made a 9.9 MB file a 26.4 MB
 * answer.
 */
export function attachmentResult(value: { base64Data: string } & Record<string, unknown>): CallToolResult {
  const { base64Data: _bytes, ...metadata } = value;
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: metadata };
}

/**
 * The result with one more text block: a sentence saying what to call next (or what was cut).
 * The first block stays the result's JSON, as SPEC.md gives it.
 */
export function withNote(result: CallToolResult, note: string): CallToolResult {
  return { ...result, content: [...result.content, { type: 'text', text: note }] };
}
