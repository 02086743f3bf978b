// A real gateway on an ephemeral port with the MCP server on, and SDK clients to talk to it.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import { defaultSettings, type Settings } from '../../shared/config.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import { TEST_QUEUE, TEST_QUEUE_WAIT_MS } from './api.js';
import { createFixture, type Fixture } from './fixture.js';
import { readAccessLog, serveArchive, type AccessLogRow } from './store.js';

type Overrides = { [S in keyof Settings]?: Partial<Settings[S]> };

export interface McpHarness {
  fixture: Fixture;
  gateway: Gateway;
  settings: Settings;
  /** http://127.0.0.1:PORT */
  base: string;
  /** base + /mcp */
  url: string;
  close(): Promise<void>;
}

/**
 * Starts a gateway with Api and Mcp enabled and budgets too large to interfere (unless
 * overridden) over a fresh fixture, listening on an ephemeral port.
 */
export async function startMcpGateway(
  overrides: Overrides = {},
  options: {
    logger?: Logger;
    /** Serve this fixture (the caller cleans it up) instead of a fresh one. */ useFixture?: Fixture;
  } = {},
): Promise<McpHarness> {
  const fixture = options.useFixture ?? createFixture();
  const served = await serveArchive(fixture.dbPath);
  const settings = defaultSettings({
    ...overrides,
    Api: { Enabled: true, RateLimitPerMinute: 1_000_000, ...overrides.Api },
    Mcp: { Enabled: true, RateLimitPerMinute: 1_000_000, ...overrides.Mcp },
    Server: { AuthFailuresPerIpPerMinute: 1_000_000, ...overrides.Server },
    Database: { Path: served.path },
    Engine: { Threads: 1, MaxQueue: TEST_QUEUE, MaxQueueWaitMs: TEST_QUEUE_WAIT_MS },
  });
  const gateway = createGateway(settings, { logger: options.logger ?? pino({ level: 'silent' }) });
  const server: Server = createServer(gateway.app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    fixture,
    gateway,
    settings,
    base,
    url: `${base}/mcp`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await gateway.close();
      await served.drop();
      if (!options.useFixture) fixture.cleanup();
    },
  };
}

/** An SDK client connected (initialize done) with the key as bearer token. */
export async function connectClient(
  url: string,
  key: string | undefined,
  headers: Record<string, string> = {},
): Promise<Client> {
  const client = new Client({ name: 'mail-archive-gateway-tests', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { ...(key ? { Authorization: `Bearer ${key}` } : {}), ...headers } },
  });
  await client.connect(transport);
  return client;
}

/** Calls a tool and returns the result as the MCP client received it. */
export async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** The text of the single text block a result carries. */
export function textOf(result: CallToolResult): string {
  const [block] = result.content;
  if (result.content.length !== 1 || block?.type !== 'text')
    throw new Error(`expected one text block, got ${JSON.stringify(result.content)}`);
  return block.text;
}

/** The text block parsed as JSON. */
export function jsonOf<T = unknown>(result: CallToolResult): T {
  return JSON.parse(textOf(result)) as T;
}

/** A raw JSON-RPC POST, for what the SDK client would never send. */
export async function postMcp(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export const toolsCall = (id: number, name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

export type { AccessLogRow };

/** Access-log rows written so far (after the writer has flushed), on either store. */
export async function accessLogRows(harness: McpHarness): Promise<AccessLogRow[]> {
  await harness.gateway.accessLog.flush();
  return readAccessLog(harness.settings.Database.Path);
}
