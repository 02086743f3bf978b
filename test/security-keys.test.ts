// Hardening (issue 16, item 5; docs/security.md): one user cannot hold more active keys than
// Web:MaxActiveKeysPerUser, on the web page and in the CLI, on both stores.
import test from 'ava';
import { cliArchive, STORE_KINDS } from './helpers/cli-archive.js';
import { csrfOf, PASSWORDS, signIn, startWeb } from './helpers/web.js';

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
