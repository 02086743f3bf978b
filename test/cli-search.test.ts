// mail-archive search and show: a person's search from a shell, on both stores. The same jobs as
// REST (the CLI's --json equals GET /api/v1/emails and /emails/{id} on the same archive, filter by
// filter), recorded in the access log as the CLI and the operating-system account, and mail text
// that cannot drive the terminal (docs/search.md, "From the command line").
import test, { type ExecutionContext } from 'ava';
import { hostname, userInfo } from 'node:os';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bearer, startApi } from './helpers/api.js';
import { runCli } from './helpers/cli.js';
import { cliArchive, fails, json, ok, STORE_KINDS, type CliArchive } from './helpers/cli-archive.js';
import { createFixture, tempDir } from './helpers/fixture.js';

function eachStore(title: string, body: (t: ExecutionContext, a: CliArchive) => Promise<void>): void {
  for (const kind of STORE_KINDS) test(`[${kind}] ${title}`, async (t) => body(t, await cliArchive(t, kind)));
}

const ESC = '\u001b';
const BEL = '\u0007';
/** What the access log records as the actor of a CLI read. */
const ACTOR = `${userInfo().username}@${hostname()}`;

interface LogRow {
  username: string | null;
  userId: number;
  type: string;
  source: string;
  clientIp: string;
  keyPrefix: string | null;
  emailId: number | null;
  accountId: number | null;
  searchParams: Record<string, unknown> | null;
}

for (const store of STORE_KINDS) {
  test(`[${store}] search --json and show --json answer what GET /api/v1/emails and /emails/{id} answer, every filter; each read is in the access log as the CLI`, async (t) => {
    const f = createFixture();
    t.teardown(() => f.cleanup());
    const api = await startApi({}, { useFixture: f, store });
    t.teardown(() => api.close());
    const db = api.settings.Database.Path;
    const { dir, cleanup } = tempDir('mag-cli-search-');
    t.teardown(cleanup);
    const cli = (args: string[]) => runCli(['--db', db, ...args], { cwd: dir });
    const accounts = f.accounts;
    // Each case: REST's query string and the same search as CLI arguments.
    const cases: Array<{ rest: Record<string, string>; args: string[] }> = [
      { rest: {}, args: ['--no-snippets'] },
      { rest: { q: 'budget', snippets: 'true' }, args: ['budget'] },
      { rest: { q: 'subject:budget OR lunch', snippets: 'true' }, args: ['subject:budget', 'OR', 'lunch'] },
      { rest: { accountId: String(accounts.work) }, args: ['--account', String(accounts.work), '--no-snippets'] },
      { rest: { folder: 'INBOX' }, args: ['--folder', 'INBOX', '--no-snippets'] },
      {
        rest: { from: '2024-02-01', to: '2024-03-06' },
        args: ['--from', '2024-02-01', '--to', '2024-03-06', '--no-snippets'],
      },
      { rest: { direction: 'outgoing' }, args: ['--direction', 'outgoing', '--no-snippets'] },
      {
        rest: { sortBy: 'subject', sortOrder: 'asc', page: '2', pageSize: '2' },
        args: ['--sort-by', 'subject', '--sort-order', 'asc', '--page', '2', '--page-size', '2', '--no-snippets'],
      },
      { rest: { q: 'budget', include: 'threadId', snippets: 'true' }, args: ['budget', '--include', 'threadId'] },
      { rest: { pageSize: '1000' }, args: ['--page-size', '1000', '--no-snippets'] },
    ];
    for (const [user, key] of [
      ['alice', f.keys.alice],
      [undefined, f.keys.admin],
    ] as const) {
      for (const c of cases) {
        const rest = await api.request.get('/api/v1/emails').query(c.rest).set(bearer(key));
        t.is(rest.status, 200, JSON.stringify(c.rest));
        const viaCli = json(t, await cli(['search', ...c.args, '--json', ...(user ? ['--user', user] : [])]));
        t.deepEqual(viaCli, rest.body, `${user ?? 'operator'}: ${c.args.join(' ')}`);
      }
    }
    const all = (await api.request.get('/api/v1/emails').query({ pageSize: 100 }).set(bearer(f.keys.admin))).body as {
      items: Array<{ id: number; accountId: number }>;
      totalItems: number;
    };
    t.true(all.totalItems >= 8, 'the exact count of every message');
    for (const { id } of all.items) {
      const rest = await api.request.get(`/api/v1/emails/${id}`).set(bearer(f.keys.admin));
      t.deepEqual(json(t, await cli(['show', String(id), '--json'])), rest.body, `message ${id}`);
    }
    // alice reads her accounts only: another's message is not there for her, and not logged.
    const bobs = all.items.find((i) => i.accountId === accounts.personal)!;
    fails(t, await cli(['show', String(bobs.id), '--user', 'alice']), `no message ${bobs.id} that alice may read`);
    const alices = all.items.find((i) => i.accountId === accounts.work)!;
    ok(t, await cli(['show', String(alices.id), '--user', 'alice']));
    ok(t, await cli(['search', 'budget', '--account', String(accounts.work), '--user', 'alice', '--page-size', '5']));
    // An inactive user reads nothing.
    fails(t, await cli(['search', '--user', 'dave']), 'dave is inactive');

    await api.gateway.accessLog.flush();
    const log = json<LogRow[]>(t, await cli(['access-log', '--json', '--limit', '1000']));
    const fromCli = log.filter((r) => r.source === 'cli');
    t.is(fromCli.length, cases.length * 2 + all.items.length + 2, 'every CLI read, and nothing more');
    for (const r of fromCli) {
      t.is(r.clientIp, ACTOR, 'the operating-system account and host that ran the command');
      t.falsy(r.keyPrefix);
    }
    const [lastSearch, lastOpen] = fromCli;
    t.like(lastSearch, {
      type: 'Search',
      username: 'alice',
      userId: f.users.alice,
      accountId: accounts.work,
      searchParams: { q: 'budget', accountId: String(accounts.work), pageSize: '5', snippets: 'true' },
    });
    t.like(lastOpen, { type: 'Open', username: 'alice', emailId: alices.id, accountId: alices.accountId });
    t.is(fromCli.filter((r) => r.type === 'Open' && r.userId === 0).length, all.items.length, 'the operator: user 0');
    t.is(log.filter((r) => r.source === 'api').length, cases.length * 2 + 1 + all.items.length, 'REST alike');
    t.regex(ok(t, await cli(['access-log', 'verify'])), /^intact, /, 'the chain holds the CLI entries');
  });
}

/** An archive with two accounts, whose first message carries escape sequences in its subject and body. */
async function hostileArchive(t: ExecutionContext, a: CliArchive): Promise<{ work: number; other: number }> {
  const work = Number(ok(t, await a.cli(['accounts', 'add', '--name', 'Work', '--email', 'alice@example.com'])));
  const other = Number(ok(t, await a.cli(['accounts', 'add', '--name', 'Other', '--email', 'eve@example.com'])));
  const message = (from: string, to: string, date: string, subject: string, body: string, id: string) =>
    `From x@y Mon Jan  1 00:00:00 2024\nFrom: ${from}\nTo: ${to}\nSubject: ${subject}\nDate: ${date}\nMessage-ID: <${id}@example.com>\n\n${body}\n\n`;
  writeFileSync(
    join(a.dir, 'work.mbox'),
    message(
      'Mallory <mallory@example.com>',
      'alice@example.com',
      'Mon, 1 Jan 2024 10:00:00 +0000',
      `Budget ${ESC}[31mred${ESC}[0m ${ESC}]0;owned title${BEL}plan`,
      `The budget is ${ESC}[2J${ESC}[Hcleared ${ESC}]52;c;aGVsbG8=${BEL}here.\r\nFake\rline ${ESC}P+q544e${ESC}\\end`,
      'm1',
    ) +
      message(
        'Alice <alice@example.com>',
        'bob@example.com',
        'Tue, 2 Jan 2024 10:00:00 +0000',
        'Lunch',
        'Lunch tomorrow? No budget talk.',
        'm2',
      ),
  );
  writeFileSync(
    join(a.dir, 'other.mbox'),
    message('Eve <eve@example.com>', 'x@example.com', 'Wed, 3 Jan 2024 10:00:00 +0000', 'Elsewhere', 'budget', 'm3'),
  );
  ok(t, await a.cli(['import', String(work), join(a.dir, 'work.mbox')]));
  ok(t, await a.cli(['import', String(other), join(a.dir, 'other.mbox')]));
  if (a.kind === 'postgres') ok(t, await a.cli(['index']));
  return { work, other };
}

eachStore('search and show print mail text with its escape sequences and control characters removed', async (t, a) => {
  await hostileArchive(t, a);
  const page = json<{ items: Array<{ id: number; subject: string }>; totalItems: number }>(
    t,
    await a.cli(['search', 'subject:budget', '--json']),
  );
  t.is(page.totalItems, 1);
  const id = page.items[0]!.id;
  t.true(page.items[0]!.subject.includes(ESC), '--json keeps the stored text (escaped by JSON)');
  const outputs = {
    search: ok(t, await a.cli(['search', 'budget'])),
    show: ok(t, await a.cli(['show', String(id)])),
    text: ok(t, await a.cli(['show', String(id), '--text'])),
  };
  for (const [name, out] of Object.entries(outputs)) {
    t.false(
      /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(out),
      `${name}: no control character but line feeds and tabs`,
    );
    t.false(
      out.includes('owned title') || out.includes('aGVsbG8') || out.includes('544e'),
      `${name}: no sequence's payload`,
    );
  }
  t.regex(outputs.search, /^3 messages match; 1 to 3 shown \(page 1 of 1\)\./);
  t.regex(outputs.search, new RegExp(`^${id}  2024-01-01T10:00:00\\.000Z  Mallory <mallory@example\\.com>$`, 'm'));
  t.regex(outputs.search, /^ {4}Budget red plan {2}\[INBOX\]$/m);
  t.regex(outputs.search, /^ {4}The budget is cleared here\. Fake line end$/m, 'the snippet, marks removed in a pipe');
  t.regex(outputs.show, /^Subject: Budget red plan$/m);
  t.regex(outputs.show, /^From: Mallory <mallory@example\.com>$/m);
  t.regex(outputs.show, /\n\nThe budget is cleared here\.\nFake\nline end\n$/);
  t.is(outputs.text, 'The budget is cleared here.\nFake\nline end\n');
});

eachStore(
  'search pages with an exact count; mistakes are one sentence naming the option; show refuses what it cannot print',
  async (t, a) => {
    const { work } = await hostileArchive(t, a);
    const second = ok(t, await a.cli(['search', 'budget', '--page-size', '2', '--page', '2', '--no-snippets']));
    t.regex(second, /^3 messages match; 3 to 3 shown \(page 2 of 2\)\.\n\n\d+  2024-01-01T10:00:00\.000Z/);
    t.false(second.includes('    The budget'), '--no-snippets');
    t.is(
      ok(t, await a.cli(['search', 'budget', '--page', '9'])),
      '3 messages match; page 9 is past the last page (1).\n',
    );
    t.is(ok(t, await a.cli(['search', 'nothing-like-this'])), 'No messages match.\n');
    t.regex(
      ok(t, await a.cli(['search', '--account', String(work), '--direction', 'outgoing'])),
      /^1 message matches;[^\n]*\n\n\d+ {2}2024-01-02T10:00:00\.000Z {2}Alice <alice@example\.com>\n {4}Lunch {2}\[INBOX, sent\]\n$/,
    );
    const usage = (r: { code: number | null }) => t.is(r.code, 2, 'a usage mistake exits 2');
    for (const [args, mention] of [
      [['search', '--page', '0'], '--page'],
      [['search', '--page-size', 'many'], '--page-size'],
      [['search', '--from', '2024-13-01'], '--from'],
      [['search', '--direction', 'sideways'], '--direction'],
      [['search', '--sort-by', 'size'], '--sort-by'],
      [['search', '--include', 'body'], '--include'],
      [['search', 'has:pdf'], 'QUERY: q: has:pdf is not supported'],
      ...(a.kind === 'sqlite' ? ([[['search', 'is:read'], 'is:read']] as const) : []),
      [['show', 'abc'], 'message id'],
      [['show', '1', '--text', '--html'], 'cannot be combined'],
    ] as const) {
      const r = await a.cli([...args]);
      fails(t, r, mention);
      usage(r);
    }
    fails(t, await a.cli(['show', '999999']), 'no message 999999');
    fails(t, await a.cli(['search', '--user', 'nobody']), 'nobody');
    const id = json<{ items: Array<{ id: number }> }>(t, await a.cli(['search', 'subject:lunch', '--json'])).items[0]!
      .id;
    fails(t, await a.cli(['show', String(id), '--html']), 'no HTML body');
    // Nothing refused or missing was recorded: the searches and opens above that succeeded only.
    const log = json<LogRow[]>(t, await a.cli(['access-log', '--json']));
    t.deepEqual(
      log.filter((r) => r.source === 'cli').map((r) => r.type),
      ['Search', 'Search', 'Search', 'Search', 'Search'],
    );
  },
);
