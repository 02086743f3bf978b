// The HTTP server's own limits (docs/operations.md, "Connections"; docs/security.md, items 8
// and 12): a connection that sends no complete request head in time is closed, so idle and
// half-open connections cannot pile up until file descriptors run out; past a cap, new
// connections are refused while those already open are served. What Node itself answers (a
// request it cannot parse, headers too large, a head that took too long) goes out as problem+json
// like every other error of this service.
import type { Server, ServerOptions } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Settings } from '../../shared/config.js';
import { problemBody } from '../problem.js';

type Limits = Pick<
  Settings['Server'],
  'HeadersTimeoutSeconds' | 'RequestTimeoutSeconds' | 'KeepAliveTimeoutSeconds' | 'MaxConnections'
>;

/** Options for createServer(): the timeouts, checked often enough to hold to them. */
export function serverOptions(limits: Limits): ServerOptions {
  const headersTimeout = limits.HeadersTimeoutSeconds * 1000;
  return {
    headersTimeout,
    requestTimeout: limits.RequestTimeoutSeconds * 1000,
    keepAliveTimeout: limits.KeepAliveTimeoutSeconds * 1000,
    // Node checks the two timeouts above on this interval (30 s by default, longer than a short
    // header timeout itself).
    connectionsCheckingInterval: Math.min(30_000, Math.max(250, Math.floor(headersTimeout / 4))),
  };
}

const CLIENT_ERRORS: Record<string, [status: number, reason: string, detail: string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'The request headers are too large.'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'The request was not received in time.'],
};

/** Applies the connection cap and answers Node's own client errors as problem+json. */
export function applyServerLimits(server: Server, limits: Limits): void {
  server.maxConnections = limits.MaxConnections;
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || (socket as Duplex & { _httpMessage?: unknown })._httpMessage) {
      socket.destroy();
      return;
    }
    const [status, reason, detail] = CLIENT_ERRORS[err.code ?? ''] ?? [
      400,
      'Bad Request',
      'The request could not be read as HTTP.',
    ];
    const body = JSON.stringify(problemBody(status, detail, '/'));
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/problem+json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
