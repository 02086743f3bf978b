// Stopping the HTTP server without failing a request that a client has already sent, or is about
// to send on a keep-alive connection it holds (PM2 reload, SIGTERM). Node's own server.close()
// destroys every idle keep-alive connection at once, and closeIdleConnections() keeps doing so;
// a client that writes its next request at that moment gets a reset instead of an answer.
//
// Once the drain starts:
// - the listening socket is closed (under PM2 cluster mode the primary routes new connections to
//   the other processes);
// - every response still to be written says `Connection: close`, so a client opens its next
//   connection elsewhere and this one ends after the response;
// - a connection with no request in progress is closed only after it has been quiet for
//   `idleGraceMs` during the drain: a client reusing it within that time is still answered;
// - every close is staged (RFC 9112, section 9.6): half-close after the response, keep reading and
//   discard until the client closes its side (or `lingerMs` passes). Closing a socket with
//   unread data makes the kernel send a reset, which can destroy the response the client has not
//   read yet; a client that wrote another request before seeing `Connection: close` (pipelining,
//   load generators) would get a connection error instead of a clean end.
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';

export interface DrainOptions {
  /** A connection with no request in progress is closed once it has been quiet this long. */
  idleGraceMs: number;
  /** After our half-close, how long the client has to close its side before it is destroyed. */
  lingerMs: number;
  /** How often quiet connections are looked for. */
  sweepMs?: number;
}

interface Connection {
  /** Requests received and not yet answered (more than one only with pipelining). */
  active: number;
  /** The most recent response on this connection. */
  latest: ServerResponse | undefined;
  /** The response that ends this connection has been chosen: later requests are not run. */
  last: boolean;
  /** Half-closed by us. */
  closing: boolean;
  bytesRead: number;
  quietSince: number;
}

export class ConnectionDrain {
  private readonly connections = new Map<Socket, Connection>();
  private draining = false;
  private closed: Promise<void> | undefined;

  constructor(
    private readonly server: Server,
    listener: RequestListener<typeof IncomingMessage, typeof ServerResponse>,
    private readonly options: DrainOptions,
  ) {
    server.on('connection', (socket: Socket) => this.track(socket));
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const conn = this.connections.get(req.socket);
      if (conn?.last) {
        // A request behind the one that closes this connection: its answer could not be sent,
        // so it is not run (nor recorded in the access log). The client sees the connection end
        // without an answer to it and sends it again on a new connection.
        return;
      }
      if (conn) {
        conn.active++;
        conn.latest = res;
        res.once('close', () => {
          conn.active--;
          conn.quietSince = Date.now();
          conn.bytesRead = req.socket.bytesRead;
        });
      }
      if (this.draining) this.lastOnItsConnection(res, conn);
      listener(req, res);
    });
  }

  /** Starts the drain; resolves once the last connection has closed. Idempotent. */
  start(): Promise<void> {
    if (this.closed) return this.closed;
    this.draining = true;
    const now = Date.now();
    for (const [socket, conn] of this.connections) {
      conn.quietSince = now;
      conn.bytesRead = socket.bytesRead;
      // A response already under way says `Connection: close` too, if its headers are not out yet.
      if (conn.latest && !conn.latest.writableFinished) this.lastOnItsConnection(conn.latest, conn);
    }
    // net.Server's close, not http.Server's: the latter also destroys idle connections at once.
    this.closed = new Promise<void>((resolve) => NetServer.prototype.close.call(this.server, () => resolve()));
    const sweep = setInterval(() => this.sweep(Date.now()), this.options.sweepMs ?? 100);
    sweep.unref();
    void this.closed.then(() => clearInterval(sweep));
    return this.closed;
  }

  /** The deadline has passed: destroys whatever is still open (a stalled download). */
  destroyAll(): void {
    for (const socket of this.connections.keys()) socket.destroy();
  }

  private track(socket: Socket): void {
    const conn: Connection = {
      active: 0,
      latest: undefined,
      last: false,
      closing: false,
      bytesRead: 0,
      quietSince: Date.now(),
    };
    this.connections.set(socket, conn);
    socket.once('close', () => this.connections.delete(socket));
    // Node ends a connection after a response that says `Connection: close` by calling
    // destroySoon(), which destroys the socket as soon as the response is written. While
    // draining, close in stages instead (see the top of this file).
    const destroySoon = socket.destroySoon.bind(socket);
    socket.destroySoon = () => (this.draining ? this.closeInStages(socket, conn) : destroySoon());
  }

  private lastOnItsConnection(res: ServerResponse, conn: Connection | undefined): void {
    // A response already streaming cannot say so: its connection is closed once quiet, and a
    // request that arrives on it meanwhile is still answered (with `Connection: close`).
    if (res.headersSent) return;
    if (conn) conn.last = true;
    res.setHeader('Connection', 'close');
    // Also when a handler removes every header (Koa does on an error): Node then sends
    // `Connection: close` itself.
    res.shouldKeepAlive = false;
  }

  private sweep(now: number): void {
    for (const [socket, conn] of this.connections) {
      if (conn.closing || conn.active > 0) continue;
      if (socket.bytesRead !== conn.bytesRead) {
        // Part of a request has arrived: not idle.
        conn.bytesRead = socket.bytesRead;
        conn.quietSince = now;
      } else if (now - conn.quietSince >= this.options.idleGraceMs) {
        conn.last = true;
        this.closeInStages(socket, conn);
      }
    }
  }

  private closeInStages(socket: Socket, conn: Connection): void {
    if (conn.closing) return;
    conn.closing = true;
    conn.last = true;
    socket.end(); // FIN once what is queued has been written
    // The HTTP parser keeps reading (and any request is ignored above) until the client's FIN.
    socket.once('end', () => socket.destroy());
    const linger = setTimeout(() => socket.destroy(), this.options.lingerMs);
    linger.unref();
    socket.once('close', () => clearTimeout(linger));
  }
}
