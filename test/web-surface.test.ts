// Where the web surface exists, its headers, and the wall between cookies and API keys.
import test from 'ava';
import request from 'supertest';
import { PASSWORDS, sessionCookies, signIn, startWeb, type WebFixture } from './helpers/web.js';
import { NO_TOKEN_CHALLENGE } from './helpers/api.js';

let web: WebFixture;
test.before(async () => {
  web = await startWeb({
    overrides: { Web: { LoginAttemptsPerUserPerMinute: 1000, LoginAttemptsPerIpPerMinute: 1000 } },
  });
});
test.after.always(() => web?.close());

test('pages carry a strict CSP and anti-framing headers, and load only same-origin files', async (t) => {
  const res = await request(web.url).get('/login');
  t.is(res.status, 200);
  const csp = res.headers['content-security-policy'] as string;
  t.regex(csp, /default-src 'none'/);
  t.regex(csp, /script-src 'self'(;|$)/);
  t.regex(csp, /frame-ancestors 'none'/);
  t.notRegex(csp, /unsafe-inline|unsafe-eval/);
  t.is(res.headers['x-frame-options'], 'DENY');
  t.is(res.headers['referrer-policy'], 'no-referrer');
  t.is(res.headers['cache-control'], 'no-store');
  t.notRegex(res.text, /<script>|<style>|\sstyle="|\son[a-z]+="/i, 'no inline script, style or handler');
  t.notRegex(res.text, /(?:src|href)="(?:https?:)?\/\//i, 'no other host');
  for (const m of res.text.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)) {
    const asset = await request(web.url).get(m[1]!);
    t.is(asset.status, 200, m[1]);
    t.regex(asset.headers['cache-control'] as string, /immutable/);
  }
});

test('the docs page uses hashes for its inline script, not unsafe-inline, and no other host', async (t) => {
  const { agent } = await signIn(web.url, 'alice', PASSWORDS.alice);
  const res = await agent.get('/apidocs');
  t.is(res.status, 200);
  t.regex(res.text, /<div id="swagger-ui">/);
  const csp = res.headers['content-security-policy'] as string;
  t.regex(csp, /script-src 'self' 'sha256-[A-Za-z0-9+/=]+'/);
  t.notRegex(csp, /unsafe-inline/);
  t.notRegex(res.text, /(?:src|href)="(?:https?:)?\/\//i);
  t.is(res.headers['x-frame-options'], 'DENY');
  for (const m of res.text.matchAll(/(?:src|href)="(\/apidocs\/assets\/[^"]+)"/g)) {
    t.is((await request(web.url).get(m[1]!)).status, 200, m[1]);
  }
  const spec = await agent.get('/apidocs/spec/v1.json');
  t.is(spec.status, 200);
  t.is(spec.body.info.version, '1.0.0');
  t.is(
    Object.keys(spec.body.paths).length,
    11,
    "SPEC.md's six, the conversation route, the attachment text, the aggregate, the message's own bytes and the export",
  );
});

test('without a session /apidocs redirects to sign-in and the document answers 401', async (t) => {
  const page = await request(web.url).get('/apidocs');
  t.is(page.status, 302);
  t.is(page.headers.location, '/login?next=%2Fapidocs');
  const spec = await request(web.url).get('/apidocs/spec/v1.json');
  t.is(spec.status, 401);
  t.regex(spec.headers['content-type'] as string, /^application\/problem\+json/);
});

test('a bearer API key opens neither /apidocs nor its document', async (t) => {
  const bearer = `Bearer ${web.fixture.keys.admin}`;
  t.is((await request(web.url).get('/api/v1/accounts').set('Authorization', bearer)).status, 200, 'the key is valid');
  const page = await request(web.url).get('/apidocs').set('Authorization', bearer);
  t.is(page.status, 302);
  const spec = await request(web.url).get('/apidocs/spec/v1.json').set('Authorization', bearer);
  t.is(spec.status, 401);
  t.is((await request(web.url).get('/keys').set('Authorization', bearer)).status, 302);
});

test('/api and /mcp never honour the session cookie', async (t) => {
  const { res } = await signIn(web.url, 'admin', PASSWORDS.admin);
  const cookie = sessionCookies(res.headers['set-cookie']);
  t.is((await request(web.url).get('/keys').set('Cookie', cookie)).status, 200, 'the cookie is a valid session');
  const apiRes = await request(web.url).get('/api/v1/accounts').set('Cookie', cookie);
  t.is(apiRes.status, 401);
  t.regex(apiRes.headers['www-authenticate'] ?? '', NO_TOKEN_CHALLENGE);
  t.is(apiRes.headers['set-cookie'], undefined);
  const mcp = await request(web.url)
    .post('/mcp')
    .set('Cookie', cookie)
    .set('Accept', 'application/json, text/event-stream')
    .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  t.not(mcp.status, 200);
  t.is(mcp.headers['set-cookie'], undefined);
});

test('the site root leads to the search page (reading mail)', async (t) => {
  const res = await request(web.url).get('/');
  t.is(res.status, 302);
  t.is(res.headers.location, '/search');
});

test('a browser that opens an unknown path gets an HTML 404 page; programs still get problem+json', async (t) => {
  const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
  for (const path of ['/nowhere', '/keys-old', '/search.php', '/%3Cscript%3Ealert(1)%3C%2Fscript%3E']) {
    const page = await request(web.url).get(path).set('Accept', BROWSER);
    t.is(page.status, 404, path);
    t.regex(page.headers['content-type'] as string, /^text\/html/, path);
    t.regex(page.text, /<h1>Not found<\/h1>/, path);
    t.regex(page.text, /href="\/login"/, 'a way on');
    t.notRegex(page.text, /<script>alert/, 'the path is escaped');
    t.regex(page.headers['content-security-policy'] as string, /default-src 'none'/);
  }
  // Signed in, the page says so in its header and leads back to search.
  const { agent } = await signIn(web.url, 'alice', PASSWORDS.alice);
  const signedIn = await agent.get('/nowhere').set('Accept', BROWSER);
  t.is(signedIn.status, 404);
  t.regex(signedIn.text, /href="\/search"/);
  // curl, fetch and API clients: problem+json as before; /api and /mcp paths whatever Accept says.
  for (const [path, accept] of [
    ['/nowhere', '*/*'],
    ['/nowhere', 'application/json'],
    ['/api/v1/nowhere', BROWSER],
    ['/.well-known/nowhere', BROWSER],
  ] as const) {
    const res = await request(web.url).get(path).set('Accept', accept);
    t.is(res.status, 404, path);
    t.is(res.headers['content-type'], 'application/problem+json', `${path} ${accept}`);
  }
});

test('with the REST API and MCP both off, the web surface answers 404 too', async (t) => {
  const off = await startWeb({ overrides: { Api: { Enabled: false }, Mcp: { Enabled: false } } });
  t.teardown(() => off.close());
  for (const path of ['/', '/login', '/keys', '/logout', '/apidocs', '/apidocs/spec/v1.json', '/assets/app.css']) {
    t.is((await request(off.url).get(path)).status, 404, path);
  }
});

test('/apidocs exists only with Api:Enabled and Api:EnableSwaggerUi; sign-in follows either front end', async (t) => {
  const noUi = await startWeb({ overrides: { Api: { EnableSwaggerUi: false } } });
  t.teardown(() => noUi.close());
  t.is((await request(noUi.url).get('/apidocs')).status, 404);
  t.is((await request(noUi.url).get('/apidocs/spec/v1.json')).status, 404);
  t.is((await request(noUi.url).get('/login')).status, 200);

  const mcpOnly = await startWeb({ overrides: { Api: { Enabled: false } } });
  t.teardown(() => mcpOnly.close());
  t.is((await request(mcpOnly.url).get('/apidocs')).status, 404);
  t.is((await request(mcpOnly.url).get('/login')).status, 200);
  const { agent } = await signIn(mcpOnly.url, 'bob', PASSWORDS.bob);
  const keys = await agent.get('/keys');
  t.is(keys.status, 200);
  t.false(keys.text.includes('href="/apidocs"'));
});
