// Session cookies: their flags, their server-side expiry, their signing secret, and the user
// behind them being re-checked on every request.
import test from 'ava';
import { createHmac } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import request from 'supertest';
import { setPasswordHash, setUserActive } from '../engine/sqlite/users.js';
import { hashPassword } from '../engine/rules/password-hash.js';
import { SESSION_COOKIE } from '../gateway/web/session.js';
import { SECRET_FILE_NAME } from '../gateway/web/session-secret.js';
import { addWebUser, PASSWORDS, sessionCookies, signIn, startWeb, withDb, type WebFixture } from './helpers/web.js';

const SECRET = 'test-session-secret-0123456789';
const LIMITS = { LoginAttemptsPerUserPerMinute: 1000, LoginAttemptsPerIpPerMinute: 1000 };

let web: WebFixture;
test.before(async () => {
  web = await startWeb({ overrides: { Web: { SessionSecret: SECRET, SessionLifetimeMinutes: 60, ...LIMITS } } });
});
test.after.always(() => web?.close());

/** The cookie pair koa-session would send for this payload, signed like keygrip does. */
function forge(payload: object, secret = SECRET): string {
  const value = Buffer.from(JSON.stringify(payload)).toString('base64');
  const sig = createHmac('sha1', secret).update(`${SESSION_COOKIE}=${value}`).digest('base64url');
  return `${SESSION_COOKIE}=${value}; ${SESSION_COOKIE}.sig=${sig}`;
}

function payloadOf(setCookie: string[]): Record<string, unknown> {
  const raw = setCookie
    .find((c) => c.startsWith(`${SESSION_COOKIE}=`))!
    .split(';')[0]!
    .slice(SESSION_COOKIE.length + 1);
  return JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) as Record<string, unknown>;
}

async function signedInPayload(username = 'alice', password: string = PASSWORDS.alice) {
  const { res } = await signIn(web.url, username, password);
  return { res, payload: payloadOf(res.headers['set-cookie'] as unknown as string[]) };
}

test.serial('the session cookie is signed, HttpOnly and SameSite=Lax, and not Secure over plain HTTP', async (t) => {
  const { res, payload } = await signedInPayload();
  const cookies = res.headers['set-cookie'] as unknown as string[];
  const value = cookies.find((c) => c.startsWith(`${SESSION_COOKIE}=`))!;
  const sig = cookies.find((c) => c.startsWith(`${SESSION_COOKIE}.sig=`));
  t.truthy(sig, 'signed');
  for (const c of [value, sig!]) {
    t.regex(c, /;\s*httponly/i);
    t.regex(c, /;\s*samesite=lax/i);
    t.regex(c, /;\s*path=\//i);
    t.notRegex(c, /;\s*secure/i);
  }
  // The cookie carries who and until when, never a password or its hash.
  t.is(typeof payload.uid, 'number');
  t.is(typeof payload.exp, 'number');
  const lifetime = (payload.exp as number) - Date.now();
  t.true(lifetime > 59 * 60_000 && lifetime <= 60 * 60_000, `lifetime ${lifetime}`);
  t.false(JSON.stringify(payload).includes(PASSWORDS.alice));
  t.false(JSON.stringify(payload).includes('scrypt'));
});

test.serial(
  'a forged cookie with the right secret is accepted, which proves the forging below is faithful',
  async (t) => {
    const { payload } = await signedInPayload();
    const res = await request(web.url).get('/keys').set('Cookie', forge(payload));
    t.is(res.status, 200);
  },
);

test.serial('an expired session is refused by the server, whatever the browser keeps', async (t) => {
  const { payload } = await signedInPayload();
  const past = Date.now() - 1000;
  for (const expired of [
    { ...payload, exp: past, _expire: past },
    { ...payload, exp: past },
  ]) {
    const res = await request(web.url).get('/keys').set('Cookie', forge(expired));
    t.is(res.status, 302);
    t.is(res.headers.location, '/login?next=%2Fkeys');
  }
});

test.serial('a session cannot be extended or hijacked by editing the cookie', async (t) => {
  const { res, payload } = await signedInPayload();
  const sig = sessionCookies(res.headers['set-cookie'])
    .split('; ')
    .find((c) => c.startsWith(`${SESSION_COOKIE}.sig=`))!;
  const edited = Buffer.from(JSON.stringify({ ...payload, exp: Date.now() + 10 * 86_400_000 })).toString('base64');
  const tampered = await request(web.url).get('/keys').set('Cookie', `${SESSION_COOKIE}=${edited}; ${sig}`);
  t.is(tampered.status, 302, 'edited payload with the old signature');
  const otherSecret = await request(web.url).get('/keys').set('Cookie', forge(payload, 'another-secret-0123456789'));
  t.is(otherSecret.status, 302, 'signed with another secret');
});

test.serial('deactivating a user ends their sessions at the next request', async (t) => {
  await addWebUser(web.fixture.dbPath, 'erin', 'erin-pass-123');
  const { agent } = await signIn(web.url, 'erin', 'erin-pass-123');
  t.is((await agent.get('/keys')).status, 200);
  withDb(web.fixture.dbPath, (db) => setUserActive(db, 'erin', false));
  t.is((await agent.get('/keys')).status, 302);
});

test.serial('changing the password ends existing sessions', async (t) => {
  await addWebUser(web.fixture.dbPath, 'frank', 'frank-pass-123');
  const { agent } = await signIn(web.url, 'frank', 'frank-pass-123');
  t.is((await agent.get('/keys')).status, 200);
  const hash = await hashPassword('frank-new-pass-456');
  withDb(web.fixture.dbPath, (db) => setPasswordHash(db, 'frank', hash));
  t.is((await agent.get('/keys')).status, 302);
  t.is((await signIn(web.url, 'frank', 'frank-new-pass-456')).res.status, 303);
});

test.serial(
  'behind a trusted proxy the cookie is Secure; an untrusted X-Forwarded-Proto changes nothing',
  async (t) => {
    const proxied = await startWeb({ overrides: { Server: { TrustProxy: true }, Web: { SessionSecret: SECRET } } });
    t.teardown(() => proxied.close());
    const behind = await request(proxied.url).get('/login').set('X-Forwarded-Proto', 'https');
    for (const c of behind.headers['set-cookie'] as unknown as string[]) t.regex(c, /;\s*secure/i);
    const direct = await request(web.url).get('/login').set('X-Forwarded-Proto', 'https');
    for (const c of direct.headers['set-cookie'] as unknown as string[]) t.notRegex(c, /;\s*secure/i);
  },
);

test.serial(
  'without Web:SessionSecret a secret is generated next to the database, 0600, and survives a restart',
  async (t) => {
    const first = await startWeb({ overrides: { Web: LIMITS } });
    t.teardown(() => first.close());
    const path = join(dirname(first.fixture.dbPath), SECRET_FILE_NAME);
    t.is(statSync(path).mode & 0o777, 0o600);
    const secret = readFileSync(path, 'utf8').trim();
    t.true(secret.length >= 43);
    const { res } = await signIn(first.url, 'alice', PASSWORDS.alice);
    const cookie = sessionCookies(res.headers['set-cookie']);
    // A second process on the same data directory (a restart, or a PM2 sibling) honours the cookie.
    const second = await startWeb({ fixture: first.fixture, overrides: { Web: LIMITS } });
    t.teardown(() => second.close());
    t.is(readFileSync(path, 'utf8').trim(), secret, 'the secret is reused, not replaced');
    t.is((await request(second.url).get('/keys').set('Cookie', cookie)).status, 200);
  },
);
