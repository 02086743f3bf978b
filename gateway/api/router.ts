// REST API v1 (SPEC.md section 4): six GET routes, each a thin adapter over ArchiveService.
import Router from '@koa/router';
import type { Context } from 'koa';
import { Readable } from 'node:stream';
import type { Settings } from '../../shared/config.js';
import { parseInt32, parseSearchInput } from '../../shared/search-input.js';
import type { ArchiveService } from '../archive-service.js';
import { requireApiKey, type AuthState } from '../auth.js';
import { callerOf } from '../client.js';
import { contentDisposition } from '../content-disposition.js';
import { Problem } from '../problem.js';

export function apiRouter(settings: Settings, service: ArchiveService): Router<AuthState> {
  const router = new Router<AuthState>({ prefix: '/api/v1' });
  const limits = { defaultPageSize: settings.Api.DefaultPageSize, maxPageSize: settings.Api.MaxPageSize };
  const caller = (ctx: Context & { state: AuthState }) => callerOf(ctx, ctx.state.principal, 'api');
  const idParam = (ctx: Context, name: string) => parseInt32(name, (ctx.params as Record<string, string>)[name]);

  router.use(requireApiKey(service.engine));

  router.get('/accounts', async (ctx) => {
    ctx.body = await service.accounts(caller(ctx));
  });

  router.get('/accounts/:id/folders', async (ctx) => {
    const folders = await service.folders(caller(ctx), idParam(ctx, 'id'));
    if (!folders) throw new Problem(404, `Account ${ctx.params.id} does not exist.`);
    ctx.body = folders;
  });

  router.get('/emails', async (ctx) => {
    const params = ctx.query as Record<string, unknown>;
    const query = parseSearchInput(params, limits);
    ctx.body = await service.search(caller(ctx), query, params);
  });

  router.get('/emails/:id', async (ctx) => {
    const email = await service.email(caller(ctx), idParam(ctx, 'id'));
    if (!email) throw new Problem(404, `Email ${ctx.params.id} does not exist.`);
    ctx.body = email;
  });

  router.get('/emails/:id/attachments/:attachmentId', async (ctx) => {
    const emailId = idParam(ctx, 'id');
    const attachmentId = idParam(ctx, 'attachmentId');
    if (!settings.Api.AllowAttachmentDownloads) {
      throw new Problem(403, 'Attachment downloads are disabled on this server (Api:AllowAttachmentDownloads).');
    }
    const handle = await service.attachment(caller(ctx), emailId, attachmentId);
    if (!handle) throw new Problem(404, `Attachment ${attachmentId} of email ${emailId} does not exist.`);
    // The bytes are untrusted: never sniffed, never rendered as an active document.
    ctx.set({
      'Content-Disposition': contentDisposition(handle.fileName),
      'X-Content-Type-Options': 'nosniff',
      'Content-Security-Policy': 'sandbox',
    });
    ctx.type = handle.contentType || 'application/octet-stream';
    ctx.body = ctx.method === 'HEAD' ? Readable.from([]) : await startedStream(service.content(handle));
    ctx.length = handle.size;
  });

  router.get('/stats', async (ctx) => {
    ctx.body = await service.stats(caller(ctx));
  });

  return router;
}

/**
 * Reads the first chunk before the status line is sent, so a failure there is still an
 * ordinary 500 problem; later chunks stream as the client reads them.
 */
async function startedStream(chunks: AsyncGenerator<Buffer>): Promise<Readable> {
  const first = await chunks.next();
  async function* rest() {
    if (!first.done) yield first.value;
    yield* chunks;
  }
  return Readable.from(rest(), { objectMode: false });
}
