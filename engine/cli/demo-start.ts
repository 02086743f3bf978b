#!/usr/bin/env node
// `npm run demo`: a running service to try in one command. Builds the demo archive when the
// archive (Database:Path) holds no mail, issues fresh keys named "demo-start" (earlier ones are
// revoked), prints them with example calls, then runs the gateway with REST and MCP enabled.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadSettings, type Settings } from '../../shared/config.js';
import { describeWhere, openAdmin, storeKind } from '../archive.js';
import { ArchiveOpenError, StoreError } from '../../shared/errors.js';
import { buildDemoArchive } from '../demo/build.js';
import { issueDemoKeys, type DemoKeys } from '../demo/keys.js';
import { formatDemoArchive, formatKeys } from '../demo/report.js';

const KEY_NAME = 'demo-start';
const SERVER = fileURLToPath(new URL('../../gateway/server.js', import.meta.url));

async function prepareArchive(
  path: string,
  timeZone: string,
): Promise<{ report: string; keys: DemoKeys; built: boolean }> {
  // A SQLite file or a Mail Archiver PostgreSQL database (engine/archive.ts openAdmin); either may be created.
  const db = await openAdmin(path, { create: true, timeZone });
  const where = storeKind(path) === 'postgres' ? describeWhere(path) : path;
  try {
    const held = await db.contents();
    let report: string;
    const built = held.messages === 0;
    if (built) {
      const demo = await buildDemoArchive(db, { onWarning: (m) => process.stderr.write(`demo: warning: ${m}\n`) });
      report = formatDemoArchive(where, demo);
    } else {
      report = `Using the archive ${where}: ${held.messages} messages in ${held.accounts} accounts.\n`;
    }
    return { report, keys: await issueDemoKeys(db, KEY_NAME), built };
  } finally {
    await db.close();
  }
}

function baseUrl(server: Settings['Server']): string {
  // A wildcard address is where the service listens, not where a client connects.
  const host = server.Host === '0.0.0.0' ? '127.0.0.1' : server.Host === '::' ? '::1' : server.Host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${server.Port}`;
}

function examples(url: string, keys: DemoKeys, built: boolean): string {
  const userKey = keys.restricted ? '$USER_KEY' : '$ADMIN_KEY';
  const signIn = built
    ? [`Sign in to the web pages (API keys, API docs) at ${url}/login with a user and password above.`]
    : [
        `Sign in to the web pages (API keys, API docs) at ${url}/login with the passwords printed when this`,
        "archive was built; to set a new one: printf '%s\\n' 'a new password' | npm run -s cli -- users set-password admin",
      ];
  return [
    ...signIn,
    '',
    'Try it from another shell (paste the KEY lines above first):',
    `  curl -H "Authorization: Bearer $ADMIN_KEY" ${url}/api/v1/accounts`,
    `  curl -H "Authorization: Bearer ${userKey}" '${url}/api/v1/emails?q=budget&pageSize=5'`,
    `  curl -X POST ${url}/mcp -H "Authorization: Bearer $ADMIN_KEY" \\`,
    `       -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\`,
    `       -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'`,
    '',
  ].join('\n');
}

/** Runs the gateway in the foreground and ends with its exit code. */
function runGateway(url: string): void {
  if (!existsSync(SERVER))
    throw new StoreError(`The service is not built (${SERVER} is missing); run npm run build first.`);
  process.stdout.write(
    `Starting the service with the REST API and the MCP server enabled at ${url} (Ctrl+C stops it).\n\n`,
  );
  const child = spawn(process.execPath, [SERVER], {
    stdio: 'inherit',
    env: { ...process.env, Api__Enabled: 'true', Mcp__Enabled: 'true' },
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  child.on('error', (err) => {
    process.stderr.write(`demo: cannot start the service: ${err.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 + (constants.signals[signal] ?? 0) : 1)));
}

try {
  const settings = loadSettings();
  const path =
    storeKind(settings.Database.Path) === 'postgres' ? settings.Database.Path : resolve(settings.Database.Path);
  const { report, keys, built } = await prepareArchive(path, settings.Database.TimeZone);
  const url = baseUrl(settings.Server);
  process.stdout.write(`${report}\n${formatKeys(keys)}\n${examples(url, keys, built)}\n`);
  runGateway(url);
} catch (err) {
  if (err instanceof ConfigError || err instanceof StoreError || err instanceof ArchiveOpenError) {
    process.stderr.write(`demo: ${err.message}\n`);
    process.exit(1);
  }
  throw err;
}
