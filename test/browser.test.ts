// The web UI in a real browser (Debian's Chromium through playwright-core): sign in, create,
// use and revoke a key, administrator and non-administrator rights, the API docs, sign-out.
// One browser for the file and serial steps: the machine is small and shared.
import test from 'ava';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium, pageWidth } from './helpers/browser.js';
import { keyIdOf, PASSWORDS, startWeb, type WebFixture } from './helpers/web.js';

// The README's screenshots are rewritten only on request (UPDATE_SCREENSHOTS=1), so a test run
// leaves the work tree clean; otherwise they go to a temporary directory and are still checked.
const SCREENSHOTS =
  process.env.UPDATE_SCREENSHOTS === '1'
    ? fileURLToPath(new URL('../../docs/screenshots/', import.meta.url)) // dist/test → repo docs/
    : mkdtempSync(join(tmpdir(), 'mag-screens-'));
const shot = (name: string) => join(SCREENSHOTS, name);
const isPng = (path: string) =>
  readFileSync(path)
    .subarray(0, 8)
    .equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));

let web: WebFixture;
let browser: Browser;
const contexts: Record<string, BrowserContext> = {};
const problems: string[] = [];

test.before(async () => {
  web = await startWeb({
    overrides: { Web: { LoginAttemptsPerUserPerMinute: 1000, LoginAttemptsPerIpPerMinute: 1000 } },
  });
  // launch() starts Chromium on a fresh temporary profile (user data dir) of its own.
  browser = await launchChromium();
});

test.after.always(async () => {
  await browser?.close();
  await web?.close();
  if (process.env.UPDATE_SCREENSHOTS !== '1') rmSync(SCREENSHOTS, { recursive: true, force: true });
});

/** A browser context per user, so sessions do not mix; console errors are collected. */
async function pageFor(user: string): Promise<Page> {
  contexts[user] ??= await browser.newContext({ baseURL: web.url, viewport: { width: 1280, height: 900 } });
  await contexts[user].grantPermissions(['clipboard-read', 'clipboard-write'], { origin: web.url });
  const page = await contexts[user].newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`${page.url()}: ${m.text()}`);
  });
  return page;
}

async function signIn(page: Page, user: keyof typeof PASSWORDS): Promise<void> {
  await page.fill('input[name="username"]', user);
  await page.fill('input[name="password"]', PASSWORDS[user]);
  await page.click('form[action="/login"] button[type="submit"]');
}

const accounts = (key: string) => fetch(`${web.url}/api/v1/accounts`, { headers: { Authorization: `Bearer ${key}` } });

/** Clicks a row's Revoke button and accepts the confirmation dialog, checking what it asks. */
async function revokeRow(page: Page, prefix: string, expectInDialog: string): Promise<void> {
  const dialog = page.waitForEvent('dialog');
  const click = page.click(`tr[data-prefix="${prefix}"] button.danger`);
  const d = await dialog;
  if (!d.message().includes(expectInDialog)) throw new Error(`unexpected dialog: ${d.message()}`);
  await d.accept();
  await click;
  await page.waitForURL(/\/keys\?revoked=\d+$/);
}

test.serial('sign in, create a key, copy it, use it, revoke it, and it is refused', async (t) => {
  const page = await pleaseSignIn('alice');
  t.is(new URL(page.url()).pathname, '/keys');
  t.is(await page.locator('.who').innerText(), 'alice');

  await page.fill('input[name="name"]', 'Browser test key');
  await page.click('form.create button[type="submit"]');
  const key = (await page.locator('#new-key').innerText()).trim();
  t.regex(key, /^ma_[A-Za-z0-9_-]{43}$/);
  t.regex(await page.locator('.created').innerText(), /cannot be shown again/);

  await page.click('button[data-copy="new-key"]');
  await page.locator('#copy-status', { hasText: 'Copied' }).waitFor();
  // Page scripts are passed as strings: this project compiles without the DOM typings.
  t.is(await page.evaluate('navigator.clipboard.readText()'), key);

  t.is((await accounts(key)).status, 200);

  // Dismissing the dialog keeps the key.
  page.once('dialog', (d) => void d.dismiss());
  await page.click(`tr[data-prefix="${key.slice(0, 11)}"] button.danger`);
  t.is((await accounts(key)).status, 200);

  await revokeRow(page, key.slice(0, 11), 'Browser test key');
  t.regex(await page.locator('p.notice').innerText(), /is revoked/);
  t.is(await page.locator(`tr[data-prefix="${key.slice(0, 11)}"] .status`).innerText(), 'revoked');
  t.false((await page.content()).includes(key), 'the key is gone from the page');
  t.is((await accounts(key)).status, 401);
  // CSP violations and missing files show up as console errors.
  t.deepEqual(problems, []);
});

test.serial("an administrator sees everyone's keys and revokes another user's", async (t) => {
  const page = await pleaseSignIn('admin');
  const bobPrefix = web.fixture.keys.bob.slice(0, 11);
  const row = page.locator(`tr[data-prefix="${bobPrefix}"]`);
  t.is(await row.locator('.owner').innerText(), 'bob');
  t.is((await accounts(web.fixture.keys.bob)).status, 200);
  await revokeRow(page, bobPrefix, 'of bob');
  t.is(await page.locator(`tr[data-prefix="${bobPrefix}"] .status`).innerText(), 'revoked');
  t.is((await accounts(web.fixture.keys.bob)).status, 401);

  // The screenshot for the README: a fresh key on the administrator's page.
  await page.fill('input[name="name"]', 'Claude Desktop on laptop');
  await page.fill('input[name="expires"]', '2031-01-31');
  await page.click('form.create button[type="submit"]');
  await page.locator('#new-key').waitFor();
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: shot('keys.png'), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  // On a phone the rows become cards: no table header, and nothing wider than the screen.
  t.false(await page.locator('table.keys thead').first().isVisible());
  t.true(await page.evaluate('document.documentElement.scrollWidth <= 390'));
  await page.screenshot({ path: shot('keys-phone.png'), fullPage: false });
  t.true(isPng(shot('keys.png')) && isPng(shot('keys-phone.png')));
});

test.serial("a non-administrator cannot see or revoke others' keys, even by forging the form", async (t) => {
  const page = await pleaseSignIn('bob');
  t.is(await page.locator('text=Other users’ keys').count(), 0);
  const alicePrefix = web.fixture.keys.alice.slice(0, 11);
  t.false((await page.content()).includes(alicePrefix));

  // Forge: point bob's own revoke form at alice's key and submit it, confirmed.
  // Bob's fixture key was revoked above; he needs a live one whose form to forge.
  await page.fill('input[name="name"]', 'bob laptop');
  await page.click('form.create button[type="submit"]');
  const bobPrefix = (await page.locator('#new-key').innerText()).trim().slice(0, 11);
  const aliceId = keyIdOf(web.fixture.dbPath, web.fixture.keys.alice);
  const submitted = page.waitForResponse((r) => r.url().endsWith('/keys/revoke'));
  await page.evaluate(`(() => {
    const form = document.querySelector('tr[data-prefix="${bobPrefix}"] form.revoke');
    form.querySelector('input[name="id"]').value = '${aliceId}';
    form.querySelector('input[name="confirmed"]').value = 'yes';
    form.submit(); // no submit event, so no dialog
  })()`);
  t.is((await submitted).status(), 404);
  await page.waitForLoadState();
  t.regex(await page.locator('main').innerText(), /There is no such API key/);
  t.is((await accounts(web.fixture.keys.alice)).status, 200);
});

test.serial('/apidocs renders Swagger UI with the eleven operations, with no console errors', async (t) => {
  const page = await pleaseSignIn('alice');
  problems.length = 0; // the forged form's 404 above is expected
  await page.goto('/apidocs');
  await page.locator('.opblock').first().waitFor();
  // SPEC.md's six, the aggregates, the conversation, the attachment text, the message's own bytes
  // and the export (docs/evidence.md).
  t.is(await page.locator('.opblock').count(), 11);
  const paths = await page.locator('.opblock-summary-path').allInnerTexts();
  t.true(paths.some((p) => p.replace(/\u200b/g, '').includes('/api/v1/emails/{id}/attachments/{attachmentId}')));
  t.true(paths.some((p) => p.replace(/\u200b/g, '').includes('/api/v1/emails/{id}/raw')));
  t.true(paths.some((p) => p.replace(/\u200b/g, '').includes('/api/v1/emails/export')));
  await page.screenshot({ path: shot('apidocs.png') });
  t.true(isPng(shot('apidocs.png')));
  t.deepEqual(problems, []);
});

test.serial('signing out locks /keys and /apidocs again', async (t) => {
  const page = await pleaseSignIn('alice');
  await page.click('form.signout button');
  await page.waitForURL(/\/login\?signed_out$/);
  t.regex(await page.locator('p.notice').innerText(), /signed out/);
  await page.goto('/keys');
  t.is(new URL(page.url()).pathname, '/login');
  await page.goto('/apidocs');
  t.is(new URL(page.url()).pathname, '/login');
  t.is(new URL(page.url()).searchParams.get('next'), '/apidocs');
  const spec = await page.request.get('/apidocs/spec/v1.json');
  t.is(spec.status(), 401);
});

test.serial('at 360 pixels wide no page scrolls sideways, with or without JavaScript', async (t) => {
  for (const javaScriptEnabled of [true, false]) {
    const context = await browser.newContext({
      baseURL: web.url,
      viewport: { width: 360, height: 740 },
      isMobile: true,
      javaScriptEnabled,
    });
    try {
      const page = await context.newPage();
      const fits = async (what: string) => {
        const { width, wider } = await pageWidth(page, 360);
        t.true(
          width <= 360,
          `${what} (JavaScript ${javaScriptEnabled ? 'on' : 'off'}): ${width}px wide: ${wider.join(', ')}`,
        );
      };
      await page.goto('/login');
      await fits('sign-in');
      await page.goto('/login?next=/apidocs');
      await signIn(page, 'admin');
      await page.waitForURL(/\/apidocs$/);
      // Swagger UI is drawn by its script; without it the page holds the header alone.
      if (javaScriptEnabled) await page.locator('.opblock').first().waitFor();
      await fits('API docs');
      await page.goto('/keys');
      await fits('API keys, your own and others');
      // A new key is shown once, in full: the longest word any page shows.
      await page.fill('input[name="name"]', 'Phone-sized-key-name-without-a-single-space-in-it');
      await page.click('form.create button[type="submit"]');
      await page.locator('.created code').waitFor();
      await fits('API keys with a new key');
      if (!javaScriptEnabled) {
        // Without JavaScript, Revoke asks on a page of its own.
        await page.locator('tr', { hasText: 'Phone-sized-key-name' }).locator('button.danger').first().click();
        await page.locator('form[action="/keys/revoke"] input[name="confirmed"]').waitFor({ state: 'attached' });
        await fits('the revoke confirmation');
      }
      await page.goto('/logout');
      await fits('sign-out');
      await page.goto('/no/such/page');
      await fits('not found');
    } finally {
      await context.close();
    }
  }
});

/** A page of this user's context, signed in (signing in only when the context is not yet). */
async function pleaseSignIn(user: keyof typeof PASSWORDS): Promise<Page> {
  const page = await pageFor(user);
  await page.goto('/keys');
  if (new URL(page.url()).pathname === '/login') {
    await signIn(page, user);
    await page.waitForURL(/\/keys$/);
  }
  return page;
}
