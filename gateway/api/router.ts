// REST API v1 (SPEC.md, “REST API”): six GET routes, each a thin adapter over ArchiveService.
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import type { Settings } from '../../shared/config.js';
import type { JobKind } from '../../shared/jobs.js';
import { parseAggregateInput, parseInt32, parseSearchInput } from '../../shared/search-input.js';
import { hasText, noTextReason, type ArchiveService } from '../archive-service.js';
import { requireApiKey, type AuthState } from '../auth.js';
import { callerOf } from '../client.js';
import { downloadsAllowed, noSuchAttachment, sendAttachment, sendExport, sendOriginal } from '../downloads.js';
import { Problem } from '../problem.js';
import { answerNotModified } from '../http/conditional.js';

export function apiRouter(settings: Settings, service: ArchiveService): Router<AuthState> {
  const router = new Router<AuthState>({ prefix: '/api/v1' });
  const limits = { defaultPageSize: settings.Api.DefaultPageSize, maxPageSize: settings.Api.MaxPageSize };
  const caller = (ctx: Context & { state: AuthState }) => callerOf(ctx, 'api');
  const idParam = (ctx: Context, name: string) => parseInt32(name, (ctx.params as Record<string, string>)[name]);
  /** An attachment's ids; its bytes and its text alike are refused while downloads are off. */
  const attachmentIds = (ctx: Context) => {
    const ids = { emailId: idParam(ctx, 'id'), attachmentId: idParam(ctx, 'attachmentId') };
    downloadsAllowed(settings);
    return ids;
  };

  // Admission (admission.ts) checks the key with the route's job; each route still refuses a
  // request that brought none. Attached to each route rather than with router.use(): a router-level
  // middleware layer matches every path, which made the gateway's "known path?" check (405 vs
  // 404) treat unknown paths such as /api/v1/nope as known and answer 405.
  const auth = requireApiKey;
  /**
   * For a route whose job runs on the query lane, named by its job kind (the lane is the engine's
   * to say, engine/pool/pool.ts JOB_KINDS): while that lane is full the request is refused at once
   * (503, EngineOverloaded), before its parameters are parsed or its job queued; cheap requests
   * keep flowing (docs/decisions.md, ADR 10). It runs inside admission, so a bad key is still a
   * 401 and the answer still carries its RateLimit headers (admission checks the key on its own
   * when no job carried the check), and before `auth`, as the shedding always has.
   */
  const shed =
    (kind: JobKind): Middleware =>
    async (_ctx, next) => {
      service.engine.admit(kind);
      await next();
    };

  router.get('/accounts', auth, async (ctx) => {
    ctx.body = await service.accounts(caller(ctx));
  });

  router.get('/accounts/:id/folders', shed('folders'), auth, async (ctx) => {
    const folders = await service.folders(caller(ctx), idParam(ctx, 'id'));
    if (!folders) throw new Problem(404, `Account ${ctx.params.id} does not exist.`);
    ctx.body = folders;
  });

  router.get('/emails', shed('search'), auth, async (ctx) => {
    const params = ctx.query as Record<string, unknown>;
    const query = parseSearchInput(params, limits);
    ctx.body = await service.search(caller(ctx), query, params);
  });

  // Before /emails/:id, which would take "aggregate" for an id.
  router.get('/emails/aggregate', shed('aggregate'), auth, async (ctx) => {
    const params = ctx.query as Record<string, unknown>;
    ctx.body = await service.aggregate(caller(ctx), parseAggregateInput(params), params);
  });

  // An export of a search (docs/export.md): every message it matches, with manifest.csv and
  // export.json, as one ZIP. Before /emails/:id, which would take "export" for an id.
  router.get('/emails/export', shed('exportIds'), auth, async (ctx) => {
    await sendExport(ctx, { settings, service, limits }, caller(ctx), ctx.query as Record<string, unknown>, 'api');
  });

  router.get('/emails/:id', auth, async (ctx) => {
    // HEAD shows no content, so it is not an Open (the body is still built: it sizes Content-Length).
    // A 304 is: the client shows the message it holds, and the key was checked as for a 200.
    // The worker serialises and tags it: a message of tens of megabytes costs this thread a write.
    const email = await service.emailJson(caller(ctx), idParam(ctx, 'id'), { record: ctx.method !== 'HEAD' });
    if (!email) throw new Problem(404, `Email ${ctx.params.id} does not exist.`);
    if (answerNotModified(ctx, email.etag)) return;
    ctx.type = 'application/json';
    ctx.body = Buffer.from(email.json.buffer, email.json.byteOffset, email.json.byteLength);
  });

  router.get('/emails/:id/thread', auth, async (ctx) => {
    // HEAD shows no content, so, as for an email, it is not logged.
    const thread = await service.thread(caller(ctx), idParam(ctx, 'id'), { record: ctx.method !== 'HEAD' });
    if (!thread) throw new Problem(404, `Email ${ctx.params.id} does not exist.`);
    ctx.body = thread;
  });

  router.get('/emails/:id/attachments/:attachmentId', auth, async (ctx) => {
    await sendAttachment(ctx, service, caller(ctx), attachmentIds(ctx));
  });

  // A message's bytes (docs/evidence.md, "Originals"), as gateway/downloads.ts sends them.
  router.get('/emails/:id/raw', auth, async (ctx) => {
    await sendOriginal(ctx, service, caller(ctx), idParam(ctx, 'id'));
  });

  // The text found inside an attachment (docs/import.md, "Attachment text"). A download like the
  // bytes: refused when downloads are, logged as Download; never HTML, whatever the file was.
  router.get('/emails/:id/attachments/:attachmentId/text', auth, async (ctx) => {
    const { emailId, attachmentId } = attachmentIds(ctx);
    const page = await service.attachmentText(caller(ctx), emailId, attachmentId, { record: ctx.method !== 'HEAD' });
    if (!page) throw noSuchAttachment(emailId, attachmentId);
    if (!hasText(page)) {
      throw new Problem(
        404,
        `Attachment ${attachmentId} of email ${emailId} has no text (${noTextReason(page.status)}).`,
      );
    }
    ctx.set({
      'X-Content-Type-Options': 'nosniff',
      'Content-Security-Policy': 'sandbox',
      'X-Text-Truncated': page.truncated ? 'true' : 'false',
    });
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = page.text;
  });

  router.get('/stats', shed('stats'), auth, async (ctx) => {
    ctx.body = await service.stats(caller(ctx));
  });

  return router;
}
