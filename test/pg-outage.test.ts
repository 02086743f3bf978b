// A PostgreSQL archive that goes away (docs/postgres.md, "When the database is unavailable"): lost while the gateway
// runs, the requests that need it get 503 problem+json with Retry-After and service resumes by
// itself when the server is back; unreachable or refusing our credentials at start-up, the
// process stops with one sentence naming Database:Path, without the password.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import supertest from 'supertest';
import { prepareArchive } from '../engine/archive.js';
import { createGateway } from '../gateway/app.js';
import { apiSettings, bearer, capturingLogger } from './helpers/api.js';
import { startPrimary, type PgServer } from './helpers/pg-cluster.js';
import { createSmallArchive } from './helpers/pg-mail-archiver.js';
import { csrfOf } from './helpers/web.js';
import { freePort, waitFor } from './helpers/redis.js';
import { SERVER, startServerProcess } from './helpers/server-process.js';
import type { Fixture } from './helpers/fixture.js';

const DB = 'archive';
const ROLE = { name: 'gateway_login', password: 'Pa55-do-not-print' };
let primary: PgServer | undefined;

test.before(async () => {
  primary = await startPrimary({ passwordRole: ROLE });
  await primary.query(`CREATE DATABASE ${DB}`);
});

test.after.always(async () => {
  await primary?.destroy();
});

/** Runs the built server with `env` until it exits (it must, within 20 s). */
function runServer(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cwd = mkdtempSync(join(tmpdir(), 'mag-outage-'));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SERVER], {
      cwd,
      env: { PATH: process.env.PATH, Api__Enabled: 'true', Server__Port: '0', Engine__Threads: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the server did not exit: ${stdout} ${stderr}`));
    }, 20_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      rmSync(cwd, { recursive: true, force: true });
      resolve({ code, stdout, stderr });
    });
  });
}

test.serial(
  'the database lost while running: 503 problem+json with Retry-After, then recovery without a restart',
  async (t) => {
    const url = primary!.url(DB);
    const archive = await createSmallArchive(url, 2);
    await prepareArchive({ path: url });
    const cap = capturingLogger();
    const gateway = createGateway(apiSettings(url, { Mcp: { Enabled: true } }), { logger: cap.logger });
    const request = supertest.agent(gateway.app.callback());
    t.teardown(async () => {
      await primary!.start();
      await gateway.close();
    });
    const paths = ['/api/v1/stats', '/api/v1/accounts', `/api/v1/emails/${archive.emailIds[0]}`, '/api/v1/emails'];
    for (const p of paths) t.is((await request.get(p).set(bearer(archive.key))).status, 200, p);

    await primary!.stop('fast');
    for (const p of paths) {
      const res = await request.get(p).set(bearer(archive.key));
      t.is(res.status, 503, `${p}: ${res.text}`);
      t.is(res.headers['content-type'], 'application/problem+json', p);
      t.regex(String(res.headers['retry-after']), /^\d+$/, p);
      t.like(res.body, { status: 503, title: 'Service Unavailable' });
      t.regex(res.body.detail, /database cannot be reached/);
      t.notRegex(res.text, /\bat .*\.(js|ts):\d+|ECONNREFUSED|postgres:\/\/|127\.0\.0\.1/, 'no stack, no address');
    }
    // MCP: refused at admission (the key check needs the primary) with the same problem.
    const mcp = await request
      .post('/mcp')
      .set(bearer(archive.key))
      .set('Accept', 'application/json, text/event-stream')
      .send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_stats', arguments: {} } });
    t.is(mcp.status, 503, mcp.text);
    t.is(mcp.headers['content-type'], 'application/problem+json');
    t.truthy(mcp.headers['retry-after']);
    // Web: the sign-in form needs no database; signing in does, and gets a 503 page.
    const form = await request.get('/login');
    t.is(form.status, 200);
    const login = await request
      .post('/login')
      .type('form')
      .send({ _csrf: csrfOf(form.text), username: 'alice', password: 'whatever-it-is' });
    t.is(login.status, 503);
    t.regex(String(login.headers['content-type']), /^text\/html/);
    t.notRegex(login.text, /\bat .*\.(js|ts):\d+|ECONNREFUSED/);
    // Logged as a warning without a stack, never as a failed request (an error with its stack).
    t.true(cap.lines.some((l) => l.msg === 'archive database unavailable'));
    t.deepEqual(
      cap.lines.filter((l) => (l.level as number) >= 50 && l.msg === 'request failed'),
      [],
    );
    // Liveness needs no database; readiness says the process cannot serve: the primary is down.
    t.is((await request.get('/healthz')).status, 200);
    await waitFor('readiness to see the primary down', async () => (await request.get('/readyz')).status === 503);
    const ready = await request.get('/readyz');
    t.is(ready.body.status, 'unavailable');
    t.deepEqual(ready.body.checks.postgres, { status: 'down', primary: { status: 'down' }, replicas: [] });
    t.is(ready.body.checks.pool.status, 'ok', 'the engine threads themselves are fine');

    await primary!.start();
    const started = Date.now();
    await waitFor('the gateway to serve again', async () => {
      const res = await request.get('/api/v1/stats').set(bearer(archive.key));
      return res.status === 200;
    });
    const recoveredMs = Date.now() - started;
    t.log(`first 200 ${recoveredMs} ms after the server accepted connections again`);
    for (const p of paths) t.is((await request.get(p).set(bearer(archive.key))).status, 200, p);
    t.true(recoveredMs < 5_000);
    await waitFor('readiness to see the primary back', async () => (await request.get('/readyz')).status === 200);
    t.like((await request.get('/readyz')).body.checks.postgres, { status: 'ok', primary: { status: 'ok' } });
  },
);

test.serial(
  'start-up against a URL where nothing listens: one sentence naming Database:Path, exit code 1',
  async (t) => {
    const port = await freePort();
    const result = await runServer({ Database__Path: `postgres://someone:hunter2secret@127.0.0.1:${port}/archive` });
    t.is(result.code, 1);
    const lines = result.stderr.trim().split('\n');
    t.is(lines.length, 1, result.stderr);
    t.regex(lines[0]!, /Database:Path/);
    t.regex(lines[0]!, new RegExp(`127\\.0\\.0\\.1:${port}/archive`));
    t.notRegex(result.stderr + result.stdout, /hunter2secret/);
    t.notRegex(result.stderr, /\n\s+at /, 'no stack trace');
  },
);

test.serial(
  'start-up against a server that takes 7 s to answer waits for it, as Mail Archiver (Npgsql) does',
  async (t) => {
    // A server that answers slowly, not one that is down: each connection reaches PostgreSQL only
    // after 7 s, as on a host too busy to run the server's new process at once. With a 5 s connect
    // timeout the start-up failed here with "timeout expired".
    const sockets = new Set<Socket>();
    let connections = 0;
    const slow = createServer((client) => {
      connections++;
      sockets.add(client);
      client.on('error', () => {});
      setTimeout(() => {
        const server = connect(primary!.port, '127.0.0.1');
        sockets.add(server);
        server.on('error', () => client.destroy());
        client.on('close', () => server.destroy());
        client.pipe(server).pipe(client);
      }, 7_000);
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    t.teardown(() => {
      for (const s of sockets) s.destroy();
      slow.close();
    });
    const { port } = slow.address() as { port: number };
    const url = new URL(primary!.url(DB, ROLE.name, ROLE.password));
    url.port = String(port);
    const started = performance.now();
    await t.notThrowsAsync(prepareArchive({ path: url.toString() }));
    t.true(performance.now() - started >= 7_000, 'the answer came through the slow server');
    t.true(connections >= 1);
  },
);

test.serial(
  'start-up with a password the server refuses: one sentence naming Database:Path, no password, exit code 1',
  async (t) => {
    const bad = primary!.url(DB, ROLE.name, 'wrong-Pa55word');
    const result = await runServer({ Database__Path: bad });
    t.is(result.code, 1);
    const lines = result.stderr.trim().split('\n');
    t.is(lines.length, 1, result.stderr);
    t.regex(lines[0]!, /Database:Path/);
    t.regex(lines[0]!, /refused the credentials/);
    t.notRegex(result.stderr + result.stdout, /wrong-Pa55word|Pa55-do-not-print/);

    // The right password (scram-sha-256 over TCP) starts it: the refusal above was the credentials.
    const dir = mkdtempSync(join(tmpdir(), 'mag-outage-ok-'));
    const good = await startServerProcess({ dir, dbPath: primary!.url(DB, ROLE.name, ROLE.password) } as Fixture);
    t.teardown(async () => {
      if (good.child.exitCode === null) good.child.kill('SIGTERM');
      await good.exit;
      rmSync(dir, { recursive: true, force: true });
    });
    const res = await fetch(`${good.url}/healthz`);
    t.is(res.status, 200);
  },
);
