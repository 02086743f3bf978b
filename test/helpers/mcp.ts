// A real gateway on an ephemeral port with the MCP server on, and SDK clients to talk to it: the
// v1 SDK client (2025-11-25) and the v2 client (@modelcontextprotocol/client) on either revision.
import {
  Client as V2Client,
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  StreamableHTTPClientTransport as V2Transport,
} from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import { defaultSettings, type Settings } from '../../shared/config.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import { TEST_QUEUE, TEST_QUEUE_WAIT_MS, testIndexFile } from './api.js';
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
    Engine: { Threads: 1, MaxQueue: TEST_QUEUE, MaxQueueWaitMs: TEST_QUEUE_WAIT_MS, ...testIndexFile(served.path) },
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

/** The tools /mcp offers, sorted: the five of SPEC.md, “MCP server”, get_thread and aggregate_emails. */
export const TOOL_NAMES_SORTED = [
  'aggregate_emails',
  'get_attachment',
  'get_email',
  'get_thread',
  'list_accounts',
  'list_folders',
  'search_emails',
];

/** The two protocol revisions /mcp serves to current clients. */
export const MODERN_REVISION = '2026-07-28';
export const LEGACY_REVISION = '2025-11-25';
export type Revision = typeof MODERN_REVISION | typeof LEGACY_REVISION;

/**
 * A v2 SDK client connected on one revision: pinned to 2026-07-28 (server/discover, then every
 * request carries the per-request envelope and headers), or, for 2025-11-25, its default
 * 'legacy' mode, the initialize handshake byte-equivalent to a 2025 client.
 */
export async function connectV2Client(
  url: string,
  key: string | undefined,
  revision: Revision,
  headers: Record<string, string> = {},
): Promise<V2Client> {
  const client = new V2Client(
    { name: 'mail-archive-gateway-tests-v2', version: '2.0.0' },
    revision === MODERN_REVISION ? { versionNegotiation: { mode: { pin: MODERN_REVISION } } } : {},
  );
  const transport = new V2Transport(new URL(url), {
    requestInit: { headers: { ...(key ? { Authorization: `Bearer ${key}` } : {}), ...headers } },
  });
  await client.connect(transport);
  return client;
}

/**
 * A raw 2026-07-28 request as the spec shapes it: the revision, client info and capabilities in
 * params._meta, and the MCP-Protocol-Version, Mcp-Method (and, for tools/call, Mcp-Name) headers.
 */
export function modernRequest(
  id: number,
  method: string,
  params: Record<string, unknown> = {},
  revision: string = MODERN_REVISION,
): { body: Record<string, unknown>; headers: Record<string, string> } {
  const body = {
    jsonrpc: '2.0',
    id,
    method,
    params: {
      ...params,
      _meta: {
        [PROTOCOL_VERSION_META_KEY]: revision,
        [CLIENT_INFO_META_KEY]: { name: 'raw-http-test', version: '1.0.0' },
        [CLIENT_CAPABILITIES_META_KEY]: {},
      },
    },
  };
  const headers: Record<string, string> = { 'MCP-Protocol-Version': revision, 'Mcp-Method': method };
  if (method === 'tools/call' && typeof params.name === 'string') headers['Mcp-Name'] = params.name;
  return { body, headers };
}

/** Calls a tool and returns the result as the MCP client received it. */
export async function call(
  client: Client | V2Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** The text of the single text block a result carries. */
export function textOf(result: CallToolResult): string {
  const [block] = result.content;
  if (result.content.length !== 1 || block?.type !== 'text')
    throw new Error(`expected one text block, got ${JSON.stringify(result.content)}`);
  return block.text;
}

/**
 * The first text block parsed as JSON: the result as SPEC.md gives it. A result may carry a
 * second text block, a sentence saying what to call next (noteOf), never a second JSON value.
 */
export function jsonOf<T = unknown>(result: CallToolResult): T {
  const [block, note, ...rest] = result.content;
  if (block?.type !== 'text' || rest.length > 0 || (note && (note.type !== 'text' || /^[[{]/.test(note.text))))
    throw new Error(`expected a JSON text block and at most one note, got ${JSON.stringify(result.content)}`);
  return JSON.parse(block.text) as T;
}

/** The sentence a result adds after its JSON (what to call next, what was cut), or undefined. */
export function noteOf(result: CallToolResult): string | undefined {
  const note = result.content[1];
  return note?.type === 'text' ? note.text : undefined;
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
