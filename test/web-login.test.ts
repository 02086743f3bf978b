// Web sign-in: one message for every kind of failure, and throttling per username and per IP.
import test from 'ava';
import request from 'supertest';
import { LOGIN_FAILED } from '../gateway/web/routes.js';
import { csrfOf, PASSWORDS, signIn, startWeb, type WebFixture } from './helpers/web.js';

let web: WebFixture;
test.before(async () => {
  // Generous limits here; the throttling tests start gateways with small ones.
  web = await startWeb({
    overrides: { Web: { LoginAttemptsPerUserPerMinute: 1000, LoginAttemptsPerIpPerMinute: 1000 } },
  });
});
test.after.always(() => web?.close());

test.serial('a correct password signs in and redirects to the search page (reading mail)', async (t) => {
  const { agent, res } = await signIn(web.url, 'alice', PASSWORDS.alice);
  t.is(res.status, 303);
  t.is(res.headers.location, '/search');
  const keys = await agent.get('/keys');
  t.is(keys.status, 200);
  t.regex(keys.text, /<span class="who">alice/);
});

test.serial('usernames are matched without regard to case, as in the store', async (t) => {
  const { res } = await signIn(web.url, 'ALICE', PASSWORDS.alice);
  t.is(res.status, 303);
});

test.serial(
  'wrong password, unknown user, inactive user and a user without a password get the same answer',
  async (t) => {
    const attempts: Array<[string, string]> = [
      ['alice', 'wrong-password'],
      ['nobody', 'whatever-123'],
      ['dave', PASSWORDS.dave], // correct password, but dave is inactive
      ['carol', 'anything'], // carol has no password
      ['', 'x'],
    ];
    const answers = [];
    for (const [username, password] of attempts) {
      const { agent, res } = await signIn(web.url, username, password);
      t.is(res.status, 401, username);
      t.true(res.text.includes(LOGIN_FAILED), username);
      t.false(res.text.includes(password) && password.length > 1, 'the password is not echoed');
      // Still not signed in.
      t.is((await agent.get('/keys')).status, 302, username);
      // Only the echoed username, the autofocus that follows it and the CSRF token may differ.
      answers.push(res.text.replace(/ value="[^"]*"/g, '').replace(/ autofocus/g, ''));
    }
    t.is(new Set(answers).size, 1, 'every failure renders the same page');
  },
);

test.serial('the next parameter only leads to pages of this site', async (t) => {
  const agent = request.agent(web.url);
  const form = await agent.get('/login?next=/apidocs');
  t.regex(form.text, /name="next" value="\/apidocs"/);
  const ok = await agent
    .post('/login')
    .type('form')
    .send({ _csrf: csrfOf(form.text), username: 'bob', password: PASSWORDS.bob, next: '/apidocs' });
  t.is(ok.headers.location, '/apidocs');
  const other = request.agent(web.url);
  const form2 = await other.get('/login');
  const evil = await other
    .post('/login')
    .type('form')
    .send({ _csrf: csrfOf(form2.text), username: 'bob', password: PASSWORDS.bob, next: 'https://evil.example/' });
  t.is(evil.headers.location, '/search');
});

test.serial('a signed-in user visiting /login goes straight to the search page', async (t) => {
  const { agent } = await signIn(web.url, 'bob', PASSWORDS.bob);
  const res = await agent.get('/login');
  t.is(res.status, 302);
  t.is(res.headers.location, '/search');
});

test.serial('repeated attempts on one username are throttled, even with the right password', async (t) => {
  const own = await startWeb(); // default limits: 5 per username and 30 per IP per minute
  t.teardown(() => own.close());
  t.is(own.settings.Web.LoginAttemptsPerUserPerMinute, 5);
  for (let i = 0; i < 5; i++) t.is((await signIn(own.url, 'bob', `guess-${i}`)).res.status, 401);
  const { agent, res } = await signIn(own.url, 'bob', PASSWORDS.bob);
  t.is(res.status, 429);
  t.regex(res.text, /Too many sign-in attempts\. Wait \d+ seconds/);
  const retryAfter = Number(res.headers['retry-after']);
  t.true(retryAfter >= 1 && retryAfter <= 60);
  t.is((await agent.get('/keys')).status, 302, 'not signed in');
  // Another username from the same IP is not affected by bob's budget.
  t.is((await signIn(own.url, 'alice', PASSWORDS.alice)).res.status, 303);
});

test.serial('repeated attempts from one IP are throttled across usernames', async (t) => {
  const own = await startWeb({ overrides: { Web: { LoginAttemptsPerIpPerMinute: 3 } } });
  t.teardown(() => own.close());
  for (const name of ['u1', 'u2', 'u3']) t.is((await signIn(own.url, name, 'x')).res.status, 401);
  const { res } = await signIn(own.url, 'alice', PASSWORDS.alice);
  t.is(res.status, 429);
  t.truthy(res.headers['retry-after']);
});
