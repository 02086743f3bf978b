// What download and browser clients expect of /api/v1 beyond SPEC.md (docs/openapi.md, "HTTP
// conventions"): Range requests resumed by the real curl, ETag and 304, gzip and br for JSON,
// CORS for listed origins, and 406 for an Accept nothing satisfies. A v1 client that sends none of
// these headers gets SPEC.md's answers byte for byte. Both stores (TEST_STORE=postgres).
import anyTest, { type TestFn } from 'ava';
import { execFile } from 'node:child_process';
import { get as httpGet, type IncomingHttpHeaders } from 'node:http';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { bearer, listen, rawBody, startApi, type ApiHarness } from './helpers/api.js';
import { createFixture, type Fixture } from './helpers/fixture.js';
import { readAccessLog } from './helpers/store.js';

const run = promisify(execFile);
const HELPERS = fileURLToPath(new URL('./helpers/api.js', import.meta.url));
const FIXTURE = fileURLToPath(new URL('./helpers/fixture.js', import.meta.url));
const OPEN = fileURLToPath(new URL('../engine/sqlite/open.js', import.meta.url));
const WRITER = fileURLToPath(new URL('../engine/sqlite/writer.js', import.meta.url));
const BIG = 3 * 1024 * 1024 + 12_345; // 13 stored chunks, the last one partial

interface Context {
  f: Fixture;
  api: ApiHarness;
  server: Awaited<ReturnType<typeof listen>>;
  big: { emailId: number; attachmentId: number; sha256: string; size: number; bytes: Buffer };
  dir: string;
}
const test = anyTest as TestFn<Context>;

test.before(async (t) => {
  const f = createFixture();
  const script = `
    const { writeBigAttachment } = await import(${JSON.stringify(HELPERS)});
    const out = await writeBigAttachment(${JSON.stringify(f.dbPath)}, ${f.accounts.work}, ${BIG});
    // And a message whose detail is well over the compression threshold.
    const { openArchive } = await import(${JSON.stringify(OPEN)});
    const { ArchiveWriter } = await import(${JSON.stringify(WRITER)});
    const { email } = await import(${JSON.stringify(FIXTURE)});
    const db = openArchive(${JSON.stringify(f.dbPath)});
    const w = new ArchiveWriter(db);
    w.batch(() => w.add(email({ accountId: ${f.accounts.work}, subject: 'Minutes', textBody: 'The minutes of the meeting. '.repeat(300) })));
    db.close();
    process.stdout.write(JSON.stringify(out));`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script]);
  const written = JSON.parse(stdout) as Omit<Context['big'], 'bytes'>;
  const api = await startApi({ Api: { AllowedOrigins: ['https://app.example'] } }, { useFixture: f });
  const server = await listen(api.gateway);
  const dir = mkdtempSync(join(tmpdir(), 'range-'));
  // The original bytes, as curl must end up with them.
  const full = await api.request
    .get(`/api/v1/emails/${written.emailId}/attachments/${written.attachmentId}`)
    .set(bearer(f.keys.admin))
    .buffer(true)
    .parse(rawBody);
  t.context = { f, api, server, big: { ...written, bytes: full.body as Buffer }, dir };
});

test.after.always(async (t) => {
  await t.context.server?.close();
  await t.context.api?.close();
  t.context.f?.cleanup();
  if (t.context.dir) rmSync(t.context.dir, { recursive: true, force: true });
});

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
/** The budget message's spreadsheet attachment (fixture.ts keys them by message and file name). */
const budgetFile = (f: Fixture) => Object.entries(f.attachments).find(([k]) => k.startsWith('budget:'))![1];

/** A GET over a real socket that leaves the body as sent (supertest would decode gzip and br). */
function wireGet(
  url: string,
  headers: Record<string, string>,
): Promise<{ headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    httpGet(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}
const bigPath = (c: Context) => `/api/v1/emails/${c.big.emailId}/attachments/${c.big.attachmentId}`;

test.serial('curl -C - resumes a cut download; the file equals the original', async (t) => {
  const c = t.context;
  t.is(sha(c.big.bytes), c.big.sha256);
  const out = join(c.dir, 'big.bin');
  // A download cut off after 1,000,001 bytes, as a dropped connection leaves it.
  writeFileSync(out, c.big.bytes.subarray(0, 1_000_001));
  await c.api.gateway.accessLog.flush();
  const logged = (await readAccessLog(c.api.settings.Database.Path)).filter((r) => r.type === 'Download').length;
  const { stderr } = await run('curl', [
    '--silent',
    '--show-error',
    '--fail',
    '-C',
    '-',
    '-o',
    out,
    '-H',
    `Authorization: Bearer ${c.f.keys.admin}`,
    `${c.server.url}${bigPath(c)}`,
  ]);
  t.is(stderr, '');
  const resumed = readFileSync(out);
  t.is(resumed.length, c.big.size);
  t.is(sha(resumed), c.big.sha256);
  // Resuming is not a second download.
  await c.api.gateway.accessLog.flush();
  t.is((await readAccessLog(c.api.settings.Database.Path)).filter((r) => r.type === 'Download').length, logged);

  // And a download cut exactly at a chunk boundary resumes too.
  truncateSync(out, 256 * 1024 * 2);
  await run('curl', [
    '-sSf',
    '-C',
    '-',
    '-o',
    out,
    '-H',
    `Authorization: Bearer ${c.f.keys.admin}`,
    `${c.server.url}${bigPath(c)}`,
  ]);
  t.is(sha(readFileSync(out)), c.big.sha256);
});

test.serial(
  'Range: 206 with Content-Range, suffix ranges, If-Range, 416, and several ranges as the whole file',
  async (t) => {
    const c = t.context;
    const get = (headers: Record<string, string>) =>
      c.api.request
        .get(bigPath(c))
        .set({ ...bearer(c.f.keys.admin), ...headers })
        .buffer(true)
        .parse(rawBody);
    const whole = await get({});
    t.is(whole.status, 200);
    t.is(whole.headers['accept-ranges'], 'bytes');
    const etag = whole.headers.etag!;
    t.regex(etag, /^"(?:[0-9a-f]{64}|attachment-\d+)"$/, 'a strong ETag naming the content');

    const mid = await get({ Range: 'bytes=262140-262150' }); // across a chunk boundary
    t.is(mid.status, 206);
    t.is(mid.headers['content-range'], `bytes 262140-262150/${c.big.size}`);
    t.is(mid.headers['content-length'], '11');
    t.deepEqual(mid.body, c.big.bytes.subarray(262140, 262151));

    const tail = await get({ Range: 'bytes=-100' });
    t.is(tail.status, 206);
    t.deepEqual(tail.body, c.big.bytes.subarray(c.big.size - 100));

    const open = await get({ Range: `bytes=${c.big.size - 5}-` });
    t.is(open.headers['content-range'], `bytes ${c.big.size - 5}-${c.big.size - 1}/${c.big.size}`);

    const same = await get({ Range: 'bytes=0-9', 'If-Range': etag });
    t.is(same.status, 206);
    const changed = await get({ Range: 'bytes=0-9', 'If-Range': '"another"' });
    t.is(changed.status, 200, 'If-Range with another validator: the whole file');
    t.is(changed.body.length, c.big.size);

    const several = await get({ Range: 'bytes=0-9,100-109' });
    t.is(several.status, 200);
    t.is(several.body.length, c.big.size);

    const beyond = await c.api.request
      .get(bigPath(c))
      .set({ ...bearer(c.f.keys.admin), Range: `bytes=${c.big.size}-` });
    t.is(beyond.status, 416);
    t.is(beyond.headers['content-type'], 'application/problem+json');
    t.is(beyond.headers['content-range'], `bytes */${c.big.size}`);
    t.is(beyond.headers['content-disposition'], undefined, 'an error is never saved as the file');

    const ignored = await get({ Range: 'pages=1-2' });
    t.is(ignored.status, 200, 'a unit we do not serve is ignored');
  },
);

test.serial(
  'ETag and If-None-Match: 304 for a message and an attachment, only for a key that may see them',
  async (t) => {
    const c = t.context;
    const { f } = c;
    const detail = `/api/v1/emails/${f.emails.budget}`;
    const first = await c.api.request.get(detail).set(bearer(f.keys.admin)).set('Accept-Encoding', 'identity');
    t.is(first.status, 200);
    const etag = first.headers.etag!;
    t.regex(etag, /^"[A-Za-z0-9_-]{27}"$/);
    t.is(etag, `"${createHash('sha256').update(first.text).digest('base64url').slice(0, 27)}"`, 'from the content');
    const again = await c.api.request.get(detail).set(bearer(f.keys.admin)).set('If-None-Match', etag);
    t.is(again.status, 304);
    t.is(again.text, '');
    t.is(
      (await c.api.request.get(detail).set(bearer(f.keys.admin)).set('If-None-Match', `W/${etag}, "x"`)).status,
      304,
    );
    t.is((await c.api.request.get(detail).set(bearer(f.keys.admin)).set('If-None-Match', '"other"')).status, 200);
    // A key that cannot see the message gets its 404, whatever it claims to hold.
    const hidden = await c.api.request.get(detail).set(bearer(f.keys.bob)).set('If-None-Match', etag);
    t.is(hidden.status, 404);
    const noKey = await c.api.request.get(detail).set('If-None-Match', etag);
    t.is(noKey.status, 401);

    const attachment = `/api/v1/emails/${f.emails.budget}/attachments/${budgetFile(f)}`;
    const file = await c.api.request.get(attachment).set(bearer(f.keys.admin));
    t.is(file.status, 200);
    const cached = await c.api.request
      .get(attachment)
      .set(bearer(f.keys.admin))
      .set('If-None-Match', file.headers.etag!);
    t.is(cached.status, 304);
    t.is(cached.headers['content-disposition'], undefined);
  },
);

test.serial('a JSON answer is serialised once on the gateway thread, compressed or not', async (t) => {
  const c = t.context;
  const search = '/api/v1/emails?pageSize=100';
  // Counts serialisations of the search page (the only value with `items` and `totalItems`).
  // Serial: nothing else runs on this thread meanwhile. The workers have JSON objects of their own.
  const stringify = JSON.stringify;
  let pages = 0;
  JSON.stringify = ((value: unknown, ...rest: unknown[]) => {
    if (value !== null && typeof value === 'object' && 'items' in value && 'totalItems' in value) pages++;
    return (stringify as (...args: unknown[]) => string)(value, ...rest);
  }) as typeof JSON.stringify;
  try {
    for (const coding of ['identity', 'gzip', 'br']) {
      pages = 0;
      const res = await wireGet(`${c.server.url}${search}`, { ...bearer(c.f.keys.admin), 'Accept-Encoding': coding });
      t.regex(res.headers['content-type'] ?? '', /^application\/json; charset=utf-8$/);
      if (coding === 'identity')
        t.true((JSON.parse(res.body.toString('utf8')) as { items: unknown[] }).items.length > 0);
      else t.is(res.headers['content-encoding'], coding);
      t.is(pages, 1, `${coding}: the page is serialised ${pages} times`);
    }
  } finally {
    JSON.stringify = stringify;
  }
});

test.serial('gzip and br for JSON above 1 KB; identity unchanged; never for attachment bytes', async (t) => {
  const c = t.context;
  const { f } = c;
  const search = '/api/v1/emails?pageSize=100';
  const plain = await c.api.request.get(search).set(bearer(f.keys.admin)).set('Accept-Encoding', 'identity');
  t.is(plain.headers['content-encoding'], undefined);
  t.true(Number(plain.headers['content-length']) > 1024);
  for (const [coding, decode] of [
    ['gzip', gunzipSync],
    ['br', brotliDecompressSync],
  ] as const) {
    const res = await wireGet(`${c.server.url}${search}`, { ...bearer(f.keys.admin), 'Accept-Encoding': coding });
    t.is(res.headers['content-encoding'], coding, coding);
    t.regex(res.headers.vary ?? '', /Accept-Encoding/i);
    const decoded = decode(res.body).toString('utf8');
    t.deepEqual(JSON.parse(decoded), plain.body, coding);
    t.true(res.body.length < decoded.length / 2, `${coding} compresses`);
  }
  // A small answer is sent as is.
  const small = await c.api.request.get('/api/v1/accounts').set(bearer(f.keys.bob)).set('Accept-Encoding', 'gzip');
  t.is(small.headers['content-encoding'], undefined);
  // The ETag of a compressed message detail names its coding; If-None-Match matches any coding.
  let detail = '';
  const ids = (await c.api.request.get('/api/v1/emails?q=subject:minutes').set(bearer(f.keys.admin))).body.items.map(
    (e: { id: number }) => e.id,
  ) as number[];
  for (const id of ids) {
    const r = await c.api.request
      .get(`/api/v1/emails/${id}`)
      .set(bearer(f.keys.admin))
      .set('Accept-Encoding', 'identity');
    if (r.status === 200 && r.text.length > 1024) detail = `/api/v1/emails/${id}`;
  }
  t.not(detail, '', 'the fixture has a message whose detail is over 1 KB');
  const gz = await wireGet(`${c.server.url}${detail}`, { ...bearer(f.keys.admin), 'Accept-Encoding': 'gzip' });
  const id = await c.api.request.get(detail).set(bearer(f.keys.admin)).set('Accept-Encoding', 'identity');
  t.is(gz.headers['content-encoding'], 'gzip');
  t.is(gz.headers.etag, `${id.headers.etag!.slice(0, -1)}-gzip"`);
  const revalidated = await c.api.request
    .get(detail)
    .set(bearer(f.keys.admin))
    .set('If-None-Match', gz.headers.etag!)
    .set('Accept-Encoding', 'identity');
  t.is(revalidated.status, 304);
  // Attachment bytes: never encoded, whatever the client accepts.
  const bytes = await wireGet(`${c.server.url}${bigPath(c)}`, {
    ...bearer(f.keys.admin),
    'Accept-Encoding': 'gzip, br',
  });
  t.is(bytes.headers['content-encoding'], undefined);
  t.is(sha(bytes.body), c.big.sha256);
});

test.serial(
  'CORS: listed origins get the headers and their preflights; others are told it is not enabled',
  async (t) => {
    const c = t.context;
    const { f } = c;
    const pre = await c.api.request
      .options('/api/v1/emails')
      .set('Origin', 'https://app.example')
      .set('Access-Control-Request-Method', 'GET')
      .set('Access-Control-Request-Headers', 'authorization');
    t.is(pre.status, 204);
    t.is(pre.headers['access-control-allow-origin'], 'https://app.example');
    t.regex(pre.headers['access-control-allow-headers'] ?? '', /Authorization/);
    t.is(pre.headers['access-control-allow-methods'], 'GET, HEAD');
    t.regex(pre.headers.vary ?? '', /Origin/);

    const res = await c.api.request
      .get('/api/v1/accounts')
      .set(bearer(f.keys.admin))
      .set('Origin', 'https://app.example');
    t.is(res.status, 200);
    t.is(res.headers['access-control-allow-origin'], 'https://app.example');
    t.regex(res.headers['access-control-expose-headers'] ?? '', /RateLimit-Remaining.*ETag.*Content-Range/);

    const other = await c.api.request
      .options('/api/v1/emails')
      .set('Origin', 'https://evil.example')
      .set('Access-Control-Request-Method', 'GET');
    t.is(other.status, 403);
    t.is(other.headers['content-type'], 'application/problem+json');
    t.regex(other.body.detail, /not allowed.*Api:AllowedOrigins/);
    const plain = await c.api.request
      .get('/api/v1/accounts')
      .set(bearer(f.keys.admin))
      .set('Origin', 'https://evil.example');
    t.is(plain.status, 200);
    t.is(plain.headers['access-control-allow-origin'], undefined);

    // Off by default: a preflight is a clear 403, not a 405.
    const off = await startApi({}, { useFixture: f });
    try {
      const refused = await off.request
        .options('/api/v1/emails')
        .set('Origin', 'https://app.example')
        .set('Access-Control-Request-Method', 'GET');
      t.is(refused.status, 403);
      t.regex(refused.body.detail, /not enabled on this server \(Api:AllowedOrigins is empty\)/);
    } finally {
      await off.close();
    }
  },
);

test.serial(
  'Accept: 406 problem+json when neither JSON nor problem+json is acceptable; attachments excepted',
  async (t) => {
    const c = t.context;
    const { f } = c;
    for (const accept of ['text/html', 'application/xml', 'image/*']) {
      const res = await c.api.request.get('/api/v1/accounts').set(bearer(f.keys.admin)).set('Accept', accept);
      t.is(res.status, 406, accept);
      t.is(res.headers['content-type'], 'application/problem+json', accept);
      t.regex(res.body.detail, /application\/json or application\/problem\+json/);
    }
    for (const accept of [
      '*/*',
      'application/*',
      'application/json',
      'application/problem+json',
      'text/html, */*;q=0.1',
    ]) {
      t.is(
        (await c.api.request.get('/api/v1/accounts').set(bearer(f.keys.admin)).set('Accept', accept)).status,
        200,
        accept,
      );
    }
    t.is((await c.api.request.get('/api/v1/accounts').set(bearer(f.keys.admin))).status, 200, 'no Accept');
    const file = await c.api.request
      .get(`/api/v1/emails/${f.emails.budget}/attachments/${budgetFile(f)}`)
      .set(bearer(f.keys.admin))
      .set('Accept', 'text/html');
    t.is(file.status, 200, 'attachment bytes are served whatever is accepted');
  },
);
