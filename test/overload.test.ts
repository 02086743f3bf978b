// Overload: each engine lane queues only so much, and what does not fit is refused at once
// (503 problem+json with Retry-After) while cheap requests keep flowing. The `hold` fault keeps
// worker threads busy until released, so a lane is full exactly when the test says, with no
// timing involved.
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import Database from '../engine/sqlite/driver.js';
import request from 'supertest';
import { createHash } from 'node:crypto';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { EngineOverloaded } from '../shared/errors.js';
import { EnginePool, SHORT_QUEUE_PER_THREAD, type Lane } from '../engine/pool/pool.js';
import { ArchiveService } from '../gateway/archive-service.js';
import { KeyCheck } from '../gateway/auth.js';
import { createMcpServer } from '../gateway/mcp/server.js';
import { mcpTools } from '../gateway/mcp/tools.js';
import { buildOpenApiDocument } from '../gateway/api/openapi.js';
import type { Principal } from '../shared/jobs.js';
import { createFixture } from './helpers/fixture.js';
import { OpenApiConformance } from './helpers/openapi-conformance.js';
import {
  bearer,
  capturingLogger,
  INVALID_TOKEN_CHALLENGE,
  listen,
  startApi,
  unknownKey,
  type ApiHarness,
} from './helpers/api.js';
import { connectClient, modernRequest, postMcp, toolsCall } from './helpers/mcp.js';
import { addWebUser, csrfOf, signIn } from './helpers/web.js';

const test = anyTest as TestFn;

/** One query thread with one waiting place; one interactive thread with two. */
const ENGINE = { Threads: 1, MaxQueue: 1, InteractiveMaxQueue: 2 };

interface Overloaded {
  harness: ApiHarness;
  url: string;
  lines: Array<Record<string, unknown>>;
}

async function start(t: ExecutionContext): Promise<Overloaded> {
  const { logger, lines } = capturingLogger();
  const harness = await startApi(
    { Engine: ENGINE, Mcp: { Enabled: true, RateLimitPerMinute: 1_000_000 } },
    // Long access-log interval: entries are written only when a test flushes them.
    { logger, gateway: { faultInjection: true, accessLog: { intervalMs: 60_000 } } },
  );
  const server = await listen(harness.gateway);
  t.teardown(async () => {
    await server.close();
    await harness.close();
  });
  return { harness, url: server.url, lines };
}

/** Fills a lane: its threads busy and its queue at the bound (at least), until release() is called. */
function fill(engine: EnginePool, lane: Lane, jobs: number) {
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const held = Array.from({ length: jobs }, () => engine.run({ kind: 'fault', mode: 'hold', lane, release: flag }));
  // A test that fails before release() closes the pool under its holds: that is no second failure.
  for (const job of held) job.catch(() => {});
  return {
    async release() {
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0);
      await Promise.all(held);
    },
  };
}

const fillQuery = (engine: EnginePool) => fill(engine, 'query', ENGINE.Threads + ENGINE.MaxQueue);
const fillInteractive = (engine: EnginePool) => fill(engine, 'interactive', 1 + ENGINE.InteractiveMaxQueue);

function accessLogRows(dbPath: string): Array<{ type: string; email_id: number | null; source: string }> {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.prepare('SELECT type, email_id, source FROM access_log ORDER BY id').all() as Array<{
      type: string;
      email_id: number | null;
      source: string;
    }>;
  } finally {
    db.close();
  }
}

test('a full query lane answers searches 503 problem+json with Retry-After; cheap requests still answer 200', async (t) => {
  const { harness } = await start(t);
  const { request, fixture, gateway } = harness;
  const admin = bearer(fixture.keys.admin);
  const held = fillQuery(gateway.engine);

  const search = await request.get('/api/v1/emails').query({ q: 'budget' }).set(admin);
  t.is(search.status, 503);
  t.regex(search.headers['content-type'] ?? '', /^application\/problem\+json/);
  t.is(search.headers['retry-after'], '1');
  t.like(search.body, { status: 503, title: 'Service Unavailable', instance: '/api/v1/emails' });
  t.regex(search.body.detail, /busy/);
  const conformance = new OpenApiConformance(buildOpenApiDocument(harness.settings));
  const observed = { template: '/api/v1/emails', status: 503, headers: search.headers, body: search.body };
  t.deepEqual(conformance.problems(observed), [], 'the 503 is as the OpenAPI document declares it');
  for (const path of ['/api/v1/stats', `/api/v1/accounts/${fixture.accounts.work}/folders`]) {
    const res = await request.get(path).set(admin);
    t.is(res.status, 503, path);
    t.is(res.headers['retry-after'], '1', path);
  }

  const accounts = await request.get('/api/v1/accounts').set(admin);
  t.is(accounts.status, 200);
  t.is(accounts.body.length, 3);
  const open = await request.get(`/api/v1/emails/${fixture.emails.budget}`).set(admin);
  t.is(open.status, 200);
  t.is(open.body.subject, 'Quarterly budget review');

  await held.release();
  const again = await request.get('/api/v1/emails').query({ q: 'budget' }).set(admin);
  t.is(again.status, 200);
  t.true(again.body.totalItems >= 2);
  t.is((await request.get('/api/v1/stats').set(admin)).status, 200);
});

test('a search refused by a full query lane still checks its key: a failing key gets its 401, a genuine one spends its point', async (t) => {
  const { harness } = await start(t);
  const { request, fixture, gateway } = harness;
  const held = fillQuery(gateway.engine);
  t.teardown(() => held.release());
  // No job carried the key check (the search was refused before its job), so admission made it.
  const bad = await request.get('/api/v1/emails').query({ q: 'budget' }).set(bearer(unknownKey()));
  t.is(bad.status, 401);
  t.regex(bad.headers['www-authenticate'] ?? '', INVALID_TOKEN_CHALLENGE);
  const limit = String(harness.settings.Api.RateLimitPerMinute);
  const before = await request.get('/api/v1/accounts').set(bearer(fixture.keys.bob));
  t.is(before.status, 200);
  const refused = await request.get('/api/v1/emails').query({ q: 'budget' }).set(bearer(fixture.keys.bob));
  t.is(refused.status, 503);
  t.is(refused.headers['ratelimit-limit'], limit);
  t.is(Number(refused.headers['ratelimit-remaining']), Number(before.headers['ratelimit-remaining']) - 1);
});

test('an access-log entry recorded while the query lane is full is written', async (t) => {
  const { harness } = await start(t);
  const { request, fixture, gateway } = harness;
  const held = fillQuery(gateway.engine);
  t.teardown(() => held.release());
  const open = await request.get(`/api/v1/emails/${fixture.emails.lunch}`).set(bearer(fixture.keys.admin));
  t.is(open.status, 200);
  await gateway.accessLog.flush();
  t.is(gateway.accessLog.pending, 0);
  t.deepEqual(accessLogRows(fixture.dbPath), [{ type: 'Open', email_id: fixture.emails.lunch, source: 'api' }]);
});

test('a full interactive lane refuses key checks with 503, but an access-log write waits and is never lost', async (t) => {
  const { harness, lines } = await start(t);
  const { request, fixture, gateway } = harness;
  // An Open served before the flood, not yet written.
  t.is((await request.get(`/api/v1/emails/${fixture.emails.budget}`).set(bearer(fixture.keys.alice))).status, 200);
  t.is(gateway.accessLog.pending, 1);

  const held = fillInteractive(gateway.engine);
  const accounts = await request.get('/api/v1/accounts').set(bearer(fixture.keys.admin));
  t.is(accounts.status, 503);
  t.is(accounts.headers['retry-after'], '1');
  t.regex(accounts.headers['content-type'] ?? '', /^application\/problem\+json/);

  // The write is queued past the bound instead of refused: it completes once the lane drains.
  const written = gateway.accessLog.flush();
  t.is(gateway.accessLog.pending, 0, 'the batch is on its way to the engine');
  await held.release();
  await written;
  t.is(gateway.accessLog.pending, 0);
  t.false(
    lines.some((l) => String(l.msg).startsWith('access log write failed')),
    'the write was never refused',
  );
  t.deepEqual(accessLogRows(fixture.dbPath), [{ type: 'Open', email_id: fixture.emails.budget, source: 'api' }]);
  t.is((await request.get('/api/v1/accounts').set(bearer(fixture.keys.admin))).status, 200);
});

test('MCP: a tools/call that needs the full query lane is refused as HTTP 503 problem+json; other messages go on', async (t) => {
  const { harness, url } = await start(t);
  const auth = bearer(harness.fixture.keys.admin);
  const held = fillQuery(harness.gateway.engine);

  const search = await postMcp(`${url}/mcp`, toolsCall(1, 'search_emails', { q: 'budget' }), auth);
  t.is(search.status, 503);
  t.is(search.headers.get('retry-after'), '1');
  t.is(search.headers.get('cache-control'), 'no-store');
  t.regex(search.headers.get('content-type') ?? '', /^application\/problem\+json/);
  t.like(await search.json(), { status: 503, instance: '/mcp' });
  // The same on revision 2026-07-28: the check runs before the SDK sees either revision.
  const modern = modernRequest(5, 'tools/call', { name: 'search_emails', arguments: { q: 'budget' } });
  const modernSearch = await postMcp(`${url}/mcp`, modern.body, { ...modern.headers, ...auth });
  t.is(modernSearch.status, 503);
  t.is(modernSearch.headers.get('retry-after'), '1');
  t.regex(modernSearch.headers.get('content-type') ?? '', /^application\/problem\+json/);

  const accounts = await postMcp(`${url}/mcp`, toolsCall(2, 'list_accounts'), auth);
  t.is(accounts.status, 200);
  const body = (await accounts.json()) as { result: CallToolResult };
  t.falsy(body.result.isError);
  t.is((body.result.structuredContent as { items: unknown[] }).items.length, 3);
  const list = await postMcp(`${url}/mcp`, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, auth);
  t.is(list.status, 200);
  // The SDK's own client connects, and its call rejects with the HTTP status to back off on.
  const client = await connectClient(`${url}/mcp`, harness.fixture.keys.admin);
  t.teardown(() => client.close());
  const refused = await t.throwsAsync(client.callTool({ name: 'search_emails', arguments: { q: 'budget' } }));
  t.true(refused instanceof StreamableHTTPError);
  t.is((refused as StreamableHTTPError).code, 503);

  await held.release();
  const after = await postMcp(`${url}/mcp`, toolsCall(4, 'search_emails', { q: 'budget' }), auth);
  t.is(after.status, 200);
  t.falsy(((await after.json()) as { result: CallToolResult }).result.isError);
});

test('MCP: a tool whose job is refused after the endpoint admitted the call answers a tool error that says to retry', async (t) => {
  // The endpoint's check and the job are not atomic; this drives the tool directly, as the
  // endpoint would after admitting the call, with the lane filled in between.
  const { harness } = await start(t);
  const { gateway, fixture, settings } = harness;
  const keyHash = createHash('sha256').update(fixture.keys.admin).digest('hex');
  const key = new KeyCheck(gateway.engine, keyHash, async (auth) => {
    if (!auth.ok) throw new Error('fixture key refused');
    return auth.principal;
  });
  await key.check(); // as the endpoint does before the transport starts
  const { lines, logger } = capturingLogger();
  const service = new ArchiveService(gateway.engine, gateway.accessLog);
  const server = createMcpServer(mcpTools(settings.Mcp), {
    service,
    caller: { key, clientIp: '127.0.0.1', source: 'mcp' },
    logger,
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'overload-test', version: '1.0.0' });
  await client.connect(clientSide);
  t.teardown(() => client.close());

  const held = fillQuery(gateway.engine);
  const result = (await client.callTool({ name: 'search_emails', arguments: { q: 'budget' } })) as CallToolResult;
  await held.release();
  t.true(result.isError);
  t.deepEqual(result.content, [
    {
      type: 'text',
      text: 'The server is too busy to run search_emails now; nothing was done. Call it again in 1 second.',
    },
  ]);
  t.false(
    lines.some((l) => l.level === 50),
    'a refusal is not logged as an error',
  );
  t.is(gateway.accessLog.pending, 0, 'a refused search is not logged as a Search');
});

test('a download that has started completes while the query lane is full', async (t) => {
  const { harness, url } = await start(t);
  const { fixture, gateway } = harness;
  const { writeBigAttachment } = await import('./helpers/api.js');
  // 128 chunks: far more than socket buffers take in before the client reads.
  const big = await writeBigAttachment(fixture.dbPath, fixture.accounts.work, 32 * 1024 * 1024);

  const response = await new Promise<IncomingMessage>((resolve, reject) =>
    httpGet(`${url}/api/v1/emails/${big.emailId}/attachments/${big.attachmentId}`, {
      headers: bearer(fixture.keys.admin),
    })
      .on('response', resolve)
      .on('error', reject),
  );
  t.is(response.statusCode, 200);
  response.pause();
  let received = 0;
  const hash = createHash('sha256');
  response.on('data', (chunk: Buffer) => {
    received += chunk.length;
    hash.update(chunk);
  });
  const ended = new Promise<boolean>((resolve) => {
    response.on('end', () => resolve(response.complete));
    response.on('aborted', () => resolve(false));
    response.on('error', () => resolve(false));
  });

  const held = fillQuery(gateway.engine);
  // A new search is refused now, while the download's later chunks queue past the bound.
  const search = await harness.request.get('/api/v1/emails').set(bearer(fixture.keys.admin));
  t.is(search.status, 503);
  t.true(received < big.size, 'the download is still under way');
  response.resume();
  await held.release();
  t.true(await ended, 'the response ended complete');
  t.is(received, big.size);
  t.is(hash.digest('hex'), big.sha256);
});

test('a download refused before it starts is a 503 problem with no file headers, and is not logged', async (t) => {
  const { harness } = await start(t);
  const { request, fixture, gateway } = harness;
  const admin = bearer(fixture.keys.admin);
  const meta = await request.get(`/api/v1/emails/${fixture.emails.budget}`).set(admin);
  const attachmentId = (meta.body.attachments as Array<{ id: number }>)[0]!.id;
  await gateway.accessLog.flush();
  const before = accessLogRows(fixture.dbPath).length;

  const held = fillQuery(gateway.engine);
  const res = await request.get(`/api/v1/emails/${fixture.emails.budget}/attachments/${attachmentId}`).set(admin);
  await held.release();
  t.is(res.status, 503);
  t.is(res.headers['content-disposition'], undefined);
  t.regex(res.headers['content-type'] ?? '', /^application\/problem\+json/);
  await gateway.accessLog.flush();
  t.is(accessLogRows(fixture.dbPath).length, before, 'no Download was logged');
  const ok = await request.get(`/api/v1/emails/${fixture.emails.budget}/attachments/${attachmentId}`).set(admin);
  t.is(ok.status, 200);
});

test('web: sign-in while the query lane is full, and a page while the interactive lane is full, are 503 pages', async (t) => {
  const { harness, url } = await start(t);
  const { fixture, gateway } = harness;
  await addWebUser(fixture.dbPath, 'webber', 'webber-pass-123');

  const visitor = request.agent(url);
  const form = await visitor.get('/login');
  t.is(form.status, 200);
  const query = fillQuery(gateway.engine);
  const refused = await visitor
    .post('/login')
    .type('form')
    .send({ _csrf: csrfOf(form.text), username: 'webber', password: 'webber-pass-123' });
  await query.release();
  t.is(refused.status, 503);
  t.is(refused.headers['retry-after'], '1');
  t.regex(refused.headers['content-type'] ?? '', /^text\/html/);
  t.regex(refused.text, /too busy/);

  const { agent, res: signedIn } = await signIn(url, 'webber', 'webber-pass-123', visitor);
  t.is(signedIn.status, 303);

  const interactive = fillInteractive(gateway.engine);
  const keys = await agent.get('/keys');
  await interactive.release();
  t.is(keys.status, 503);
  t.is(keys.headers['retry-after'], '1');
  t.regex(keys.headers['content-type'] ?? '', /^text\/html/);
  t.regex(keys.text, /too busy/);
  t.is((await agent.get('/keys')).status, 200);
});

const ADMIN: Principal = { userId: 1, username: 'admin', isAdmin: true, keyId: 1, keyPrefix: 'ma_test0000' };

test('a job that would wait is refused once the longest-waiting job has waited Engine:MaxQueueWaitMs, whatever the count', async (t) => {
  const fixture = createFixture();
  const engine = new EnginePool({
    dbPath: fixture.dbPath,
    threads: 1,
    maxQueue: { query: 100 },
    maxQueueWaitMs: 100,
    faultInjection: true,
  });
  t.teardown(async () => {
    await engine.close();
    fixture.cleanup();
  });
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  // One job running and seven waiting: a short queue, accepted however long its head has waited.
  const short = fill(engine, 'query', SHORT_QUEUE_PER_THREAD);
  await sleep(150);
  t.notThrows(() => engine.admit('search'), 'a short queue is always accepted');
  // Two more: past the short queue, behind a head that has waited longer than 100 ms.
  const more = fill(engine, 'query', 2);
  const refused = t.throws(() => engine.admit('search'));
  t.true(refused instanceof EngineOverloaded);
  await t.throwsAsync(engine.run({ kind: 'stats', principal: ADMIN }), { instanceOf: EngineOverloaded });
  t.is(engine.stats('query').refused, 2);
  // A later chunk of a download under way is never refused: it waits its turn.
  const chunk = engine.run({ kind: 'attachmentChunk', contentId: 999_999, seq: 1 });
  // Both at once: which held job a thread takes next is Piscina's choice.
  await Promise.all([short.release(), more.release()]);
  t.is(await chunk, null);
  // The same long queue with a fresh head is accepted: it is the wait that sheds, not the count.
  const fresh = fill(engine, 'query', SHORT_QUEUE_PER_THREAD + 2);
  t.notThrows(() => engine.admit('search'));
  await fresh.release();
  await t.notThrowsAsync(engine.run({ kind: 'stats', principal: ADMIN }));
});

test('jobs waiting for a lane start in the order they came', async (t) => {
  // Piscina's own queue is not first come, first served: when a thread freed, it started the
  // first waiting job and sent the next to the back, so under a steady load some jobs waited
  // behind many later ones (docs/performance.md, "Reading one message on PostgreSQL").
  const fixture = createFixture();
  const engine = new EnginePool({ dbPath: fixture.dbPath, threads: 1, faultInjection: true });
  t.teardown(async () => {
    await engine.close();
    fixture.cleanup();
  });
  await engine.ping('interactive');
  const held = fill(engine, 'interactive', 1);
  const started: number[] = [];
  const waiting = Array.from({ length: 6 }, (_, i) =>
    // A hold of 0 ms returns at once: each job only says when it ran.
    engine.run({ kind: 'fault', mode: 'hold', lane: 'interactive', ms: 0 }).then(() => started.push(i)),
  );
  t.is(engine.stats('interactive').queueSize, 6, 'six wait behind the held thread');
  await held.release();
  await Promise.all(waiting);
  t.deepEqual(started, [0, 1, 2, 3, 4, 5]);
});
