// The authorization server's bounds (docs/security.md, "OAuth for MCP"; docs/mcp.md, "OAuth"):
// what a stranger can make it fetch, store and answer. Runs on both stores (TEST_STORE=postgres).
import test from 'ava';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { addressPartition, isPublicAddress } from '../gateway/address.js';
import { ClientMetadataDocuments } from '../gateway/oauth/clients.js';
import { defaultSettings } from '../shared/config.js';
import {
  authorizeUrl,
  CALLBACK,
  consent,
  person,
  pkce,
  registerClient,
  startOAuthGateway,
  tokenRequest,
  codeRequest,
} from './helpers/oauth.js';
import { waitFor } from './helpers/redis.js';
import { changeArchive, queryArchive } from './helpers/store.js';

/** A server of client metadata documents on loopback that counts the GETs it receives. */
async function documentServer(
  answer: (req: IncomingMessage, res: ServerResponse, self: string) => boolean | void = () => undefined,
) {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url!);
    const self = `http://127.0.0.1:${(server.address() as AddressInfo).port}${req.url}`;
    if (answer(req, res, self)) return;
    res.setHeader('Content-Type', 'application/json');
    if (req.url!.startsWith('/cached')) res.setHeader('Cache-Control', 'max-age=300');
    else res.setHeader('Cache-Control', 'no-store');
    res.end(JSON.stringify({ client_id: self, client_name: 'Doc Client', redirect_uris: [CALLBACK] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    hits,
    origin,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

test('an anonymous visitor to the authorization endpoint is sent to sign in and nothing is fetched', async (t) => {
  const docs = await documentServer();
  t.teardown(docs.close);
  const h = await startOAuthGateway({ ClientMetadataAllowedOrigins: [docs.origin] });
  t.teardown(() => h.close());
  for (let i = 0; i < 20; i++) {
    const res = await request(h.base).get(codeRequest(`${docs.origin}/client-${i}.json`));
    t.is(res.status, 302);
    t.regex(res.headers.location!, /^\/login\?next=%2Foauth%2Fauthorize%3F/);
  }
  t.deepEqual(docs.hits, [], 'no anonymous request made the server fetch a URL');
});

test('a metadata document is fetched once while its max-age lasts; fetches per address are limited', async (t) => {
  const docs = await documentServer();
  t.teardown(docs.close);
  const h = await startOAuthGateway({
    ClientMetadataAllowedOrigins: [docs.origin],
    ClientMetadataFetchesPerIpPerMinute: 4,
  });
  t.teardown(() => h.close());
  const agent = await person(h.base);
  for (let i = 0; i < 5; i++) t.is((await agent.get(codeRequest(`${docs.origin}/cached.json`))).status, 200);
  t.deepEqual(docs.hits, ['/cached.json'], 'kept as Cache-Control: max-age allows');
  // no-store is fetched each time, and the address's budget (4, one spent above) runs out.
  for (let i = 0; i < 3; i++) t.is((await agent.get(codeRequest(`${docs.origin}/fresh.json`))).status, 200);
  const refused = await agent.get(codeRequest(`${docs.origin}/fresh.json`));
  t.is(refused.status, 429);
  t.regex(refused.text, /Rate limit of 4 requests per minute exceeded/);
  t.is(docs.hits.length, 4);
});

test('fetches in flight: one per URL however many ask, and at most ClientMetadataMaxConcurrentFetches at once', async (t) => {
  const held: ServerResponse[] = [];
  const docs = await documentServer((req, res) => {
    if (!req.url!.startsWith('/slow')) return false;
    held.push(res);
    return true;
  });
  t.teardown(docs.close);
  const h = await startOAuthGateway({
    ClientMetadataAllowedOrigins: [docs.origin],
    ClientMetadataMaxConcurrentFetches: 2,
    ClientMetadataTimeoutMs: 30_000,
  });
  t.teardown(() => h.close());
  const agent = await person(h.base);
  const same = Array.from({ length: 10 }, () => agent.get(codeRequest(`${docs.origin}/slow-a.json`)).then((r) => r));
  const other = agent.get(codeRequest(`${docs.origin}/slow-b.json`)).then((r) => r);
  await waitFor('two fetches held', () => held.length === 2, 20_000, 20);
  const third = await agent.get(codeRequest(`${docs.origin}/slow-c.json`));
  t.is(third.status, 503);
  t.truthy(third.headers['retry-after']);
  t.deepEqual(docs.hits.sort(), ['/slow-a.json', '/slow-b.json'], 'ten requests for one URL are one fetch');
  for (const res of held) {
    const self = `${docs.origin}${(res.req as IncomingMessage).url}`;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ client_id: self, client_name: 'Slow', redirect_uris: [CALLBACK] }));
  }
  for (const res of [...(await Promise.all(same)), await other]) t.is(res.status, 200);
});

test('requests for one URL that pass the per-address budget together still make one fetch', async (t) => {
  // The budget answers asynchronously (Redis, or a promise in memory); under load several requests
  // for one document were all charged before any had started its fetch, and each fetched it.
  const docs = await documentServer();
  t.teardown(docs.close);
  const settings = defaultSettings().Mcp.OAuth;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let charged = 0;
  const documents = new ClientMetadataDocuments(
    { ...settings, ClientMetadataAllowedOrigins: [docs.origin] },
    {
      consume: async () => {
        charged++;
        await gate;
      },
    },
  );
  const url = `${docs.origin}/together.json`;
  const asking = Array.from({ length: 5 }, (_, i) => documents.resolve(url, `address-${i}`));
  await waitFor('every request charged', () => charged === 5, 5_000, 5);
  open();
  const resolved = await Promise.all(asking);
  t.deepEqual(
    resolved.map((c) => c.name),
    Array(5).fill('Doc Client'),
  );
  t.deepEqual(docs.hits, ['/together.json'], 'one fetch for five requests');
});

test('the metadata fetch refuses every form of IPv4 inside IPv6 and other non-public addresses', async (t) => {
  for (const address of [
    '::7f00:1', // IPv4-compatible ::127.0.0.1
    '::a9fe:a9fe', // ::169.254.169.254
    '::ffff:127.0.0.1',
    '2002:7f00:1::1', // 6to4 of 127.0.0.1
    '2001:0:4136:e378:8000:63bf:80ff:fffe', // Teredo
    '64:ff9b::a9fe:a9fe', // NAT64 of 169.254.169.254
    '198.18.0.1',
    '100.64.0.1',
    'fd00::1',
    'fe80::1',
  ])
    t.false(isPublicAddress(address), address);
  for (const address of ['8.8.8.8', '2606:4700:4700::1111']) t.true(isPublicAddress(address), address);

  const h = await startOAuthGateway({ ClientMetadataTimeoutMs: 1000 });
  t.teardown(() => h.close());
  const agent = await person(h.base);
  for (const host of ['[::127.0.0.1]', '[2002:7f00:1::1]', '[2001:0:4136:e378:8000:63bf:80ff:fffe]', '[::a9fe:a9fe]']) {
    const res = await agent.get(codeRequest(`https://${host}:1/client.json`));
    t.is(res.status, 400, host);
    t.regex(res.text, /private or reserved network address/, host);
  }
});

test('redirect URIs: https, http to loopback, or a reverse-domain private-use scheme; the consent page may submit to it', async (t) => {
  const h = await startOAuthGateway({ RegistrationsPerIpPerMinute: 1000 });
  t.teardown(() => h.close());
  const register = (uri: string) =>
    request(h.base)
      .post('/oauth/register')
      .send({ redirect_uris: [uri] });
  for (const uri of [
    'view-source:https://example.com/',
    'ms-msdt:/id PCWDiagnostic',
    'search-ms:query=x',
    'jar:https://example.com/a.jar!/',
    'mailto:someone@example.com',
    'windsurf://codeium.windsurf/oauth', // an app scheme without a dot the operator has not named
    'http://example.com/cb',
  ]) {
    const res = await register(uri);
    t.is(res.status, 400, uri);
    t.is(res.body.error, 'invalid_redirect_uri', uri);
  }
  for (const uri of [
    'https://app.example.com/cb',
    'http://127.0.0.1:8123/cb',
    'http://[::1]/cb',
    'com.example.app:/oauth',
    // Mcp:OAuth:RedirectSchemes' default: Cursor registers its own scheme, which has no dot.
    'cursor://anysphere.cursor-mcp/oauth/callback',
  ])
    t.is((await register(uri)).status, 201, uri);

  const app = 'com.example.app:/oauth';
  const clientId = await registerClient(h.base, [app]);
  const agent = await person(h.base);
  const page = await agent.get(
    authorizeUrl({
      client_id: clientId,
      redirect_uri: app,
      response_type: 'code',
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
    }),
  );
  t.is(page.status, 200);
  t.regex(page.headers['content-security-policy']!, /form-action 'self' com\.example\.app:/);
});

test('registration: stored once, a global cap on clients never used (429), pruned after UnusedClientMinutes', async (t) => {
  const h = await startOAuthGateway({ RegistrationsPerIpPerMinute: 1000, MaxUnusedClients: 3 });
  t.teardown(() => h.close());
  const path = h.settings.Database.Path;
  const uris = Array.from({ length: 10 }, (_, i) => `https://app.example.com/${'x'.repeat(1400)}/${i}`);
  const used = await registerClient(h.base, [CALLBACK], 'Used');
  // One that completes an authorization no longer counts against the cap.
  await consent(
    await person(h.base),
    authorizeUrl({
      client_id: used,
      redirect_uri: CALLBACK,
      response_type: 'code',
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
    }),
  );
  for (let i = 0; i < 3; i++) await registerClient(h.base, uris, `Flood ${i}`);
  const full = await request(h.base).post('/oauth/register').send({ redirect_uris: uris });
  t.is(full.status, 429);
  t.is(full.type, 'application/json');
  t.is(full.body.error, 'temporarily_unavailable');
  t.regex(full.body.error_description, /Mcp:OAuth:MaxUnusedClients/);
  t.truthy(full.headers['retry-after']);

  const sizes = () =>
    queryArchive<{ n: number; bytes: number }>(path, {
      sqlite: 'SELECT count(*) AS n, sum(length(redirect_uris) + length(metadata)) AS bytes FROM oauth_clients',
      postgres:
        'SELECT count(*)::int AS n, sum(length(redirect_uris::text) + length(metadata::text))::int AS bytes FROM mail_archive_gateway.oauth_clients',
    });
  const [before] = await sizes();
  t.is(before!.n, 4);
  const urisBytes = JSON.stringify(uris).length;
  // Each flood client's redirect URIs are stored once (about 14 KB each), not twice.
  t.true(before!.bytes < 3 * urisBytes * 1.2, `${before!.bytes} bytes for 3 × ${urisBytes}`);

  // An hour later (UnusedClientMinutes, 60) the unused ones are pruned by the next registration.
  await changeArchive(path, {
    sqlite: (db) => db.prepare('UPDATE oauth_clients SET created_at = created_at - 3700000').run(),
    postgres: (c) => c.query('UPDATE mail_archive_gateway.oauth_clients SET created_at = created_at - 3700000'),
  });
  t.is(
    (
      await request(h.base)
        .post('/oauth/register')
        .send({ redirect_uris: [CALLBACK] })
    ).status,
    201,
  );
  const [after] = await sizes();
  t.is(after!.n, 2, 'the used client and the new one');
});

test('every per-address budget counts an IPv6 address by its /64', async (t) => {
  t.is(addressPartition('2001:db8:1:2::1'), addressPartition('2001:db8:1:2:ffff:ffff:ffff:ffff'));
  t.not(addressPartition('2001:db8:1:2::1'), addressPartition('2001:db8:1:3::1'));
  t.is(addressPartition('::ffff:192.0.2.1'), addressPartition('192.0.2.1'));

  const h = await startOAuthGateway(
    { RegistrationsPerIpPerMinute: 3 },
    { Server: { TrustProxy: true, AuthFailuresPerIpPerMinute: 3 } },
  );
  t.teardown(() => h.close());
  const from = (address: string) => ({ 'X-Forwarded-For': address });
  const register = (address: string) =>
    request(h.base)
      .post('/oauth/register')
      .set(from(address))
      .send({ redirect_uris: [CALLBACK] });
  for (let i = 1; i <= 3; i++) t.is((await register(`2001:db8:1:2::${i}`)).status, 201);
  t.is((await register('2001:db8:1:2::99')).status, 429, 'another address of the same /64');
  t.is((await register('2001:db8:1:3::1')).status, 201, 'another /64');

  // Failed key checks: three junk keys from three addresses of one /64 spend its budget.
  const junk = (address: string) =>
    request(h.base)
      .get('/api/v1/accounts')
      .set(from(address))
      .set('Authorization', `Bearer ma_${'x'.repeat(43)}`);
  for (let i = 1; i <= 3; i++) t.is((await junk(`2001:db8:5:6::${i}`)).status, 401);
  t.is((await junk('2001:db8:5:6::a')).status, 429);
  t.is((await junk('2001:db8:5:7::a')).status, 401);
});

test('Basic credentials that do not decode are a 401 invalid_client on the token and revocation endpoints', async (t) => {
  const h = await startOAuthGateway();
  t.teardown(() => h.close());
  const basic = `Basic ${Buffer.from('%zz:').toString('base64')}`;
  for (const [path, form] of [
    ['/oauth/token', { grant_type: 'refresh_token', refresh_token: 'mar_x' }],
    ['/oauth/revoke', { token: 'mar_x' }],
  ] as const) {
    const res = await request(h.base).post(path).set('Authorization', basic).type('form').send(form);
    t.is(res.status, 401, path);
    t.is(res.type, 'application/json', path);
    t.is(res.body.error, 'invalid_client', path);
    t.regex(res.headers['www-authenticate']!, /^Basic /, path);
  }
});

test('after junk bearer tokens from an address, its genuine code and refresh token are still served; junk gets a 429 in OAuth JSON', async (t) => {
  const h = await startOAuthGateway({}, { Server: { AuthFailuresPerIpPerMinute: 30 } });
  t.teardown(() => h.close());
  const clientId = await registerClient(h.base);
  const { verifier, challenge } = pkce();
  const back = await consent(
    await person(h.base),
    authorizeUrl({
      client_id: clientId,
      redirect_uri: CALLBACK,
      response_type: 'code',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }),
  );
  for (let i = 0; i < 30; i++)
    await request(h.base)
      .post('/mcp')
      .set('Accept', 'application/json, text/event-stream')
      .set('Authorization', `Bearer junk-${i}`)
      .send({});
  const spent = await request(h.base).get('/api/v1/accounts').set('Authorization', 'Bearer junk');
  t.is(spent.status, 429, 'the address has spent its failed-authentication budget');

  const tokens = await tokenRequest(h.base, {
    grant_type: 'authorization_code',
    code: back.searchParams.get('code')!,
    code_verifier: verifier,
    client_id: clientId,
    redirect_uri: CALLBACK,
  });
  t.is(tokens.status, 200, tokens.text);
  const refreshed = await tokenRequest(h.base, {
    grant_type: 'refresh_token',
    refresh_token: tokens.body.refresh_token,
    client_id: clientId,
  });
  t.is(refreshed.status, 200, refreshed.text);

  for (const form of [
    { grant_type: 'refresh_token', refresh_token: `mar_${'A'.repeat(43)}`, client_id: clientId },
    { grant_type: 'refresh_token', refresh_token: 'not-a-token', client_id: clientId },
  ]) {
    const junk = await tokenRequest(h.base, form);
    t.is(junk.status, 429);
    t.is(junk.type, 'application/json');
    t.is(junk.body.error, 'temporarily_unavailable');
    t.truthy(junk.headers['retry-after']);
  }
});

test('revocation is limited per address, answered in OAuth JSON', async (t) => {
  const h = await startOAuthGateway({ RevocationsPerIpPerMinute: 3 });
  t.teardown(() => h.close());
  const revoke = () => request(h.base).post('/oauth/revoke').type('form').send({ token: 'mar_x', client_id: 'c' });
  for (let i = 0; i < 3; i++) t.is((await revoke()).status, 200);
  const refused = await revoke();
  t.is(refused.status, 429);
  t.is(refused.body.error, 'temporarily_unavailable');
});

test('discovery documents link no documentation that needs a session', async (t) => {
  const h = await startOAuthGateway();
  t.teardown(() => h.close());
  for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/oauth-protected-resource/mcp']) {
    const res = await request(h.base).get(path);
    t.is(res.status, 200);
    t.notRegex(res.text, /apidocs/, path);
  }
});
