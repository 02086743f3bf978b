// The gateway's own first search. Once each query thread has run its warm-up search
// (engine/pool/warm-up.ts), the server sends one REST search to its own Koa app (server.ts).
// Why: a user's first request after a start ran code this thread had never run: Koa and the
// router, admission, the query parser, content negotiation, the compressor's first gzip and
// brotli streams, the first result crossing from a worker. At 1,000,000 messages a CPU profile of
// the event loop showed 23 ms of work on the first search and 3.5 ms on the second, and the
// first search took 18 to 26 ms where the next took 4 to 7 (docs/performance.md, "The first
// search after a start"). This request runs that code once, so that the first user's does not.
//
// It goes to a listener of its own on a loopback port, opened for it and closed after, never to
// the server's port: under PM2 cluster mode that port is shared, and the request would reach
// another process, which would take it for a malformed key and charge the loopback address's
// failed-authentication budget. It authenticates with a token minted for it alone: random, held
// only in memory, good for one request, and never a key (admission.ts takes it before any key
// lookup). It runs as the engine's WARM_UP_PRINCIPAL, an administrator who holds no key. It
// spends no rate limit, and ArchiveService records it in no access log: no user asked for
// anything.
import { createServer, request, type RequestListener, type ServerOptions } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';

/** Tokens minted for warm-up requests, each accepted once. */
export class WarmUpTokens {
  readonly #open = new Set<string>();

  mint(): string {
    const token = `warm-up.${randomBytes(32).toString('base64url')}`;
    this.#open.add(token);
    return token;
  }

  /** Whether `token` is an open warm-up token; it is then closed, so it never works again. */
  take(token: string): boolean {
    for (const open of this.#open) {
      if (open.length === token.length && timingSafeEqual(Buffer.from(open), Buffer.from(token))) {
        this.#open.delete(open);
        return true;
      }
    }
    return false;
  }

  /** Closes every token still open: one whose request failed before admission took it. */
  closeAll(): void {
    this.#open.clear();
  }
}

/** The encodings the warm-up asks for, one request each: clients use one or the other. */
const ENCODINGS = ['gzip', 'br'];

/**
 * Sends the warm-up searches to `handler` (the Koa app's callback) once the engine's warm-ups
 * are over; nothing when none ran (no index, or the pool closed). Never throws: a failure only
 * means the first user's search is slower, and is logged.
 */
export async function warmUpGateway(
  handler: RequestListener,
  options: ServerOptions,
  engineWarmedUp: Promise<string | undefined>,
  tokens: WarmUpTokens,
  logger: Logger,
): Promise<void> {
  const word = await engineWarmedUp;
  if (word === undefined) return;
  const path = `/api/v1/emails?q=${encodeURIComponent(word)}&sortBy=sentDate&sortOrder=desc`;
  const own = createServer(options, handler);
  try {
    // exclusive: a PM2 cluster worker's listen() would otherwise share the handle with its siblings.
    await new Promise<void>((resolve, reject) => {
      own.once('error', reject);
      own.listen({ host: '127.0.0.1', port: 0, exclusive: true }, resolve);
    });
    const origin = `http://127.0.0.1:${(own.address() as AddressInfo).port}`;
    for (const encoding of ENCODINGS) {
      const started = performance.now();
      const status = await get(`${origin}${path}`, {
        Authorization: `Bearer ${tokens.mint()}`,
        'Accept-Encoding': encoding,
      });
      logger.info(
        `gateway warm-up: GET ${path} (${encoding}) answered ${status} in ${(performance.now() - started).toFixed(1)} ms`,
      );
    }
  } catch (err) {
    logger.warn(`gateway warm-up: GET ${path} failed: ${(err as Error).message}`);
  } finally {
    tokens.closeAll();
    own.closeAllConnections();
    own.close();
  }
}

/** One GET whose body is read and dropped; resolves with the status. */
function get(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(30_000, () => req.destroy(new Error('no answer within 30 s')));
    req.end();
  });
}
