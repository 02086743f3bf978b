// The reading pages over HTTP (docs/web.md, "Reading mail"): sign-in first, the search page's
// state in its URL, the message page, its sandboxed body, downloads and previews, scoping by the
// signed-in user's accounts (ids guessed in the URL too), the access log, settings and budgets.
import test from 'ava';
import request from 'supertest';
import { rawBody } from './helpers/api.js';
import { saveAttachmentTexts } from '../engine/sqlite/attachment-text.js';
import { ArchiveWriter } from '../engine/sqlite/writer.js';
import { createFixture, email, type Fixture } from './helpers/fixture.js';
import { addReadingMail, ORIGINAL, PDF, PNG, type ReadingMail } from './helpers/reading.js';
import { PASSWORDS, setPasswords, signIn, startWeb, withDb, type Agent, type WebFixture } from './helpers/web.js';

let f: Fixture;
let mail: ReadingMail;
let web: WebFixture;
const loose = { Web: { LoginAttemptsPerUserPerMinute: 1000, LoginAttemptsPerIpPerMinute: 1000 } };

test.before(async () => {
  f = createFixture();
  await setPasswords(f.dbPath);
  mail = addReadingMail(f);
  // The contract's text, as an import's extraction would have found it.
  withDb(f.dbPath, (db) => {
    const content = db
      .prepare("SELECT content_id FROM attachments WHERE email_id = ? AND file_name = 'contract.pdf'")
      .pluck()
      .get(mail.pdf) as number;
    saveAttachmentTexts(db, [
      {
        contentId: content,
        result: { status: 'ok', text: 'Payment terms: net 30 days, by zeppelin post.', truncated: false },
      },
    ]);
  });
  web = await startWeb({ fixture: f, overrides: loose });
});
test.after.always(async () => {
  await web?.close();
  f?.cleanup();
});

const agents = new Map<string, Agent>();
async function as(user: keyof typeof PASSWORDS): Promise<Agent> {
  let agent = agents.get(user);
  if (!agent) {
    agent = (await signIn(web.url, user, PASSWORDS[user])).agent;
    agents.set(user, agent);
  }
  return agent;
}

interface LogRow {
  type: string;
  email_id: number | null;
  source: string;
  key_prefix: string;
  search_params: string | null;
}
async function logSince(id: number, userId: number): Promise<LogRow[]> {
  await web.gateway.accessLog.flush();
  return withDb(
    f.dbPath,
    (db) =>
      db
        .prepare(
          'SELECT type, email_id, source, key_prefix, search_params FROM access_log WHERE id > ? AND user_id = ? ORDER BY id',
        )
        .all(id, userId) as LogRow[],
  );
}
async function lastLogId(): Promise<number> {
  await web.gateway.accessLog.flush();
  return withDb(
    f.dbPath,
    (db) => (db.prepare('SELECT coalesce(max(id), 0) FROM access_log').pluck().get() as number) ?? 0,
  );
}
const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);
const resultIds = (html: string) =>
  [...html.matchAll(/class="result-link" href="\/emails\/(\d+)"/g)].map((m) => Number(m[1]));

test('every reading page sends a visitor without a session to sign in, and back to the page after', async (t) => {
  for (const path of ['/search?q=budget', `/emails/${f.emails.budget!}`, `/emails/${f.emails.budget!}/body`]) {
    const res = await request(web.url).get(path);
    t.is(res.status, 302, path);
    t.is(res.headers.location, `/login?next=${encodeURIComponent(path)}`);
  }
  const agent = request.agent(web.url);
  const login = await agent.get(`/login?next=${encodeURIComponent('/search?q=budget')}`);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(login.text)![1]!;
  const res = await agent
    .post('/login')
    .type('form')
    .send({ _csrf: csrf, username: 'alice', password: PASSWORDS.alice, next: '/search?q=budget' });
  t.is(res.status, 303);
  t.is(res.headers.location, '/search?q=budget');
  // Only our own pages: a look-alike path or another host falls back to the search page.
  for (const next of ['//evil.test/search', '/search\\@evil.test', '/searching', 'https://evil.test/']) {
    const again = await signIn(web.url, 'alice', PASSWORDS.alice, request.agent(web.url));
    t.is(again.res.headers.location, '/search', next);
    const page = await again.agent.get(`/login?next=${encodeURIComponent(next)}`);
    t.is(page.headers.location, '/search', next);
  }
  // The home page is the search page where the reading pages are on.
  t.is((await (await as('alice')).get('/')).headers.location, '/search');
});

test('the search page runs the search as the user: exact count, marked snippets, state in the URL', async (t) => {
  const agent = await as('alice');
  const res = await agent.get('/search?q=budget');
  t.is(res.status, 200);
  t.is(res.headers['cache-control'] as string, 'no-store');
  t.is(res.headers['x-frame-options'] as string, 'DENY');
  const ids = resultIds(res.text);
  t.deepEqual(
    sorted(ids),
    sorted([f.emails.budget!, f.emails.sent!]),
    'alice sees work and shared, not the family mail',
  );
  t.regex(res.text, /of\s*<span class="total">2<\/span>/);
  t.regex(res.text, /<mark>budget<\/mark>/i);
  t.regex(res.text, /value="budget"/, 'the box keeps the query');
  // The same search through the REST API, with alice's key, finds the same messages.
  const api = await request(web.url).get('/api/v1/emails?q=budget').set('Authorization', `Bearer ${f.keys.alice}`);
  t.deepEqual(sorted(api.body.items.map((i: { id: number }) => i.id)), sorted(ids));
});

test('filters: account, folder tree, direction, has attachment, dates and sort are all in the URL', async (t) => {
  const agent = await as('alice');
  const work = await agent.get(`/search?accountId=${f.accounts.work}`);
  t.is(work.status, 200);
  t.regex(work.text, /Folders of Work/);
  t.regex(work.text, /href="\/search\?accountId=\d+&amp;folder=INBOX%2FInvoices"/, 'the tree links keep the account');
  const invoices = await agent.get(`/search?accountId=${f.accounts.work}&folder=INBOX%2FInvoices`);
  t.deepEqual(resultIds(invoices.text), [f.emails.invoice!]);
  const sent = await agent.get(`/search?accountId=${f.accounts.work}&direction=outgoing`);
  t.true(resultIds(sent.text).includes(f.emails.lunch!));
  t.false(resultIds(sent.text).includes(f.emails.budget!));
  const withFiles = await agent.get(`/search?accountId=${f.accounts.work}&has=attachment`);
  const withIds = resultIds(withFiles.text);
  t.true(withIds.includes(f.emails.budget!) && withIds.includes(mail.pdf));
  t.false(withIds.includes(f.emails.lunch!));
  t.regex(withFiles.text, /name="has" value="attachment"\s+checked/);
  const march = await agent.get(`/search?accountId=${f.accounts.work}&from=2024-03-01&to=2024-03-31`);
  const marchIds = resultIds(march.text);
  t.true(marchIds.includes(f.emails.budget!));
  t.false(marchIds.includes(mail.pdf), 'April is outside the range');
  const oldest = resultIds((await agent.get(`/search?accountId=${f.accounts.work}&sort=oldest`)).text);
  const newest = resultIds((await agent.get(`/search?accountId=${f.accounts.work}`)).text);
  t.deepEqual(oldest, [...newest].reverse());
});

test('a bad query or date is a 400 page that says what is wrong and keeps the form', async (t) => {
  const agent = await as('alice');
  const res = await agent.get('/search?q=has%3Afoo&from=2024-13-01');
  t.is(res.status, 400);
  t.regex(res.text, /role="alert"/);
  t.regex(res.text, /has:foo is not supported|from must be a date/);
  t.regex(res.text, /value="has:foo"/);
});

test('pages of results: the pager keeps the search and the count stays exact', async (t) => {
  const small = await startWeb({ fixture: f, overrides: { ...loose, Api: { DefaultPageSize: 2 } } });
  try {
    const { agent } = await signIn(small.url, 'admin', PASSWORDS.admin);
    const first = await agent.get(`/search?accountId=${f.accounts.work}`);
    t.is(resultIds(first.text).length, 2);
    const next = /<a rel="next" href="([^"]+)"/.exec(first.text)?.[1]?.replace(/&amp;/g, '&');
    t.truthy(next);
    t.regex(next!, new RegExp(`accountId=${f.accounts.work}.*page=2`));
    const second = await agent.get(next!);
    t.is(second.status, 200);
    t.regex(second.text, /Messages 3–4 of/);
    t.deepEqual(
      resultIds(first.text).filter((id) => resultIds(second.text).includes(id)),
      [],
      'no message on both pages',
    );
  } finally {
    await small.close();
  }
});

test('the message page: headers, the sandboxed body, the text switch, attachments and the conversation', async (t) => {
  const agent = await as('alice');
  const res = await agent.get(`/emails/${mail.reply}`);
  t.is(res.status, 200);
  t.regex(res.headers['content-security-policy'] as string, /frame-src 'self'/);
  t.regex(res.text, /<h1>Re: Offsite plan<\/h1>/);
  t.regex(res.text, /<time datetime="2024-04-03T10:00:00.000Z"[^>]*>2024-04-03 10:00:00 UTC<\/time>/);
  // A conversation of three, oldest first, this one marked, the others linked.
  const timeline = /<ol class="timeline">([\s\S]*?)<\/ol>/.exec(res.text)?.[1] ?? '';
  t.regex(timeline, new RegExp(`href="/emails/${mail.first}"`));
  t.regex(timeline, new RegExp(`href="/emails/${mail.last}"`));
  t.regex(timeline, /class="current" aria-current="true"/);
  t.false(timeline.includes(`href="/emails/${mail.reply}"`));
  t.true(timeline.indexOf(`/emails/${mail.first}`) < timeline.indexOf(`/emails/${mail.last}`));

  const news = await agent.get(`/emails/${mail.hostile}`);
  t.regex(
    news.text,
    new RegExp(
      `<iframe[^>]*src="/emails/${mail.hostile}/body"[^>]*sandbox="allow-same-origin allow-popups allow-popups-to-escape-sandbox"`,
    ),
  );
  t.regex(news.text, /1 remote image was\s+blocked/);
  t.regex(news.text, new RegExp(`href="/emails/${mail.hostile}\\?remote=1">Show remote images`));
  t.false(news.text.includes('evil.test'), 'the page itself never carries the mail markup');
  t.false(news.text.includes('<script>alert'));
  const text = await agent.get(`/emails/${mail.hostile}?view=text`);
  t.regex(text.text, /<pre class="text-body">Hello reader, plain text version.<\/pre>/);
  t.false(text.text.includes('<iframe'));

  const budget = await agent.get(`/emails/${f.emails.budget!}`);
  t.regex(budget.text, /budget &quot;Q1&quot; €.xlsx/, 'file names are escaped');
  t.regex(budget.text, new RegExp(`href="/emails/${f.emails.budget!}/attachments/\\d+/preview"`));
});

test('the body document: sanitized, under a CSP with no script and no remote load, framed by our pages only', async (t) => {
  const agent = await as('alice');
  const res = await agent.get(`/emails/${mail.hostile}/body`);
  t.is(res.status, 200);
  const csp = res.headers['content-security-policy'] as string;
  t.regex(csp, /default-src 'none'/);
  t.regex(csp, /img-src 'self' data:;/);
  t.false(/script-src/.test(csp), 'no script source at all: default-src none forbids every script');
  t.regex(csp, /frame-ancestors 'self'/);
  t.regex(csp, /sandbox allow-same-origin allow-popups allow-popups-to-escape-sandbox/);
  t.is(res.headers['x-frame-options'] as string, 'SAMEORIGIN');
  t.false(/<script|onerror|javascript:|evil\.test/i.test(res.text), res.text);
  t.regex(res.text, /Hello <b>reader<\/b>/);
  const cid = /<img[^>]*src="([^"]+)"[^>]*alt="logo"|<img[^>]*alt="logo"[^>]*src="([^"]+)"/.exec(res.text);
  t.truthy(cid, 'the cid: image is kept, pointing at the archive');
  const src = (cid![1] ?? cid![2])!;
  t.regex(src, new RegExp(`^/emails/${mail.hostile}/attachments/\\d+/inline$`));
  const image = await agent.get(src);
  t.is(image.status, 200);
  t.is(image.headers['content-type'] as string, 'image/png');
  t.deepEqual(image.body, PNG);

  const remote = await agent.get(`/emails/${mail.hostile}/body?remote=1`);
  t.regex(remote.headers['content-security-policy'] as string, /img-src 'self' data: https: http:/);
  t.regex(remote.text, /http:\/\/evil\.test\/pixel\.gif/, 'asked for: the remote image is kept');
  t.false(/<script|onerror|javascript:/i.test(remote.text));
});

// Serial: it reads the access log, which the other tests write to as well.
test.serial('opening a message is one Open with source web; its body frame is not logged again', async (t) => {
  const agent = await as('alice');
  const from = await lastLogId();
  await agent.get(`/emails/${f.emails.lunch!}`);
  await agent.get(`/emails/${f.emails.lunch!}/body`);
  await agent.get('/search?q=ramen');
  const rows = await logSince(from, f.users.alice);
  const opens = rows.filter((r) => r.type === 'Open');
  t.is(opens.length, 1);
  t.is(opens[0]!.email_id, f.emails.lunch!);
  t.true(rows.every((r) => r.source === 'web'));
  const search = rows.find((r) => r.type === 'Search' && r.search_params?.includes('ramen'));
  t.truthy(search);
  t.like(JSON.parse(search!.search_params!), { q: 'ramen', sortBy: 'sentDate', sortOrder: 'desc' });
});

// Serial: it reads the access log, which the other tests write to as well.
test.serial('downloads: attachments, the original, previews; each logged as a Download', async (t) => {
  const agent = await as('alice');
  const from = await lastLogId();
  const ids = withDb(f.dbPath, (db) =>
    Object.fromEntries(
      (
        db.prepare('SELECT id, file_name FROM attachments WHERE email_id = ?').all(mail.pdf) as Array<{
          id: number;
          file_name: string;
        }>
      ).map((r) => [r.file_name, r.id]),
    ),
  );
  const pdf = await agent.get(`/emails/${mail.pdf}/attachments/${ids['contract.pdf']}`).buffer(true).parse(rawBody);
  t.is(pdf.status, 200);
  t.regex(pdf.headers['content-disposition'] as string, /^attachment; filename="contract.pdf"/);
  t.deepEqual(pdf.body, PDF);
  const inline = await agent
    .get(`/emails/${mail.pdf}/attachments/${ids['contract.pdf']}/inline`)
    .buffer(true)
    .parse(rawBody);
  t.is(inline.status, 200);
  t.regex(inline.headers['content-disposition'] as string, /^inline;/);
  t.is(inline.headers['x-frame-options'] as string, 'SAMEORIGIN');
  const preview = await agent.get(`/emails/${mail.pdf}/attachments/${ids['contract.pdf']}/preview`);
  t.regex(
    preview.text,
    new RegExp(`<iframe class="preview-pdf"[^>]*src="/emails/${mail.pdf}/attachments/${ids['contract.pdf']}/inline"`),
  );
  const photo = await agent.get(`/emails/${mail.pdf}/attachments/${ids['photo.png']}/preview`);
  t.regex(photo.text, /<img class="preview-image"/);
  // Not an image or a PDF: never served inline, whatever it claims.
  const notes = f.attachments[`budget:notes.txt`]!;
  t.is((await agent.get(`/emails/${f.emails.budget!}/attachments/${notes}/inline`)).status, 404);
  const notesPreview = await agent.get(`/emails/${f.emails.budget!}/attachments/${notes}/preview`);
  t.is(notesPreview.status, 200);
  t.regex(notesPreview.text, /<pre class="text-body">|No preview/);

  const raw = await agent.get(`/emails/${mail.kept}/raw`).buffer(true).parse(rawBody);
  t.is(raw.status, 200);
  t.is(raw.headers['content-type'], 'message/rfc822');
  t.deepEqual(Buffer.from(raw.body), ORIGINAL);
  const none = await agent.get(`/emails/${f.emails.lunch!}/raw`);
  t.is(none.status, 404);
  t.regex(none.text, /has no original/);
  t.regex(none.headers['content-type'] as string, /text\/html/, 'an error page, not problem+json');

  const rows = await logSince(from, f.users.alice);
  const downloads = rows.filter((r) => r.type === 'Download').map((r) => r.email_id);
  t.true(downloads.filter((id) => id === mail.pdf).length >= 2, 'the download and the inline view');
  t.true(downloads.includes(mail.kept));
});

// Serial: it reads the access log, which the other tests write to as well.
test.serial('export this search: a ZIP of what the user may read, logged as the search it ran', async (t) => {
  const agent = await as('alice');
  const page = await agent.get('/search?q=offsite');
  t.regex(page.text, /href="\/search\/export\?q=offsite&amp;format=mbox"/);
  const from = await lastLogId();
  const res = await agent.get('/search/export?q=offsite&format=mbox').buffer(true).parse(rawBody);
  t.is(res.status, 200);
  t.is(res.headers['content-type'] as string, 'application/zip');
  t.is(Buffer.from(res.body).subarray(0, 2).toString(), 'PK');
  const rows = await logSince(from, f.users.alice);
  const search = rows.find((r) => r.type === 'Search');
  t.like(JSON.parse(search!.search_params!), { q: 'offsite', export: true, format: 'mbox', matched: 3 });
  t.is(rows.filter((r) => r.type === 'Download').length, 3);
});

test('a restricted user sees only their accounts, also when guessing ids in the URL', async (t) => {
  const bob = await as('bob');
  const page = await bob.get('/search?q=budget');
  t.deepEqual(resultIds(page.text), [f.emails.family!]);
  t.false(page.text.includes('>Work<'), 'no other account in the lists');
  const other = await bob.get(`/search?accountId=${f.accounts.work}`);
  t.deepEqual(resultIds(other.text), []);
  const attachment = f.attachments['budget:notes.txt']!;
  for (const path of [
    `/emails/${f.emails.budget!}`,
    `/emails/${f.emails.budget!}/body`,
    `/emails/${mail.kept}/raw`,
    `/emails/${f.emails.budget!}/attachments/${attachment}`,
    `/emails/${f.emails.budget!}/attachments/${attachment}/inline`,
    `/emails/${f.emails.budget!}/attachments/${attachment}/preview`,
    `/emails/${mail.hostile}/attachments/1/inline`,
  ]) {
    const res = await bob.get(path);
    t.is(res.status, 404, path);
    t.false(res.text.includes('Quarterly budget'), path);
  }
  const carol = await signIn(web.url, 'admin', PASSWORDS.admin);
  t.is((await carol.agent.get(`/emails/${f.emails.budget!}`)).status, 200, 'an administrator reads every account');
  t.is((await bob.get('/emails/99999999')).status, 404);
  t.is((await bob.get('/emails/abc')).status, 404);
});

test('a session is needed: an API key does not open the reading pages', async (t) => {
  const res = await request(web.url).get('/search').set('Authorization', `Bearer ${f.keys.admin}`);
  t.is(res.status, 302);
});

test('the reading budget per user: past Web:ReadingRequestsPerMinute a 429 page with Retry-After', async (t) => {
  const tight = await startWeb({
    fixture: f,
    overrides: { ...loose, Web: { ...loose.Web, ReadingRequestsPerMinute: 3 } },
  });
  try {
    const { agent } = await signIn(tight.url, 'alice', PASSWORDS.alice);
    for (let i = 0; i < 3; i++) t.is((await agent.get('/search')).status, 200);
    const res = await agent.get(`/emails/${f.emails.lunch!}`);
    t.is(res.status, 429);
    t.truthy(res.headers['retry-after'] as string);
    t.regex(res.headers['content-type'] as string, /text\/html/);
    // Another user keeps their own budget.
    const { agent: bob } = await signIn(tight.url, 'bob', PASSWORDS.bob);
    t.is((await bob.get('/search')).status, 200);
  } finally {
    await tight.close();
  }
});

test('off: Web:EnableReading false, or the REST API off, and the reading paths are 404s', async (t) => {
  for (const overrides of [
    { ...loose, Web: { ...loose.Web, EnableReading: false } },
    { ...loose, Api: { Enabled: false } },
  ]) {
    const off = await startWeb({ fixture: f, overrides });
    try {
      const { agent } = await signIn(off.url, 'alice', PASSWORDS.alice);
      for (const path of ['/search', `/emails/${f.emails.lunch!}`, `/emails/${f.emails.lunch!}/body`]) {
        t.is((await agent.get(path)).status, 404, path);
      }
      const keys = await agent.get('/keys');
      t.false(keys.text.includes('href="/search"'), 'no Search link in the navigation');
      t.is((await agent.get('/')).headers.location, '/keys');
    } finally {
      await off.close();
    }
  }
});

test('has attachment joins any query: an open quote stays inside its own phrase; a long query is refused, not cut', async (t) => {
  const agent = await as('admin');
  const quoted = await agent.get('/search?q=%22Signed%20contract&has=attachment');
  t.is(quoted.status, 200);
  t.deepEqual(resultIds(quoted.text), [mail.pdf]);
  const either = await agent.get('/search?q=offsite%20OR%20contract&has=attachment');
  t.deepEqual(resultIds(either.text), [mail.pdf], 'OR stays inside the parentheses');
  const long = await agent.get(`/search?q=${'a'.repeat(10_001)}`);
  t.is(long.status, 400);
  t.regex(long.text, /q is 10001 characters long; the limit is 10000/);
});

test.serial('HEAD of a message page reads it but logs no Open', async (t) => {
  const agent = await as('alice');
  const from = await lastLogId();
  const head = await agent.head(`/emails/${f.emails.invoice!}`);
  t.is(head.status, 200);
  t.deepEqual(await logSince(from, f.users.alice), []);
});

test.serial(
  'the session is checked with the page’s own job: a deactivated user is sent to sign in, and nothing is shown',
  async (t) => {
    const { agent } = await signIn(web.url, 'bob', PASSWORDS.bob);
    t.is((await agent.get('/search')).status, 200);
    withDb(f.dbPath, (db) => db.prepare("UPDATE users SET is_active = 0 WHERE username = 'bob'").run());
    try {
      for (const path of ['/search?q=reunion', `/emails/${f.emails.family!}`, `/emails/${f.emails.family!}/body`]) {
        const res = await agent.get(path);
        t.is(res.status, 302, path);
        t.is(res.headers.location, `/login?next=${encodeURIComponent(path)}`);
        t.false(res.text.includes('Family reunion'));
      }
    } finally {
      withDb(f.dbPath, (db) => db.prepare("UPDATE users SET is_active = 1 WHERE username = 'bob'").run());
    }
  },
);

test.serial('a folder tree kept between pages still counts new mail, moves and deletions at once', async (t) => {
  const tree = async () => {
    const res = await request(web.url)
      .get(`/api/v1/accounts/${f.accounts.shared}/folders`)
      .set('Authorization', `Bearer ${f.keys.admin}`);
    const counts: Record<string, number> = {};
    const walk = (nodes: Array<{ fullPath: string; totalCount: number; children: unknown[] }>) =>
      nodes.forEach((n) => {
        counts[n.fullPath] = n.totalCount;
        walk(n.children as typeof nodes);
      });
    walk(res.body);
    return counts;
  };
  const before = await tree();
  t.deepEqual(await tree(), before, 'asked twice, the same');
  const id = withDb(f.dbPath, (db) => {
    const writer = new ArchiveWriter(db);
    return writer.add(email({ accountId: f.accounts.shared, folder: 'Cached/New', subject: 'New in a new folder' }))!;
  });
  t.is((await tree())['Cached/New'], 1, 'new mail');
  withDb(f.dbPath, (db) => db.prepare("UPDATE emails SET folder = 'Cached/Moved' WHERE id = ?").run(id));
  const moved = await tree();
  t.is(moved['Cached/New'], undefined);
  t.is(moved['Cached/Moved'], 1, 'a move');
  withDb(f.dbPath, (db) => db.prepare('DELETE FROM emails WHERE id = ?').run(id));
  t.deepEqual(await tree(), before, 'a deletion');
});

test('a hit inside an attachment is shown from its text, and the result says which file', async (t) => {
  const agent = await as('alice');
  const res = await agent.get('/search?q=attachment%3Azeppelin');
  t.deepEqual(resultIds(res.text), [mail.pdf]);
  t.regex(res.text, /In attachment: <strong>contract\.pdf<\/strong>/);
  t.regex(res.text, /by <mark>zeppelin<\/mark> post\./);
});
