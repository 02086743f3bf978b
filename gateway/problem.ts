// RFC 9457 problem details: the one error shape of every HTTP answer this service gives.
import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import {
  EngineOverloaded,
  EngineTimedOut,
  isArchiveUnavailable,
  isSearchIndexBuilding,
  JobAbandoned,
  SEARCH_INDEX_RETRY_SECONDS,
} from '../engine/index.js';
import { isInvalidInput } from '../shared/search-input.js';

// Title and the `type` URI for each status: the RFC section that defines it, as ASP.NET does.
const STATUSES: Record<number, [title: string, type: string]> = {
  400: ['Bad Request', 'https://tools.ietf.org/html/rfc9110#section-15.5.1'],
  401: ['Unauthorized', 'https://tools.ietf.org/html/rfc9110#section-15.5.2'],
  403: ['Forbidden', 'https://tools.ietf.org/html/rfc9110#section-15.5.4'],
  404: ['Not Found', 'https://tools.ietf.org/html/rfc9110#section-15.5.5'],
  405: ['Method Not Allowed', 'https://tools.ietf.org/html/rfc9110#section-15.5.6'],
  406: ['Not Acceptable', 'https://tools.ietf.org/html/rfc9110#section-15.5.7'],
  413: ['Content Too Large', 'https://tools.ietf.org/html/rfc9110#section-15.5.14'],
  415: ['Unsupported Media Type', 'https://tools.ietf.org/html/rfc9110#section-15.5.16'],
  429: ['Too Many Requests', 'https://tools.ietf.org/html/rfc6585#section-4'],
  500: ['Internal Server Error', 'https://tools.ietf.org/html/rfc9110#section-15.6.1'],
  503: ['Service Unavailable', 'https://tools.ietf.org/html/rfc9110#section-15.6.4'],
};

export class Problem extends Error {
  override name = 'Problem';
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }
}

export function problemBody(status: number, detail: string, instance: string) {
  return {
    type: STATUSES[status]?.[1] ?? 'about:blank',
    title: STATUSES[status]?.[0] ?? 'Error',
    status,
    detail,
    instance,
  };
}

export function sendProblem(ctx: Context, status: number, detail: string, headers: Record<string, string> = {}): void {
  ctx.status = status;
  for (const [name, value] of Object.entries(headers)) ctx.set(name, value);
  ctx.body = problemBody(status, detail, ctx.path);
  ctx.type = 'application/problem+json';
}

interface HttpLikeError {
  status?: number;
  statusCode?: number;
  expose?: boolean;
  message?: string;
  headers?: Record<string, string>;
}

/**
 * Outermost middleware: every thrown error and every bodiless error status leaves as
 * problem+json. Unexpected errors are logged with their stack and answered with a 500 that
 * says nothing about the internals.
 */
export function problems(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status >= 400 && ctx.body === undefined) {
        sendProblem(ctx, ctx.status, defaultDetail(ctx.status, ctx));
      }
    } catch (err) {
      if (err instanceof Problem) {
        sendProblem(ctx, err.status, err.detail, err.headers);
        return;
      }
      if (err instanceof EngineOverloaded) {
        // Expected under a flood, and one line per refused request would flood the log too.
        sendProblem(ctx, 503, overloadedDetail(err), { 'Retry-After': String(err.retryAfterSeconds) });
        return;
      }
      if (err instanceof EngineTimedOut) {
        // The job was stopped; the request may be too broad, or the server too busy right now.
        logger.warn({ method: ctx.method, path: ctx.path, budgetMs: err.budgetMs }, 'engine job ran out of time');
        sendProblem(ctx, 503, timedOutDetail(err), { 'Retry-After': String(err.retryAfterSeconds) });
        return;
      }
      if (err instanceof JobAbandoned) {
        // The client has gone: nobody reads this answer, and it is no error of ours.
        logger.debug({ method: ctx.method, path: ctx.path }, 'client went away; its engine job was cancelled');
        sendProblem(ctx, 503, 'The request was cancelled because the client went away.');
        return;
      }
      if (isArchiveUnavailable(err)) {
        // The database is restarting or out of reach: temporary, and answered at once.
        logger.warn({ method: ctx.method, path: ctx.path }, 'archive database unavailable');
        sendProblem(ctx, 503, UNAVAILABLE_DETAIL, { 'Retry-After': String(UNAVAILABLE_RETRY_SECONDS) });
        return;
      }
      if (isSearchIndexBuilding(err)) {
        // A first start on a large PostgreSQL archive: temporary, and said at once with how far.
        sendProblem(ctx, 503, (err as Error).message, { 'Retry-After': String(SEARCH_INDEX_RETRY_SECONDS) });
        return;
      }
      if (isInvalidInput(err)) {
        sendProblem(ctx, 400, err.message);
        return;
      }
      if (isUndecodableBody(err)) {
        // zlib's own errors carry no HTTP status: a corrupt gzip, deflate or br body is the
        // client's mistake, not a 500.
        sendProblem(
          ctx,
          400,
          `The request body could not be decoded: it is not valid ${ctx.get('Content-Encoding') || 'compressed'} data.`,
        );
        return;
      }
      const e = err as HttpLikeError;
      const status = e.status ?? e.statusCode;
      if (status && status >= 400 && status < 500 && e.expose !== false) {
        // Koa and body-parser client errors (413, 415, malformed JSON) carry safe messages.
        sendProblem(ctx, status, e.message ?? defaultDetail(status, ctx), e.headers ?? {});
        return;
      }
      logger.error({ err, method: ctx.method, path: ctx.path }, 'request failed');
      sendProblem(ctx, 500, 'The server could not complete the request. The error has been logged.');
    }
  };
}

/** A zlib or brotli error from decoding a request body (Content-Encoding: gzip, deflate, br). */
function isUndecodableBody(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  // zlib: Z_DATA_ERROR, Z_BUF_ERROR…; brotli: ERR__ERROR_FORMAT_PADDING_1 and its kin.
  return typeof code === 'string' && /^(?:Z_|ERR_BROTLI|ERR__ERROR_)/.test(code);
}

export const UNAVAILABLE_DETAIL = 'The archive database cannot be reached right now; try again in a few seconds.';
export const UNAVAILABLE_RETRY_SECONDS = 5;

/** Said the same way by every front end that refuses work because the engine is full. */
export function overloadedDetail(err: EngineOverloaded): string {
  const work = err.lane === 'query' ? 'searches and other long reads' : 'requests';
  const s = err.retryAfterSeconds === 1 ? '' : 's';
  return `The server is busy with more ${work} than it can queue; try again in ${err.retryAfterSeconds} second${s}.`;
}

/** Said the same way by every front end whose job ran past Engine:JobTimeoutSeconds. */
export function timedOutDetail(err: EngineTimedOut): string {
  const seconds = Math.max(1, Math.round(err.budgetMs / 1000));
  return (
    `The request took longer than the ${seconds} s the server allows a request's work (Engine:JobTimeoutSeconds) and was stopped. ` +
    `Narrow it (fewer or shorter search terms, a date range, one account) or try again in ${err.retryAfterSeconds} seconds.`
  );
}

function defaultDetail(status: number, ctx: Context): string {
  switch (status) {
    case 404:
      return `No resource at ${ctx.path}.`;
    case 405:
      return `${ctx.method} is not allowed on ${ctx.path}.`;
    default:
      return STATUSES[status]?.[0] ?? 'Error';
  }
}
