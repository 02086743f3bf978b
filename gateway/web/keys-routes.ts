// The API Keys page: /keys lists the user's keys (and, for an administrator, everyone else's),
// POST /keys creates one, POST /keys/revoke asks first and then revokes. Each is an engine job
// that runs the same store code as the CLI, with the permission rule inside the engine.
import type Router from '@koa/router';
import type { JobResult, WebUser } from '../../shared/jobs.js';
import { checkCsrf } from './csrf.js';
import { WebError } from './errors.js';
import { minExpiryDate, parseKeyForm } from './forms.js';
import type { PageKit, WebContext } from './page-kit.js';
import type { WebState } from './session.js';
import { confirmRevokePage, keysPage, type KeysModel } from './views.js';

/** `?page=` of the keys page: absent is the first; past the last shows the last (the engine's pageWithin). */
function pageParam(value: unknown, name: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value === 'string' && /^[1-9]\d{0,8}$/.test(value)) return Number(value);
  throw new WebError(400, 'Bad request', `${name} must be a whole number from 1.`);
}

/** The key id a revoke form names, or NaN. */
const formKeyId = (body: Record<string, unknown>): number =>
  typeof body.id === 'string' && /^\d{1,15}$/.test(body.id) ? Number(body.id) : NaN;

export function keysRoutes(router: Router<WebState>, kit: PageKit): void {
  const { engine, logger, settings, session, form, chrome, page, requireUser } = kit;

  async function listKeys(
    user: WebUser,
    at: { ownPage?: number; othersPage?: number; keyId?: number } = {},
  ): Promise<JobResult<'listKeysFor'> & { ok: true }> {
    const result = await engine.run({ kind: 'listKeysFor', actorId: user.id, now: Date.now(), ...at });
    if (!result.ok) throw new WebError(403, 'Not allowed', result.message);
    return result;
  }

  async function renderKeys(
    ctx: WebContext,
    user: WebUser,
    status: number,
    extra: Partial<KeysModel> = {},
  ): Promise<void> {
    const { own, others } = (await listKeys(user)).value;
    page(ctx, status, keysPage(chrome(ctx, 'keys'), { own, others, minExpiry: minExpiryDate(Date.now()), ...extra }));
  }

  router.get('/keys', session, async (ctx) => {
    const user = requireUser(ctx, '/keys');
    if (!user) return;
    const revokedId = Number(ctx.query.revoked);
    const { own, others, named } = (
      await listKeys(user, {
        ownPage: pageParam(ctx.query.page, 'page'),
        othersPage: pageParam(ctx.query.othersPage, 'othersPage'),
        ...(Number.isSafeInteger(revokedId) ? { keyId: revokedId } : {}),
      })
    ).value;
    page(
      ctx,
      200,
      keysPage(chrome(ctx, 'keys'), {
        own,
        others,
        minExpiry: minExpiryDate(Date.now()),
        // The notice only for a key that is revoked: ?revoked=<an active key's id> says nothing.
        ...(named && named.revokedAt !== null ? { revoked: named } : {}),
      }),
    );
  });

  router.post('/keys', session, form, async (ctx) => {
    const user = requireUser(ctx, '/keys');
    if (!user) return;
    checkCsrf(ctx);
    const body = ctx.request.body as Record<string, unknown>;
    const now = Date.now();
    const input = parseKeyForm(body, now);
    const echo = {
      name: typeof body.name === 'string' ? body.name : '',
      expires: typeof body.expires === 'string' ? body.expires : '',
    };
    if (!input.ok) return renderKeys(ctx, user, 422, { form: { ...echo, error: input.error } });
    const result = await engine.run({
      kind: 'createKeyFor',
      actorId: user.id,
      name: input.name,
      expiresAt: input.expiresAt,
      now,
      maxActive: settings.Web.MaxActiveKeysPerUser,
    });
    if (!result.ok)
      return renderKeys(ctx, user, result.reason === 'invalid' ? 422 : 403, {
        form: { ...echo, error: result.message },
      });
    logger.info(
      { user: user.username, keyId: result.value.row.id, prefix: result.value.row.prefix },
      'API key created in the web UI',
    );
    // The plaintext key goes into this response only: not the session, not a redirect URL.
    await renderKeys(ctx, user, 200, { created: result.value });
  });

  router.post('/keys/revoke', session, form, async (ctx) => {
    const user = requireUser(ctx, '/keys');
    if (!user) return;
    checkCsrf(ctx);
    const body = ctx.request.body as Record<string, unknown>;
    const id = formKeyId(body);
    if (Number.isNaN(id)) throw new WebError(400, 'Bad request', 'The form did not name a key.');
    if (body.confirmed !== 'yes') {
      const key = (await listKeys(user, { keyId: id })).value.named;
      if (!key) throw new WebError(404, 'No such key', 'There is no such API key.');
      page(ctx, 200, confirmRevokePage(chrome(ctx, 'keys'), key));
      return;
    }
    const result = await engine.run({ kind: 'revokeKeyAs', actorId: user.id, keyId: id, now: Date.now() });
    if (!result.ok)
      throw new WebError(
        result.reason === 'not-found' ? 404 : 403,
        result.reason === 'not-found' ? 'No such key' : 'Not allowed',
        result.message,
      );
    logger.info(
      { user: user.username, keyId: id, owner: result.value.username, prefix: result.value.prefix },
      'API key revoked in the web UI',
    );
    kit.seeOther(ctx, `/keys?revoked=${id}`);
  });
}
