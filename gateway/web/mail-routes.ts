// The reading pages (docs/web.md, "Reading mail"): /search, /emails/{id} with its body, its
// attachments' previews and downloads, its original, and a search's export. Each route runs the
// same ArchiveService call as the REST route beside it, as the signed-in user (their accounts
// only), and the access log records it as REST's would, with source `web`.
import type Router from '@koa/router';
import type { Context, Middleware, Next } from 'koa';
import { isInvalidInput, parseInt32, parseSearchInput } from '../../shared/search-input.js';
import { hasText, noTextReason, type ArchiveService, type Caller } from '../archive-service.js';
import { KeyCheck } from '../auth.js';
import { downloadsAllowed, sendAttachment, sendExport, sendOriginal, storedMediaType } from '../downloads.js';
import type { RateLimiter } from '../rate-limit.js';
import { PAGE_CSP, setPageHeaders } from './headers.js';
import {
  mailBodyDocument,
  messagePage,
  previewPage,
  searchPage,
  SORTS,
  type PreviewKind,
  type SearchModel,
  type SearchState,
} from './mail-views.js';
import type { PageKit, WebContext } from './page-kit.js';
import { sessionOf } from './session.js';
import { WebError } from './errors.js';

/** Where the reading pages live: the surface mounts these paths only when they are on. */
export const READING_PREFIXES = ['/search', '/emails'];

/** Raster images a browser shows by itself: previewed in an <img>, and served for `cid:` images. */
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/bmp', 'image/avif']);
const mediaTypeOf = (type: string) => type.split(';')[0]!.trim().toLowerCase();
const isImage = (type: string) => IMAGE_TYPES.has(mediaTypeOf(type));
const isPdf = (type: string) => mediaTypeOf(type) === 'application/pdf';
/** The extracted text shown in a preview, at most (the attachment-text job's own page bound applies too). */
const PREVIEW_TEXT_CHARS = 200_000;

/** The message page's frame may show same-origin documents: the message body. */
const MESSAGE_PAGE_CSP = `${PAGE_CSP}; frame-src 'self'`;
/** A preview shows the file from this origin in a frame (a PDF in the browser's viewer). */
const PREVIEW_PAGE_CSP = `${PAGE_CSP}; frame-src 'self'; object-src 'self'`;

/**
 * The message body's document: no script (none allowed, and the frame is sandboxed without
 * allow-scripts), no form, no plugin, no remote load but images when the reader asked for them,
 * framed only by our own pages. `sandbox` here too, for a body opened on its own.
 */
function bodyCsp(remoteImages: boolean): string {
  return [
    "default-src 'none'",
    `img-src 'self' data:${remoteImages ? ' https: http:' : ''}`,
    "style-src 'unsafe-inline'",
    "frame-ancestors 'self'",
    "form-action 'none'",
    "base-uri 'none'",
    'sandbox allow-same-origin allow-popups allow-popups-to-escape-sandbox',
  ].join('; ');
}

type ReaderState = WebContext['state'] & { caller?: Caller };
type ReaderContext = WebContext & { state: ReaderState };

/** The session's user is no longer there (deactivated, deleted, re-passworded): sign in again. */
class SessionEnded extends Error {}

function one(value: unknown): string {
  const v = Array.isArray(value) ? value[0] : value;
  return typeof v === 'string' ? v : '';
}

/** The search page's state from its URL; anything unknown is ignored, anything invalid reported by the search. */
export function searchStateOf(query: Record<string, unknown>): SearchState {
  const direction = one(query.direction);
  const sort = one(query.sort);
  const page = Number(one(query.page));
  return {
    q: one(query.q),
    accountId: one(query.accountId).trim(),
    folder: one(query.folder),
    from: one(query.from).trim(),
    to: one(query.to).trim(),
    direction: direction === 'incoming' || direction === 'outgoing' ? direction : '',
    hasAttachment: one(query.has) === 'attachment',
    sort: Object.hasOwn(SORTS, sort) ? (sort as SearchState['sort']) : 'newest',
    page: Number.isSafeInteger(page) && page >= 1 ? page : 1,
  };
}

/**
 * The search's parameters as the REST API names them (what parseSearchInput validates and the
 * access log keeps). has:attachment joins q: the query language already says it.
 */
export function searchParamsOf(state: SearchState): Record<string, unknown> {
  // A quote left open would take the closing parenthesis and has:attachment into its phrase.
  const closed = (state.q.match(/"/g)?.length ?? 0) % 2 === 1 ? `${state.q}"` : state.q;
  const q = state.hasAttachment ? (closed.trim() ? `(${closed}) has:attachment` : 'has:attachment') : state.q;
  return {
    ...(q.trim() ? { q } : {}),
    ...(state.accountId ? { accountId: state.accountId } : {}),
    ...(state.folder ? { folder: state.folder } : {}),
    ...(state.from ? { from: state.from } : {}),
    ...(state.to ? { to: state.to } : {}),
    ...(state.direction ? { direction: state.direction } : {}),
    page: String(state.page),
    sortBy: state.sort === 'relevance' ? 'relevance' : 'sentDate',
    sortOrder: state.sort === 'oldest' ? 'asc' : 'desc',
    ...(q.trim() ? { snippets: 'true' } : {}),
  };
}

export function mailRoutes(
  router: Router<WebContext['state']>,
  kit: PageKit,
  deps: { service: ArchiveService; limiter: RateLimiter },
): void {
  const { settings, cookie, chrome, page } = kit;
  const { service, limiter } = deps;
  const limits = { defaultPageSize: settings.Api.DefaultPageSize, maxPageSize: settings.Api.MaxPageSize };

  /**
   * Every reading route: a signed-in session (else to the sign-in page and back), one request of
   * the user's budget (Web:ReadingRequestsPerMinute), then the request's caller. The session's
   * user is checked by the route's first engine job, in the same crossing to a worker thread
   * (KeyCheck with the session's claim, as a key is checked with a REST route's job): a user
   * deactivated, deleted or re-passworded since sign-in is sent to sign in again, and nothing the
   * job read is shown.
   */
  const reader: Middleware = async (ctx: Context, next: Next) => {
    const c = ctx as ReaderContext;
    c.state.user = null;
    const s = sessionOf(ctx);
    if (!s || typeof s.uid !== 'number' || typeof s.stamp !== 'string') {
      kit.requireUser(c, ctx.originalUrl);
      return;
    }
    const stamp = s.stamp;
    await limiter.consume(`user:${s.uid}`);
    // A cookie from before `iat` began at most a lifetime before it expires (session.ts).
    const claim = { userId: s.uid, stamp, issuedAt: typeof s.iat === 'number' ? s.iat : 0 };
    const key = new KeyCheck(service.engine, claim, async (auth) => {
      if (!auth.ok) throw new SessionEnded();
      const { userId: id, username, isAdmin } = auth.principal;
      c.state.user = { id, username, isAdmin, stamp };
      return auth.principal;
    });
    c.state.caller = { key, clientIp: ctx.ip, source: 'web' };
    try {
      await next();
    } catch (err) {
      if (!(err instanceof SessionEnded)) throw err;
      ctx.session = null;
      c.state.user = null;
      kit.requireUser(c, ctx.originalUrl);
    }
  };
  const callerOf = (ctx: Context) => (ctx as ReaderContext).state.caller!;
  const idOf = (ctx: Context, name: string) => {
    try {
      return parseInt32(name, (ctx.params as Record<string, string>)[name]);
    } catch {
      throw new WebError(404, 'Not found', 'There is no such message.');
    }
  };
  const noMessage = () =>
    new WebError(404, 'Message not found', 'There is no such message, or it is not yours to read.');

  router.get('/search', cookie, reader, async (ctx) => {
    const c = ctx as ReaderContext;
    // A query-lane job: refused at once while that lane is full (as REST's shed()).
    service.engine.admit('search');
    const state = searchStateOf(ctx.query as Record<string, unknown>);
    const caller = callerOf(ctx);
    const model: SearchModel = {
      state,
      accounts: [],
      folders: null,
      results: null,
      exportAllowed: settings.Api.AllowAttachmentDownloads,
    };
    try {
      const params = searchParamsOf(state);
      const query = parseSearchInput(params, limits);
      // One job: the search, the accounts list and the chosen account's folder tree.
      const view = await service.searchView(caller, query, params, query.accountId);
      model.accounts = view.accounts;
      model.results = view.results;
      model.folders = view.folders;
    } catch (err) {
      if (!isInvalidInput(err)) throw err;
      model.accounts = await service.accounts(caller);
      model.error = (err as Error).message;
      ctx.status = 400;
    }
    page(c, ctx.status === 400 ? 400 : 200, searchPage(chrome(c, 'search'), model));
  });

  router.get('/search/export', cookie, reader, async (ctx) => {
    service.engine.admit('exportIds');
    const state = searchStateOf(ctx.query as Record<string, unknown>);
    const { page: _page, sortBy: _by, sortOrder: _order, snippets: _snippets, ...params } = searchParamsOf(state);
    const format = one((ctx.query as Record<string, unknown>).format);
    await sendExport(ctx, { settings, service, limits }, callerOf(ctx), { ...params, format }, 'web');
  });

  router.get('/emails/:id', cookie, reader, async (ctx) => {
    const c = ctx as ReaderContext;
    const id = idOf(ctx, 'id');
    const caller = callerOf(ctx);
    const remoteImages = one(ctx.query.remote) === '1';
    // HEAD shows nothing: neither an Open nor a Search, as on the REST API.
    const record = ctx.method !== 'HEAD';
    const [view, thread, accounts] = await Promise.all([
      service.messageView(caller, id, { remoteImages, partUrl: partUrl(id), record }),
      service.thread(caller, id, { excerpts: true, record }),
      service.accounts(caller),
    ]);
    if (!view) throw noMessage();
    const { email } = view;
    const account = accounts.find((a) => a.id === email.accountId);
    const hasHtml = !!view.html && view.html.html.trim() !== '';
    const wanted = one(ctx.query.view) === 'text' ? 'text' : 'html';
    setPageHeaders(ctx, MESSAGE_PAGE_CSP);
    page(
      c,
      200,
      messagePage(chrome(c, 'search'), {
        email,
        accountName: account ? account.name || account.emailAddress : `Account ${email.accountId}`,
        view: hasHtml ? wanted : 'text',
        remoteImages,
        remoteBlocked: view.html?.remoteBlocked ?? 0,
        hasHtml,
        htmlTruncated: view.html?.truncated ?? false,
        thread: thread ?? [],
        downloadsAllowed: settings.Api.AllowAttachmentDownloads,
      }),
    );
  });

  // The HTML body as its own document, for the message page's sandboxed frame. Part of the Open
  // the page logged, so not logged again.
  router.get('/emails/:id/body', cookie, reader, async (ctx) => {
    const id = idOf(ctx, 'id');
    const remoteImages = one(ctx.query.remote) === '1';
    const view = await service.messageView(callerOf(ctx), id, { remoteImages, partUrl: partUrl(id), record: false });
    if (!view) throw noMessage();
    setPageHeaders(ctx, bodyCsp(remoteImages));
    ctx.set('X-Frame-Options', 'SAMEORIGIN');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = mailBodyDocument(view.html?.html ?? '');
  });

  router.get('/emails/:id/raw', cookie, reader, async (ctx) => {
    downloadsAllowed(settings);
    await sendOriginal(ctx, service, callerOf(ctx), idOf(ctx, 'id'));
  });

  router.get('/emails/:id/attachments/:attachmentId', cookie, reader, async (ctx) => {
    downloadsAllowed(settings);
    await sendAttachment(ctx, service, callerOf(ctx), {
      emailId: idOf(ctx, 'id'),
      attachmentId: idOf(ctx, 'attachmentId'),
    });
  });

  // Shown by the browser itself: raster images (previews and the body's cid: images) and PDFs
  // (in the browser's own viewer). Anything else is not served inline.
  router.get('/emails/:id/attachments/:attachmentId/inline', cookie, reader, async (ctx) => {
    downloadsAllowed(settings);
    await sendAttachment(
      ctx,
      service,
      callerOf(ctx),
      { emailId: idOf(ctx, 'id'), attachmentId: idOf(ctx, 'attachmentId') },
      { inline: true, only: (type) => isImage(type) || isPdf(type) },
    );
    // Chromium's PDF viewer does not run in a document sandboxed by CSP; a PDF is shown only in
    // our own preview frame (frame-ancestors), never as an active document of this origin's pages.
    if (isPdf(ctx.response.get('Content-Type'))) {
      ctx.set('Content-Security-Policy', "default-src 'none'; frame-ancestors 'self'; object-src 'self'");
      ctx.set('X-Frame-Options', 'SAMEORIGIN');
    }
  });

  router.get('/emails/:id/attachments/:attachmentId/preview', cookie, reader, async (ctx) => {
    const c = ctx as ReaderContext;
    downloadsAllowed(settings);
    const emailId = idOf(ctx, 'id');
    const attachmentId = idOf(ctx, 'attachmentId');
    const caller = callerOf(ctx);
    const handle = await service.findAttachment(caller, emailId, attachmentId);
    if (!handle)
      throw new WebError(404, 'Attachment not found', 'There is no such attachment, or it is not yours to read.');
    const type = storedMediaType(handle.contentType);
    const kind: PreviewKind = isImage(type) ? 'image' : isPdf(type) ? 'pdf' : 'text';
    let text: { text: string; truncated: boolean } | { none: string } | undefined;
    if (kind === 'text') {
      const found = await service.attachmentText(caller, emailId, attachmentId, { maxChars: PREVIEW_TEXT_CHARS });
      text =
        found && hasText(found)
          ? { text: found.text, truncated: found.truncated }
          : { none: noTextReason(found?.status ?? 'unsupported') };
    }
    setPageHeaders(ctx, PREVIEW_PAGE_CSP);
    ctx.set('X-Frame-Options', 'DENY');
    page(
      c,
      200,
      previewPage(chrome(c, 'search'), {
        emailId,
        attachmentId,
        fileName: handle.fileName,
        contentType: type,
        size: handle.size,
        kind: text && 'none' in text ? 'none' : kind,
        ...(text ? { text } : {}),
      }),
    );
  });
}

/** Where the body's `cid:` images are served from (the job fills in the attachment's id). */
const partUrl = (emailId: number) => `/emails/${emailId}/attachments/{attachmentId}/inline`;
