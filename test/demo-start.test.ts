// `npm run demo` (engine/cli/demo-start.ts) as a newcomer runs it: it builds the demo archive,
// prints the sign-in address, the passwords and the keys, and serves; run again, it reuses the
// archive and says how to set a password that was lost.
import test from 'ava';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { openStore } from '../engine/archive.js';
import { runCli } from './helpers/cli.js';
import { tempDir } from './helpers/fixture.js';
import { waitFor } from './helpers/redis.js';

const DEMO = fileURLToPath(new URL('../engine/cli/demo-start.js', import.meta.url));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Runs the demo until /healthz answers; returns what it printed and stops it with SIGTERM. */
async function runDemo(
  env: NodeJS.ProcessEnv,
  cwd: string,
  url: string,
): Promise<{ out: string; code: number | null }> {
  const child = spawn(process.execPath, [DEMO], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    await waitFor(
      'the demo to serve',
      async () => {
        if (child.exitCode !== null) throw new Error(`the demo exited with ${child.exitCode}: ${err}`);
        return fetch(`${url}/healthz`).then(
          (r) => r.status === 200,
          () => false,
        );
      },
      90_000,
      100,
    );
    const login = await fetch(`${url}/login`);
    if (login.status !== 200) throw new Error(`/login answered ${login.status}`);
  } finally {
    child.kill('SIGTERM');
  }
  return { out, code: await exited };
}

async function signsIn(db: string, username: string, password: string): Promise<boolean> {
  const store = await openStore({ path: db });
  try {
    return (await store.run({ kind: 'login', username, password })) !== null;
  } finally {
    await store.close();
  }
}

test('the demo prints the /login address with the passwords; run again, it says how to set a new one', async (t) => {
  const { dir, cleanup } = tempDir('mag-demo-');
  t.teardown(cleanup);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const db = join(dir, 'archive.db');
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    Database__Path: db,
    Server__Host: '127.0.0.1',
    Server__Port: String(port),
    Engine__Threads: '1',
  };

  const first = await runDemo(env, dir, url);
  t.is(first.code, 0, 'SIGTERM stops the demo cleanly');
  t.true(
    first.out.includes(`Sign in to the web pages (API keys, API docs) at ${url}/login with a user and password above.`),
  );
  const password = /^\s+admin\s+administrator, sees every account\s+password (\S+)$/m.exec(first.out)?.[1];
  t.truthy(password, first.out);
  t.true(await signsIn(db, 'admin', password!), 'the printed password signs in');

  const second = await runDemo(env, dir, url);
  t.is(second.code, 0);
  t.regex(second.out, /^Using the archive /m);
  t.false(second.out.includes(password!), 'a password is shown only when it is made');
  t.true(second.out.includes(`${url}/login with the passwords printed when this`));
  const hint = "printf '%s\\n' 'a new password' | npm run -s cli -- users set-password admin";
  t.true(second.out.includes(hint), second.out);
  // The hint works as printed (the CLI reads the same Database:Path).
  const run = await runCli(['users', 'set-password', 'admin'], { cwd: dir, env, input: 'a new password\n' });
  t.is(run.code, 0, run.stderr);
  t.true(await signsIn(db, 'admin', 'a new password'));
  t.false(await signsIn(db, 'admin', password!));
});
