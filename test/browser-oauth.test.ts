// The OAuth consent page in a real browser (Debian's Chromium through playwright-core, as
// test/browser.test.ts): a client sends the person to /oauth/authorize, they sign in, narrow the
// grant to one account and a week, click Allow, and the browser lands on the client's loopback
// callback with a code, under the page's CSP (form-action must let the redirect through). Deny
// sends access_denied. The grant then shows on the API Keys page.
import test from 'ava';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { launchChromium, pageWidth } from './helpers/browser.js';
import { authorizeUrl, pkce, registerClient, startOAuthGateway, tokenRequest } from './helpers/oauth.js';
import type { McpHarness } from './helpers/mcp.js';
import { PASSWORDS, withDb } from './helpers/web.js';
import { addAccount } from '../engine/sqlite/accounts.js';
import { assignAccount } from '../engine/sqlite/users.js';

const SCREENSHOTS =
  process.env.UPDATE_SCREENSHOTS === '1'
    ? fileURLToPath(new URL('../../docs/screenshots/', import.meta.url))
    : mkdtempSync(join(tmpdir(), 'mag-screens-'));

let h: McpHarness;
let browser: Browser;
let callback: Server;
let callbackUrl: string;
/** The queries the client's callback received, in order. */
const received: URLSearchParams[] = [];

test.before(async () => {
  h = await startOAuthGateway();
  callback = createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    if (url.pathname === '/callback') received.push(url.searchParams); // not the browser's /favicon.ico
    res.setHeader('Content-Type', 'text/html');
    res.end('<!doctype html><title>Connected</title><p>You can close this window.</p>');
  });
  await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
  callbackUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
  browser = await launchChromium();
});

test.after.always(async () => {
  await browser?.close();
  callback?.closeAllConnections();
  callback?.close();
  await h?.close();
  if (process.env.UPDATE_SCREENSHOTS !== '1') rmSync(SCREENSHOTS, { recursive: true, force: true });
});

test.serial(
  'consent in Chromium: sign in, narrow to one account and 7 days, Allow, land on the callback with a code',
  async (t) => {
    const clientId = await registerClient(h.base, [callbackUrl], 'Claude (test)');
    const { verifier, challenge } = pkce();
    const context = await browser.newContext({ baseURL: h.base, viewport: { width: 900, height: 1000 } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    await page.goto(
      authorizeUrl({
        client_id: clientId,
        redirect_uri: callbackUrl,
        response_type: 'code',
        code_challenge: challenge,
        code_challenge_method: 'S256',
        resource: h.url,
        state: 'xyz',
      }),
    );
    t.regex(page.url(), /\/login\?next=%2Foauth%2Fauthorize%3F/);
    await page.fill('input[name="username"]', 'alice');
    await page.fill('input[name="password"]', PASSWORDS.alice);
    await page.click('form[action="/login"] button[type="submit"]');
    await page.waitForURL(/\/oauth\/authorize\?/);
    t.is(await page.locator('h1 .client-name').textContent(), 'Claude (test)');
    t.is(await page.locator('.redirect-host').textContent(), new URL(callbackUrl).host);
    const accounts = page.locator('input[name="accounts"]');
    t.is(await accounts.count(), 2, 'alice sees Work and Shared');
    await page.check('input[name="scope_accounts"][value="chosen"]');
    await page.check(`input[name="accounts"][value="${h.fixture.accounts.work}"]`);
    await page.selectOption('select[name="days"]', '7');
    await page.screenshot({ path: join(SCREENSHOTS, 'oauth-consent.png'), fullPage: true });
    t.true(readFileSync(join(SCREENSHOTS, 'oauth-consent.png')).length > 1000);
    await page.click('button[name="decision"][value="allow"]');
    await page.waitForURL(/\/callback\?/);
    const answer = received.at(-1)!;
    t.is(answer.get('state'), 'xyz');
    t.is(answer.get('iss'), h.base);
    t.deepEqual(problems, [], 'no console error: the CSP let the form and its redirect through');

    const tokens = await tokenRequest(h.base, {
      grant_type: 'authorization_code',
      code: answer.get('code')!,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: callbackUrl,
    });
    t.is(tokens.status, 200);
    const res = await fetch(h.url, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${tokens.body.access_token}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'list_accounts', arguments: {} },
      }),
    });
    const body = (await res.json()) as { result: { content: Array<{ text: string }> } };
    t.deepEqual(
      (JSON.parse(body.result.content[0]!.text) as Array<{ id: number }>).map((a) => a.id),
      [h.fixture.accounts.work],
    );

    // The API Keys page shows the grant, by its client's name, ending in 7 days.
    await page.goto('/keys');
    const row = page.locator('tr', { hasText: 'OAuth: Claude (test)' });
    t.is(await row.locator('.badge.oauth').textContent(), 'OAuth grant');
    t.regex((await row.locator('.grant').textContent()) ?? '', /1 account/);
    const expires = await row.locator('td[data-label="Expires"] time').getAttribute('datetime');
    const days = (Date.parse(expires!) - Date.now()) / 86_400_000;
    t.true(days > 6.9 && days <= 7, String(days));
    await page.screenshot({ path: join(SCREENSHOTS, 'oauth-keys.png'), fullPage: true });
    await context.close();
  },
);

test.serial('at 360 pixels wide the consent page and the keys page with a grant scroll not sideways', async (t) => {
  // Names without a place to break are what widen a page: a client may call itself anything,
  // and an account's name and address are a person's own.
  withDb(h.fixture.dbPath, (db) => {
    const id = addAccount(db, {
      name: 'Alice-Müller-Lüdenscheidt (work, 2019–2024)',
      emailAddress: 'alice.mueller-luedenscheidt@subsidiary.some-company.example',
    }).id;
    assignAccount(db, 'alice', id);
  });
  const clientId = await registerClient(h.base, [callbackUrl], 'Connector-with-a-rather-long-unbroken-name-for-phones');
  const { verifier, challenge } = pkce();
  const context = await browser.newContext({ baseURL: h.base, viewport: { width: 360, height: 740 }, isMobile: true });
  t.teardown(() => context.close());
  const page = await context.newPage();
  await page.goto(
    authorizeUrl({
      client_id: clientId,
      redirect_uri: callbackUrl,
      response_type: 'code',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      resource: h.url,
      state: 'phone',
    }),
  );
  await page.fill('input[name="username"]', 'alice');
  await page.fill('input[name="password"]', PASSWORDS.alice);
  await page.click('form[action="/login"] button[type="submit"]');
  await page.waitForURL(/\/oauth\/authorize\?/);
  const consent = await pageWidth(page, 360);
  t.true(consent.width <= 360, `consent: ${consent.width}px wide: ${consent.wider.join(', ')}`);
  await page.click('button[name="decision"][value="allow"]');
  await page.waitForURL(/\/callback\?/);
  // The grant's key exists once the client has redeemed its code.
  const tokens = await tokenRequest(h.base, {
    grant_type: 'authorization_code',
    code: received.at(-1)!.get('code')!,
    code_verifier: verifier,
    client_id: clientId,
    redirect_uri: callbackUrl,
  });
  t.is(tokens.status, 200);
  await page.goto('/keys');
  await page.locator('tr', { hasText: 'OAuth: Connector-with' }).first().waitFor();
  const keys = await pageWidth(page, 360);
  t.true(keys.width <= 360, `keys: ${keys.width}px wide: ${keys.wider.join(', ')}`);
});

test.serial('Deny in Chromium sends access_denied to the client, with its state', async (t) => {
  const clientId = await registerClient(h.base, [callbackUrl], 'Denied client');
  const context = await browser.newContext({ baseURL: h.base });
  const page = await context.newPage();
  await page.goto('/login');
  await page.fill('input[name="username"]', 'bob');
  await page.fill('input[name="password"]', PASSWORDS.bob);
  await page.click('form[action="/login"] button[type="submit"]');
  // Signing in with no page to return to leads to the search page.
  await page.waitForURL(/\/search$/);
  await page.goto(
    authorizeUrl({
      client_id: clientId,
      redirect_uri: callbackUrl,
      response_type: 'code',
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
      state: 'no-thanks',
    }),
  );
  await page.click('button[name="decision"][value="deny"]');
  await page.waitForURL(/\/callback\?/);
  const answer = received.at(-1)!;
  t.is(answer.get('error'), 'access_denied');
  t.is(answer.get('state'), 'no-thanks');
  t.is(answer.get('code'), null);
  await context.close();
});
