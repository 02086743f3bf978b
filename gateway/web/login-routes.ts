// Signing in and out: /login and /logout. A wrong password, an unknown user and an inactive one
// get the same answer, and attempts are throttled per address and per user name.
import type Router from '@koa/router';
import { checkCsrf } from './csrf.js';
import { safeNext } from './forms.js';
import { readingPagesOn, type PageKit } from './page-kit.js';
import { startSession, type WebState } from './session.js';
import type { LoginThrottle } from './throttle.js';
import { loginPage, signOutPage } from './views.js';

/** Same answer for a wrong password, an unknown user and an inactive one: nothing to enumerate. */
export const LOGIN_FAILED = 'Invalid username or password.';
const MAX_PASSWORD = 1024;

export function loginRoutes(router: Router<WebState>, kit: PageKit, throttle: LoginThrottle): void {
  const { engine, logger, session, form, chrome, page } = kit;
  // Where signing in leads when no page asked for it: reading mail, where that is on.
  const home = readingPagesOn(kit.settings) ? '/search' : '/keys';

  router.get('/login', session, (ctx) => {
    const next = safeNext(ctx.query.next, home);
    if (ctx.state.user) return ctx.redirect(next);
    page(
      ctx,
      200,
      loginPage(chrome(ctx, 'login'), {
        next,
        ...(ctx.query.signed_out !== undefined ? { notice: 'You have signed out.' } : {}),
      }),
    );
  });

  router.post('/login', session, form, async (ctx) => {
    checkCsrf(ctx);
    const body = ctx.request.body as Record<string, unknown>;
    const username = typeof body.username === 'string' ? body.username.trim() : '';
    const password = typeof body.password === 'string' ? body.password : '';
    const next = safeNext(body.next, home);
    const wait = await throttle.attempt(ctx.ip, username);
    if (wait !== null) {
      logger.warn({ ip: ctx.ip }, 'web sign-in throttled');
      ctx.set('Retry-After', String(wait));
      page(
        ctx,
        429,
        loginPage(chrome(ctx, 'login'), {
          username,
          next,
          error: `Too many sign-in attempts. Wait ${wait} seconds, then try again.`,
        }),
      );
      return;
    }
    const user =
      username && password.length <= MAX_PASSWORD ? await engine.run({ kind: 'login', username, password }) : null;
    if (!user) {
      // The username is not logged: people type their password into it by mistake.
      logger.info({ ip: ctx.ip }, 'web sign-in failed');
      page(ctx, 401, loginPage(chrome(ctx, 'login'), { username, next, error: LOGIN_FAILED }));
      return;
    }
    startSession(ctx, kit.settings, { uid: user.id, stamp: user.stamp });
    logger.info({ user: user.username, ip: ctx.ip }, 'web sign-in');
    kit.seeOther(ctx, next);
  });

  router.get('/logout', session, (ctx) => {
    if (!ctx.state.user) return ctx.redirect('/login');
    page(ctx, 200, signOutPage(chrome(ctx)));
  });

  router.post('/logout', session, form, async (ctx) => {
    checkCsrf(ctx);
    // On the server too: a copy of this cookie (or any other session of the user) is void now.
    if (ctx.state.user) await engine.run({ kind: 'endSessions', userId: ctx.state.user.id, now: Date.now() });
    ctx.session = null;
    kit.seeOther(ctx, '/login?signed_out');
  });
}
