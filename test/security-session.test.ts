// Hardening (docs/security.md, item 7): signing out ends the session on the server. A
// copy of the session cookie taken before POST /logout no longer loads /keys or creates a key.
// The engine side runs on both stores (TEST_STORE=postgres).
import test from 'ava';
import request from 'supertest';
import { startApi } from './helpers/api.js';
import { createFixture } from './helpers/fixture.js';
import { csrfOf, PASSWORDS, sessionCookies, setPasswords, signIn, startWeb } from './helpers/web.js';

test('a cookie copied before signing out no longer opens /keys or creates a key', async (t) => {
  const web = await startWeb();
  t.teardown(() => web.close());
  const { agent, res } = await signIn(web.url, 'alice', PASSWORDS.alice);
  t.is(res.status, 303);
  const keysPage = await agent.get('/keys');
  t.is(keysPage.status, 200);
  const copied = sessionCookies(res.headers['set-cookie']);
  const csrf = csrfOf(keysPage.text);
  t.is((await request(web.url).get('/keys').set('Cookie', copied)).status, 200, 'the copy works while signed in');

  const out = await agent.post('/logout').type('form').send({ _csrf: csrf });
  t.is(out.status, 303);
  const stale = await request(web.url).get('/keys').set('Cookie', copied);
  t.is(stale.status, 302, 'the copied cookie is signed out too');
  t.regex(stale.headers.location ?? '', /^\/login/);
  const create = await request(web.url)
    .post('/keys')
    .set('Cookie', copied)
    .type('form')
    .send({ _csrf: csrf, name: 'after sign-out', expires: '' });
  t.not(create.status, 200);
  t.false(/ma_[A-Za-z0-9_-]{43}/.test(create.text), 'no key was made');

  // Signing in again starts a session that works.
  const again = await signIn(web.url, 'alice', PASSWORDS.alice);
  t.is((await again.agent.get('/keys')).status, 200);
});

test('the engine voids sessions begun before the sign-out, and only those (both stores)', async (t) => {
  const f = createFixture();
  t.teardown(f.cleanup);
  await setPasswords(f.dbPath);
  const api = await startApi({}, { useFixture: f });
  t.teardown(() => api.close());
  const { engine } = api.gateway;
  const user = await engine.run({ kind: 'login', username: 'alice', password: PASSWORDS.alice });
  t.truthy(user);
  const begun = Date.now() - 1000;
  const check = (issuedAt: number) =>
    engine.run({ kind: 'sessionUser', userId: user!.id, stamp: user!.stamp, issuedAt });
  t.truthy(await check(begun));
  await engine.run({ kind: 'endSessions', userId: user!.id, now: Date.now() });
  t.is(await check(begun), null);
  t.is(await check(0), null, 'a cookie from before sessions carried their start is void too');
  t.truthy(await check(Date.now() + 1), 'a session begun after the sign-out works');
  // Another user is untouched.
  const bob = await engine.run({ kind: 'login', username: 'bob', password: PASSWORDS.bob });
  t.truthy(await engine.run({ kind: 'sessionUser', userId: bob!.id, stamp: bob!.stamp, issuedAt: begun }));
});
