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
  process.stderr.write(`mail-archive-gateway: cannot listen on ${settings.Server.Host}:${settings.Server.Port}: ${reason}\n`);
  void close().finally(() => process.exit(1));
});

server.listen(settings.Server.Port, settings.Server.Host, () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : settings.Server.Port;
  logger.info(
    { host: settings.Server.Host, port, api: settings.Api.Enabled, mcp: settings.Mcp.Enabled, db: settings.Database.Path },
    `listening on http://${settings.Server.Host}:${port}`,
  );
  process.send?.('ready'); // PM2 wait_ready
});

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'shutting down');
  const force = setTimeout(() => process.exit(1), 10_000).unref();
  server.close();
  server.closeIdleConnections();
  await close();
  clearTimeout(force);
  logger.info('stopped');
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
