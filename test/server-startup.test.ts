// What `npm start` says when it starts: one warning when neither front end is on, and a log a
// person can read at a terminal while pipes (PM2, journald) keep getting JSON lines.
import test from 'ava';
import { spawn } from 'node:child_process';
import { createLogger, logFormat, prettyLine } from '../gateway/logger.js';
import { createFixture } from './helpers/fixture.js';
import { waitFor } from './helpers/redis.js';
import { SERVER, startServerProcess } from './helpers/server-process.js';

test('with the REST API and the MCP server both off, one warning at start-up says so and how to turn them on', async (t) => {
  const f = createFixture();
  t.teardown(f.cleanup);
  const server = await startServerProcess(f, { Api__Enabled: 'false', Mcp__Enabled: 'false' });
  t.teardown(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
  });
  await waitFor('the warning', () => server.lines.some((l) => l.level === 40));
  const warnings = server.lines.filter((l) => l.level === 40);
  t.is(warnings.length, 1);
  const msg = String(warnings[0]!.msg);
  t.regex(msg, /REST API and the MCP server are both off/);
  t.regex(msg, /nothing but \/healthz and \/readyz is served/);
  t.regex(msg, /Api__Enabled=true/);
  t.regex(msg, /Mcp__Enabled=true/);
  // What it says is so: the API is not there, health is.
  t.is((await fetch(`${server.url}/api/v1/accounts`)).status, 404);
  t.is((await fetch(`${server.url}/healthz`)).status, 200);
});

test('with the REST API on there is no such warning, and a piped log is JSON lines', async (t) => {
  const f = createFixture();
  t.teardown(f.cleanup);
  const server = await startServerProcess(f); // Api__Enabled=true; stdout is a pipe
  t.teardown(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
  });
  t.is((await fetch(`${server.url}/healthz`)).status, 200);
  t.true(server.lines.length > 0);
  t.deepEqual(
    server.lines.filter((l) => 'raw' in l),
    [],
    'every line is one JSON object',
  );
  t.false(server.lines.some((l) => /both off/.test(String(l.msg))));
});

test('on a terminal the log is one readable line per event, not JSON', async (t) => {
  const f = createFixture();
  t.teardown(f.cleanup);
  // util-linux `script` runs the server on a pseudo-terminal, as a person's shell would.
  const child = spawn('script', ['-qfec', `exec ${process.execPath} ${SERVER}`, '/dev/null'], {
    cwd: f.dir,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TERM: 'dumb',
      Database__Path: f.dbPath,
      Server__Host: '127.0.0.1',
      Server__Port: '0',
      Engine__Threads: '1',
      LOG_LEVEL: 'info',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  await waitFor('the start-up lines', () => /both off/.test(out), 15_000);
  const text = out.replaceAll('\r\n', '\n');
  t.regex(
    text,
    /^\d\d:\d\d:\d\d\.\d{3} INFO {2}listening on http:\/\/127\.0\.0\.1:(\d+) host=127\.0\.0\.1 port=\1 api=false mcp=false db=\S+$/m,
  );
  t.regex(text, /^\d\d:\d\d:\d\d\.\d{3} WARN {2}the REST API and the MCP server are both off/m);
  t.false(text.includes('{"level"'), 'no JSON line on a terminal');
  const port = /port=(\d+)/.exec(text)![1];
  t.is((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
});

test('LOG_FORMAT forces either form; unset, the terminal decides', (t) => {
  t.is(logFormat(undefined, true), 'pretty');
  t.is(logFormat(undefined, false), 'json');
  t.is(logFormat('json', true), 'json');
  t.is(logFormat(' Pretty ', false), 'pretty');
  t.is(logFormat('yaml', false), 'json', 'an unknown value changes nothing');
});

test('a readable line: time in UTC, level, message, fields; an error with its stack; anything else as is', (t) => {
  const line = prettyLine(
    JSON.stringify({
      level: 40,
      time: Date.UTC(2026, 0, 2, 3, 4, 5, 678),
      pid: 1,
      hostname: 'h',
      name: 'mail-archive-gateway',
      msg: 'slow',
      ms: 12,
      route: { path: '/x' },
    }),
    false,
  );
  t.is(line, '03:04:05.678 WARN  slow ms=12 route={"path":"/x"}\n');
  const failed = prettyLine(
    JSON.stringify({
      level: 50,
      time: 0,
      msg: 'boom',
      err: { type: 'Error', message: 'm', stack: 'Error: m\n    at f' },
    }),
    false,
  );
  t.is(failed, '00:00:00.000 ERROR boom\n    Error: m\n        at f\n');
  t.is(prettyLine('not json', false), 'not json\n');
  t.regex(prettyLine(JSON.stringify({ level: 30, time: 0, msg: 'x' }), true), /\u001b\[/, 'colours when asked');
});

test('the readable form keeps the redaction: a key never reaches the terminal', (t) => {
  const written: string[] = [];
  const write = process.stdout.write;
  process.stdout.write = ((chunk: string) => (written.push(String(chunk)), true)) as typeof process.stdout.write;
  try {
    createLogger({ format: 'pretty' }).info(
      { key: 'ma_secret', headers: { authorization: 'Bearer ma_secret' } },
      'auth',
    );
  } finally {
    process.stdout.write = write;
  }
  t.is(written.length, 1);
  t.false(written[0]!.includes('ma_secret'));
  t.regex(written[0]!, /key=\[redacted\]/);
});
