// Stopping the real server process while keep-alive clients are using it (PM2 reload stops the
// old process with SIGINT, a plain `npm start` gets SIGTERM): no request that reached an open
// connection fails. After the signal only new connections are refused.
import test from 'ava';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { createFixture } from './helpers/fixture.js';
import { waitFor } from './helpers/redis.js';
import { startServerProcess } from './helpers/server-process.js';

interface Answer {
  status: number;
  connection: string | undefined;
  reusedSocket: boolean;
  body: string;
}

function send(
  agent: Agent,
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string[]; between?: Promise<void> } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, method: options.method ?? 'GET', headers: options.headers ?? {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () =>
        resolve({ status: res.statusCode!, connection: res.headers.connection, reusedSocket: req.reusedSocket, body }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    const [first, second] = options.body ?? [];
    if (first === undefined) {
      req.end();
      return;
    }
    req.write(first);
    void (options.between ?? Promise.resolve()).then(() => req.end(second ?? ''));
  });
}

interface Outcome {
  status?: number;
  connection?: string | undefined;
  error?: string;
}

/** A keep-alive client sending its next request as soon as the last one is answered. */
/** Requests back to back on one connection until refused; `outcomes` fills as answers come. */
async function busyClient(url: string, headers: Record<string, string>, outcomes: Outcome[] = []): Promise<Outcome[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (;;) {
      try {
        const r = await send(agent, url, { headers });
        outcomes.push({ status: r.status, connection: r.connection });
      } catch (err) {
        // ECONNREFUSED once the server no longer listens; anything else is a failure.
        outcomes.push({ error: (err as NodeJS.ErrnoException).code ?? String(err) });
        return outcomes;
      }
    }
  } finally {
    agent.destroy();
  }
}

/**
 * A client that ignores `Connection: close`, like load generators and pipelining clients: it
 * writes its next request the moment a response is complete, on the same connection.
 */
function impoliteClient(
  port: number,
  head: string,
  statuses: number[] = [], // fills as answers come
): Promise<{ statuses: number[]; lastConnection: string | undefined; error: string | undefined }> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let lastConnection: string | undefined;
    let error: string | undefined;
    let buffer = Buffer.alloc(0);
    socket.on('connect', () => socket.write(head));
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end === -1) return;
        const text = buffer.subarray(0, end).toString('latin1');
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(text)?.[1]);
        if (!Number.isInteger(length)) throw new Error(`no Content-Length in ${text}`);
        if (buffer.length < end + 4 + length) return;
        buffer = buffer.subarray(end + 4 + length);
        statuses.push(Number(text.slice(9, 12)));
        lastConnection = /\r\nconnection: *([^\r]*)/i.exec(text)?.[1]?.toLowerCase();
        if (socket.writable) socket.write(head);
      }
    });
    socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
    socket.on('close', () => resolve({ statuses, lastConnection, error }));
  });
}

test('SIGTERM under keep-alive load: requests on open connections are answered with Connection: close, none fails', async (t) => {
  const f = createFixture();
  t.teardown(f.cleanup);
  const server = await startServerProcess(f, {
    Mcp__Enabled: 'true',
    Api__RateLimitPerMinute: '1000000000',
    Mcp__RateLimitPerMinute: '1000000000',
  });
  t.teardown(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
  });
  const auth = { Authorization: `Bearer ${f.keys.admin}` };
  const search = `${server.url}/api/v1/emails?q=budget`;
  let drainBegan!: () => void;
  const drainBegun = new Promise<void>((resolve) => (drainBegan = resolve));
  const afterDrain = (ms: number) => drainBegun.then(() => new Promise<void>((r) => setTimeout(r, ms)));

  // A client whose keep-alive connection is idle when the signal arrives and reuses it shortly after.
  const idleAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => idleAgent.destroy());
  const before = await send(idleAgent, search, { headers: auth });
  t.is(before.status, 200);
  t.not(before.connection, 'close');

  // An MCP request still being uploaded when the signal arrives.
  const mcpBody = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'search_emails', arguments: { q: 'budget', pageSize: 5 } },
  });
  const mcpAgent = new Agent({ keepAlive: true });
  t.teardown(() => mcpAgent.destroy());
  const mcp = send(mcpAgent, `${server.url}/mcp`, {
    method: 'POST',
    headers: {
      ...auth,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'Content-Length': String(Buffer.byteLength(mcpBody)),
    },
    body: [mcpBody.slice(0, 40), mcpBody.slice(40)],
    between: afterDrain(300),
  }).catch((err: Error) => err); // reported below, once the other clients have been looked at

  const seen = Array.from({ length: 6 }, (): Outcome[] => []);
  const busy = seen.map((outcomes) => busyClient(search, auth, outcomes));
  const rudeStatuses: number[] = [];
  const impolite = impoliteClient(
    server.port,
    `GET /api/v1/emails?q=budget HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${f.keys.admin}\r\n\r\n`,
    rudeStatuses,
  );

  // Under way before the signal: answers are coming on every busy connection (half a second on a
  // quiet machine; it may take several on a busy one).
  await waitFor(
    'the busy clients to be answered',
    () => seen.flat().length > 20 && seen.every((o) => o.length > 0) && rudeStatuses.length > 5,
    30_000,
  );
  const stopAt = Date.now();
  server.child.kill('SIGTERM');
  await waitFor('the server to start shutting down', () => server.lines.some((l) => l.msg === 'shutting down'), 5000);
  drainBegan();

  await afterDrain(300);
  const reused = await send(idleAgent, search, { headers: auth });
  t.true(reused.reusedSocket, 'sent on the connection that was idle at the signal');
  t.is(reused.status, 200);
  t.is(reused.connection, 'close');

  const inFlight = await mcp;
  if (inFlight instanceof Error) throw new Error(`the request in progress at the signal failed: ${inFlight.message}`);
  t.is(inFlight.status, 200, inFlight.body);
  t.is(inFlight.connection, 'close');
  const rpc = JSON.parse(inFlight.body) as {
    result?: { isError?: boolean; structuredContent?: { totalItems: number } };
  };
  t.falsy(rpc.result?.isError);
  t.true((rpc.result?.structuredContent?.totalItems ?? 0) >= 2);

  const clients = await Promise.all(busy);
  const outcomes = clients.flat();
  const answered = outcomes.filter((o) => o.status !== undefined);
  const failed = outcomes.filter((o) => o.error !== undefined && o.error !== 'ECONNREFUSED');
  t.log(`${answered.length} answered, ${outcomes.length - answered.length - failed.length} refused after the drain`);
  t.deepEqual(failed, [], 'no request on an open connection failed');
  t.true(answered.length > 20, 'the clients were busy');
  t.true(
    answered.every((o) => o.status === 200),
    'every answer is 200',
  );
  for (const client of clients) {
    // Each client's connection ended with an answer saying so; its next request, on a new
    // connection, was refused because the server no longer listened.
    t.like(client.at(-2), { status: 200, connection: 'close' });
    t.like(client.at(-1), { error: 'ECONNREFUSED' });
  }

  const rude = await impolite;
  t.is(rude.error, undefined, 'the connection ended without a reset');
  t.true(rude.statuses.length > 5);
  t.true(rude.statuses.every((s) => s === 200));
  t.is(rude.lastConnection, 'close');

  const { code } = await server.exit;
  const took = Date.now() - stopAt;
  t.log(`exit ${took} ms after SIGTERM`);
  t.is(code, 0);
  t.true(took < 5000, `exit after ${took} ms`);
  t.true(server.lines.some((l) => l.msg === 'stopped'));
});
