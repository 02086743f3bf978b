// Errors on web paths become HTML pages, never problem+json or a stack trace: the browser shows
// a page that says what happened and where to go next.
import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import {
  EngineOverloaded,
  EngineTimedOut,
  isArchiveUnavailable,
  isSearchIndexBuilding,
  SEARCH_INDEX_RETRY_SECONDS,
} from '../../engine/index.js';
import { AuthorizePageError } from '../oauth/authorize.js';
import { isInvalidInput } from '../../shared/search-input.js';
import { Problem } from '../problem.js';
import { CsrfError } from './csrf.js';
import { errorPage, type Chrome } from './views.js';

/** Thrown to end a request with an HTML error page. */
export class WebError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

interface Described {
  status: number;
  title: string;
  message: string;
}

/** What the page says for an error the surface knows; null for one it does not. */
function describe(ctx: Context, err: unknown): Described | null {
  if (err instanceof WebError) return { status: err.status, title: err.title, message: err.message };
  if (err instanceof AuthorizePageError) {
    return { status: 400, title: 'This request cannot be authorized', message: err.message };
  }
  if (err instanceof EngineOverloaded) {
    // Not logged: expected under a flood. Nothing ran, so the same form can simply be sent again.
    ctx.set('Retry-After', String(err.retryAfterSeconds));
    return {
      status: 503,
      title: 'Server busy',
      message: `The server is too busy to do this now; nothing was changed. Try again in a few seconds.`,
    };
  }
  if (err instanceof EngineTimedOut) {
    ctx.set('Retry-After', String(err.retryAfterSeconds));
    return {
      status: 503,
      title: 'Server busy',
      message: 'This took longer than the server allows and was stopped. Reload the page to see whether it was done.',
    };
  }
  if (isSearchIndexBuilding(err)) {
    ctx.set('Retry-After', String(SEARCH_INDEX_RETRY_SECONDS));
    return { status: 503, title: 'Search index being built', message: (err as Error).message };
  }
  if (isArchiveUnavailable(err)) {
    ctx.set('Retry-After', '5');
    return {
      status: 503,
      title: 'Archive unavailable',
      message: 'The archive database cannot be reached right now; nothing was changed. Try again in a few seconds.',
    };
  }
  if (err instanceof Problem && ((err.status >= 400 && err.status < 500) || err.status === 503)) {
    // The answers the REST API shares with these pages (gateway/downloads.ts, rate limits).
    ctx.set(err.headers);
    const titles: Record<number, string> = {
      403: 'Not allowed',
      404: 'Not found',
      409: 'Not available',
      429: 'Too many requests',
      503: 'Server busy',
    };
    return { status: err.status, title: titles[err.status] ?? 'Request not accepted', message: err.detail };
  }
  if (isInvalidInput(err)) return { status: 400, title: 'Request not accepted', message: (err as Error).message };
  if (err instanceof CsrfError) {
    return {
      status: 403,
      title: 'Form expired',
      message: 'This form has expired or did not come from this site. Go back, reload the page and try again.',
    };
  }
  const e = err as { status?: number; expose?: boolean; message?: string };
  if (e.status && e.status >= 400 && e.status < 500 && e.expose !== false) {
    return { status: e.status, title: 'Request not accepted', message: e.message ?? 'Request not accepted' };
  }
  return null;
}

/** The page chrome, or a bare one when even that fails (the session store may be what broke). */
function safeChrome(ctx: Context, chromeOf: (ctx: Context) => Chrome): Chrome {
  try {
    return chromeOf(ctx);
  } catch {
    return { user: null, csrf: '', docsEnabled: false, assets: { css: '', js: '', icon: '' } };
  }
}

/** Errors on web paths become HTML pages; the unexpected ones are logged and say nothing more. */
export function webErrors(logger: Logger, chromeOf: (ctx: Context) => Chrome): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      let described = describe(ctx, err);
      if (!described) {
        logger.error({ err, method: ctx.method, path: ctx.path }, 'web request failed');
        described = {
          status: 500,
          title: 'Something went wrong',
          message: 'The server could not complete the request. The error has been logged.',
        };
      }
      const chrome = safeChrome(ctx, chromeOf);
      ctx.status = described.status;
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = errorPage(
        chrome,
        described.title,
        described.message,
        !chrome.user
          ? { href: '/login', text: 'Sign in' }
          : chrome.readingEnabled
            ? { href: '/search', text: 'Back to search' }
            : { href: '/keys', text: 'Back to API Keys' },
      );
    }
  };
}
