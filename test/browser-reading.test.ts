// Reading mail in a real browser (Debian's Chromium through playwright-core): sign in, search,
// filter, open, switch HTML and text, preview attachments, follow the conversation, the back
// button, keyboard, a phone's width, a restricted user, axe-core on every page, and the hostile
// HTML corpus (test/fixtures/hostile-html/): through the DevTools protocol, no request leaves for
// another host, no dialog opens and nothing the mail says reaches the console.
import test from 'ava';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ArchiveWriter } from '../engine/sqlite/writer.js';
import { launchChromium } from './helpers/browser.js';
import { createFixture, email, type Fixture } from './helpers/fixture.js';
import { addReadingMail, type ReadingMail } from './helpers/reading.js';
import { PASSWORDS, setPasswords, startWeb, withDb, type WebFixture } from './helpers/web.js';

const SCREENSHOTS =
  process.env.UPDATE_SCREENSHOTS === '1'
    ? fileURLToPath(new URL('../../docs/screenshots/', import.meta.url))
    : mkdtempSync(join(tmpdir(), 'mag-screens-'));
const shot = (name: string) => join(SCREENSHOTS, name);
const CORPUS = fileURLToPath(new URL('../../test/fixtures/hostile-html/', import.meta.url));
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let f: Fixture;
let mail: ReadingMail;
let web: WebFixture;
let browser: Browser;
/** The corpus's messages: file name → message id. */
const hostile = new Map<string, number>();
const contexts: Record<string, BrowserContext> = {};
const consoleErrors: string[] = [];

test.before(async () => {
  f = createFixture();
  await setPasswords(f.dbPath);
  mail = addReadingMail(f);
  const files = readdirSync(CORPUS).filter((n) => n.endsWith('.html'));
  withDb(f.dbPath, (db) => {
    const writer = new ArchiveWriter(db);
    writer.batch(() => {
      for (const name of files) {
        const id = writer.add(
          email({
            accountId: f.accounts.shared,
            folder: 'Hostile',
            subject: `Hostile: ${name}`,
            sentDate: Date.parse('2024-05-01T00:00:00Z'),
            textBody: `text of ${name}`,
            htmlBody: readFileSync(join(CORPUS, name), 'utf8'),
          }),
        )!;
        hostile.set(name, id);
      }
    });
  });
  web = await startWeb({
    fixture: f,
    overrides: { Web: { LoginAttemptsPerUserPerMinute: 1000, LoginAttemptsPerIpPerMinute: 1000 } },
  });
  browser = await launchChromium();
});

test.after.always(async () => {
  await browser?.close();
  await web?.close();
  f?.cleanup();
  if (process.env.UPDATE_SCREENSHOTS !== '1') rmSync(SCREENSHOTS, { recursive: true, force: true });
});

async function contextFor(user: keyof typeof PASSWORDS): Promise<BrowserContext> {
  contexts[user] ??= await browser.newContext({ baseURL: web.url, viewport: { width: 1280, height: 900 } });
  return contexts[user];
}

async function pageFor(user: keyof typeof PASSWORDS): Promise<Page> {
  const page = await (await contextFor(user)).newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(`${page.url()}: ${m.text()}`);
  });
  return page;
}

/** Signs in through the sign-in page the reading page sends a visitor to, and lands back on it. */
async function signedIn(user: keyof typeof PASSWORDS, path: string): Promise<Page> {
  const page = await pageFor(user);
  await page.goto(path);
  if (new URL(page.url()).pathname === '/login') {
    await page.fill('input[name="username"]', user);
    await page.fill('input[name="password"]', PASSWORDS[user]);
    await page.click('form[action="/login"] button[type="submit"]');
    await page.waitForURL((url) => url.pathname !== '/login');
  }
  return page;
}

/** axe-core's serious and critical violations on the page as it is (run through the DevTools protocol, so our CSP stays on). */
async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = (await page.evaluate(() =>
    (globalThis as unknown as { axe: { run(): Promise<unknown> } }).axe.run(),
  )) as { violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: unknown }> }> };
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${JSON.stringify(v.nodes.slice(0, 3).map((n) => n.target))}`);
}

const resultIds = (page: Page) =>
  page.$$eval('.result-link', (links) => links.map((a) => Number(a.getAttribute('href')!.split('/').pop())));

test.serial(
  'sign in, search with the keyboard, open a result, and the back button returns to the search',
  async (t) => {
    const page = await signedIn('alice', '/search');
    t.is(new URL(page.url()).pathname, '/search');
    t.is(await page.locator('.who').innerText(), 'alice');
    await page.keyboard.press('/');
    t.is(
      await page.evaluate(() => (globalThis as any).document.activeElement?.id),
      'q',
      '/ puts the focus in the search box',
    );
    await page.keyboard.type('budget');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/search\?q=budget$/);
    t.deepEqual((await resultIds(page)).sort(), [f.emails.budget!, f.emails.sent!].sort());
    t.is(await page.locator('.results mark').first().innerText(), 'budget');
    t.deepEqual(await axeViolations(page), [], 'search page');
    await page.screenshot({ path: shot('search.png'), fullPage: true });

    // j moves to the first result, j again to the second, k back; Enter opens the focused one.
    await page.locator('body').click({ position: { x: 5, y: 300 } });
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    await page.keyboard.press('k');
    const focused = await page.evaluate(() => (globalThis as any).document.activeElement?.getAttribute('href'));
    t.is(focused, `/emails/${(await resultIds(page))[0]}`);
    t.is(await page.locator('.result.selected').count(), 1);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/emails\/\d+$/);
    t.regex(await page.locator('h1').innerText(), /budget/i);
    await page.goBack();
    await page.waitForURL(/\/search\?q=budget$/);
    t.is(await page.inputValue('#q'), 'budget', 'back to the same search, its box filled');
    await page.close();
  },
);

test.serial('filters: account, folder tree, dates, attachment and sort, each kept in the URL', async (t) => {
  const page = await signedIn('alice', '/search');
  await page.selectOption('select[name="accountId"]', String(f.accounts.work));
  await page.check('input[name="has"]');
  await page.click('form.search button[type="submit"]');
  await page.waitForURL(new RegExp(`accountId=${f.accounts.work}.*has=attachment`));
  const ids = await resultIds(page);
  t.true(ids.includes(mail.pdf) && ids.includes(f.emails.budget!));
  t.false(ids.includes(f.emails.lunch!));
  // The folder tree of the chosen account.
  await page.click('nav.folders a:text-is("Invoices")');
  await page.waitForURL(/folder=INBOX%2FInvoices/);
  t.deepEqual(await resultIds(page), [f.emails.invoice!]);
  t.regex(page.url(), /has=attachment/, 'the other filters stay');
  await page.goto(`/search?accountId=${f.accounts.work}`);
  await page.fill('input[name="from"]', '2024-04-01');
  await page.fill('input[name="to"]', '2024-04-30');
  await page.selectOption('select[name="sort"]', 'oldest');
  await page.click('form.search button[type="submit"]');
  await page.waitForURL(/from=2024-04-01.*to=2024-04-30.*sort=oldest/);
  const april = await resultIds(page);
  t.is(april[0], mail.hostile, 'oldest of April first');
  t.false(april.includes(f.emails.budget!));
  await page.close();
});

test.serial(
  'a message: HTML in its sandboxed frame, the text switch, attachments previewed, the conversation followed',
  async (t) => {
    const page = await signedIn('alice', `/emails/${mail.hostile}`);
    const frame = page.frameLocator('iframe.mail-body');
    await frame.locator('b').waitFor();
    t.is(await frame.locator('b').innerText(), 'reader');
    // The cid: image is loaded from the archive; the tracking pixel is not.
    const logo = frame.locator('img[alt="logo"]');
    await t.notThrowsAsync(logo.waitFor());
    t.true(await logo.evaluate((img: any) => img.complete && img.naturalWidth === 1));
    t.regex(await page.locator('.notice.remote').innerText(), /1 remote image was blocked/);
    t.deepEqual(await axeViolations(page), [], 'message page');
    await page.screenshot({ path: shot('message.png'), fullPage: true });

    await page.click('.switch a:text-is("Text")');
    await page.waitForURL(/view=text/);
    t.is(await page.locator('pre.text-body').innerText(), 'Hello reader, plain text version.');
    t.is(await page.locator('iframe').count(), 0);
    await page.click('.switch a:text-is("HTML")');
    await page.waitForURL(new RegExp(`/emails/${mail.hostile}$`));
    t.is(await page.locator('iframe.mail-body').count(), 1);

    // Attachments: an image and a PDF previewed in the page, text from its extracted text.
    await page.goto(`/emails/${mail.pdf}`);
    await page.click('.attachments li:has-text("photo.png") a:text-is("Preview")');
    await page.waitForURL(/\/preview$/);
    const img = page.locator('img.preview-image');
    await img.waitFor();
    t.true(await img.evaluate((el: any) => el.complete && el.naturalWidth === 1));
    t.deepEqual(await axeViolations(page), [], 'image preview');
    await page.goBack();
    const pdfResponse = page.waitForResponse((r) => r.url().endsWith('/inline'));
    await page.click('.attachments li:has-text("contract.pdf") a:text-is("Preview")');
    const pdf = await pdfResponse;
    t.is(pdf.status(), 200);
    t.is(pdf.headers()['content-type'], 'application/pdf');
    t.is(await page.locator('iframe.preview-pdf').count(), 1);
    await page.goto(`/emails/${f.emails.budget!}`);
    await page.click('.attachments li:has-text("notes.txt") a:text-is("Preview")');
    await page.waitForURL(/\/preview$/);
    t.regex(await page.locator('.preview-body').innerText(), /line one|No preview/);

    // The conversation: a timeline with this message marked; following a link opens that message.
    await page.goto(`/emails/${mail.reply}`);
    t.is(await page.locator('.timeline li').count(), 3);
    t.regex(await page.locator('.timeline li[aria-current="true"]').innerText(), /this message/);
    await page.click(`.timeline a[href="/emails/${mail.last}"]`);
    await page.waitForURL(new RegExp(`/emails/${mail.last}$`));
    t.regex(await page.locator('.timeline li[aria-current="true"]').innerText(), /May it is|this message/);
    await page.goBack();
    await page.waitForURL(new RegExp(`/emails/${mail.reply}$`));
    await page.close();
  },
);

test.serial('at 360 pixels wide nothing scrolls sideways', async (t) => {
  const context = await browser.newContext({ baseURL: web.url, viewport: { width: 360, height: 740 }, isMobile: true });
  try {
    const page = await context.newPage();
    await page.goto('/search');
    await page.fill('input[name="username"]', 'alice');
    await page.fill('input[name="password"]', PASSWORDS.alice);
    await page.click('form[action="/login"] button[type="submit"]');
    await page.waitForURL(/\/search$/);
    for (const path of [
      '/search?q=budget',
      `/search?accountId=${f.accounts.work}`,
      `/emails/${f.emails.budget!}`,
      `/emails/${mail.reply}`,
    ]) {
      await page.goto(path);
      const width = await page.evaluate(() => (globalThis as any).document.scrollingElement.scrollWidth as number);
      t.true(width <= 360, `${path}: ${width}px wide`);
    }
    await page.goto('/search?q=budget');
    await page.screenshot({ path: shot('search-phone.png') });
    await page.goto(`/emails/${mail.reply}`);
    await page.screenshot({ path: shot('message-phone.png') });
  } finally {
    await context.close();
  }
});

test.serial('a restricted user sees only their accounts, and a guessed id is a page that says not found', async (t) => {
  const page = await signedIn('bob', '/search?q=budget');
  t.deepEqual(await resultIds(page), [f.emails.family!]);
  const options = await page.$$eval('select[name="accountId"] option', (o) => o.map((x) => x.textContent!.trim()));
  t.deepEqual(options, ['All accounts', 'Personal']);
  const res = await page.goto(`/emails/${f.emails.budget!}`);
  t.is(res!.status(), 404);
  t.regex(await page.locator('h1').innerText(), /not found/i);
  t.false((await page.content()).includes('Quarterly budget'));
  t.deepEqual(await axeViolations(page), [], 'error page');
  await page.close();
});

test.serial('axe-core finds no serious or critical violation on the other pages either', async (t) => {
  const page = await signedIn('admin', '/keys');
  t.deepEqual(await axeViolations(page), [], 'keys');
  await page.goto(`/search?accountId=${f.accounts.work}&folder=INBOX`);
  t.deepEqual(await axeViolations(page), [], 'search with the folder tree');
  await page.goto('/search?q=has%3Afoo');
  t.deepEqual(await axeViolations(page), [], 'search with an error');
  const anonymous = await browser.newPage({ baseURL: web.url });
  await anonymous.goto('/login');
  t.deepEqual(await axeViolations(anonymous), [], 'sign-in');
  await anonymous.close();
  await page.close();
});

test.serial('the hostile HTML corpus runs no script and sends nothing to another host, in Chromium', async (t) => {
  t.true(hostile.size >= 20, `${hostile.size} hostile samples`);
  const page = await signedIn('admin', '/search');
  const cdp = await page.context().newCDPSession(page);
  const requests: Array<{ url: string; type: string; from: string }> = [];
  cdp.on('Network.requestWillBeSent', (e) =>
    requests.push({ url: e.request.url, type: e.type ?? '', from: e.documentURL }),
  );
  await cdp.send('Network.enable');
  const logged: string[] = [];
  cdp.on('Runtime.consoleAPICalled', (e) => logged.push(e.args.map((a) => String(a.value)).join(' ')));
  cdp.on('Runtime.exceptionThrown', (e) => logged.push(e.exceptionDetails.text));
  await cdp.send('Runtime.enable');
  const dialogs: string[] = [];
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  const origin = new URL(web.url).origin;
  for (const [name, id] of hostile) {
    for (const remote of [false, true]) {
      const before = requests.length;
      await page.goto(`/emails/${id}${remote ? '?remote=1' : ''}`);
      await page.waitForLoadState('load');
      // A sample with nothing left to show as HTML is shown as its text: no frame at all.
      if ((await page.locator('iframe.mail-body').count()) > 0) {
        const body = page.frameLocator('iframe.mail-body').locator('body');
        await body.waitFor({ state: 'attached' });
        // Move over what the mail shows: a handler that survived would fire now.
        await body.hover({ force: true }).catch(() => undefined);
      }
      // Every request but those another message's page made (a late event of the sample before
      // is that sample's); a frame that navigated elsewhere counts, whatever its document.
      const otherMessage = (from: string) => {
        const m = /^[^?#]*\/emails\/(\d+)/.exec(from.startsWith(origin) ? from : '');
        return m !== null && Number(m[1]) !== id;
      };
      const foreign = requests
        .slice(before)
        .filter((r) => !otherMessage(r.from))
        .filter((r) => !r.url.startsWith(origin) && !r.url.startsWith('data:') && r.url !== 'about:blank');
      // Without asking, nothing at all leaves; after "show remote images", images only.
      const wrong = remote ? foreign.filter((r) => r.type !== 'Image') : foreign;
      t.deepEqual(wrong, [], `${name}${remote ? ' with remote images' : ''}`);
    }
  }
  t.deepEqual(dialogs, [], 'no dialog opened');
  t.deepEqual(
    logged.filter((l) => /xss|evil/i.test(l)),
    [],
    'nothing the mail says reached the console',
  );
  await page.close();
});

test.serial('no page logged a console error (a CSP violation, a missing file)', (t) => {
  // A 4xx page (the not-found and bad-query pages opened on purpose) is reported by the browser as
  // a failed load, and so is a remote image of the hostile corpus once shown (its host never
  // resolves); anything else is a problem.
  t.deepEqual(
    consoleErrors.filter(
      (e) => !/status of 4\d\d/.test(e) && !/\?remote=1: Failed to load resource: net::ERR_NAME_NOT_RESOLVED$/.test(e),
    ),
    [],
  );
});
