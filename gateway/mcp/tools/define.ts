// How an MCP tool is declared: its schemas, description and annotations built once per gateway
// (descriptions quote the configured limits), registered on each request's short-lived McpServer,
// and its call guarded so that what it throws becomes a result the agent can act on.
import type { CallToolResult, McpServer, ToolAnnotations, ToolCallback } from '@modelcontextprotocol/server';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { JobKind } from '../../../shared/jobs.js';
import { isInvalidInput } from '../../../shared/search-input.js';
import {
  EngineOverloaded,
  EngineTimedOut,
  isArchiveUnavailable,
  isSearchIndexBuilding,
  SEARCH_INDEX_RETRY_SECONDS,
} from '../../../engine/index.js';
import type { ArchiveService, Caller } from '../../archive-service.js';
import { withCachedJsonSchema } from '../params.js';
import { toolError } from '../results.js';

/** What a tool call runs with: the archive, and who is calling. */
export interface ToolContext {
  service: ArchiveService;
  caller: Caller;
  logger: Logger;
}

export interface McpTool {
  readonly name: string;
  /** The query-lane job the tool needs: a call is refused before it starts when that lane is full. */
  readonly heavyJob?: JobKind;
  register(server: McpServer, context: ToolContext): void;
}

// Every tool only reads the archive; "closed world": it touches nothing outside this server.
const READ_ONLY: ToolAnnotations = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
};

export interface ToolSpec<I extends z.ZodObject> {
  name: string;
  title: string;
  description: string;
  input: I;
  heavyJob?: JobKind;
  /** Root must be an inline object schema: MCP requires `type: "object"` there, not a $ref. */
  output: z.ZodObject;
  run(args: z.output<I>, context: ToolContext): Promise<CallToolResult>;
}

export function defineTool<I extends z.ZodObject>(spec: ToolSpec<I>): McpTool {
  const config = {
    title: spec.title,
    description: spec.description,
    inputSchema: withCachedJsonSchema(spec.input),
    outputSchema: withCachedJsonSchema(spec.output),
    annotations: { title: spec.title, ...READ_ONLY },
  };
  return {
    name: spec.name,
    ...(spec.heavyJob ? { heavyJob: spec.heavyJob } : {}),
    register(server, context) {
      const handler = (args: z.output<I>) => guarded(spec.name, context.logger, () => spec.run(args, context));
      server.registerTool(spec.name, config, handler as unknown as ToolCallback<I>);
    },
  };
}

/**
 * Turns what a tool throws into a result the agent can act on. The SDK would otherwise put any
 * exception's message in the result, and an engine error's message is none of the caller's business.
 */
async function guarded(tool: string, logger: Logger, run: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await run();
  } catch (err) {
    // Its message names the argument and what it accepts.
    if (isInvalidInput(err)) return toolError(`Invalid argument: ${err.message}`);
    // The lane filled between the endpoint's check and this call: nothing ran; the agent may retry.
    if (err instanceof EngineOverloaded) {
      const s = err.retryAfterSeconds === 1 ? '' : 's';
      return toolError(
        `The server is too busy to run ${tool} now; nothing was done. Call it again in ${err.retryAfterSeconds} second${s}.`,
      );
    }
    if (err instanceof EngineTimedOut) {
      logger.warn({ tool, budgetMs: err.budgetMs }, 'engine job ran out of time');
      return toolError(
        `${tool} took longer than the server allows (Engine:JobTimeoutSeconds) and was stopped; narrow the request (fewer or shorter search terms, a date range) or call it again in ${err.retryAfterSeconds} seconds.`,
      );
    }
    if (isSearchIndexBuilding(err)) {
      return toolError(
        `${tool}: ${(err as Error).message} Call it again in ${SEARCH_INDEX_RETRY_SECONDS} seconds, or read messages by id meanwhile.`,
      );
    }
    if (isArchiveUnavailable(err)) {
      logger.warn({ tool }, 'archive database unavailable');
      return toolError(
        `${tool} could not reach the archive database; nothing was done. Call it again in a few seconds.`,
      );
    }
    logger.error({ err, tool }, 'MCP tool call failed');
    return toolError(`${tool} failed because of a server error, which has been logged; try again later.`);
  }
}
