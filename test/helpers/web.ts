// A running gateway over the standard fixture, with passwords for the web sign-in, and small
// helpers to drive the web forms with supertest.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import type { Logger } from 'pino';
import { openArchive, type Db } from '../../engine/sqlite/open.js';
import { addUser, setPasswordHash } from '../../engine/sqlite/users.js';
import { hashPassword } from '../../engine/rules/password-hash.js';
import { createGateway, type Gateway } from '../../gateway/app.js';
import { createLogger } from '../../gateway/logger.js';
import { defaultSettings, type LoadOptions, type Settings } from '../../shared/config.js';
import { TEST_QUEUE, TEST_QUEUE_WAIT_MS } from './api.js';
import { createFixture, type Fixture } from './fixture.js';

/** Passwords of the fixture's users; dave is inactive, carol has none. */
export const PASSWORDS = {
  admin: 'admin-pass-123',
  alice: 'alice-pass-123',
  bob: 'bob-pass-123',
  dave: 'dave-pass-123',
} as const;

export interface WebFixture {
  fixture: Fixture;
  settings: Settings;
  gateway: Gateway;
  server: Server;
  url: string;
  close(): Promise<void>;
}

export interface StartWebOptions {
  overrides?: LoadOptions['overrides'];
  logger?: Logger;
  /** Reuse this fixture (a second gateway over the same database); the first owner cleans it up. */
  fixture?: Fixture;
}

export async function startWeb(options: StartWebOptions = {}): Promise<WebFixture> {
  const overrides = options.overrides ?? {};
  const ownsFixture = !options.fixture;
  const fixture = options.fixture ?? createFixture();
  if (ownsFixture) await setPasswords(fixture.dbPath);
  const settings = defaultSettings({
    ...overrides,
    Api: { Enabled: true, ...overrides.Api },
    Mcp: { Enabled: true, ...overrides.Mcp },
    Database: { Path: fixture.dbPath },
    Engine: { Threads: 1, MaxQueue: TEST_QUEUE, MaxQueueWaitMs: TEST_QUEUE_WAIT_MS },
  });
  const gateway = createGateway(settings, { logger: options.logger ?? createLogger({ level: 'silent' }) });
  const server = createServer(gateway.app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let closed: Promise<void> | undefined;
  return {
    fixture,
    settings,
    gateway,
    server,
    url,
    close: () =>
      (closed ??= (async () => {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await gateway.close();
        if (ownsFixture) fixture.cleanup();
      })()),
  };
}

export async function setPasswords(dbPath: string): Promise<void> {
  const db = openArchive(dbPath);
  try {
    for (const [username, password] of Object.entries(PASSWORDS))
      setPasswordHash(db, username, await hashPassword(password));
  } finally {
    db.close();
  }
}

/** Adds a user who can sign in (the CLI's `users add --password-stdin`, in one call). */
export async function addWebUser(dbPath: string, username: string, password: string, isAdmin = false): Promise<number> {
  const passwordHash = await hashPassword(password);
  const db = openArchive(dbPath);
  try {
    return addUser(db, { username, isAdmin, passwordHash }).id;
  } finally {
    db.close();
  }
}

/** Runs something against the archive file directly, as the CLI would. */
export function withDb<T>(dbPath: string, fn: (db: Db) => T): T {
  const db = openArchive(dbPath);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** The id of a key, found by its public prefix. */
export function keyIdOf(dbPath: string, key: string): number {
  return withDb(
    dbPath,
    (db) => db.prepare('SELECT id FROM api_keys WHERE key_prefix = ?').pluck().get(key.slice(0, 11)) as number,
  );
}

/** The CSRF token of the first form on a page. */
export function csrfOf(html: string): string {
  const m = /name="_csrf" value="([^"]+)"/.exec(html);
  if (!m) throw new Error('no CSRF token on the page');
  return m[1]!;
}

export type Agent = ReturnType<typeof request.agent>;

/** Signs in through the form; resolves to the agent (which keeps the cookie) and the answer. */
export async function signIn(url: string, username: string, password: string, agent: Agent = request.agent(url)) {
  const form = await agent.get('/login');
  const res = await agent
    .post('/login')
    .type('form')
    .send({ _csrf: csrfOf(form.text), username, password });
  return { agent, res };
}

/** The session cookie pair (`name=value; name.sig=…`) a response set, for requests without an agent. */
export function sessionCookies(setCookie: string[] | string | undefined): string {
  const list = Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : [];
  return list.map((c) => c.split(';')[0]).join('; ');
}
