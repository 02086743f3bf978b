// Hardening (docs/security.md, items 8 and 12): the server process as `npm start` runs
// it closes connections that send no request head in time, refuses connections past its cap while
// serving those it has, and answers what Node itself refuses (a request it cannot parse, headers
// too large, a head too slow) as problem+json.
import test from 'ava';
import { connect, type Socket } from 'node:net';
import { createFixture } from './helpers/fixture.js';
import { startServerProcess, type ServerProcess } from './helpers/server-process.js';

async function start(t: import('ava').ExecutionContext, env: Record<string, string>): Promise<ServerProcess> {
  const f = createFixture();
  const server = await startServerProcess(f, env);
  t.teardown(async () => {
    server.child.kill('SIGKILL');
    await server.exit;
    f.cleanup();
  });
  return server;
}

/** A raw connection: what it receives until the server closes it, and when that was. */
function rawConnection(
  port: number,
  send?: string,
): Promise<{ socket: Socket; done: Promise<{ data: string; ms: number }> }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1', () => {
      if (send !== undefined) socket.write(send);
      resolve({
        socket,
        done: new Promise((done) => {
          let data = '';
          socket.on('data', (d) => (data += d.toString('latin1')));
          socket.on('close', () => done({ data, ms: Date.now() - started }));
        }),
      });
    });
    socket.on('error', (err) => reject(err));
  });
}

const statusOf = (response: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1]);
const bodyOf = (response: string) =>
  JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4)) as { status: number; detail: string };

test('a connection that sends nothing is closed after Server:HeadersTimeoutSeconds with a 408 problem', async (t) => {
  const server = await start(t, { Server__HeadersTimeoutSeconds: '1' });
  const idle = await rawConnection(server.port);
  const half = await rawConnection(server.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n'); // never finishes its head
  for (const c of [idle, half]) {
    const { data, ms } = await c.done;
    t.true(ms < 6000, `closed after ${ms} ms`);
    t.true(ms >= 900, `not before the timeout (${ms} ms)`);
    t.is(statusOf(data), 408);
    t.regex(data, /Content-Type: application\/problem\+json/);
    t.is(bodyOf(data).status, 408);
  }
  t.is(
    statusOf(
      (await (await rawConnection(server.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).done)
        .data,
    ),
    200,
  );
});

test('what Node refuses itself (an unreadable request, headers too large) is problem+json', async (t) => {
  const server = await start(t, {});
  const garbage = await (await rawConnection(server.port, 'HELLO THERE\r\n\r\n')).done;
  t.is(statusOf(garbage.data), 400);
  t.regex(garbage.data, /Content-Type: application\/problem\+json/);
  t.like(bodyOf(garbage.data), { status: 400, detail: 'The request could not be read as HTTP.' });
  const huge = await (
    await rawConnection(server.port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`)
  ).done;
  t.is(statusOf(huge.data), 431);
  t.like(bodyOf(huge.data), { status: 431, detail: 'The request headers are too large.' });
});

test('past Server:MaxConnections new connections are refused, and those open are still served', async (t) => {
  const server = await start(t, { Server__MaxConnections: '5', Server__HeadersTimeoutSeconds: '60' });
  const held = await Promise.all(Array.from({ length: 5 }, () => rawConnection(server.port)));
  // The sixth is closed at once without an answer (or refused while connecting): no HTTP at all.
  const refused = await rawConnection(server.port)
    .then((c) => c.done)
    .catch(() => ({ data: '', ms: 0 }));
  t.is(refused.data, '', 'closed without an answer');
  t.true(refused.ms < 3000, `closed at once (${refused.ms} ms)`);
  // One of the open connections sends its request: it is answered.
  const first = held[0]!;
  first.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  t.is(statusOf((await first.done).data), 200);
  // With a slot free again, a new connection is served.
  await new Promise((r) => setTimeout(r, 200));
  const later = await (
    await rawConnection(server.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  ).done;
  t.is(statusOf(later.data), 200);
  for (const c of held.slice(1)) c.socket.destroy();
});
