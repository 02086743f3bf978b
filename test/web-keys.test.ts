// The API Keys page: create (the plaintext shown once), list, revoke, and who may touch what.
import test from 'ava';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import request from 'supertest';
import { csrfOf, keyIdOf, PASSWORDS, signIn, startWeb, withDb, type Agent, type WebFixture } from './helpers/web.js';

const logs: string[] = [];
let web: WebFixture;
test.before(async () => {
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  web = await startWeb({
    overrides: { Web: { LoginAttemptsPerUserPerMinute: 1000, LoginAttemptsPerIpPerMinute: 1000 } },
    logger: pino({ level: 'debug' }, sink),
  });
});
test.after.always(() => web?.close());

const api = (key: string) => request(web.url).get('/api/v1/accounts').set('Authorization', `Bearer ${key}`);
const newKeyOf = (html: string) => /<code id="new-key">(ma_[A-Za-z0-9_-]{43})<\/code>/.exec(html)?.[1];

async function createKey(agent: Agent, fields: Record<string, string>) {
  const page = await agent.get('/keys');
  return agent
    .post('/keys')
    .type('form')
    .send({ _csrf: csrfOf(page.text), ...fields });
}

async function revoke(agent: Agent, id: number, confirmed = 'yes') {
  const page = await agent.get('/keys');
  return agent
    .post('/keys/revoke')
    .type('form')
    .send({ _csrf: csrfOf(page.text), id: String(id), confirmed });
}

test.serial('a new key is shown once, uncached, works on the API, and is never logged or listed again', async (t) => {
  const { agent } = await signIn(web.url, 'alice', PASSWORDS.alice);
  const res = await createKey(agent, { name: 'Build server', expires: '' });
  t.is(res.status, 200);
  t.is(res.headers['cache-control'], 'no-store');
  const key = newKeyOf(res.text);
  t.truthy(key);
  t.regex(res.text, /It cannot be shown again/);
  t.is(res.text.split(key!).length - 1, 1, 'exactly once on the page');
  t.false(JSON.stringify(res.headers).includes(key!), 'not in a header or cookie');
  t.is((await api(key!)).status, 200);
  const later = await agent.get('/keys');
  t.false(later.text.includes(key!));
  t.true(later.text.includes(key!.slice(0, 11)), 'the prefix identifies it');
  t.regex(later.text, /Build server/);
  const logged = logs.join('');
  t.regex(logged, /API key created in the web UI/);
  t.false(logged.includes(key!), 'the key is not logged');
  t.false(logged.includes(PASSWORDS.alice), 'the password is not logged');
  // The database keeps the hash only.
  const row = withDb(web.fixture.dbPath, (db) =>
    JSON.stringify(db.prepare('SELECT * FROM api_keys WHERE key_prefix = ?').get(key!.slice(0, 11))),
  );
  t.false(row.includes(key!));
});

test.serial('the name is required and at most 100 characters; the expiry must be a future date', async (t) => {
  const { agent } = await signIn(web.url, 'bob', PASSWORDS.bob);
  const count = () =>
    withDb(web.fixture.dbPath, (db) => db.prepare('SELECT count(*) FROM api_keys').pluck().get() as number);
  const before = count();
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ name: '   ' }, /Give the key a name/],
    [{ name: 'x'.repeat(101) }, /at most 100 characters/],
    [{ name: 'ok', expires: '2020-01-01' }, /must be \d{4}-\d{2}-\d{2} or later/],
    [{ name: 'ok', expires: '2031-02-30' }, /form YYYY-MM-DD/],
    [{ name: 'ok', expires: 'next week' }, /form YYYY-MM-DD/],
  ];
  for (const [fields, message] of cases) {
    const res = await createKey(agent, fields);
    t.is(res.status, 422, JSON.stringify(fields));
    t.regex(res.text, message);
    t.is(newKeyOf(res.text), undefined);
  }
  t.is(count(), before);
  const longest = await createKey(agent, { name: 'y'.repeat(100), expires: '2099-12-31' });
  t.is(longest.status, 200);
  const key = newKeyOf(longest.text)!;
  const expires = withDb(web.fixture.dbPath, (db) =>
    db.prepare('SELECT expires_at FROM api_keys WHERE key_prefix = ?').pluck().get(key.slice(0, 11)),
  );
  t.is(expires, Date.parse('2099-12-31T00:00:00Z'));
});

test.serial('key names are escaped wherever they appear', async (t) => {
  const { agent } = await signIn(web.url, 'bob', PASSWORDS.bob);
  const name = `<img src=x onerror="alert(1)">'&`;
  const res = await createKey(agent, { name });
  t.is(res.status, 200);
  t.false(res.text.includes('<img src=x'));
  t.true(res.text.includes('&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&#39;&amp;'));
  const id = keyIdOf(web.fixture.dbPath, newKeyOf(res.text)!);
  const confirm = await revoke(agent, id, '');
  t.false(confirm.text.includes('<img src=x'));
});

test.serial('revoking asks first, then refuses the key from the next request on', async (t) => {
  const { agent } = await signIn(web.url, 'alice', PASSWORDS.alice);
  const key = newKeyOf((await createKey(agent, { name: 'to revoke' })).text)!;
  const id = keyIdOf(web.fixture.dbPath, key);
  const ask = await revoke(agent, id, '');
  t.is(ask.status, 200);
  t.regex(ask.text, /Revoke this key\?/);
  // An active key named in the notice's parameter is not said to be revoked (docs/security.md, "Mail shaped by an attacker", the cheap fixes).
  t.notRegex((await agent.get(`/keys?revoked=${id}`)).text, /is revoked/);
  t.is((await api(key)).status, 200, 'not revoked by the question');
  const done = await revoke(agent, id);
  t.is(done.status, 303);
  t.is(done.headers.location, `/keys?revoked=${id}`);
  t.regex((await agent.get(done.headers.location as string)).text, /is revoked/);
  t.is((await api(key)).status, 401);
});

test.serial("a user sees only their own keys and cannot revoke another's, even with a forged form", async (t) => {
  const { agent } = await signIn(web.url, 'bob', PASSWORDS.bob);
  const page = await agent.get('/keys');
  t.true(page.text.includes(web.fixture.keys.bob.slice(0, 11)));
  t.false(page.text.includes(web.fixture.keys.alice.slice(0, 11)));
  t.false(page.text.includes('Other users'));
  const aliceKey = keyIdOf(web.fixture.dbPath, web.fixture.keys.alice);
  const forged = await revoke(agent, aliceKey);
  t.is(forged.status, 404);
  t.regex(forged.text, /There is no such API key/);
  t.is((await revoke(agent, aliceKey, '')).status, 404, 'nor the confirmation page');
  t.is((await api(web.fixture.keys.alice)).status, 200);
});

test.serial("an administrator sees every user's keys with their owner and can revoke them", async (t) => {
  const { agent } = await signIn(web.url, 'admin', PASSWORDS.admin);
  const page = await agent.get('/keys');
  t.regex(page.text, /Other users’ keys/);
  const carolPrefix = web.fixture.keys.carol.slice(0, 11);
  const row = new RegExp(
    `<tr data-key-id="\\d+" data-prefix="${carolPrefix}">\\s*<td data-label="Owner" class="owner">carol</td>`,
  );
  t.regex(page.text, row);
  t.regex(page.text, /owner inactive/, "dave's key shows why it is refused");
  const id = keyIdOf(web.fixture.dbPath, web.fixture.keys.carol);
  const done = await revoke(agent, id);
  t.is(done.status, 303);
  t.regex((await agent.get(done.headers.location as string)).text, /of carol is revoked/);
  t.is((await api(web.fixture.keys.carol)).status, 401);
});

test.serial('forms of a signed-out visitor lead to the sign-in page and change nothing', async (t) => {
  const res = await request(web.url).post('/keys').type('form').send({ name: 'x' });
  t.is(res.status, 303);
  t.is(res.headers.location, '/login?next=%2Fkeys');
});
