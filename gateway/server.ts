// Process entry: read settings, start the gateway, stop cleanly on SIGTERM/SIGINT.
// Under PM2 cluster mode every worker process runs this file and shares the port.
import { createServer } from 'node:http';
import { ConfigError, loadSettings, type Settings } from '../shared/config.js';
import { ArchiveOpenError, prepareArchive, sharedSessionSecret } from '../engine/index.js';
import { createGateway } from './app.js';
import { ConnectionDrain } from './drain.js';
import { applyServerLimits, serverOptions } from './http/server-limits.js';
import { createLogger } from './logger.js';

function readSettings(): Settings {
  try {
    return loadSettings();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`mail-archive-gateway: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

let settings = readSettings();
const logger = createLogger();
let gateway;
try {
  // A PostgreSQL archive is checked here, once: reachable, every table and column the service
  // uses there with its type, our own schema migrated. A failure is one sentence naming the
  // setting, before anything listens; a Mail Archiver schema newer than this release was tested
  // with is served, with one log line.
  await prepareArchive(
    { path: settings.Database.Path, timeZone: settings.Database.TimeZone },
    { createIfEmpty: false, onNotice: (line) => logger.warn(line) },
  );
  // Every gateway on one PostgreSQL database signs web sessions with the key stored there, unless
  // Web:SessionSecret says otherwise: a session started on one host is valid on the others.
  if (!settings.Web.SessionSecret) {
    const shared = await sharedSessionSecret({ path: settings.Database.Path });
    if (shared) settings = { ...settings, Web: { ...settings.Web, SessionSecret: shared } };
  }
  gateway = createGateway(settings, { logger });
} catch (err) {
  if (err instanceof ArchiveOpenError) {
    process.stderr.write(`mail-archive-gateway: ${err.message}\n`);
    process.exit(1);
  }
  throw err;
}
const { app, close } = gateway;
const server = createServer(serverOptions(settings.Server));
applyServerLimits(server, settings.Server);
/** How long requests in progress may take to finish after SIGTERM/SIGINT. */
const DRAIN_MS = 6_000;
/** Exit regardless after this long; below PM2's kill_timeout (12 s, ecosystem.config.cjs). */
const FORCE_EXIT_MS = 11_000;
// A keep-alive connection with no request in progress stays open this long into the drain, so
// that a client about to reuse it is still answered (with `Connection: close`). Well below
// DRAIN_MS, so that idle connections never hold up the exit, and below keepAliveTimeout.
const drain = new ConnectionDrain(server, app.callback(), { idleGraceMs: 2_000, lingerMs: 2_000 });

server.on('error', (err: NodeJS.ErrnoException) => {
  const reason = err.code === 'EADDRINUSE' ? 'the port is already in use' : err.message;
  process.stderr.write(
    `mail-archive-gateway: cannot listen on ${settings.Server.Host}:${settings.Server.Port}: ${reason}\n`,
  );
  void close().finally(() => process.exit(1));
});

server.listen(settings.Server.Port, settings.Server.Host, () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : settings.Server.Port;
  logger.info(
    {
      host: settings.Server.Host,
      port,
      api: settings.Api.Enabled,
      mcp: settings.Mcp.Enabled,
      db: settings.Database.Path,
    },
    `listening on http://${settings.Server.Host}:${port}`,
  );
  if (!settings.Api.Enabled && !settings.Mcp.Enabled) {
    // The defaults: say so once, or an operator sees nothing but 404s without a word.
    const served = settings.Metrics.Enabled ? '/healthz, /readyz and /metrics' : '/healthz and /readyz';
    logger.warn(
      `the REST API and the MCP server are both off, so nothing but ${served} is served; ` +
        'turn them on with Api:Enabled and Mcp:Enabled (environment: Api__Enabled=true, Mcp__Enabled=true)',
    );
  }
  process.send?.('ready'); // PM2 wait_ready
  void gateway.warmUp(); // the first search, so that no user's is the process's first (warm-up.ts)
});

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'shutting down');
  const force = setTimeout(() => process.exit(1), FORCE_EXIT_MS).unref();
  // Stop accepting connections, then let the requests already in progress finish: they still
  // need the pool, and their access-log entries are only recorded as they complete. Closing
  // the gateway first would fail them and lose their entries. Keep-alive connections end
  // without resetting a request a client is sending (gateway/drain.ts).
  const drained = drain.start();
  const patience = new Promise<void>((resolve) => setTimeout(resolve, DRAIN_MS).unref());
  await Promise.race([drained, patience]);
  // Whatever is still running after DRAIN_MS (a slow download) is cut off, so that the access
  // log is still flushed well before the forced exit.
  drain.destroyAll();
  await close();
  clearTimeout(force);
  logger.info('stopped');
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
// PM2 stops a process (on reload too) with SIGINT, or with a 'shutdown' message when the app
// sets shutdown_with_message (where signals are unavailable, as on Windows).
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('message', (message) => {
  if (message === 'shutdown') void shutdown('shutdown message');
});
