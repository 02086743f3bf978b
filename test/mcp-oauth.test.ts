// OAuth 2.1 for /mcp (docs/mcp.md, "OAuth"; docs/security.md): the MCP SDK client's own OAuth
// provider through the whole flow, and every way the authorization server can be misused. Runs
// on both stores (TEST_STORE=postgres).
import test from 'ava';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { openArchive } from '../engine/sqlite/open.js';
import { buildSnapshot } from '../engine/sqlite/index-build.js';
import { adoptSnapshot } from '../engine/sqlite/index-share.js';
import { Snapshot } from '../engine/search/bitsets/snapshot.js';
import { searchEmails } from '../engine/sqlite/search.js';
import { listVisibleAccounts } from '../engine/sqlite/accounts.js';
import { getEmailDetail } from '../engine/sqlite/emails.js';
import type { SearchQuery, Viewer } from '../shared/jobs.js';
import { createFixture } from './helpers/fixture.js';
import {
  Client as V2Client,
  StreamableHTTPClientTransport as V2Transport,
  type OAuthClientProvider as V2OAuthProvider,
} from '@modelcontextprotocol/client';
import { call, MODERN_REVISION, startMcpGateway } from './helpers/mcp.js';
import {
  authorizeUrl,
  CALLBACK,
  consent,
  grant,
  MemoryProvider,
  person,
  pkce,
  registerClient,
  startOAuthGateway,
  tokenRequest,
  codeRequest,
} from './helpers/oauth.js';
import { changeArchive, queryArchive, readAccessLog } from './helpers/store.js';
import { csrfOf } from './helpers/web.js';

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};
const mcpPost = (base: string, token: string | undefined, body: object = initialize) => {
  const r = request(base).post('/mcp').set('Accept', 'application/json, text/event-stream');
  return (token ? r.set('Authorization', `Bearer ${token}`) : r).send(body);
};
const listAccounts = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_accounts', arguments: {} } };

test('with OAuth off nothing advertises it: no resource_metadata, and every discovery path is an explanatory 404', async (t) => {
  const h = await startMcpGateway();
  t.teardown(() => h.close());
  const res = await mcpPost(h.base, undefined);
  t.is(res.status, 401);
  t.is(res.headers['www-authenticate'], 'Bearer realm="mail-archive"');
  const bad = await mcpPost(h.base, h.fixture.keys.revoked);
  t.notRegex(bad.headers['www-authenticate']!, /resource_metadata/);
  for (const path of [
    '/.well-known/oauth-protected-resource/mcp',
    '/.well-known/oauth-protected-resource',
    '/.well-known/oauth-authorization-server',
    '/oauth/authorize',
    '/oauth/token',
  ]) {
    const r = await request(h.base).get(path);
    t.is(r.status, 404, path);
    t.is(r.type, 'application/problem+json');
    t.regex(r.body.detail, /does not offer OAuth: it accepts only API keys.*No key was sent/, path);
  }
  t.is(
    (
      await request(h.base)
        .post('/oauth/register')
        .send({ redirect_uris: [CALLBACK] })
    ).status,
    404,
  );
});

test('with OAuth on, /mcp names its metadata, which names this server, whose metadata lists PKCE S256 only', async (t) => {
  const h = await startOAuthGateway();
  t.teardown(() => h.close());
  const res = await mcpPost(h.base, undefined);
  t.is(res.status, 401);
  t.is(
    res.headers['www-authenticate'],
    `Bearer realm="mail-archive", resource_metadata="${h.base}/.well-known/oauth-protected-resource/mcp", scope="mail:read"`,
  );
  const prm = await request(h.base).get('/.well-known/oauth-protected-resource/mcp');
  t.is(prm.status, 200);
  t.is(prm.body.resource, h.url);
  t.deepEqual(prm.body.authorization_servers, [h.base]);
  const as = await request(h.base).get('/.well-known/oauth-authorization-server');
  t.is(as.body.issuer, h.base);
  t.deepEqual(as.body.code_challenge_methods_supported, ['S256']);
  t.deepEqual(as.body.grant_types_supported, ['authorization_code', 'refresh_token']);
  t.true(as.body.client_id_metadata_document_supported);
  t.is(as.body.registration_endpoint, `${h.base}/oauth/register`);
  // A client in a browser may read the documents and call the token endpoint (CORS, no cookies).
  t.is(as.headers['access-control-allow-origin'], '*');
  for (const path of [
    '/.well-known/oauth-authorization-server',
    '/.well-known/oauth-protected-resource/mcp',
    '/oauth/token',
  ]) {
    const preflight = await request(h.base)
      .options(path)
      .set('Origin', 'https://inspector.example')
      .set('Access-Control-Request-Headers', 'mcp-protocol-version');
    t.is(preflight.status, 204, path);
    t.is(preflight.headers['access-control-allow-origin'], '*', path);
  }
  // The REST API is not an OAuth resource: its 401 names no metadata, and its metadata path is a 404.
  const api = await request(h.base).get('/api/v1/accounts');
  t.is(api.headers['www-authenticate'], 'Bearer realm="mail-archive"');
  t.is((await request(h.base).get('/.well-known/oauth-protected-resource/api/v1')).status, 404);
});

test('Server:PublicUrl names the issuer and the resource instead of the Host header', async (t) => {
  const h = await startOAuthGateway({}, { Server: { PublicUrl: 'https://archive.example.com/' } });
  t.teardown(() => h.close());
  const prm = await request(h.base).get('/.well-known/oauth-protected-resource/mcp').set('Host', 'evil.example');
  t.is(prm.body.resource, 'https://archive.example.com/mcp');
  t.deepEqual(prm.body.authorization_servers, ['https://archive.example.com']);
  const as = await request(h.base).get('/.well-known/oauth-authorization-server').set('Host', 'evil.example');
  t.is(as.body.token_endpoint, 'https://archive.example.com/oauth/token');
});

test('the MCP SDK client connects with its own OAuth provider: registration, consent, tokens, tools, refresh', async (t) => {
  const h = await startOAuthGateway();
  t.teardown(() => h.close());
  const provider = new MemoryProvider('SDK test client');
  const connect = async () => {
    const client = new Client({ name: 'oauth-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(h.url), { authProvider: provider });
    await client.connect(transport);
    return { client, transport };
  };
  // First contact: the 401 sends the client through discovery and registration to our consent page.
  const transport = new StreamableHTTPClientTransport(new URL(h.url), { authProvider: provider });
  await t.throwsAsync(() => new Client({ name: 'oauth-test', version: '1.0.0' }).connect(transport), {
    instanceOf: UnauthorizedError,
  });
  const url = provider.authorizationUrl!;
  t.truthy(url);
  t.is(url.origin + url.pathname, `${h.base}/oauth/authorize`);
  t.is(url.searchParams.get('code_challenge_method'), 'S256');
  t.is(url.searchParams.get('resource'), h.url);
  // Alice signs in and allows it for her Work account only.
  const agent = await person(h.base, 'alice');
  const page = await agent.get(url.pathname + url.search);
  t.regex(page.text, /Allow <span class="client-name">SDK test client<\/span>/);
  const back = await consent(agent, url.pathname + url.search, { accounts: [h.fixture.accounts.work], days: 7 });
  t.is(back.origin + back.pathname, CALLBACK);
  t.is(back.searchParams.get('iss'), h.base);
  t.is(back.searchParams.get('state'), url.searchParams.get('state'));
  await transport.finishAuth(back.searchParams.get('code')!);

  const { client } = await connect();
  const accounts = JSON.parse(((await call(client, 'list_accounts')).content[0] as { text: string }).text) as Array<{
    id: number;
  }>;
  t.deepEqual(
    accounts.map((a) => a.id),
    [h.fixture.accounts.work],
    'the grant reads only the account chosen, not Shared',
  );
  const search = await call(client, 'search_emails', { accountId: h.fixture.accounts.shared });
  t.is((search.structuredContent as { totalItems: number }).totalItems, 0);
  await client.close();

  // An access token that stops working: the client refreshes (rotation) and goes on by itself.
  const before = provider.tokens()!;
  provider.saveTokens({ ...before, access_token: `ma_${'A'.repeat(43)}` });
  const again = await connect();
  t.truthy(await call(again.client, 'list_accounts'));
  const after = provider.tokens()!;
  t.not(after.refresh_token, before.refresh_token, 'the refresh token rotated');
  t.not(after.access_token, before.access_token);
  await again.client.close();
  // The old refresh token was rotated away: presenting it again revokes the whole grant.
  const reuse = await tokenRequest(h.base, {
    grant_type: 'refresh_token',
    refresh_token: before.refresh_token!,
    client_id: (provider.clientInformation() as { client_id: string }).client_id,
  });
  t.is(reuse.status, 400);
  t.is(reuse.body.error, 'invalid_grant');
  t.is((await mcpPost(h.base, after.access_token)).status, 401, 'the current access token died with the grant');

  // Its reads were logged under the grant's key, like any key's.
  await h.gateway.accessLog.flush();
  const log = await readAccessLog(h.settings.Database.Path);
  t.true(
    log.some((r) => r.type === 'Search' && r.source === 'mcp' && r.key_prefix === before.access_token.slice(0, 11)),
  );
});

test('codes: a wrong or reused code, a missing or wrong verifier, another redirect URI, an expired code', async (t) => {
  const h = await startOAuthGateway();
  t.teardown(() => h.close());
  const clientId = await registerClient(h.base);
  const agent = await person(h.base);
  const newCode = async () => {
    const p = pkce();
    const back = await consent(
      agent,
      authorizeUrl({
        client_id: clientId,
        redirect_uri: CALLBACK,
        code_challenge: p.challenge,
        code_challenge_method: 'S256',
        response_type: 'code',
      }),
    );
    return { code: back.searchParams.get('code')!, ...p };
  };
  const exchange = (form: Record<string, string>) =>
    tokenRequest(h.base, { grant_type: 'authorization_code', client_id: clientId, redirect_uri: CALLBACK, ...form });

  const wrong = await exchange({ code: 'mac_nothing', code_verifier: pkce().verifier });
  t.is(wrong.status, 400);
  t.deepEqual(wrong.body, { error: 'invalid_grant', error_description: 'The authorization code is not valid.' });
  t.is(wrong.headers['cache-control'], 'no-store');

  const a = await newCode();
  const missing = await exchange({ code: a.code });
  t.is(missing.body.error, 'invalid_request');
  t.regex(missing.body.error_description, /code_verifier is required/);
  const wrongVerifier = await exchange({ code: a.code, code_verifier: pkce().verifier });
  t.is(wrongVerifier.body.error, 'invalid_grant');
  t.regex(wrongVerifier.body.error_description, /code_verifier does not match/);
  // The failed attempt spent the code: the right verifier is too late now.
  t.is((await exchange({ code: a.code, code_verifier: a.verifier })).body.error, 'invalid_grant');

  const b = await newCode();
  const elsewhere = await exchange({
    code: b.code,
    code_verifier: b.verifier,
    redirect_uri: 'http://127.0.0.1:9/other',
  });
  t.regex(elsewhere.body.error_description, /redirect_uri must be the one/);

  const c = await newCode();
  const first = await exchange({ code: c.code, code_verifier: c.verifier });
  t.is(first.status, 200);
  t.is(first.body.token_type, 'Bearer');
  t.is((await mcpPost(h.base, first.body.access_token)).status, 200);
  const replay = await exchange({ code: c.code, code_verifier: c.verifier });
  t.deepEqual(replay.body.error, 'invalid_grant');
  t.regex(replay.body.error_description, /already been used; the grant it was exchanged for is now revoked/);
  t.is((await mcpPost(h.base, first.body.access_token)).status, 401, 'a code used twice revokes what it gave');
  const refresh = await tokenRequest(h.base, {
    grant_type: 'refresh_token',
    refresh_token: first.body.refresh_token,
    client_id: clientId,
  });
  t.is(refresh.body.error, 'invalid_grant');

  const d = await newCode();
  await changeArchive(h.settings.Database.Path, {
    sqlite: (db) => db.prepare('UPDATE oauth_codes SET expires_at = 1').run(),
    postgres: (c2) => c2.query('UPDATE mail_archive_gateway.oauth_codes SET expires_at = 1'),
  });
  t.regex((await exchange({ code: d.code, code_verifier: d.verifier })).body.error_description, /expired/);

  const other = await registerClient(h.base);
  const e = await newCode();
  const stolen = await tokenRequest(h.base, {
    grant_type: 'authorization_code',
    client_id: other,
    redirect_uri: CALLBACK,
    code: e.code,
    code_verifier: e.verifier,
  });
  t.regex(stolen.body.error_description, /another client/);
});

test('the authorization endpoint: PKCE S256 required, exact redirect URIs, no open redirect, another resource refused', async (t) => {
  const h = await startOAuthGateway();
  t.teardown(() => h.close());
  const clientId = await registerClient(h.base, [CALLBACK, 'https://app.example/cb?x=1']);
  const agent = await person(h.base);
  const { challenge } = pkce();
  const base = { client_id: clientId, redirect_uri: CALLBACK, response_type: 'code', code_challenge_method: 'S256' };

  // Not registered, a prefix, another port, an unknown client: a page, never a redirect.
  for (const params of [
    { ...base, code_challenge: challenge, redirect_uri: 'https://evil.example/cb' },
    { ...base, code_challenge: challenge, redirect_uri: `${CALLBACK}/x` },
    { ...base, code_challenge: challenge, redirect_uri: 'https://app.example/cb' },
    { ...base, code_challenge: challenge, redirect_uri: 'http://127.0.0.1:10/callback' },
    { ...base, code_challenge: challenge, client_id: 'mcp_unknown' },
  ]) {
    const res = await agent.get(authorizeUrl(params));
    t.is(res.status, 400, JSON.stringify(params));
    t.is(res.headers.location, undefined);
    t.regex(res.text, /cannot be authorized/);
  }
  // With a good client and redirect URI, errors go back to the client with its state.
  const noPkce = await agent.get(authorizeUrl({ ...base, state: 's1' }));
  t.is(noPkce.status, 302);
  const to = new URL(noPkce.headers.location!);
  t.is(to.origin + to.pathname, CALLBACK);
  t.is(to.searchParams.get('error'), 'invalid_request');
  t.is(to.searchParams.get('state'), 's1');
  const plain = new URL(
    (await agent.get(authorizeUrl({ ...base, code_challenge: challenge, code_challenge_method: 'plain' }))).headers
      .location!,
  );
  t.regex(plain.searchParams.get('error_description')!, /S256/);
  const other = new URL(
    (await agent.get(authorizeUrl({ ...base, code_challenge: challenge, resource: 'https://other.example/mcp' })))
      .headers.location!,
  );
  t.is(other.searchParams.get('error'), 'invalid_target');
  const implicit = new URL(
    (await agent.get(authorizeUrl({ ...base, code_challenge: challenge, response_type: 'token' }))).headers.location!,
  );
  t.is(implicit.searchParams.get('error'), 'unsupported_response_type');
  // A registered redirect URI with its own query keeps it.
  const kept = await consent(
    agent,
    authorizeUrl({ ...base, code_challenge: challenge, redirect_uri: 'https://app.example/cb?x=1' }),
  );
  t.is(kept.searchParams.get('x'), '1');
  t.truthy(kept.searchParams.get('code'));
  // Denied: access_denied to the client.
  const denied = await consent(agent, authorizeUrl({ ...base, code_challenge: challenge, state: 's2' }), {
    decision: 'deny',
  });
  t.is(denied.searchParams.get('error'), 'access_denied');
  t.is(denied.searchParams.get('state'), 's2');

  // Signed out: to the sign-in page and back to the same request, never elsewhere.
  const anon = request.agent(h.base);
  const path = authorizeUrl({ ...base, code_challenge: challenge });
  const login = await anon.get(path);
  t.is(login.status, 302);
  t.is(login.headers.location, `/login?next=${encodeURIComponent(path)}`);
  const form = await anon.get(login.headers.location!);
  const signed = await anon
    .post('/login')
    .type('form')
    .send({ _csrf: csrfOf(form.text), username: 'alice', password: 'alice-pass-123', next: path });
  t.is(signed.headers.location, path);
  const evil = request.agent(h.base);
  const f2 = await evil.get('/login');
  const r2 = await evil
    .post('/login')
    .type('form')
    .send({
      _csrf: csrfOf(f2.text),
      username: 'alice',
      password: 'alice-pass-123',
      next: '//evil.example/oauth/authorize?x',
    });
  t.is(r2.headers.location, '/search');

  // Registration refuses redirect URIs that would make us redirect anywhere.
  for (const uri of [
    'http://evil.example/cb',
    'javascript:alert(1)',
    'https://app.example/cb#frag',
    'data:text/html,x',
  ]) {
    const r = await request(h.base)
      .post('/oauth/register')
      .send({ redirect_uris: [uri] });
    t.is(r.status, 400, uri);
    t.is(r.body.error, 'invalid_redirect_uri');
  }
});

test('CSRF: the consent form needs the session token, so another site cannot approve for the person', async (t) => {
  const h = await startOAuthGateway();
  t.teardown(() => h.close());
  const clientId = await registerClient(h.base);
  const agent = await person(h.base);
  const path = codeRequest(clientId);
  const page = await agent.get(path);
  const fields = Object.fromEntries(new URL(h.base + path).searchParams);
  for (const token of [undefined, 'forged', csrfOf((await (await person(h.base, 'bob')).get('/keys')).text)]) {
    const res = await agent
      .post('/oauth/authorize')
      .type('form')
      .send({ ...fields, decision: 'allow', days: '30', scope_accounts: 'all', ...(token ? { _csrf: token } : {}) });
    t.is(res.status, 403);
    t.is(res.headers.location, undefined, 'no code was sent anywhere');
    t.regex(res.text, /Form expired/);
  }
  t.regex(page.headers['content-security-policy']!, /form-action 'self' http:\/\/127\.0\.0\.1:9/);
  t.is(page.headers['x-frame-options'], 'DENY', 'the consent page cannot be framed (clickjacking)');
});

test('narrowing: only accounts the person sees; a forged form cannot add others', async (t) => {
  const h = await startOAuthGateway();
  t.teardown(() => h.close());
  const clientId = await registerClient(h.base);
  const agent = await person(h.base, 'bob');
  const path = codeRequest(clientId);
  const page = await agent.get(path);
  t.regex(page.text, /Personal/);
  t.notRegex(page.text, /name="accounts" value="\d+" \/> Work/);
  const fields = Object.fromEntries(new URL(h.base + path).searchParams);
  const forged = await agent
    .post('/oauth/authorize')
    .type('form')
    .send({
      ...fields,
      _csrf: csrfOf(page.text),
      decision: 'allow',
      days: '30',
      scope_accounts: 'chosen',
      accounts: String(h.fixture.accounts.work),
    });
  t.is(forged.status, 400);
  t.is(forged.headers.location, undefined);
  const longer = await agent
    .post('/oauth/authorize')
    .type('form')
    .send({ ...fields, _csrf: csrfOf(page.text), decision: 'allow', days: '9999', scope_accounts: 'all' });
  t.is(longer.status, 400, 'no grant longer than Mcp:OAuth:MaxGrantDays');
});

test('tokens: for /mcp only, expired and revoked ones refused, revoking on the keys page ends the grant, signing out does not', async (t) => {
  const h = await startOAuthGateway();
  t.teardown(() => h.close());
  const g = await grant(h, { username: 'alice' });
  t.is((await mcpPost(h.base, g.access_token, listAccounts)).status, 200);
  // RFC 8707: not good for the REST API of the same server.
  const api = await request(h.base).get('/api/v1/accounts').set('Authorization', `Bearer ${g.access_token}`);
  t.is(api.status, 401);
  t.regex(api.body.detail, /issued by OAuth for the MCP server \(\/mcp\) only/);
  const otherResource = await tokenRequest(h.base, {
    grant_type: 'refresh_token',
    refresh_token: g.refresh_token,
    client_id: g.clientId,
    resource: 'https://other.example/mcp',
  });
  t.is(otherResource.body.error, 'invalid_target');

  // The keys page lists the grant as an OAuth grant with its client's name; signing out leaves it.
  const alice = await person(h.base, 'alice');
  const keys = await alice.get('/keys');
  t.regex(keys.text, /OAuth: Test Agent[\s\S]*OAuth grant/);
  await alice
    .post('/logout')
    .type('form')
    .send({ _csrf: csrfOf(keys.text) });
  t.is((await mcpPost(h.base, g.access_token, listAccounts)).status, 200, 'signing out does not revoke grants');

  // An expired access token: 401 invalid_token; the refresh token still works (the grant lives on).
  await changeArchive(h.settings.Database.Path, {
    sqlite: (db) => db.prepare("UPDATE api_keys SET expires_at = 1 WHERE name LIKE 'OAuth:%'").run(),
    postgres: (c) =>
      c.query(`UPDATE mail_archiver."ApiKeys" SET "ExpiresAt" = '2000-01-01' WHERE "Name" LIKE 'OAuth:%'`),
  });
  const expired = await mcpPost(h.base, g.access_token, listAccounts);
  t.is(expired.status, 401);
  t.regex(
    expired.headers['www-authenticate']!,
    /error="invalid_token", error_description="The OAuth access token has expired; get a new one with the refresh token\."/,
  );
  const refreshed = await tokenRequest(h.base, {
    grant_type: 'refresh_token',
    refresh_token: g.refresh_token,
    client_id: g.clientId,
  });
  t.is(refreshed.status, 200);
  t.is((await mcpPost(h.base, refreshed.body.access_token, listAccounts)).status, 200);

  // Revoked on the keys page: the access token fails at once, and so does the refresh token.
  const again = await person(h.base, 'alice');
  const page = await again.get('/keys');
  const id = /data-key-id="(\d+)"[^>]*>[\s\S]{0,400}?OAuth: Test Agent/.exec(page.text)![1]!;
  const revoked = await again
    .post('/keys/revoke')
    .type('form')
    .send({ _csrf: csrfOf(page.text), id, confirmed: 'yes' });
  t.is(revoked.status, 303);
  const after = await mcpPost(h.base, refreshed.body.access_token, listAccounts);
  t.is(after.status, 401);
  t.regex(after.headers['www-authenticate']!, /The OAuth grant behind this access token has been revoked/);
  const dead = await tokenRequest(h.base, {
    grant_type: 'refresh_token',
    refresh_token: refreshed.body.refresh_token,
    client_id: g.clientId,
  });
  t.deepEqual(dead.body, { error: 'invalid_grant', error_description: 'The grant has been revoked.' });
});

test('RFC 7009 revocation ends the grant; registration is rate-limited and can be turned off', async (t) => {
  const h = await startOAuthGateway({ RegistrationsPerIpPerMinute: 3 });
  t.teardown(() => h.close());
  const g = await grant(h);
  const res = await request(h.base)
    .post('/oauth/revoke')
    .type('form')
    .send({ token: g.refresh_token, client_id: g.clientId });
  t.is(res.status, 200);
  t.is((await mcpPost(h.base, g.access_token)).status, 401);
  // One registration was made (grant's); the budget of 3 allows two more.
  await registerClient(h.base);
  await registerClient(h.base);
  const flood = await request(h.base)
    .post('/oauth/register')
    .send({ redirect_uris: [CALLBACK] });
  t.is(flood.status, 429);

  const off = await startOAuthGateway({ AllowDynamicRegistration: false });
  t.teardown(() => off.close());
  t.is((await request(off.base).get('/.well-known/oauth-authorization-server')).body.registration_endpoint, undefined);
  t.is(
    (
      await request(off.base)
        .post('/oauth/register')
        .send({ redirect_uris: [CALLBACK] })
    ).status,
    403,
  );
});

test('Client ID Metadata Documents: a good one through the whole flow; too large, slow, pointing elsewhere, redirected or private are refused', async (t) => {
  // The clients' documents, on loopback over http (allowed for this origin by the setting).
  const docs = createServer((req, res) => {
    const self = `http://127.0.0.1:${(docs.address() as AddressInfo).port}${req.url}`;
    const doc = (extra: object) => {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ client_id: self, client_name: 'Doc Client', redirect_uris: [CALLBACK], ...extra }));
    };
    if (req.url === '/good.json') return doc({ token_endpoint_auth_method: 'none' });
    if (req.url === '/big.json') return doc({ padding: 'x'.repeat(2000) });
    if (req.url === '/elsewhere.json') return doc({ client_id: 'https://other.example/client.json' });
    if (req.url === '/secret.json') return doc({ token_endpoint_auth_method: 'private_key_jwt' });
    if (req.url === '/bad-redirect.json') return doc({ redirect_uris: ['http://evil.example/cb'] });
    if (req.url === '/redirect.json') {
      res.writeHead(302, { Location: '/good.json' });
      return res.end();
    }
    if (req.url === '/slow.json') return; // never answers
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => docs.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    docs.closeAllConnections();
    docs.close();
  });
  const origin = `http://127.0.0.1:${(docs.address() as AddressInfo).port}`;
  const h = await startOAuthGateway({
    ClientMetadataAllowedOrigins: [origin],
    ClientMetadataMaxBytes: 1024,
    // Long enough for a loaded machine to serve the others; the slow one never answers at all.
    ClientMetadataTimeoutMs: 3000,
  });
  t.teardown(() => h.close());
  const agent = await person(h.base);
  const ask = (clientId: string, challenge = pkce().challenge) =>
    authorizeUrl({
      client_id: clientId,
      redirect_uri: CALLBACK,
      response_type: 'code',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });

  const good = `${origin}/good.json`;
  const { verifier, challenge } = pkce();
  const page = await agent.get(ask(good, challenge));
  t.is(page.status, 200);
  t.regex(page.text, /Allow <span class="client-name">Doc Client<\/span>/);
  t.regex(page.text, /metadata document/);
  const back = await consent(agent, ask(good, challenge));
  const tokens = await tokenRequest(h.base, {
    grant_type: 'authorization_code',
    code: back.searchParams.get('code')!,
    code_verifier: verifier,
    client_id: good,
    redirect_uri: CALLBACK,
  });
  // The first consent's code is unused; the second's is exchanged: both came from one document.
  t.is(tokens.status, 200, tokens.text);
  t.is((await mcpPost(h.base, tokens.body.access_token, listAccounts)).status, 200);

  const refused: Array<[string, RegExp]> = [
    [`${origin}/big.json`, /is larger than 1024 bytes/],
    [`${origin}/slow.json`, /did not arrive within 3000 ms/],
    [`${origin}/elsewhere.json`, /names another client_id/],
    [`${origin}/redirect.json`, /redirects are not followed/],
    [`${origin}/secret.json`, /public clients only/],
    [`${origin}/bad-redirect.json`, /uses http to another host/],
    [`${origin}/missing.json`, /answered HTTP 404/],
    [`${origin}/`, /with a path/],
    ['http://127.0.0.2:1/client.json', /must be an https URL/],
    ['https://127.0.0.1:1/client.json', /private or reserved network address/],
    ['https://localhost:1/client.json', /private or reserved network address/],
    ['https://[::1]:1/client.json', /private or reserved network address/],
  ];
  for (const [clientId, why] of refused) {
    const res = await agent.get(ask(clientId));
    t.is(res.status, 400, clientId);
    t.is(res.headers.location, undefined, clientId);
    t.regex(res.text, why, clientId);
  }
});

test('a grant narrowed to accounts reads only those, on every search path of the SQLite store', (t) => {
  const f = createFixture();
  t.teardown(f.cleanup);
  const db = openArchive(f.dbPath);
  t.teardown(() => db.close());
  const alice = { userId: f.users.alice, isAdmin: false };
  const workOnly = { ...alice, oauth: { grantId: 1, accountIds: [f.accounts.work] } };
  const adminPersonal = {
    userId: f.users.admin,
    isAdmin: true,
    oauth: { grantId: 2, accountIds: [f.accounts.personal] },
  };
  // A grant naming an account its user no longer reads reads nothing of it.
  const aliceForeign = { ...alice, oauth: { grantId: 3, accountIds: [f.accounts.personal] } };
  const query = (q?: string): SearchQuery => ({
    ...(q ? { q } : {}),
    page: 1,
    pageSize: 100,
    sortBy: 'sentDate',
    sortOrder: 'desc',
  });
  const accountsOf = (viewer: Viewer, q?: string, reference = false) =>
    new Set(searchEmails(db, viewer, query(q), reference ? { reference: true } : {}).items.map((i) => i.accountId));
  const paths = [
    ['SQL', () => adoptSnapshot(db, undefined), false],
    ['in-memory index', () => adoptSnapshot(db, new Snapshot(buildSnapshot(db))), false],
    ['reference', () => adoptSnapshot(db, undefined), true],
  ] as const;
  for (const [name, setUp, reference] of paths) {
    setUp();
    for (const q of [undefined, 'standup OR budget OR notes OR the']) {
      t.true(accountsOf(alice, q, reference).has(f.accounts.shared), `${name} ${q}: alice's key sees Shared`);
      t.deepEqual([...accountsOf(workOnly, q, reference)], [f.accounts.work], `${name} ${q}`);
      t.deepEqual([...accountsOf(adminPersonal, q, reference)], [f.accounts.personal], `${name} ${q}`);
      t.deepEqual([...accountsOf(aliceForeign, q, reference)], [], `${name} ${q}`);
    }
  }
  adoptSnapshot(db, undefined);
  t.deepEqual(
    listVisibleAccounts(db, workOnly).map((a) => a.id),
    [f.accounts.work],
  );
  const shared = db.prepare('SELECT id FROM emails WHERE account_id = ?').pluck().get(f.accounts.shared) as number;
  t.truthy(getEmailDetail(db, alice, shared));
  t.is(getEmailDetail(db, workOnly, shared), null);
});

test('the v2 SDK client pinned to 2026-07-28 signs in with its own OAuth provider too, checking iss', async (t) => {
  const h = await startOAuthGateway();
  t.teardown(() => h.close());
  const provider = new MemoryProvider('v2 client');
  const open = () => new V2Transport(new URL(h.url), { authProvider: provider as unknown as V2OAuthProvider });
  const pinned = () =>
    new V2Client({ name: 'oauth-v2', version: '2.0.0' }, { versionNegotiation: { mode: { pin: MODERN_REVISION } } });
  const first = open();
  await t.throwsAsync(() => pinned().connect(first));
  const url = provider.authorizationUrl!;
  t.is(url.searchParams.get('resource'), h.url);
  const back = await consent(await person(h.base, 'alice'), url.pathname + url.search);
  await first.finishAuth(back.searchParams.get('code')!, back.searchParams.get('iss')!);
  const client = pinned();
  await client.connect(open());
  const result = await client.callTool({ name: 'list_accounts', arguments: {} });
  const ids = (JSON.parse((result.content as Array<{ text: string }>)[0]!.text) as Array<{ id: number }>).map(
    (a) => a.id,
  );
  t.deepEqual(ids, [h.fixture.accounts.work, h.fixture.accounts.shared]);
  await client.close();
  // An iss that is not the issuer's is refused by the client (RFC 9207), so a mix-up is caught.
  const other = new MemoryProvider('v2 mix-up');
  const again = new V2Transport(new URL(h.url), { authProvider: other as unknown as V2OAuthProvider });
  await t.throwsAsync(() => pinned().connect(again));
  const code = (
    await consent(await person(h.base, 'alice'), other.authorizationUrl!.pathname + other.authorizationUrl!.search)
  ).searchParams.get('code')!;
  const mixup = await t.throwsAsync(() => again.finishAuth(code, 'https://evil.example'));
  t.regex(mixup!.message, /iss|issuer/i);
});

test('the grant is a row of the keys table Mail Archiver reads: revoking it there, or deactivating the user, ends it', async (t) => {
  const h = await startOAuthGateway();
  t.teardown(() => h.close());
  const path = h.settings.Database.Path;
  const keyRows = () =>
    queryArchive<{ name: string; prefix: string }>(path, {
      sqlite: "SELECT name, key_prefix AS prefix FROM api_keys WHERE name LIKE 'OAuth:%'",
      postgres: `SELECT "Name" AS name, "KeyPrefix" AS prefix FROM mail_archiver."ApiKeys" WHERE "Name" LIKE 'OAuth:%'`,
    });
  const g = await grant(h);
  t.deepEqual(await keyRows(), [{ name: 'OAuth: Test Agent', prefix: g.access_token.slice(0, 11) }]);
  const refreshed = await tokenRequest(h.base, {
    grant_type: 'refresh_token',
    refresh_token: g.refresh_token,
    client_id: g.clientId,
  });
  t.deepEqual(
    await keyRows(),
    [{ name: 'OAuth: Test Agent', prefix: refreshed.body.access_token.slice(0, 11) }],
    'a refresh rotates the one row in place',
  );
  // Mail Archiver (or anything else writing the table) revokes it.
  await changeArchive(path, {
    sqlite: (db) => db.prepare("UPDATE api_keys SET revoked_at = 1 WHERE name LIKE 'OAuth:%'").run(),
    postgres: (c) => c.query(`UPDATE mail_archiver."ApiKeys" SET "RevokedAt" = now() WHERE "Name" LIKE 'OAuth:%'`),
  });
  t.is((await mcpPost(h.base, refreshed.body.access_token)).status, 401);
  const after = await tokenRequest(h.base, {
    grant_type: 'refresh_token',
    refresh_token: refreshed.body.refresh_token,
    client_id: g.clientId,
  });
  t.is(after.body.error_description, 'The grant has been revoked.');

  // Another grant, whose user is then deactivated: the token and the refresh token stop.
  const bob = await grant(h, { username: 'bob' });
  await changeArchive(path, {
    sqlite: (db) => db.prepare("UPDATE users SET is_active = 0 WHERE username = 'bob'").run(),
    postgres: (c) => c.query(`UPDATE mail_archiver."Users" SET "IsActive" = false WHERE "Username" = 'bob'`),
  });
  t.is((await mcpPost(h.base, bob.access_token)).status, 401);
  const inactive = await tokenRequest(h.base, {
    grant_type: 'refresh_token',
    refresh_token: bob.refresh_token,
    client_id: bob.clientId,
  });
  t.is(inactive.body.error_description, "The grant's user is not active.");
});

test('a person holds at most Web:MaxActiveKeysPerUser live grants; revoking one makes room', async (t) => {
  const h = await startOAuthGateway({}, { Web: { MaxActiveKeysPerUser: 1 } });
  t.teardown(() => h.close());
  const first = await grant(h);
  const clientId = await registerClient(h.base);
  const agent = await person(h.base);
  const path = codeRequest(clientId);
  const page = await agent.get(path);
  const fields = Object.fromEntries(new URL(h.base + path).searchParams);
  const allow = () =>
    agent
      .post('/oauth/authorize')
      .type('form')
      .send({ ...fields, _csrf: csrfOf(page.text), decision: 'allow', days: '30', scope_accounts: 'all' });
  const refused = await allow();
  t.is(refused.status, 400);
  t.regex(refused.text, /already have 1 active OAuth grants/);
  await request(h.base)
    .post('/oauth/revoke')
    .type('form')
    .send({ token: first.access_token, client_id: first.clientId });
  const allowed = await allow();
  t.is(allowed.status, 303);
  t.truthy(new URL(allowed.headers.location!).searchParams.get('code'));
});
