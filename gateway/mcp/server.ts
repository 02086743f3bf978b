// One McpServer per HTTP request (stateless: nothing survives the request), the same for both
// protocol revisions /mcp serves (2025-11-25 and older, and 2026-07-28; see endpoint.ts).
// What is costly to build is built once and shared: the JSON-schema validator (the SDK would
// build a fresh Ajv instance per server) and the tool definitions.
import { McpServer } from '@modelcontextprotocol/server';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/server/validators/ajv';
import { INSTRUCTIONS, SERVER_INFO } from './server-info.js';
import type { McpTool, ToolContext } from './tools.js';

const validator = new AjvJsonSchemaValidator();

export function createMcpServer(tools: readonly McpTool[], context: ToolContext): McpServer {
  const server = new McpServer(SERVER_INFO, {
    instructions: INSTRUCTIONS,
    jsonSchemaValidator: validator,
    // The tool list is fixed for the life of the process: saying so lets a 2026-07-28 client's
    // subscriptions/listen end at once instead of holding a stream open for changes that never come.
    capabilities: { tools: { listChanged: false } },
  });
  for (const tool of tools) tool.register(server, context);
  return server;
}
