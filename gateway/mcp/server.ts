// One McpServer per HTTP request (stateless Streamable HTTP: nothing survives the request).
// What is costly to build is built once and shared: the JSON-schema validator (the SDK would
// compile a fresh Ajv instance per server) and the tool definitions.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { INSTRUCTIONS, SERVER_INFO } from './server-info.js';
import type { McpTool, ToolContext } from './tools.js';

const validator = new AjvJsonSchemaValidator();

export function createMcpServer(tools: readonly McpTool[], context: ToolContext): McpServer {
  const server = new McpServer(SERVER_INFO, { instructions: INSTRUCTIONS, jsonSchemaValidator: validator });
  for (const tool of tools) tool.register(server, context);
  return server;
}
