// Hardening against hostile input and audit gaps (docs/security.md, items 8, 10, 11,
// 13 and 14): corrupt compressed bodies, unprintable key names and file names, what the
// access log keeps of a search's parameters, log noise from clients that go away, and failed key
// checks in the log without the key and without letting a flood fill the disk.
import test from 'ava';
import { execFile } from 'node:child_process';
import { get as httpGet } from 'node:http';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { openArchive } from '../engine/sqlite/open.js';
import { createKey } from '../engine/sqlite/keys.js';
import { StoreError } from '../shared/errors.js';
import { AuthFailureLog, MAX_LINES_PER_MINUTE } from '../gateway/auth-failure-log.js';
import { contentDisposition } from '../gateway/content-disposition.js';
import { parseKeyForm } from '../gateway/web/forms.js';
import { bearer, capturingLogger, listen, startApi, unknownKey } from './helpers/api.js';
import { runCli } from './helpers/cli.js';
import { createFixture } from './helpers/fixture.js';
import { startMcpGateway } from './helpers/mcp.js';
import { readAccessLog } from './helpers/store.js';

const run = promisify(execFile);
const HELPERS = fileURLToPath(new URL('./helpers/api.js', import.meta.url));

test('a corrupt gzip, deflate or br request body is a 400 problem, not a 500', async (t) => {
  const h = await startMcpGateway();
  t.teardown(() => h.close());
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
  for (const encoding of ['gzip', 'deflate', 'br']) {
    const res = await fetch(h.url, {
      method: 'POST',
      headers: {
        ...bearer(h.fixture.keys.admin),
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Content-Encoding': encoding,
      },
      body: Buffer.from('this is not compressed at all'),
    });
    t.is(res.status, 400, encoding);
    t.is(res.headers.get('content-type'), 'application/problem+json', encoding);
    t.regex(((await res.json()) as { detail: string }).detail, new RegExp(`not valid ${encoding} data`), encoding);
  }
  // A body that is what it says is read as before.
  const ok = await fetch(h.url, {
    method: 'POST',
    headers: {
      ...bearer(h.fixture.keys.admin),
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'Content-Encoding': 'gzip',
    },
    body: gzipSync(ping),
  });
  t.is(ok.status, 200);
});

test('key names must be printable; stored unprintable names are escaped by keys list; bidi marks never reach a saved file name', async (t) => {
  const f = createFixture();
  t.teardown(f.cleanup);
  const db = openArchive(f.dbPath);
  t.teardown(() => db.close());
  for (const name of ['evil\u001b[2J', 'two\nlines', 'left\u202Eright', 'bell\u0007']) {
    t.throws(() => createKey(db, { username: 'alice', name }), { instanceOf: StoreError, message: /printable text/ });
    t.like(parseKeyForm({ name }, Date.now()), { ok: false });
  }
  const cli = await runCli(['--db', f.dbPath, 'keys', 'create', 'alice', '--name', 'x\u001b]0;pwned\u0007']);
  t.not(cli.code, 0);
  t.regex(cli.stderr, /printable text/);
  // A name stored before the rule (written straight into the table) is printed escaped.
  db.prepare("UPDATE api_keys SET name = ? WHERE name = 'revoked'").run('fake\n3  admin  row\u001b[31m');
  const list = await runCli(['--db', f.dbPath, 'keys', 'list']);
  t.is(list.code, 0, list.stderr);
  t.false(list.stdout.includes('\u001b'));
  t.true(list.stdout.includes('fake\\u{a}3  admin  row\\u{1b}[31m'));
  t.is(list.stdout.split('\n').filter((l) => l.includes('row')).length, 1, 'no fake row');

  const disposition = contentDisposition('\u202Etxt.exe');
  t.false(disposition.includes('\u202E'));
  t.false(disposition.toLowerCase().includes('%e2%80%ae'), 'nor percent-encoded in filename*');
  t.is(disposition, `attachment; filename="_txt.exe"; filename*=UTF-8''_txt.exe`);
});

test('the access log keeps only known search parameters, and redacts anything that looks like a key', async (t) => {
  const api = await startApi();
  t.teardown(() => api.close());
  const key = api.fixture.keys.admin;
  const pasted = unknownKey();
  const res = await api.request
    .get('/api/v1/emails')
    .query({ q: `budget ${pasted}`, api_key: key, token: 'secret-value', pageSize: 5 })
    .set(bearer(key));
  t.is(res.status, 200);
  await api.gateway.accessLog.flush();
  const rows = (await readAccessLog(api.settings.Database.Path)).filter((r) => r.type === 'Search');
  t.is(rows.length, 1);
  t.deepEqual(rows[0]!.search_params, { q: `budget ${pasted.slice(0, 11)}…(redacted)`, pageSize: '5' });
  t.false(JSON.stringify(rows).includes(key));
  t.false(JSON.stringify(rows).includes('secret-value'));
});

test('a client that goes away mid-download is one debug line without a stack, not an error', async (t) => {
  const f = createFixture();
  t.teardown(f.cleanup);
  const script = `
    const { writeBigAttachment } = await import(${JSON.stringify(HELPERS)});
    process.stdout.write(JSON.stringify(await writeBigAttachment(${JSON.stringify(f.dbPath)}, ${f.accounts.work}, ${32 * 1024 * 1024})));`;
  const big = JSON.parse((await run(process.execPath, ['--input-type=module', '-e', script])).stdout) as {
    emailId: number;
    attachmentId: number;
  };
  const { logger, lines } = capturingLogger();
  const api = await startApi({}, { useFixture: f, logger });
  const server = await listen(api.gateway);
  t.teardown(async () => {
    await server.close();
    await api.close();
  });
  for (let i = 0; i < 3; i++) {
    await new Promise<void>((resolve, reject) => {
      const req = httpGet(
        `${server.url}/api/v1/emails/${big.emailId}/attachments/${big.attachmentId}`,
        { headers: bearer(f.keys.admin) },
        (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        },
      );
      req.on('error', () => resolve());
      setTimeout(() => reject(new Error('no data')), 30_000).unref();
    });
  }
  // The server notices the closed sockets; give it a moment to log whatever it logs.
  await new Promise((r) => setTimeout(r, 1500));
  const errors = lines.filter((l) => (l.level as number) >= 50);
  t.deepEqual(errors, [], 'no error-level line');
  t.false(JSON.stringify(lines).includes('"stack"'), 'no stack anywhere');
});

test('failed key checks are logged with the prefix only, and a flood is summarised, not written line by line', async (t) => {
  const { logger, lines } = capturingLogger();
  const api = await startApi({}, { logger });
  t.teardown(() => api.close());
  const revoked = api.fixture.keys.revoked;
  t.is((await api.request.get('/api/v1/accounts').set(bearer(revoked))).status, 401);
  t.is((await api.request.get('/api/v1/accounts').set('Authorization', 'Bearer not-a-key-at-all')).status, 401);
  const refused = lines.filter((l) => l.msg === 'API key refused');
  t.is(refused.length, 2);
  t.like(refused[0], { reason: 'revoked', keyPrefix: revoked.slice(0, 11), front: 'api', level: 40 });
  t.like(refused[1], { reason: 'malformed', tokenLength: 'not-a-key-at-all'.length });
  t.truthy(refused[0]!.ip);
  t.false(JSON.stringify(lines).includes(revoked), 'never the key itself');
  t.false(JSON.stringify(lines).includes('not-a-key-at-all'));

  // The rate of lines: at most MAX_LINES_PER_MINUTE a minute, then one line with the count.
  const clock = { now: 1_000_000 };
  const realNow = Date.now;
  Date.now = () => clock.now;
  t.teardown(() => {
    Date.now = realNow;
  });
  const flood = capturingLogger();
  const log = new AuthFailureLog(flood.logger);
  for (let i = 0; i < 5_000; i++) log.record(`10.0.${i % 200}.1`, 'unknown', unknownKey(), 'mcp');
  t.is(flood.lines.length, MAX_LINES_PER_MINUTE);
  clock.now += 60_001;
  log.record('10.0.0.1', 'unknown', unknownKey(), 'api');
  t.is(flood.lines.length, MAX_LINES_PER_MINUTE + 2);
  t.like(flood.lines[MAX_LINES_PER_MINUTE], { count: 5_000 - MAX_LINES_PER_MINUTE, addresses: 200 });
});
