// SPEC.md, “Errors”: every error is RFC 7807 problem+json with type, title, status, detail and
// instance; unknown paths are 404, other methods 405, HEAD works, a disabled API is 404
// everywhere, and a 500 never leaks a stack or an HTML page.
import anyTest, { type TestFn } from 'ava';
import { get as httpGet } from 'node:http';
import { openArchive } from '../engine/sqlite/open.js';
import { ArchiveWriter } from '../engine/sqlite/writer.js';
import { bearer, capturingLogger, listen, startApi, type ApiHarness } from './helpers/api.js';
import { createFixture, email } from './helpers/fixture.js';

const test = anyTest as TestFn<{
  api: ApiHarness;
  off: ApiHarness;
  broken: ApiHarness;
  brokenLog: Array<Record<string, unknown>>;
  bigEmail: number;
  bigAttachment: number;
  bigSize: number;
  cleanupBroken: () => void;
}>;

test.before(async (t) => {
  const api = await startApi();
  const off = await startApi({ Api: { Enabled: false } });

  // An archive damaged on purpose, to provoke genuine server-side failures.
  const brokenFixture = createFixture();
  const db = openArchive(brokenFixture.dbPath);
  const bigSize = 700_000; // three 256 KiB chunks
  const writer = new ArchiveWriter(db);
  const bigEmail = writer.batch(() =>
    writer.add(
      email({
        accountId: brokenFixture.accounts.work,
        subject: 'big',
        attachments: [
          { fileName: 'big.bin', contentType: 'application/octet-stream', content: Buffer.alloc(bigSize, 7) },
        ],
      }),
    )!,
  );
  const bigAttachment = db.prepare('SELECT id FROM attachments WHERE email_id = ?').pluck().get(bigEmail) as number;
  // The big attachment loses its middle chunk: the failure happens after the headers are sent.
  db.prepare(
    'DELETE FROM attachment_chunks WHERE seq = 1 AND content_id = (SELECT content_id FROM attachments WHERE id = ?)',
  ).run(bigAttachment);
  // notes.txt loses its only chunk: the failure happens before anything is sent.
  db.prepare('DELETE FROM attachment_chunks WHERE content_id = (SELECT content_id FROM attachments WHERE id = ?)').run(
    brokenFixture.attachments['budget:notes.txt'],
  );
  // Message detail reads email_bodies: without the table that query throws inside the worker.
  db.exec('DROP TABLE email_bodies');
  db.close();
  const { logger, lines } = capturingLogger();
  const broken = await startApi({}, { useFixture: brokenFixture, logger });
  // The broken harness does not own its fixture (useFixture): it is removed in after.always.
  t.context = {
    api,
    off,
    broken,
    brokenLog: lines,
    bigEmail,
    bigAttachment,
    bigSize,
    cleanupBroken: brokenFixture.cleanup,
  };
});

test.after.always(async (t) => {
  await t.context.api?.close();
  await t.context.off?.close();
  await t.context.broken?.close();
  t.context.cleanupBroken?.();
});

type Res = { status: number; headers: Record<string, string>; body: Record<string, unknown>; text: string };

function assertProblem(t: import('ava').ExecutionContext, res: Res, status: number, path: string, label = path) {
  t.is(res.status, status, label);
  t.is(res.headers['content-type'], 'application/problem+json', label);
  t.deepEqual(Object.keys(res.body).sort(), ['detail', 'instance', 'status', 'title', 'type'], label);
  t.is(res.body.status, status, label);
  t.is(res.body.instance, path, label);
  t.regex(String(res.body.type), /^(https?:\/\/\S+|about:blank)$/, label);
  t.true(typeof res.body.title === 'string' && res.body.title.length > 0, label);
  t.true(typeof res.body.detail === 'string' && res.body.detail.length > 0, label);
  t.is(res.headers['x-content-type-options'], 'nosniff', label);
}

function paths(api: ApiHarness) {
  const f = api.fixture;
  return [
    '/api/v1/accounts',
    `/api/v1/accounts/${f.accounts.work}/folders`,
    '/api/v1/emails',
    `/api/v1/emails/${f.emails.budget}`,
    `/api/v1/emails/${f.emails.budget}/attachments/${f.attachments['budget:notes.txt']}`,
    '/api/v1/stats',
  ];
}

test('problems carry type, title, status, detail and instance (= path, without the query)', async (t) => {
  const { api } = t.context;
  const f = api.fixture;
  assertProblem(
    t,
    await api.request.get('/api/v1/emails?sortBy=size&x=1').set(bearer(f.keys.admin)),
    400,
    '/api/v1/emails',
  );
  assertProblem(t, await api.request.get('/api/v1/stats'), 401, '/api/v1/stats');
  assertProblem(
    t,
    await api.request.get('/api/v1/emails/999999').set(bearer(f.keys.admin)),
    404,
    '/api/v1/emails/999999',
  );
  assertProblem(t, await api.request.delete('/api/v1/stats').set(bearer(f.keys.admin)), 405, '/api/v1/stats');
  const res = await api.request.get('/api/v1/emails?sortBy=size').set(bearer(f.keys.admin));
  t.like(res.body, { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.1', title: 'Bad Request' });
});

test('unknown paths under /api are 404 problem+json, with or without a key', async (t) => {
  const { api } = t.context;
  const f = api.fixture;
  const unknown = [
    '/api',
    '/api/',
    '/api/v1',
    '/api/v1/',
    '/api/v2/accounts',
    '/api/v1/nope',
    '/api/v1/account',
    '/api/v1/accounts/1/nope',
    `/api/v1/emails/${f.emails.budget}/attachments`,
    `/api/v1/emails/${f.emails.budget}/attachments/1/extra`,
    '/api/v1/stats/x',
  ];
  for (const path of unknown) {
    assertProblem(t, await api.request.get(path).set(bearer(f.keys.admin)), 404, path, `GET ${path} with key`);
    assertProblem(t, await api.request.get(path), 404, path, `GET ${path} without key`);
    const post = await api.request.post(path).set(bearer(f.keys.admin));
    t.is(post.status, 404, `POST ${path}`);
  }
});

test('POST, PUT, DELETE, PATCH and OPTIONS on every known path are 405 with Allow: GET, HEAD', async (t) => {
  const { api } = t.context;
  const f = api.fixture;
  for (const path of paths(api)) {
    for (const method of ['post', 'put', 'delete', 'patch', 'options'] as const) {
      for (const headers of [bearer(f.keys.admin), {}]) {
        const res = await api.request[method](path)
          .set(headers)
          .send(method === 'options' ? undefined : { any: 'body' });
        assertProblem(t, res, 405, path, `${method.toUpperCase()} ${path}`);
        t.is(res.headers.allow, 'GET, HEAD', `${method.toUpperCase()} ${path}`);
        t.regex(String(res.body.title), /Method Not Allowed/);
      }
    }
  }
});

test('HEAD works on every endpoint: same status and headers as GET, no body', async (t) => {
  const { api } = t.context;
  const f = api.fixture;
  for (const path of paths(api)) {
    // Uncompressed: a HEAD is never compressed (there is no body to encode), a GET may be.
    const get = await api.request.get(path).set(bearer(f.keys.admin)).set('Accept-Encoding', 'identity');
    const head = await api.request.head(path).set(bearer(f.keys.admin)).set('Accept-Encoding', 'identity');
    t.is(get.status, 200, path);
    t.is(head.status, 200, path);
    t.is(head.headers['content-type'], get.headers['content-type'], path);
    t.is(head.headers['content-length'], get.headers['content-length'], path);
    t.falsy(head.text, path);
  }
  const attachment = paths(api)[4]!;
  const head = await api.request.head(attachment).set(bearer(f.keys.admin));
  t.is(head.headers['content-length'], '18');
  t.regex(head.headers['content-disposition']!, /^attachment;/);
  const missing = await api.request.head('/api/v1/emails/999999').set(bearer(f.keys.admin));
  t.is(missing.status, 404);
  t.is(missing.headers['content-type'], 'application/problem+json');
  t.is((await api.request.head('/api/v1/stats')).status, 401);
});

test('HEAD on a message or an attachment is not logged as an Open or a Download; GET is', async (t) => {
  const api = await startApi();
  t.teardown(() => api.close());
  const f = api.fixture;
  const detail = `/api/v1/emails/${f.emails.invoice}`;
  const attachment = `${detail}/attachments/${f.attachments['invoice:notes.txt']}`;
  const rows = async () => {
    await api.gateway.accessLog.flush();
    return api.db().prepare('SELECT type FROM access_log WHERE email_id = ? ORDER BY id').pluck().all(f.emails.invoice);
  };
  t.is((await api.request.head(detail).set(bearer(f.keys.admin))).status, 200);
  t.is((await api.request.head(attachment).set(bearer(f.keys.admin))).status, 200);
  t.deepEqual(await rows(), []);
  t.is((await api.request.get(detail).set(bearer(f.keys.admin))).status, 200);
  t.is((await api.request.get(attachment).set(bearer(f.keys.admin))).status, 200);
  t.deepEqual(await rows(), ['Open', 'Download']);
});

test('Api:Enabled=false: every /api/* path is 404 for every method, even with a valid key', async (t) => {
  const { off } = t.context;
  const f = off.fixture;
  for (const path of [...paths(off), '/api', '/api/v1', '/api/v1/nope', '/api/anything/else']) {
    for (const method of ['get', 'post', 'delete', 'head'] as const) {
      const res = await off.request[method](path).set(bearer(f.keys.admin));
      t.is(res.status, 404, `${method.toUpperCase()} ${path}`);
      t.is(res.headers['content-type'], 'application/problem+json');
      t.is(res.headers['ratelimit-limit'], undefined, 'no API middleware runs');
    }
  }
  // The documentation is not mapped either.
  for (const path of ['/apidocs', '/apidocs/spec/v1.json']) t.is((await off.request.get(path)).status, 404, path);
});

test('Api:Enabled=false with Mcp:Enabled=true: /api/* and the API documentation stay 404, never a login redirect', async (t) => {
  const mcpOnly = await startApi(
    { Api: { Enabled: false }, Mcp: { Enabled: true } },
    { useFixture: t.context.off.fixture },
  );
  t.teardown(() => mcpOnly.close());
  const f = mcpOnly.fixture;
  for (const path of [...paths(mcpOnly), '/api', '/api/v1/nope', '/apidocs', '/apidocs/spec/v1.json']) {
    for (const headers of [bearer(f.keys.admin), {}]) {
      const res = await mcpOnly.request.get(path).set(headers);
      t.is(res.status, 404, path);
      t.is(res.headers.location, undefined, path);
      t.is(res.headers['content-type'], 'application/problem+json', path);
    }
  }
});

test('a query that throws inside the worker is a 500 problem+json without a stack; the pool keeps serving', async (t) => {
  const { broken, brokenLog } = t.context;
  const f = broken.fixture;
  const path = `/api/v1/emails/${f.emails.budget}`;
  // A browser's Accept: HTML first, anything after; the error is still problem+json.
  const res = await broken.request
    .get(path)
    .set(bearer(f.keys.admin))
    .set('Accept', 'text/html,application/xhtml+xml,*/*;q=0.8');
  assertProblem(t, res, 500, path);
  t.like(res.body, { title: 'Internal Server Error', type: 'https://tools.ietf.org/html/rfc9110#section-15.6.1' });
  t.notRegex(res.text, /email_bodies|no such table|SqliteError|\bat \S+ \(|\.js:\d+|<html|<!DOCTYPE/i);
  // The operator still hears of it, in the log. (What the log can say about the cause is
  // limited by what survives the worker boundary: see the report on SqliteError cloning.)
  const logged = brokenLog.find((l) => l.msg === 'request failed' && l.path === path);
  t.truthy(logged);
  t.like(logged, { level: 50, method: 'GET' });
  t.truthy(logged?.err);
  // The same worker serves the next request.
  const next = await broken.request.get('/api/v1/emails').set(bearer(f.keys.admin));
  t.is(next.status, 200);
  t.true(next.body.totalItems > 0);
});

test('an attachment whose content cannot be read is a 500 problem+json, not a half-labelled download', async (t) => {
  const { broken } = t.context;
  const f = broken.fixture;
  const path = `/api/v1/emails/${f.emails.budget}/attachments/${f.attachments['budget:notes.txt']}`;
  const res = await broken.request.get(path).set(bearer(f.keys.admin));
  assertProblem(t, res, 500, path);
  t.notRegex(res.text, /missing chunk|content_id|\bat \S+ \(/);
  // Headers meant for the file must not dress up the error as one.
  t.is(res.headers['content-disposition'], undefined);
  t.is(res.headers['content-security-policy'], undefined);
});

test('a failure after the download started aborts the connection instead of ending a short body cleanly', async (t) => {
  const { broken, bigEmail, bigAttachment, bigSize } = t.context;
  const server = await listen(broken.gateway);
  t.teardown(() => server.close());
  const outcome = await new Promise<{ status: number; length: string | undefined; received: number; aborted: boolean }>(
    (resolve, reject) => {
      const req = httpGet(
        `${server.url}/api/v1/emails/${bigEmail}/attachments/${bigAttachment}`,
        { headers: bearer(broken.fixture.keys.admin) },
        (res) => {
          let received = 0;
          let aborted = false;
          res.on('data', (c: Buffer) => (received += c.length));
          res.on('aborted', () => (aborted = true));
          res.on('error', () => (aborted = true));
          res.on('close', () =>
            resolve({
              status: res.statusCode!,
              length: res.headers['content-length'],
              received,
              aborted: aborted || !res.complete,
            }),
          );
        },
      );
      req.on('error', reject);
      req.setTimeout(10_000, () => req.destroy(new Error('timed out: the server neither finished nor aborted')));
    },
  );
  t.is(outcome.status, 200);
  t.is(outcome.length, String(bigSize));
  t.true(outcome.received < bigSize);
  t.true(outcome.aborted, 'the client can tell the body is incomplete');
});
