// Starts the real gateway (createGateway + app.callback()) with a real worker pool on a real
// SQLite fixture, for the REST API acceptance tests.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Database from '../../engine/sqlite/driver.js';
import { addFunctions, type Db } from '../../engine/sqlite/open.js';
import { pino, type Logger } from 'pino';
import supertest from 'supertest';
import { defaultSettings, isPostgresUrl, type LoadOptions, type Settings } from '../../shared/config.js';
import { createGateway, type Gateway, type GatewayOptions } from '../../gateway/app.js';
import { createFixture, type Fixture } from './fixture.js';
import { serveArchive, type TestStore } from './store.js';

/** An engine queue no test's burst fills, as the rate limits are budgets no test spends. */
export const TEST_QUEUE = 10_000;
/** Nor does a slow machine make one wait long enough to be shed by time. */
export const TEST_QUEUE_WAIT_MS = 60_000;

export type SettingsOverrides = NonNullable<LoadOptions['overrides']>;

export interface ApiOptions {
  /** Passed to createFixture. */
  fixture?: { bodyLimit?: number };
  /** Use this fixture instead of creating one (it is then not cleaned up by close()). */
  useFixture?: Fixture;
  gateway?: Omit<GatewayOptions, 'logger'>;
  /** Where the gateway's log lines go; default: nowhere. */
  logger?: Logger;
  /** The store to serve from; default: this run's (TEST_STORE). */
  store?: TestStore;
}

export interface ApiHarness {
  request: supertest.Agent;
  fixture: Fixture;
  gateway: Gateway;
  settings: Settings;
  /** A second, writable connection to the archive for tests that change it while the app runs. */
  db(): Db;
  close(): Promise<void>;
}

/**
 * Engine:SearchIndexFile for a test's gateway on `dbPath`: none saved on PostgreSQL, whose default
 * file is under the working directory (the repository's data/ while tests run); a test that
 * means to save one names it. A SQLite archive's default sits beside the fixture's file.
 */
export const testIndexFile = (dbPath: string): { SearchIndexFile?: string } =>
  isPostgresUrl(dbPath) ? { SearchIndexFile: '' } : {};

/**
 * Settings for tests: API on, one engine thread, budgets and an engine queue large enough not to
 * interfere (tests fire bursts at that one thread; test/overload.test.ts covers the bound), and
 * no index file in the repository (testIndexFile).
 */
export function apiSettings(dbPath: string, overrides: SettingsOverrides = {}): Settings {
  return defaultSettings({
    ...overrides,
    Api: { Enabled: true, RateLimitPerMinute: 1_000_000, ...overrides.Api },
    Database: { Path: dbPath, ...overrides.Database },
    Engine: {
      Threads: 1,
      MaxQueue: TEST_QUEUE,
      MaxQueueWaitMs: TEST_QUEUE_WAIT_MS,
      ...testIndexFile(dbPath),
      ...overrides.Engine,
    },
    Mcp: { Enabled: false, ...overrides.Mcp },
    Server: { AuthFailuresPerIpPerMinute: 1_000_000, ...overrides.Server },
  });
}

export const silentLogger = (): Logger => pino({ level: 'silent' });

/** A logger that keeps every line it is given, parsed, for assertions on what was logged. */
export function capturingLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'debug' },
    { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) },
  );
  return { logger, lines };
}

/**
 * The real gateway over the standard fixture (or `useFixture`), served from the store this test
 * run uses (test/helpers/store.ts): the SQLite file itself, or a copy of it in PostgreSQL.
 */
export async function startApi(overrides: SettingsOverrides = {}, options: ApiOptions = {}): Promise<ApiHarness> {
  const fixture = options.useFixture ?? createFixture(options.fixture ?? {});
  const served = await serveArchive(fixture.dbPath, options.store);
  const settings = apiSettings(served.path, overrides);
  const gateway = createGateway(settings, { logger: options.logger ?? silentLogger(), ...options.gateway });
  const request = supertest.agent(gateway.app.callback());
  let db: Db | undefined;
  let closed = false;
  return {
    request,
    fixture,
    gateway,
    settings,
    db() {
      db ??= new Database(fixture.dbPath);
      db.pragma('busy_timeout = 5000');
      addFunctions(db); // its writes fire the archive's triggers
      return db;
    },
    async close() {
      if (closed) return;
      closed = true;
      await gateway.close();
      db?.close();
      await served.drop();
      if (!options.useFixture) fixture.cleanup();
    },
  };
}

/** `Authorization: Bearer <key>` as a header object. */
export const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

/** Listens on a free port on 127.0.0.1 with the gateway's callback; for real-socket tests. */
export async function listen(
  gateway: Gateway,
): Promise<{ server: Server; port: number; url: string; close(): Promise<void> }> {
  const server = createServer(gateway.app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    port,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A syntactically valid key that no archive holds. */
export function unknownKey(): string {
  let s = '';
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-';
  for (let i = 0; i < 43; i++) s += alphabet[Math.floor(Math.random() * alphabet.length)];
  return `ma_${s}`;
}

/** A supertest parser that keeps the body as raw bytes whatever the Content-Type says. */
export function rawBody(response: unknown, callback: (err: Error | null, body: Buffer) => void): void {
  const res = response as NodeJS.ReadableStream;
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('end', () => callback(null, Buffer.concat(chunks)));
  res.on('error', (err: Error) => callback(err, Buffer.concat(chunks)));
}

/**
 * Adds one message with one attachment of `size` deterministic pseudo-random bytes (seeded
 * xorshift32), through ArchiveWriter. Meant to run in a child process (see the attachment
 * streaming test) so that building the content does not inflate the test process's memory.
 */
export async function writeBigAttachment(
  dbPath: string,
  accountId: number,
  size: number,
  seed = 0x9e3779b9,
): Promise<{ emailId: number; attachmentId: number; sha256: string; size: number }> {
  const { createHash } = await import('node:crypto');
  const { openArchive } = await import('../../engine/sqlite/open.js');
  const { ArchiveWriter } = await import('../../engine/sqlite/writer.js');
  const { email } = await import('./fixture.js');
  const content = Buffer.allocUnsafe(size);
  const words = new Uint32Array(content.buffer, content.byteOffset, Math.floor(size / 4));
  let x = seed >>> 0 || 1;
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    words[i] = x;
  }
  for (let i = words.length * 4; i < size; i++) content[i] = i & 0xff;
  const sha256 = createHash('sha256').update(content).digest('hex');
  const db = openArchive(dbPath);
  try {
    const writer = new ArchiveWriter(db);
    const emailId = writer.batch(() =>
      writer.add(
        email({
          accountId,
          subject: 'A very large attachment',
          attachments: [{ fileName: 'big.bin', contentType: 'application/octet-stream', content }],
        }),
      )!,
    );
    const attachmentId = db.prepare('SELECT id FROM attachments WHERE email_id = ?').pluck().get(emailId) as number;
    return { emailId, attachmentId, sha256, size };
  } finally {
    db.close();
  }
}

/**
 * The RFC 6750 challenges of a 401 (gateway/auth.ts): with the refusal's reason when a token was
 * sent, without error parameters when none was. With Mcp:OAuth:Enabled off (the default) they
 * name no resource metadata: nothing advertises OAuth (test/mcp-oauth.test.ts has the other case).
 */
export const INVALID_TOKEN_CHALLENGE =
  /^Bearer realm="mail-archive", error="invalid_token", error_description="[^"]+"$/;
export const NO_TOKEN_CHALLENGE = /^Bearer realm="mail-archive"$/;
