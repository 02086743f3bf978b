// Process entry: read settings, start the gateway, stop cleanly on SIGTERM/SIGINT.
// Under PM2 cluster mode every worker process runs this file and shares the port.
import { createServer } from 'node:http';
import { ConfigError, loadSettings, type Settings } from '../shared/config.js';
import { ArchiveOpenError } from '../engine/db/open.js';
import { createGateway } from './app.js';
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

const settings = readSettings();
const logger = createLogger();
let gateway;
try {
  gateway = createGateway(settings, { logger });
} catch (err) {
  if (err instanceof ArchiveOpenError) {
    process.stderr.write(`mail-archive-gateway: ${err.message}\n`);
    process.exit(1);
  }
  throw err;
}
const { app, close } = gateway;
const server = createServer(app.callback());
server.keepAliveTimeout = 65_000;

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
  process.send?.('ready'); // PM2 wait_ready
});

/** How long requests in progress may take to finish after SIGTERM/SIGINT. */
const DRAIN_MS = 6_000;
/** Exit regardless after this long; below PM2's kill_timeout (12 s, ecosystem.config.cjs). */
const FORCE_EXIT_MS = 11_000;
let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'shutting down');
  const force = setTimeout(() => process.exit(1), FORCE_EXIT_MS).unref();
  // Stop accepting connections, then let the requests already in progress finish: they still
  // need the pool, and their access-log entries are only recorded as they complete. Closing
  // the gateway first would fail them and lose their entries.
  const drained = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // Keep-alive connections become idle once their response is sent; close them as they do.
  const idle = setInterval(() => server.closeIdleConnections(), 100);
  const patience = new Promise<void>((resolve) => setTimeout(resolve, DRAIN_MS).unref());
  await Promise.race([drained, patience]);
  clearInterval(idle);
  // Whatever is still running after DRAIN_MS (a slow download) is cut off, so that the access
  // log is still flushed well before the forced exit.
  server.closeAllConnections();
  await close();
  clearTimeout(force);
  logger.info('stopped');
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
