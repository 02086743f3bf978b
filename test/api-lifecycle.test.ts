// The service's life around requests: workers that fail and are replaced, and a real server
// process that flushes every access-log entry when it is stopped (SPEC.md, “Access log entry”).
import anyTest, { type TestFn } from 'ava';
import Database from '../engine/sqlite/driver.js';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { openArchive } from '../engine/sqlite/open.js';
import { ArchiveWriter } from '../engine/sqlite/writer.js';
import type { EmailSummaryDto } from '../shared/dto.js';
import { bearer, startApi, type ApiHarness } from './helpers/api.js';
import { createFixture, email } from './helpers/fixture.js';
import { waitFor } from './helpers/redis.js';
import { startServerProcess } from './helpers/server-process.js';

const test = anyTest as TestFn<{ faulty: ApiHarness }>;

test.before(async (t) => {
  t.context = { faulty: await startApi({ Engine: { Threads: 1 } }, { gateway: { faultInjection: true } }) };
});
test.after.always(async (t) => {
  await t.context.faulty?.close();
});

// ---------------------------------------------------------------------------------------------
// Worker failure recovery (faultInjection runs the `fault` job through the real pool)

test.serial('a worker that throws fails only its job; the next API request succeeds', async (t) => {
  const { faulty } = t.context;
  const err = await t.throwsAsync(faulty.gateway.engine.run({ kind: 'fault', mode: 'throw' }));
  t.regex(String(err?.message), /injected fault/);
  const res = await faulty.request.get('/api/v1/accounts').set(bearer(faulty.fixture.keys.admin));
  t.is(res.status, 200);
  t.is(res.body.length, 3);
});

test.serial(
  'a worker that exits fails only its job; the pool replaces it and the next API request succeeds',
  async (t) => {
    const { faulty } = t.context;
    await t.throwsAsync(faulty.gateway.engine.run({ kind: 'fault', mode: 'exit' }));
    const res = await faulty.request
      .get(`/api/v1/emails/${faulty.fixture.emails.budget}`)
      .set(bearer(faulty.fixture.keys.alice));
    t.is(res.status, 200);
    t.is(res.body.subject, 'Quarterly budget review');
    // And again, twice in a row: each replacement worker is as good as the first.
    await t.throwsAsync(faulty.gateway.engine.run({ kind: 'fault', mode: 'exit' }));
    await t.throwsAsync(faulty.gateway.engine.run({ kind: 'fault', mode: 'exit' }));
    const search = await faulty.request
      .get('/api/v1/emails')
      .query({ q: 'budget' })
      .set(bearer(faulty.fixture.keys.admin));
    t.is(search.status, 200);
    t.true(search.body.totalItems >= 2);
    t.is(faulty.gateway.engine.threads, 1);
  },
);

test.serial('API requests queued behind a crashing job on a one-thread pool all succeed', async (t) => {
  const { faulty } = t.context;
  const key = faulty.fixture.keys.admin;
  const crash = faulty.gateway.engine.run({ kind: 'fault', mode: 'exit' });
  const requests = Array.from({ length: 8 }, (_, i) =>
    i % 2 === 0
      ? faulty.request.get('/api/v1/emails').set(bearer(key))
      : faulty.request.get(`/api/v1/emails/${faulty.fixture.emails.lunch}`).set(bearer(key)),
  );
  await t.throwsAsync(crash);
  const statuses = (await Promise.all(requests)).map((r) => r.status);
  t.deepEqual(statuses, [200, 200, 200, 200, 200, 200, 200, 200]);
});

test('with two threads, one worker crashing does not disturb requests served by the other', async (t) => {
  const api = await startApi({ Engine: { Threads: 2 } }, { gateway: { faultInjection: true } });
  t.teardown(() => api.close());
  const key = api.fixture.keys.bob;
  const crashes = [
    api.gateway.engine.run({ kind: 'fault', mode: 'exit' }),
    api.gateway.engine.run({ kind: 'fault', mode: 'throw' }),
  ];
  const requests = Array.from({ length: 10 }, () => api.request.get('/api/v1/emails').set(bearer(key)));
  const results = await Promise.allSettled(crashes);
  t.deepEqual(
    results.map((r) => r.status),
    ['rejected', 'rejected'],
  );
  for (const res of await Promise.all(requests)) {
    t.is(res.status, 200);
    t.deepEqual(
      (res.body.items as EmailSummaryDto[]).map((i) => i.id).sort(),
      [api.fixture.emails.family, api.fixture.emails.umlaut].sort(),
    );
  }
  t.is(api.gateway.engine.threads, 2);
});

test('without faultInjection the fault job is refused and no worker dies', async (t) => {
  const api = await startApi();
  t.teardown(() => api.close());
  const err = await t.throwsAsync(api.gateway.engine.run({ kind: 'fault', mode: 'exit' }));
  t.regex(String(err?.message), /fault injection is disabled/);
  t.is((await api.request.get('/api/v1/stats').set(bearer(api.fixture.keys.admin))).status, 200);
});

// ---------------------------------------------------------------------------------------------
// The real server process: SIGTERM flushes the access log

interface LogRow {
  id: number;
  user_id: number;
  type: string;
  at: number;
  key_prefix: string;
  client_ip: string;
  email_id: number | null;
  account_id: number | null;
  search_params: string | null;
  source: string;
}

function readAccessLog(dbPath: string): LogRow[] {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.prepare('SELECT * FROM access_log ORDER BY id').all() as LogRow[];
  } finally {
    db.close();
  }
}

test('SIGTERM right after Search, Open and Download flushes every access-log entry, attributed to the key owner', async (t) => {
  const f = createFixture();
  t.teardown(f.cleanup);
  const server = await startServerProcess(f);
  t.teardown(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
  });
  // X-Forwarded-For is ignored without Server:TrustProxy: it must not reach the log as the client IP.
  const get = (path: string, key: string) =>
    fetch(`${server.url}${path}`, { headers: { ...bearer(key), 'X-Forwarded-For': '203.0.113.99' } });

  const budgetXlsx = f.attachments['budget:budget "Q1" €.xlsx']!;
  const responses = await Promise.all([
    get(`/api/v1/emails?q=budget&accountId=${f.accounts.work}&sortBy=subject&page=1&pageSize=5`, f.keys.alice),
    get(`/api/v1/emails/${f.emails.budget}`, f.keys.alice),
    get(`/api/v1/emails/${f.emails.budget}/attachments/${budgetXlsx}`, f.keys.alice),
    get(`/api/v1/emails?from=2024-01-01&to=2024-12-31&direction=incoming`, f.keys.bob),
    get(`/api/v1/emails/${f.emails.family}`, f.keys.bob),
    get(`/api/v1/emails/${f.emails.team}`, f.keys.admin),
    // Not data accesses, or refused: these must not be logged.
    get('/api/v1/accounts', f.keys.alice),
    get('/api/v1/stats', f.keys.alice),
    get(`/api/v1/emails/${f.emails.family}`, f.keys.alice),
    get('/api/v1/emails', f.keys.revoked),
  ]);
  t.deepEqual(
    responses.map((r) => r.status),
    [200, 200, 200, 200, 200, 200, 200, 200, 404, 401],
  );
  await Promise.all(responses.map((r) => r.arrayBuffer()));

  // fetch keeps its connections alive: idle keep-alive sockets must not delay the exit.
  const stopAt = Date.now();
  server.child.kill('SIGTERM');
  const { code, signal } = await server.exit;
  t.log(`exit ${Date.now() - stopAt} ms after SIGTERM`);
  t.true(Date.now() - stopAt < 5000);
  t.is(code, 0);
  t.is(signal, null);
  t.true(server.lines.some((l) => l.msg === 'stopped'));

  const rows = readAccessLog(f.dbPath);
  const prefix = (key: string) => key.slice(0, 11);
  const simplified = rows
    .map((r) => ({
      user: r.user_id,
      type: r.type,
      key: r.key_prefix,
      ip: r.client_ip,
      email: r.email_id,
      account: r.account_id,
      source: r.source,
    }))
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  const ip = '127.0.0.1';
  const expected = [
    {
      user: f.users.alice,
      type: 'Search',
      key: prefix(f.keys.alice),
      ip,
      email: null,
      account: f.accounts.work,
      source: 'api',
    },
    {
      user: f.users.alice,
      type: 'Open',
      key: prefix(f.keys.alice),
      ip,
      email: f.emails.budget,
      account: f.accounts.work,
      source: 'api',
    },
    {
      user: f.users.alice,
      type: 'Download',
      key: prefix(f.keys.alice),
      ip,
      email: f.emails.budget,
      account: f.accounts.work,
      source: 'api',
    },
    { user: f.users.bob, type: 'Search', key: prefix(f.keys.bob), ip, email: null, account: null, source: 'api' },
    {
      user: f.users.bob,
      type: 'Open',
      key: prefix(f.keys.bob),
      ip,
      email: f.emails.family,
      account: f.accounts.personal,
      source: 'api',
    },
    {
      user: f.users.admin,
      type: 'Open',
      key: prefix(f.keys.admin),
      ip,
      email: f.emails.team,
      account: f.accounts.shared,
      source: 'api',
    },
  ].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  t.deepEqual(simplified, expected);

  const aliceSearch = rows.find((r) => r.type === 'Search' && r.user_id === f.users.alice)!;
  t.deepEqual(JSON.parse(aliceSearch.search_params!), {
    q: 'budget',
    accountId: String(f.accounts.work),
    sortBy: 'subject',
    page: '1',
    pageSize: '5',
  });
  const bobSearch = rows.find((r) => r.type === 'Search' && r.user_id === f.users.bob)!;
  t.deepEqual(JSON.parse(bobSearch.search_params!), { from: '2024-01-01', to: '2024-12-31', direction: 'incoming' });
  for (const r of rows) {
    t.true(Math.abs(r.at - Date.now()) < 60_000, 'logged at the time of the request');
    if (r.type !== 'Search') t.is(r.search_params, null);
  }
});

test('SIGTERM while a request is being received: the request is still answered and logged before exit', async (t) => {
  const f = createFixture();
  t.teardown(f.cleanup);
  const server = await startServerProcess(f);
  t.teardown(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
  });
  // Send everything but the blank line that ends the headers: the request is in progress.
  const socket = connect({ host: '127.0.0.1', port: server.port });
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  let response = '';
  socket.on('data', (c: Buffer) => (response += c.toString('utf8')));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => undefined);
  socket.write(
    `GET /api/v1/emails/${f.emails.budget} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${f.keys.alice}\r\n`,
  );
  await new Promise((r) => setTimeout(r, 200));

  server.child.kill('SIGTERM');
  await waitFor('the server to start shutting down', () => server.lines.some((l) => l.msg === 'shutting down'), 5000);
  socket.write('\r\n');
  await closed;
  const { code } = await server.exit;

  t.regex(response, /^HTTP\/1\.1 200 /, response.slice(0, 300));
  t.regex(response, /Quarterly budget review/);
  t.is(code, 0);
  const rows = readAccessLog(f.dbPath);
  t.is(rows.length, 1);
  t.like(rows[0], { type: 'Open', user_id: f.users.alice, email_id: f.emails.budget });
});

test('SIGTERM during a download the client stalls: the server cuts it after the drain period, flushes the log and exits 0', async (t) => {
  const f = createFixture();
  t.teardown(f.cleanup);
  const db = openArchive(f.dbPath);
  const writer = new ArchiveWriter(db);
  const emailId = writer.batch(() =>
    writer.add(
      email({
        accountId: f.accounts.shared,
        subject: 'large',
        attachments: [
          {
            fileName: 'large.bin',
            contentType: 'application/octet-stream',
            content: Buffer.alloc(16 * 1024 * 1024, 1),
          },
        ],
      }),
    )!,
  );
  const attachmentId = db.prepare('SELECT id FROM attachments WHERE email_id = ?').pluck().get(emailId) as number;
  db.close();
  const server = await startServerProcess(f);
  t.teardown(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
  });
  // Start the download and stop reading: the server cannot finish writing 16 MB.
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    httpGet(
      `${server.url}/api/v1/emails/${emailId}/attachments/${attachmentId}`,
      { headers: bearer(f.keys.alice) },
      resolve,
    ).on('error', reject);
  });
  t.is(response.statusCode, 200);
  response.pause();
  response.on('error', () => undefined);
  const cut = new Promise<boolean>((resolve) => response.once('close', () => resolve(!response.complete)));

  const stopAt = Date.now();
  server.child.kill('SIGTERM');
  const { code } = await server.exit;
  const took = Date.now() - stopAt;
  t.log(`exit ${took} ms after SIGTERM`);
  t.is(code, 0);
  t.true(took >= 5000 && took < 11_000, `waited for the download, then gave up (${took} ms)`);
  response.resume(); // drain what arrived: the stream then ends early, incomplete
  t.true(await cut, 'the stalled download was cut off');
  const rows = readAccessLog(f.dbPath);
  t.is(rows.length, 1);
  t.like(rows[0], { type: 'Download', user_id: f.users.alice, email_id: emailId, account_id: f.accounts.shared });
});
