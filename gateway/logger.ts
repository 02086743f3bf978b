// Structured logs (pino). Authorization headers and keys never reach a log line.
import { pino, type Logger } from 'pino';

export function createLogger(options: { level?: string } = {}): Logger {
  return pino({
    name: 'mail-archive-gateway',
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'key'],
      censor: '[redacted]',
    },
  });
}
