// SPEC.md, “States and transitions” and “Authentication”: bearer API keys, the permission model on every endpoint, key
// states taking effect on the very next request, and the LastUsedAt write throttle.
import anyTest, { type TestFn } from 'ava';
import { hashKey, LAST_USED_INTERVAL_MS } from '../engine/rules/keys.js';
import type { EmailSummaryDto, MailAccountDto } from '../shared/dto.js';
import {
  bearer,
  INVALID_TOKEN_CHALLENGE,
  NO_TOKEN_CHALLENGE,
  startApi,
  unknownKey,
  type ApiHarness,
} from './helpers/api.js';
import type { Fixture } from './helpers/fixture.js';
import { PASSWORDS, sessionCookies, signIn, startWeb } from './helpers/web.js';
import { changeArchive, queryArchive, withAdmin } from './helpers/store.js';

const test = anyTest as TestFn<{ api: ApiHarness }>;

test.before(async (t) => {
  t.context = { api: await startApi() };
});
test.after.always(async (t) => {
  await t.context.api?.close();
});

type Who = 'admin' | 'alice' | 'bob' | 'carol';

/** Every endpoint of the API guide, instantiated with fixture ids. */
function endpoints(f: Fixture): Array<{ name: string; path: string }> {
  return [
    { name: 'accounts', path: '/api/v1/accounts' },
    { name: 'folders', path: `/api/v1/accounts/${f.accounts.work}/folders` },
    { name: 'emails', path: '/api/v1/emails' },
    { name: 'email', path: `/api/v1/emails/${f.emails.budget}` },
    { name: 'attachment', path: `/api/v1/emails/${f.emails.budget}/attachments/${f.attachments['budget:notes.txt']}` },
    { name: 'stats', path: '/api/v1/stats' },
  ];
}

function assertUnauthorized(
  t: import('ava').ExecutionContext,
  res: { status: number; headers: Record<string, string>; body: Record<string, unknown> },
  path: string,
  tokenPresented: boolean,
  label: string,
) {
  t.is(res.status, 401, label);
  t.is(res.headers['content-type'], 'application/problem+json', label);
  t.is(res.headers.location, undefined, `${label}: never a redirect`);
  t.regex(res.headers['www-authenticate'] ?? '', tokenPresented ? INVALID_TOKEN_CHALLENGE : NO_TOKEN_CHALLENGE, label);
  t.like(res.body, { status: 401, title: 'Unauthorized', instance: path }, label);
  t.is(typeof res.body.detail, 'string', label);
  t.is(typeof res.body.type, 'string', label);
}

test('every endpoint rejects missing, malformed, Basic and unknown credentials with 401 + WWW-Authenticate: Bearer', async (t) => {
  const { api } = t.context;
  const f = api.fixture;
  const cases: Array<{ label: string; headers: Record<string, string>; token: boolean }> = [
    { label: 'no Authorization header', headers: {}, token: false },
    { label: 'empty Authorization header', headers: { Authorization: '' }, token: false },
    { label: 'Bearer without token', headers: { Authorization: 'Bearer' }, token: false },
    {
      label: 'Basic scheme',
      headers: { Authorization: `Basic ${Buffer.from('admin:secret').toString('base64')}` },
      token: false,
    },
    { label: 'Basic scheme carrying a valid key', headers: { Authorization: `Basic ${f.keys.admin}` }, token: false },
    { label: 'malformed token', headers: bearer('not-a-key'), token: true },
    { label: 'wrong prefix', headers: bearer(`mb_${f.keys.admin.slice(3)}`), token: true },
    { label: 'truncated key', headers: bearer(f.keys.admin.slice(0, -1)), token: true },
    { label: 'key with an extra character', headers: bearer(`${f.keys.admin}A`), token: true },
    { label: 'key with a character outside base64url', headers: bearer(`${f.keys.admin.slice(0, -1)}+`), token: true },
    { label: 'unknown well-formed key', headers: bearer(unknownKey()), token: true },
    { label: 'key hash sent instead of the key', headers: bearer(hashKey(f.keys.admin)), token: true },
  ];
  for (const { path } of endpoints(f)) {
    for (const c of cases) {
      const res = await api.request.get(path).set(c.headers);
      assertUnauthorized(t, res, path, c.token, `${path}: ${c.label}`);
    }
  }
});

test('every endpoint rejects inactive-owner, expired and revoked keys with 401 invalid_token', async (t) => {
  const { api } = t.context;
  const f = api.fixture;
  for (const { path } of endpoints(f)) {
    for (const [label, key] of [
      ['inactive owner', f.keys.inactive],
      ['expired', f.keys.expired],
      ['revoked', f.keys.revoked],
    ] as const) {
      const res = await api.request.get(path).set(bearer(key));
      assertUnauthorized(t, res, path, true, `${path}: ${label}`);
    }
  }
});

test('a cookie is never honoured on /api, neither alone nor instead of the header', async (t) => {
  const { api } = t.context;
  const f = api.fixture;
  for (const { path } of endpoints(f)) {
    for (const cookie of [
      `session=${f.keys.admin}`,
      `Authorization=Bearer ${f.keys.admin}`,
      `access_token=${f.keys.admin}`,
    ]) {
      const res = await api.request.get(path).set('Cookie', cookie);
      assertUnauthorized(t, res, path, false, `${path} with cookie ${cookie.split('=')[0]}`);
    }
  }
  // A cookie next to a valid header changes nothing either way.
  const res = await api.request
    .get('/api/v1/accounts')
    .set(bearer(f.keys.bob))
    .set('Cookie', `session=${f.keys.admin}`);
  t.is(res.status, 200);
  t.deepEqual(
    (res.body as MailAccountDto[]).map((a) => a.id),
    [f.accounts.personal],
  );
  t.is(res.headers['set-cookie'], undefined);
});

test('the Bearer scheme name is case-insensitive and surrounding spaces are tolerated', async (t) => {
  const { api } = t.context;
  const f = api.fixture;
  for (const header of [`bearer ${f.keys.bob}`, `BEARER ${f.keys.bob}`, `Bearer   ${f.keys.bob}  `]) {
    const res = await api.request.get('/api/v1/accounts').set('Authorization', header);
    t.is(res.status, 200, header);
  }
});

/** What each assigned user may see, and what every endpoint must therefore answer. */
test('permission matrix: every endpoint × admin, alice, bob, carol', async (t) => {
  const { api } = t.context;
  const f = api.fixture;
  const { work, personal, shared } = f.accounts;
  const visible: Record<Who, number[]> = {
    admin: [work, personal, shared],
    alice: [work, shared],
    bob: [personal],
    carol: [],
  };
  const accountOf: Record<string, number> = {
    budget: work,
    lunch: work,
    invoice: work,
    archived: work,
    sent: work,
    family: personal,
    umlaut: personal,
    team: shared,
  };
  for (const who of ['admin', 'alice', 'bob', 'carol'] as const) {
    const key = f.keys[who];
    const sees = (account: number) => visible[who].includes(account);

    const accounts = await api.request.get('/api/v1/accounts').set(bearer(key));
    t.is(accounts.status, 200);
    t.deepEqual(
      (accounts.body as MailAccountDto[]).map((a) => a.id),
      visible[who],
      `${who} accounts`,
    );

    for (const account of [work, personal, shared]) {
      const res = await api.request.get(`/api/v1/accounts/${account}/folders`).set(bearer(key));
      t.is(res.status, sees(account) ? 200 : 404, `${who} folders of ${account}`);
    }

    const search = await api.request.get('/api/v1/emails').query({ pageSize: 100 }).set(bearer(key));
    t.is(search.status, 200);
    const expectedIds = Object.entries(f.emails)
      .filter(([name]) => sees(accountOf[name]!))
      .map(([, id]) => id)
      .sort((a, b) => a - b);
    t.deepEqual(
      (search.body.items as EmailSummaryDto[]).map((i) => i.id).sort((a, b) => a - b),
      expectedIds,
      `${who} search`,
    );
    t.is(search.body.totalItems, expectedIds.length);
    // Even a text query cannot reach beyond the visible accounts ("budget" is in work and personal mail).
    const budget = await api.request.get('/api/v1/emails').query({ q: 'budget' }).set(bearer(key));
    t.true(
      (budget.body.items as EmailSummaryDto[]).every((i) => sees(i.accountId)),
      `${who} q=budget`,
    );

    for (const [name, id] of Object.entries(f.emails)) {
      const res = await api.request.get(`/api/v1/emails/${id}`).set(bearer(key));
      t.is(res.status, sees(accountOf[name]!) ? 200 : 404, `${who} email ${name}`);
    }
    for (const [name, id] of Object.entries(f.attachments)) {
      const emailName = name.split(':')[0]!;
      const res = await api.request.get(`/api/v1/emails/${f.emails[emailName]}/attachments/${id}`).set(bearer(key));
      t.is(res.status, sees(accountOf[emailName]!) ? 200 : 404, `${who} attachment ${name}`);
    }

    const stats = await api.request.get('/api/v1/stats').set(bearer(key));
    t.is(stats.status, 200);
    t.is(stats.body.accounts, visible[who].length);
    t.is(stats.body.emails, expectedIds.length);
    t.is(stats.body.databaseSizeInMB === '', who !== 'admin', `${who} databaseSizeInMB`);
  }
});

test('the unknown-key problem says nothing about whether a key exists in another state', async (t) => {
  const { api } = t.context;
  const res = await api.request.get('/api/v1/stats').set(bearer(unknownKey()));
  t.is(res.status, 401);
  t.false(JSON.stringify(res.body).includes('ma_'), 'the key is not echoed back');
});

// ---------------------------------------------------------------------------------------------
// Key state changes while the app runs: the very next request sees them.

test.serial('revoking a key takes effect on the very next request', async (t) => {
  const { api } = t.context;
  const path = api.settings.Database.Path;
  const created = await withAdmin(path, (a) => a.createKey({ username: 'alice', name: 'to revoke' }));
  const first = await api.request.get('/api/v1/accounts').set(bearer(created.key));
  t.is(first.status, 200);
  await withAdmin(path, (a) => a.revokeKey(created.id));
  const next = await api.request.get('/api/v1/accounts').set(bearer(created.key));
  t.is(next.status, 401);
  t.regex(next.headers['www-authenticate'] ?? '', INVALID_TOKEN_CHALLENGE);
  t.regex(next.body.detail, /revoked/);
});

test.serial('deactivating the owner takes effect on the very next request, reactivating restores access', async (t) => {
  const { api } = t.context;
  const path = api.settings.Database.Path;
  const created = await withAdmin(path, async (a) => {
    await a.addUser({ username: 'erin', email: 'erin@example.com' });
    await a.assignAccount('erin', api.fixture.accounts.shared);
    return a.createKey({ username: 'erin', name: 'erin key' });
  });
  const email = `/api/v1/emails/${api.fixture.emails.team}`;
  t.is((await api.request.get(email).set(bearer(created.key))).status, 200);
  await withAdmin(path, (a) => a.setUserActive('erin', false));
  const denied = await api.request.get(email).set(bearer(created.key));
  t.is(denied.status, 401);
  t.regex(denied.body.detail, /owner is not active/);
  await withAdmin(path, (a) => a.setUserActive('erin', true));
  t.is((await api.request.get(email).set(bearer(created.key))).status, 200);
});

test.serial('a key expires on the very next request after its ExpiresAt passes', async (t) => {
  const { api } = t.context;
  const path = api.settings.Database.Path;
  const created = await withAdmin(path, (a) =>
    a.createKey({ username: 'bob', name: 'short-lived', expiresAt: Date.now() + 60_000 }),
  );
  t.is((await api.request.get('/api/v1/stats').set(bearer(created.key))).status, 200);
  await queryArchive(
    path,
    {
      sqlite: 'UPDATE api_keys SET expires_at = ? WHERE id = ?',
      postgres: `UPDATE mail_archiver."ApiKeys" SET "ExpiresAt" = to_timestamp($1::float8 / 1000) AT TIME ZONE 'UTC' WHERE "Id" = $2`,
    },
    [Date.now() - 1, created.id],
  );
  const res = await api.request.get('/api/v1/stats').set(bearer(created.key));
  t.is(res.status, 401);
  t.regex(res.body.detail, /expired/);
});

test.serial(
  'unassigning an account hides it on the very next request; admin rights follow the owner too',
  async (t) => {
    const { api } = t.context;
    const path = api.settings.Database.Path;
    const f = api.fixture;
    const { key } = await withAdmin(path, async (a) => {
      await a.addUser({ username: 'frank', email: 'frank@example.com' });
      await a.assignAccount('frank', f.accounts.personal);
      return a.createKey({ username: 'frank', name: 'frank key' });
    });
    const email = `/api/v1/emails/${f.emails.family}`;
    t.is((await api.request.get(email).set(bearer(key))).status, 200);
    await withAdmin(path, (a) => a.unassignAccount('frank', f.accounts.personal));
    t.is((await api.request.get(email).set(bearer(key))).status, 404);
    await queryArchive(path, {
      sqlite: "UPDATE users SET is_admin = 1 WHERE username = 'frank'",
      postgres: `UPDATE mail_archiver."Users" SET "IsAdmin" = true WHERE "Username" = 'frank'`,
    });
    t.is((await api.request.get(email).set(bearer(key))).status, 200);
    t.not((await api.request.get('/api/v1/stats').set(bearer(key))).body.databaseSizeInMB, '');
  },
);

test.serial('LastUsedAt: two requests in a row make one write; a stale value is refreshed again', async (t) => {
  const { api } = t.context;
  const path = api.settings.Database.Path;
  const created = await withAdmin(path, (a) => a.createKey({ username: 'carol', name: 'usage' }));
  // Count real row updates of LastUsedAt with a trigger (this test's archive only).
  await changeArchive(path, {
    sqlite: (db) =>
      db.exec(`CREATE TABLE IF NOT EXISTS test_last_used_writes (key_id INTEGER, at INTEGER);
               CREATE TRIGGER IF NOT EXISTS test_count_last_used AFTER UPDATE OF last_used_at ON api_keys
               BEGIN INSERT INTO test_last_used_writes VALUES (NEW.id, NEW.last_used_at); END;`),
    postgres: (client) =>
      client.query(`CREATE TABLE IF NOT EXISTS public.test_last_used_writes (key_id integer);
        CREATE OR REPLACE FUNCTION public.test_count_last_used() RETURNS trigger LANGUAGE plpgsql AS
          $$ BEGIN INSERT INTO public.test_last_used_writes VALUES (NEW."Id"); RETURN NEW; END; $$;
        CREATE OR REPLACE TRIGGER test_count_last_used AFTER UPDATE OF "LastUsedAt" ON mail_archiver."ApiKeys"
          FOR EACH ROW EXECUTE FUNCTION public.test_count_last_used();`),
  });
  const writes = async () =>
    (
      await queryArchive<{ n: number }>(
        path,
        {
          sqlite: 'SELECT count(*) AS n FROM test_last_used_writes WHERE key_id = ?',
          postgres: 'SELECT count(*)::int AS n FROM public.test_last_used_writes WHERE key_id = $1',
        },
        [created.id],
      )
    )[0]!.n;
  const lastUsed = async () =>
    (
      await queryArchive<{ at: number | null }>(
        path,
        {
          sqlite: 'SELECT last_used_at AS at FROM api_keys WHERE id = ?',
          postgres: `SELECT (extract(epoch FROM ("LastUsedAt" AT TIME ZONE 'UTC')) * 1000)::float8 AS at FROM mail_archiver."ApiKeys" WHERE "Id" = $1`,
        },
        [created.id],
      )
    )[0]!.at;
  const setLastUsed = (ms: number) =>
    queryArchive(
      path,
      {
        sqlite: 'UPDATE api_keys SET last_used_at = ? WHERE id = ?',
        postgres: `UPDATE mail_archiver."ApiKeys" SET "LastUsedAt" = to_timestamp($1::float8 / 1000) AT TIME ZONE 'UTC' WHERE "Id" = $2`,
      },
      [ms, created.id],
    );
  t.is(await lastUsed(), null);

  const before = Date.now();
  t.is((await api.request.get('/api/v1/accounts').set(bearer(created.key))).status, 200);
  const after = Date.now();
  const first = await lastUsed();
  t.truthy(first);
  t.true(first! >= before && first! <= after, 'set to the time of the request');
  t.is((await api.request.get('/api/v1/stats').set(bearer(created.key))).status, 200);
  t.is((await api.request.get('/api/v1/emails').set(bearer(created.key))).status, 200);
  t.is(await lastUsed(), first, 'not rewritten within the interval');
  t.is(await writes(), 1, 'three requests, one write');

  // A value older than the interval is refreshed by the next accepted request, once.
  await setLastUsed(Date.now() - LAST_USED_INTERVAL_MS - 1000);
  const countBefore = await writes();
  await api.request.get('/api/v1/accounts').set(bearer(created.key));
  await api.request.get('/api/v1/accounts').set(bearer(created.key));
  t.is(await writes(), countBefore + 1);
  t.true((await lastUsed())! >= Date.now() - 10_000);

  // A value just inside the interval is left alone.
  const recent = Date.now() - LAST_USED_INTERVAL_MS + 60_000;
  await setLastUsed(recent);
  const countRecent = await writes();
  await api.request.get('/api/v1/accounts').set(bearer(created.key));
  t.is(await lastUsed(), recent);
  t.is(await writes(), countRecent);
});

test.serial('rejected keys never touch LastUsedAt', async (t) => {
  const { api } = t.context;
  const f = api.fixture;
  const rejected = [f.keys.expired, f.keys.revoked, f.keys.inactive].map(hashKey);
  const lastUsed = () =>
    queryArchive<{ id: number; used: number | null }>(
      api.settings.Database.Path,
      {
        sqlite: 'SELECT id, last_used_at AS used FROM api_keys WHERE key_hash IN (?, ?, ?) ORDER BY id',
        postgres: `SELECT "Id" AS id, (extract(epoch FROM "LastUsedAt") * 1000)::float8 AS used
                     FROM mail_archiver."ApiKeys" WHERE "KeyHash" IN ($1, $2, $3) ORDER BY "Id"`,
      },
      rejected,
    );
  const before = await lastUsed();
  t.is(before.length, 3);
  for (const key of [f.keys.expired, f.keys.revoked, f.keys.inactive]) {
    t.is((await api.request.get('/api/v1/accounts').set(bearer(key))).status, 401);
  }
  const after = await lastUsed();
  t.deepEqual(after, before);
  t.true(after.every((r) => r.used === null));
});

test('a real web session cookie (signed in as admin) is not honoured on any /api endpoint', async (t) => {
  const web = await startWeb();
  t.teardown(() => web.close());
  const { agent, res } = await signIn(web.url, 'admin', PASSWORDS.admin);
  t.true(res.status === 302 || res.status === 303 || res.status === 200, `sign-in answered ${res.status}`);
  const cookies = sessionCookies(res.headers['set-cookie']);
  t.truthy(cookies, 'the sign-in set a session cookie');
  // The session is real: the web surface accepts it.
  const keysPage = await agent.get('/keys');
  t.is(keysPage.status, 200, 'the cookie signs in to the web UI');
  for (const { path } of endpoints(web.fixture)) {
    const viaAgent = await agent.get(path);
    assertUnauthorized(t, viaAgent, path, false, `${path} with the admin session cookie`);
  }
  // With the cookie and bob's key, the request is bob's, not the admin's.
  const mixed = await agent.get('/api/v1/accounts').set(bearer(web.fixture.keys.bob));
  t.is(mixed.status, 200);
  t.deepEqual(
    (mixed.body as MailAccountDto[]).map((a) => a.id),
    [web.fixture.accounts.personal],
  );
});
