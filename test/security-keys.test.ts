// Hardening (docs/security.md, item 5): one user cannot hold more active keys than
// Web:MaxActiveKeysPerUser, on the web page and in the CLI, on both stores; the web page lists
// keys a page at a time (KEYS_PAGE_SIZE), on the query lane, never ahead of a key check.
import test from 'ava';
import { openStore } from '../engine/archive.js';
import { LANES } from '../engine/pool/pool.js';
import { KEYS_PAGE_SIZE } from '../shared/jobs.js';
import { cliArchive, STORE_KINDS } from './helpers/cli-archive.js';
import { csrfOf, PASSWORDS, signIn, startWeb, withDb } from './helpers/web.js';
import { createKey } from '../engine/sqlite/keys.js';

test('the web page refuses a key beyond Web:MaxActiveKeysPerUser, and allows one again after a revocation', async (t) => {
  const web = await startWeb({ overrides: { Web: { MaxActiveKeysPerUser: 3 } } });
  t.teardown(() => web.close());
  const { agent } = await signIn(web.url, 'alice', PASSWORDS.alice);
  const create = async (name: string) => {
    const page = await agent.get('/keys');
    return agent
      .post('/keys')
      .type('form')
      .send({ _csrf: csrfOf(page.text), name, expires: '' });
  };
  // alice holds one active key in the fixture (her revoked one does not count).
  t.is((await create('second')).status, 200);
  t.is((await create('third')).status, 200);
  const refused = await create('fourth');
  t.is(refused.status, 422);
  t.regex(refused.text, /alice already has 3 active keys, the most allowed/);
  const page = await agent.get('/keys');
  const id = /name="id" value="(\d+)"/.exec(page.text)![1]!;
  const revoked = await agent
    .post('/keys/revoke')
    .type('form')
    .send({ _csrf: csrfOf(page.text), id, confirmed: 'yes' });
  t.true(revoked.status < 400, `revoked (${revoked.status})`);
  t.is((await create('fourth again')).status, 200);
});

for (const kind of STORE_KINDS) {
  test(`[${kind}] keys create refuses a key beyond Web:MaxActiveKeysPerUser`, async (t) => {
    const archive = await cliArchive(t, kind);
    await (await archive.admin()).addUser({ username: 'carol' });
    const env = { Web__MaxActiveKeysPerUser: '2' };
    for (const name of ['one', 'two']) {
      const ok = await archive.cli(['keys', 'create', 'carol', '--name', name], { env });
      t.is(ok.code, 0, ok.stderr);
    }
    const refused = await archive.cli(['keys', 'create', 'carol', '--name', 'three'], { env });
    t.not(refused.code, 0);
    t.regex(
      refused.stderr,
      /carol already has 2 active keys, the most allowed \(Web:MaxActiveKeysPerUser\); revoke one first\./,
    );
    t.is(await archive.count('keys'), 2);
  });
}

test('the web page lists keys a page at a time, for each list, and a bad page number is a 400', async (t) => {
  const web = await startWeb({ overrides: { Web: { MaxActiveKeysPerUser: 1000 } } });
  t.teardown(() => web.close());
  // admin holds 1 key in the fixture; 69 more make two pages of own keys. Others hold 6.
  withDb(web.fixture.dbPath, (db) => {
    for (let i = 0; i < 69; i++) createKey(db, { username: 'admin', name: `bulk ${i}` });
    for (let i = 0; i < 60; i++) createKey(db, { username: 'bob', name: `bob bulk ${i}` });
  });
  const { agent } = await signIn(web.url, 'admin', PASSWORDS.admin);
  const rows = (html: string, label: string) => {
    const table = new RegExp(`aria-label="${label}"[\\s\\S]*?</table>`).exec(html)?.[0] ?? '';
    return (table.match(/<tr data-key-id=/g) ?? []).length;
  };
  const first = await agent.get('/keys');
  t.is(first.status, 200);
  t.is(rows(first.text, 'Your keys'), KEYS_PAGE_SIZE);
  t.regex(first.text, /Keys 1–50 of 70/);
  t.regex(first.text, /href="\/keys\?page=2" rel="next"/);
  // Everyone else's: 66 keys (bob's 61, alice's 3, carol's and dave's: see the fixture).
  t.is(rows(first.text, 'Other users’ keys'), KEYS_PAGE_SIZE);
  const othersSection = first.text.slice(first.text.indexOf('aria-label="Other users’ keys"'));
  const othersTotal = Number(/Keys 1–50 of (\d+)</.exec(othersSection)?.[1]);
  t.is(othersTotal, 66);
  const second = await agent.get('/keys?page=2&othersPage=2');
  t.is(rows(second.text, 'Your keys'), 20);
  t.regex(second.text, /Keys 51–70 of 70/);
  t.is(rows(second.text, 'Other users’ keys'), othersTotal - KEYS_PAGE_SIZE);
  // Each link keeps the other list where it is.
  t.regex(second.text, /href="\/keys\?othersPage=2" rel="prev"/);
  t.regex(second.text, /href="\/keys\?page=2" rel="prev"/);
  // Past the last page: the last; not a number: a 400 page, not a 500.
  t.regex((await agent.get('/keys?page=99')).text, /Keys 51–70 of 70/);
  for (const bad of ['0', '-1', 'x', '1.5', '99999999999']) {
    const res = await agent.get(`/keys?page=${bad}`);
    t.is(res.status, 400, bad);
    t.regex(res.text, /page must be a whole number from 1/);
  }
  // A key on the second page can still be revoked from its confirmation page, and its notice shown.
  const id = /data-key-id="(\d+)"/.exec(/aria-label="Your keys"[\s\S]*?<\/table>/.exec(second.text)![0])![1]!;
  const confirm = await agent
    .post('/keys/revoke')
    .type('form')
    .send({ _csrf: csrfOf(second.text), id, confirmed: '' });
  t.is(confirm.status, 200);
  t.regex(confirm.text, /Revoke this key\?/);
  const done = await agent
    .post('/keys/revoke')
    .type('form')
    .send({ _csrf: csrfOf(second.text), id, confirmed: 'yes' });
  t.is(done.status, 303);
  t.regex((await agent.get(done.headers['location']!)).text, /is revoked\./);
});

test('the key listing runs on the query lane, not the interactive lane of key checks', (t) => {
  t.is(LANES.listKeysFor, 'query');
  t.is(LANES.authenticate, 'interactive');
});

for (const kind of STORE_KINDS) {
  test(`[${kind}] listKeysFor pages both lists and finds a named key on any page`, async (t) => {
    const archive = await cliArchive(t, kind);
    const admin = await archive.admin();
    const root = await admin.addUser({ username: 'root', isAdmin: true });
    const erin = await admin.addUser({ username: 'erin' });
    for (let i = 0; i < 55; i++) await admin.createKey({ username: 'root', name: `r${i}` });
    const erinKeys = [];
    for (let i = 0; i < 3; i++) erinKeys.push(await admin.createKey({ username: 'erin', name: `e${i}` }));
    const store = await openStore({ path: archive.db });
    t.teardown(() => store.close());
    const list = async (actorId: number, at: { ownPage?: number; othersPage?: number; keyId?: number } = {}) => {
      const r = await store.run({ kind: 'listKeysFor', actorId, now: Date.now(), ...at });
      if (!r.ok) throw new Error(r.message);
      return r.value;
    };
    const one = await list(root.id);
    t.deepEqual([one.own.rows.length, one.own.total, one.own.page], [KEYS_PAGE_SIZE, 55, 1]);
    t.deepEqual(one.own.rows.map((k) => k.name).slice(0, 2), ['r0', 'r1']);
    const two = await list(root.id, { ownPage: 2 });
    t.deepEqual(
      two.own.rows.map((k) => k.name),
      ['r50', 'r51', 'r52', 'r53', 'r54'],
    );
    t.is((await list(root.id, { ownPage: 7 })).own.page, 2, 'past the last page: the last');
    t.deepEqual([one.others!.total, one.others!.rows.map((k) => k.name)], [3, ['e0', 'e1', 'e2']]);
    // A named key: any visible one, wherever it is listed; another user's only for an administrator.
    t.is((await list(root.id, { keyId: erinKeys[2]!.id })).named?.name, 'e2');
    const asErin = await list(erin.id, { keyId: two.own.rows[0]!.id });
    t.is(asErin.named, null);
    t.is(asErin.others, null);
    t.deepEqual([asErin.own.total, asErin.own.rows.length], [3, 3]);
  });
}
