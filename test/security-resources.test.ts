// Hardening (docs/security.md, item 6): MCP get_attachment's memory. The bytes are sent once (SPEC.md's
// result in the text block; structuredContent without base64Data), and the attachment content
// the process holds for answers being built is bounded (Mcp:MaxConcurrentAttachmentBytes): past
// it a call waits its turn (Mcp:AttachmentWaitSeconds), then is told to retry. The query lane is
// held with the `hold` fault, so a read is in progress exactly when the test says.
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createHash } from 'node:crypto';
import { createFixture } from './helpers/fixture.js';
import { listen, startApi, writeBigAttachment, type SettingsOverrides } from './helpers/api.js';
import { postMcp, toolsCall } from './helpers/mcp.js';
import { changeArchive, readAccessLog } from './helpers/store.js';
import { etagOf } from '../shared/etag.js';
import type { Principal } from '../shared/jobs.js';

const test = anyTest as TestFn;
const SIZE = 1_000_000;

async function start(t: ExecutionContext, mcp: NonNullable<SettingsOverrides['Mcp']> = {}) {
  const fixture = createFixture();
  t.teardown(() => fixture.cleanup());
  const big = await writeBigAttachment(fixture.dbPath, fixture.accounts.work, SIZE);
  const harness = await startApi(
    // SPEC.md's 10 MB inline limit, as an operator restores it (docs/mcp.md, "Answers that fit").
    { Mcp: { Enabled: true, RateLimitPerMinute: 1_000_000, MaxAttachmentBytes: 10_000_000, ...mcp } },
    { useFixture: fixture, gateway: { faultInjection: true } },
  );
  const server = await listen(harness.gateway);
  t.teardown(async () => {
    await server.close();
    await harness.close();
  });
  const auth = { Authorization: `Bearer ${fixture.keys.admin}` };
  const getBig = async (id: number) => {
    const res = await postMcp(
      `${server.url}/mcp`,
      toolsCall(id, 'get_attachment', { id: big.emailId, attachmentId: big.attachmentId }),
      auth,
    );
    const raw = await res.text();
    return { status: res.status, raw, result: (JSON.parse(raw) as { result: CallToolResult }).result };
  };
  return { harness, big, getBig };
}

const textOf = (result: CallToolResult) => (result.content[0] as { type: 'text'; text: string }).text;

test('get_attachment sends the bytes once: in the text result, not again in structuredContent', async (t) => {
  const { big, getBig } = await start(t);
  const { status, raw, result } = await getBig(1);
  t.is(status, 200);
  t.falsy(result.isError);
  const body = JSON.parse(textOf(result)) as { base64Data: string; size: number; fileName: string };
  t.is(createHash('sha256').update(Buffer.from(body.base64Data, 'base64')).digest('hex'), big.sha256);
  t.is(body.size, SIZE);
  t.deepEqual(result.structuredContent, {
    id: big.attachmentId,
    emailId: big.emailId,
    fileName: 'big.bin',
    contentType: 'application/octet-stream',
    size: SIZE,
  });
  // The whole HTTP answer is the base64 once and some metadata (it was twice the base64 before).
  const base64Length = Math.ceil(SIZE / 3) * 4;
  t.true(raw.length < base64Length * 1.1, `${raw.length} characters for ${base64Length} of base64`);
});

test('concurrent large reads are bounded by bytes: past the budget a call is told to retry, then served', async (t) => {
  // Room for one read of the 1 MB file at a time, and no waiting: the bound shows at once.
  const { harness, getBig } = await start(t, { MaxConcurrentAttachmentBytes: 1_500_000, AttachmentWaitSeconds: 0 });
  const engine = harness.gateway.engine;
  // The query lane (attachment chunks) is held: the first call takes its share and waits there.
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const held = engine.run({ kind: 'fault', mode: 'hold', lane: 'query', release: flag });
  const first = getBig(1);
  const deadline = Date.now() + 20_000;
  while (engine.inFlight('query') < 2) {
    if (Date.now() > deadline) t.fail('the first read never reached the query lane');
    await new Promise((r) => setTimeout(r, 20));
  }
  const second = await getBig(2);
  t.is(second.status, 200);
  t.true(second.result.isError);
  t.regex(textOf(second.result), /reading too many attachments at once .* Call get_attachment again in 1 seconds/);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
  await held;
  const done = await first;
  t.falsy(done.result.isError);
  // The share was given back: the next call is served.
  const third = await getBig(3);
  t.falsy(third.result.isError);
  t.is(JSON.parse(textOf(third.result)).size, SIZE);
});

test('a call past the budget waits its turn when a wait is allowed', async (t) => {
  const { harness, getBig } = await start(t, { MaxConcurrentAttachmentBytes: 1_500_000, AttachmentWaitSeconds: 60 });
  const engine = harness.gateway.engine;
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const held = engine.run({ kind: 'fault', mode: 'hold', lane: 'query', release: flag });
  const calls = [getBig(1), getBig(2), getBig(3)];
  const deadline = Date.now() + 20_000;
  while (engine.inFlight('query') < 2) {
    if (Date.now() > deadline) t.fail('the first read never reached the query lane');
    await new Promise((r) => setTimeout(r, 20));
  }
  // One read holds the budget; the others wait for it rather than each holding a copy.
  await new Promise((r) => setTimeout(r, 200));
  t.is(engine.inFlight('query'), 2);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
  await held;
  for (const call of await Promise.all(calls)) t.falsy(call.result.isError);
});

/** Adds a message whose text body is `size` bytes, with `attachments` small files; returns its id. */
async function addLargeMessage(dbPath: string, accountId: number, size: number, attachments = 0): Promise<number> {
  const { openArchive } = await import('../engine/sqlite/open.js');
  const { ArchiveWriter } = await import('../engine/sqlite/writer.js');
  const { email } = await import('./helpers/fixture.js');
  const db = openArchive(dbPath);
  try {
    const writer = new ArchiveWriter(db);
    const files = Array.from({ length: attachments }, (_, i) => ({
      fileName: `f${i}.txt`,
      contentType: 'text/plain',
      content: Buffer.from(`file ${i}`),
    }));
    return writer.batch(() =>
      writer.add(
        email({
          accountId,
          subject: 'A very long message',
          textBody: 'word '.repeat(size / 5),
          attachments: files,
        }),
      )!,
    );
  } finally {
    db.close();
  }
}

test('a message of many attachments and a short body is read on the query lane too', async (t) => {
  const fixture = createFixture();
  t.teardown(() => fixture.cleanup());
  const many = await addLargeMessage(fixture.dbPath, fixture.accounts.work, 100, 1_100);
  const harness = await startApi({}, { useFixture: fixture });
  t.teardown(() => harness.close());
  const engine = harness.gateway.engine;
  const auth = { Authorization: `Bearer ${fixture.keys.alice}` };
  t.is((await harness.request.get(`/api/v1/emails/${fixture.emails.budget}`).set(auth)).status, 200);
  t.is(engine.movedDetails, 0, 'a small message stays on the interactive lane');
  const res = await harness.request.get(`/api/v1/emails/${many}`).set(auth);
  t.is(res.status, 200);
  t.is(res.body.attachments.length, 1_100);
  t.is(engine.movedDetails, 1, 'sized by its attachments as well as its body');
});

test('a large message is read on the query lane: key checks and /accounts do not wait for it', async (t) => {
  const fixture = createFixture();
  t.teardown(() => fixture.cleanup());
  const large = await addLargeMessage(fixture.dbPath, fixture.accounts.work, 2_000_000);
  const harness = await startApi({}, { useFixture: fixture, gateway: { faultInjection: true } });
  t.teardown(() => harness.close());
  const { request, gateway } = harness;
  const engine = gateway.engine;
  const auth = { Authorization: `Bearer ${fixture.keys.alice}` };
  // A small message stays on the interactive lane: one crossing, nothing moved.
  const small = await request.get(`/api/v1/emails/${fixture.emails.budget}`).set(auth);
  t.is(small.status, 200);
  t.is(engine.movedDetails, 0);
  // With the query lane held, the large message waits there while /accounts is answered.
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const held = engine.run({ kind: 'fault', mode: 'hold', lane: 'query', release: flag });
  let detailDone = false;
  const detail = request
    .get(`/api/v1/emails/${large}`)
    .set(auth)
    .then((res) => {
      detailDone = true;
      return res;
    });
  const deadline = Date.now() + 20_000;
  while (engine.inFlight('query') < 2) {
    if (detailDone || Date.now() > deadline) t.fail('the large message was not read on the query lane');
    await new Promise((r) => setTimeout(r, 20));
  }
  t.is(engine.movedDetails, 1);
  for (let i = 0; i < 5; i++) {
    const accounts = await request.get('/api/v1/accounts').set({ Authorization: `Bearer ${fixture.keys.bob}` });
    t.is(accounts.status, 200);
  }
  t.false(detailDone, '/accounts was answered while the large message waited for the query lane');
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
  await held;
  const res = await detail;
  t.is(res.status, 200);
  t.is(res.body.id, large);
  t.is(res.body.textBody.length, 2_000_000);
  // A key that may not see the message still gets the same 404, from the query lane.
  const hidden = await request.get(`/api/v1/emails/${large}`).set({ Authorization: `Bearer ${fixture.keys.bob}` });
  t.is(hidden.status, 404);
});

test('the REST detail is serialised and tagged on the worker: the gateway sends those bytes as they are', async (t) => {
  const fixture = createFixture();
  t.teardown(() => fixture.cleanup());
  const large = await addLargeMessage(fixture.dbPath, fixture.accounts.work, 1_000_000);
  const harness = await startApi({}, { useFixture: fixture });
  t.teardown(() => harness.close());
  const engine = harness.gateway.engine;
  const admin: Principal = { userId: 1, username: 'admin', isAdmin: true, keyId: 1, keyPrefix: 'ma_test0000' };
  for (const id of [fixture.emails.budget!, large]) {
    const dto = await engine.run({ kind: 'detail', principal: admin, id });
    const encoded = await engine.run({ kind: 'detailJson', principal: admin, id });
    t.truthy(encoded);
    // The bytes arrive in a buffer of their own (moved from the worker, not sliced from a pool).
    t.is(encoded!.json.byteLength, encoded!.json.buffer.byteLength);
    t.is(new TextDecoder().decode(encoded!.json), JSON.stringify(dto));
    t.is(encoded!.etag, etagOf(JSON.stringify(dto)));
    t.deepEqual([encoded!.id, encoded!.accountId], [dto!.id, dto!.accountId]);
    // Over HTTP: exactly those bytes, with that tag.
    const res = await harness.request
      .get(`/api/v1/emails/${id}`)
      .set({ Authorization: `Bearer ${fixture.keys.admin}`, 'Accept-Encoding': 'identity' })
      .buffer(true)
      .parse((r, done) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c));
        r.on('end', () => done(null, Buffer.concat(chunks)));
      });
    t.is(res.status, 200);
    t.is(res.headers['etag'], encoded!.etag);
    t.true(Buffer.from(encoded!.json).equals(res.body as Buffer));
  }
  // The large one was sized off the interactive lane, as `detail` is.
  t.true(engine.movedDetails >= 2);
  t.is(await engine.run({ kind: 'detailJson', principal: { ...admin, isAdmin: false, userId: 999 }, id: large }), null);
});

test('the access log fails closed: past Server:AccessLogMaxBacklog unwritten entries reads are 503, /readyz says so, and nothing is lost', async (t) => {
  const harness = await startApi(
    { Server: { AccessLogMaxBacklog: 3 } },
    { gateway: { accessLog: { intervalMs: 50, maxBatch: 1 } } },
  );
  t.teardown(() => harness.close());
  const path = harness.settings.Database.Path;
  const auth = { Authorization: `Bearer ${harness.fixture.keys.alice}` };
  // The access log's table refuses writes, as a read-only or broken table would.
  await changeArchive(path, {
    sqlite: (db) =>
      db.exec("CREATE TRIGGER no_log BEFORE INSERT ON access_log BEGIN SELECT RAISE(ABORT, 'read-only'); END"),
    postgres: (c) =>
      c.query(`CREATE FUNCTION mail_archiver.no_log() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'read-only'; END $$;
               CREATE TRIGGER no_log BEFORE INSERT ON mail_archiver."AccessLogs" FOR EACH ROW EXECUTE FUNCTION mail_archiver.no_log()`),
  });
  const before = (await readAccessLog(path)).length;
  for (let i = 0; i < 3; i++)
    t.is((await harness.request.get(`/api/v1/emails/${harness.fixture.emails.budget}`).set(auth)).status, 200);
  const refused = await harness.request.get(`/api/v1/emails/${harness.fixture.emails.budget}`).set(auth);
  t.is(refused.status, 503);
  t.is(refused.headers['content-type'], 'application/problem+json');
  t.truthy(refused.headers['retry-after']);
  t.is((await harness.request.get('/api/v1/emails').query({ q: 'budget' }).set(auth)).status, 503, 'searches too');
  const ready = await harness.request.get('/readyz');
  t.is(ready.status, 503);
  t.like(ready.body, { status: 'unavailable', checks: { accessLog: { status: 'full', pending: 3, max: 3 } } });
  // Writable again: the backlog drains, reads are served, and every read served was recorded.
  await changeArchive(path, {
    sqlite: (db) => db.exec('DROP TRIGGER no_log'),
    postgres: (c) => c.query('DROP TRIGGER no_log ON mail_archiver."AccessLogs"; DROP FUNCTION mail_archiver.no_log()'),
  });
  const deadline = Date.now() + 30_000;
  while (harness.gateway.accessLog.backlog.pending > 0 && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
  t.is(harness.gateway.accessLog.backlog.pending, 0);
  t.is((await harness.request.get(`/api/v1/emails/${harness.fixture.emails.budget}`).set(auth)).status, 200);
  await harness.gateway.accessLog.flush();
  t.is((await readAccessLog(path)).length - before, 4);
  t.like((await harness.request.get('/readyz')).body, { checks: { accessLog: { status: 'ok', pending: 0 } } });
});
