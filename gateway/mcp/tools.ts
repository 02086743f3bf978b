// The five MCP tools of SPEC.md, “MCP server”, get_thread (conversations) and aggregate_emails
// (additive), each a thin adapter over ArchiveService (which checks permissions in the engine and
// writes the access log), like the REST routes. One file per tool in tools/; tools/define.ts says
// how a tool is declared and guarded.
//
// Schemas, descriptions and annotations are built once per gateway, because descriptions quote
// the configured limits; each request only registers these ready-made definitions on its own
// short-lived McpServer.
import type { Settings } from '../../shared/config.js';
import { aggregateEmailsTool } from './tools/aggregate-emails.js';
import { toolConfig } from './tools/config.js';
import type { McpTool } from './tools/define.js';
import { getAttachmentTool } from './tools/get-attachment.js';
import { getEmailTool } from './tools/get-email.js';
import { getThreadTool } from './tools/get-thread.js';
import { listAccountsTool } from './tools/list-accounts.js';
import { listFoldersTool } from './tools/list-folders.js';
import { searchEmailsTool } from './tools/search-emails.js';

export type { McpTool, ToolContext } from './tools/define.js';

export function mcpTools(mcp: Settings['Mcp'], api?: Settings['Api']): McpTool[] {
  const config = toolConfig(mcp, api);
  return [
    listAccountsTool(),
    listFoldersTool(config),
    searchEmailsTool(config),
    aggregateEmailsTool(),
    getEmailTool(config),
    getThreadTool(config),
    getAttachmentTool(config),
  ];
}
