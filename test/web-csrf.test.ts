// Every state-changing form needs the session's CSRF token; without it nothing changes.
import test from 'ava';
import request from 'supertest';
import { csrfOf, keyIdOf, PASSWORDS, signIn, startWeb, withDb, type WebFixture } from './helpers/web.js';

let web: WebFixture;
test.before(async () => {
  web = await startWeb({
    overrides: { Web: { LoginAttemptsPerUserPerMinute: 1000, LoginAttemptsPerIpPerMinute: 1000 } },
  });
});
test.after.always(() => web?.close());

const keyCount = () =>
  withDb(web.fixture.dbPath, (db) => db.prepare('SELECT count(*) FROM api_keys').pluck().get() as number);
const revokedAt = (id: number) =>
  withDb(web.fixture.dbPath, (db) => db.prepare('SELECT revoked_at FROM api_keys WHERE id = ?').pluck().get(id));

test.serial('sign-in without the token of the form is refused', async (t) => {
  const agent = request.agent(web.url);
  await agent.get('/login');
  const res = await agent.post('/login').type('form').send({ username: 'alice', password: PASSWORDS.alice });
  t.is(res.status, 403);
  t.regex(res.text, /Form expired/);
  t.is((await agent.get('/keys')).status, 302, 'not signed in');
});

test.serial('a token from another session does not sign in either', async (t) => {
  const other = await request(web.url).get('/login');
  const agent = request.agent(web.url);
  await agent.get('/login');
  const res = await agent
    .post('/login')
    .type('form')
    .send({ _csrf: csrfOf(other.text), username: 'alice', password: PASSWORDS.alice });
  t.is(res.status, 403);
});

test.serial('creating a key without a valid token creates nothing', async (t) => {
  const { agent } = await signIn(web.url, 'alice', PASSWORDS.alice);
  const before = keyCount();
  const missing = await agent.post('/keys').type('form').send({ name: 'forged' });
  t.is(missing.status, 403);
  const wrong = await agent
    .post('/keys')
    .type('form')
    .send({ _csrf: 'x'.repeat(43), name: 'forged' });
  t.is(wrong.status, 403);
  // A cross-site page would post JSON or multipart as easily: no token, no key.
  const json = await agent.post('/keys').send({ name: 'forged' });
  t.is(json.status, 403);
  t.is(keyCount(), before);
});

test.serial('revoking without a valid token revokes nothing', async (t) => {
  const { agent } = await signIn(web.url, 'bob', PASSWORDS.bob);
  const id = keyIdOf(web.fixture.dbPath, web.fixture.keys.bob);
  const res = await agent
    .post('/keys/revoke')
    .type('form')
    .send({ id: String(id), confirmed: 'yes' });
  t.is(res.status, 403);
  t.is(revokedAt(id), null);
  const ok = await request(web.url).get('/api/v1/accounts').set('Authorization', `Bearer ${web.fixture.keys.bob}`);
  t.is(ok.status, 200);
});

test.serial('signing out needs the token too', async (t) => {
  const { agent } = await signIn(web.url, 'bob', PASSWORDS.bob);
  t.is((await agent.post('/logout').type('form').send({})).status, 403);
  t.is((await agent.get('/keys')).status, 200, 'still signed in');
  const page = await agent.get('/keys');
  const out = await agent
    .post('/logout')
    .type('form')
    .send({ _csrf: csrfOf(page.text) });
  t.is(out.status, 303);
  t.is((await agent.get('/keys')).status, 302, 'signed out');
});

test.serial('the token is the same on every form of a session and changes at sign-in', async (t) => {
  const agent = request.agent(web.url);
  const before = csrfOf((await agent.get('/login')).text);
  await agent.post('/login').type('form').send({ _csrf: before, username: 'bob', password: PASSWORDS.bob });
  const page = await agent.get('/keys');
  const tokens = new Set([...page.text.matchAll(/name="_csrf" value="([^"]+)"/g)].map((m) => m[1]));
  t.is(tokens.size, 1);
  t.false(tokens.has(before));
});
