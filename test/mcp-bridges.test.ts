// What desktop bridges and OAuth-aware MCP clients see (docs/mcp.md, "When a key is refused" and
// "What counts against the budget"), with the real tools: mcp-remote (the stdio↔HTTP bridge) and
// the MCP Inspector 2.x CLI, both devDependencies run offline, against the real gateway. Serial:
// each tool is a Node process of its own, and the machine may be small.
import anyTest, { type TestFn } from 'ava';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import request from 'supertest';
import {
  call,
  connectClient,
  connectV2Client,
  LEGACY_REVISION,
  MODERN_REVISION,
  startMcpGateway,
} from './helpers/mcp.js';
import { consent, person, startOAuthGateway } from './helpers/oauth.js';

const test = anyTest as TestFn<{ configDir: string }>;
const require = createRequire(import.meta.url);

test.before((t) => {
  t.context = { configDir: mkdtempSync(join(tmpdir(), 'mcp-remote-')) };
});
test.after.always((t) => rmSync(t.context.configDir, { recursive: true, force: true }));

function binOf(pkg: string, name: string): string {
  const pkgPath = require.resolve(`${pkg}/package.json`);
  const bin = (JSON.parse(readFileSync(pkgPath, 'utf8')) as { bin: Record<string, string> }).bin[name]!;
  return join(dirname(pkgPath), bin);
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Parsed JSON-RPC messages the bridge wrote to stdout. */
  messages: Array<{ id?: number; result?: Record<string, unknown>; error?: { message: string } }>;
}

/**
 * Runs a tool in its own process group, writes `input` lines to its stdin (for mcp-remote, the
 * MCP client's side of stdio), and collects its output until it exits, `until` is satisfied or
 * the time runs out; then the whole group is killed, so nothing it started outlives the test.
 */
function runTool(
  argv: string[],
  opts: {
    input?: object[];
    env?: NodeJS.ProcessEnv;
    until?: (r: Run) => boolean;
    timeoutMs?: number;
    /** Called with what the tool wrote to stderr so far, each time it writes more. */
    onStderr?: (stderr: string) => void;
  } = {},
): Promise<Run> {
  const child = spawn(process.execPath, argv, {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, BROWSER: 'false', ...opts.env },
    detached: true,
  });
  const run: Run = { code: null, stdout: '', stderr: '', messages: [] };
  return new Promise((resolve) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      resolve(run);
    };
    const timer = setTimeout(finish, opts.timeoutMs ?? 45_000);
    child.stdout.on('data', (d: Buffer) => {
      run.stdout += d.toString();
      run.messages = run.stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Run['messages'][number]);
      if (opts.until?.(run)) finish();
    });
    child.stderr.on('data', (d: Buffer) => {
      run.stderr += d.toString();
      opts.onStderr?.(run.stderr);
    });
    child.on('exit', (code) => {
      run.code = code;
      // Give the pipes a moment to drain what was written before the exit.
      setTimeout(finish, 100);
    });
    for (const line of opts.input ?? []) child.stdin.write(`${JSON.stringify(line)}\n`);
  });
}

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: LEGACY_REVISION, capabilities: {}, clientInfo: { name: 'desktop-app', version: '1.0.0' } },
};
const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };

/** What a desktop client sends a bridge: the handshake, then tools/list (id 2) and a call (id 3). */
const SESSION = [
  initialize,
  initialized,
  { jsonrpc: '2.0', id: 2, method: 'tools/list' },
  { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'list_accounts', arguments: {} } },
];

function mcpRemote(t: { context: { configDir: string } }, url: string, key: string, until?: (r: Run) => boolean) {
  return runTool(
    [binOf('mcp-remote', 'mcp-remote'), url, '--header', `Authorization: Bearer ${key}`, '--transport', 'http-only'],
    {
      env: { MCP_REMOTE_CONFIG_DIR: t.context.configDir },
      input: SESSION,
      ...(until ? { until } : {}),
    },
  );
}

const INSPECTOR = () => binOf('mcp-inspector-v2', 'mcp-inspector');

test.serial(
  'mcp-remote with a revoked key prints the reason and stops, instead of "registration rejected" alone',
  async (t) => {
    const h = await startMcpGateway();
    try {
      const out = await mcpRemote(t, h.url, h.fixture.keys.revoked);
      t.not(out.code, null, 'the bridge exits on its own');
      t.not(out.code, 0);
      t.regex(out.stderr, /does not offer OAuth: it accepts only API keys/);
      t.regex(out.stderr, /The key sent was refused: The API key has been revoked\./);
      t.deepEqual(
        out.messages.filter((m) => m.result),
        [],
        'nothing was answered',
      );
    } finally {
      await h.close();
    }
  },
);

test.serial('the Inspector 2.x CLI names the reason for a refused key', async (t) => {
  const h = await startMcpGateway();
  try {
    const argv = [
      INSPECTOR(),
      '--cli',
      h.url,
      '--transport',
      'http',
      '--header',
      `Authorization: Bearer ${h.fixture.keys.expired}`,
      '--method',
      'tools/list',
    ];
    // Non-interactive, as its own error message tells scripts to run it.
    const ci = await runTool([...argv, '--stored-auth-only']);
    t.not(ci.code, 0);
    t.regex(ci.stdout + ci.stderr, /The API key has expired\./);
    // Interactive: it tries OAuth, and what it prints is that this server has none.
    const interactive = await runTool(argv, {
      env: { MCP_AUTO_OPEN_ENABLED: 'true', MCP_INSPECTOR_SECRET_STORE: 'memory' },
    });
    t.not(interactive.code, 0);
    t.regex(interactive.stdout + interactive.stderr, /does not offer OAuth: it accepts only API keys/);
  } finally {
    await h.close();
  }
});

test.serial('OAuth discovery finds nothing, and each guessed OAuth endpoint says why the key failed', async (t) => {
  const h = await startMcpGateway({ Server: { AuthFailuresPerIpPerMinute: 3 } });
  try {
    // With Mcp:OAuth:Enabled off nothing advertises OAuth: the resource metadata is a 404 too.
    for (const path of ['/mcp', '/api/v1', '/nope']) {
      const prm = await request(h.base).get(`/.well-known/oauth-protected-resource${path}`);
      t.is(prm.status, 404, path);
      t.regex(prm.body.detail, /does not offer OAuth.*No key was sent/);
    }

    const metadata = await request(h.base).get('/.well-known/oauth-authorization-server');
    t.is(metadata.status, 404);
    t.is(metadata.type, 'application/problem+json');
    t.regex(metadata.body.detail, /does not offer OAuth.*No key was sent/);

    const valid = await request(h.base)
      .post('/register')
      .set('Authorization', `Bearer ${h.fixture.keys.admin}`)
      .send({});
    t.is(valid.status, 404);
    t.regex(valid.body.detail, /The key sent is valid/);
    const revoked = await request(h.base)
      .post('/register')
      .set('Authorization', `Bearer ${h.fixture.keys.revoked}`)
      .send({});
    t.regex(revoked.body.detail, /The key sent was refused: The API key has been revoked\./);
    // A refused key here costs its IP as on /mcp: the third failure spends the budget of 3.
    await request(h.base).get('/token').set('Authorization', 'Bearer ma_short');
    await request(h.base).get('/authorize').set('Authorization', `Bearer ${h.fixture.keys.expired}`);
    const spent = await request(h.base)
      .get('/.well-known/openid-configuration')
      .set('Authorization', `Bearer ${h.fixture.keys.revoked}`);
    t.is(spent.status, 429);
    t.is(
      (await request(h.base).post('/mcp').set('Authorization', `Bearer ${h.fixture.keys.revoked}`).send(initialize))
        .status,
      429,
    );
  } finally {
    await h.close();
  }
});

test.serial(
  'at a budget of 3 per minute, clients connect and make their first call: the handshake is free',
  async (t) => {
    const h = await startMcpGateway({ Mcp: { RateLimitPerMinute: 3 } });
    try {
      // mcp-remote: its handshake, probes and 405s, then tools/list and tools/call (2 of the 3 points).
      const bridge = await mcpRemote(t, h.url, h.fixture.keys.admin, (r) => r.messages.some((m) => m.id === 3));
      const listed = bridge.messages.find((m) => m.id === 2);
      const called = bridge.messages.find((m) => m.id === 3);
      t.truthy(listed?.result, bridge.stderr);
      t.true((listed!.result!.tools as unknown[]).length >= 5);
      t.truthy(called?.result, JSON.stringify(called));
      t.not((called!.result as { isError?: boolean }).isError, true);

      // The SDK clients, each with a key of its own budget: v1 (initialize) and v2 on 2026-07-28.
      const v1 = await connectClient(h.url, h.fixture.keys.alice);
      t.true((await v1.listTools()).tools.length >= 5);
      t.false((await call(v1, 'list_accounts', {})).isError === true);
      await v1.close();
      const v2 = await connectV2Client(h.url, h.fixture.keys.bob, MODERN_REVISION);
      t.true((await v2.listTools()).tools.length >= 5);
      await v2.callTool({ name: 'list_accounts', arguments: {} });
      await v2.close();

      // The counted budget is still 3: the fourth counted message of a key is refused.
      const c = await connectClient(h.url, h.fixture.keys.carol);
      await c.listTools();
      await c.listTools();
      await c.listTools();
      await t.throwsAsync(() => c.listTools(), { message: /429|Rate limit/ });
      await c.close();
    } finally {
      await h.close();
    }
  },
);

test.serial('free messages have a cap of their own (Mcp:FreeRequestsPerMinute)', async (t) => {
  const h = await startMcpGateway({ Mcp: { RateLimitPerMinute: 3, FreeRequestsPerMinute: 5 } });
  try {
    const post = (body: object) =>
      request(h.base)
        .post('/mcp')
        .set('Authorization', `Bearer ${h.fixture.keys.admin}`)
        .set('Accept', 'application/json, text/event-stream')
        .send(body);
    for (let i = 0; i < 4; i++) t.is((await post({ ...initialize, id: i })).status, 200);
    const get = await request(h.base).get('/mcp').set('Authorization', `Bearer ${h.fixture.keys.admin}`);
    t.is(get.status, 405);
    t.is(get.headers['ratelimit-remaining'], '0', 'the fifth free request spent the free budget');
    const refused = await post({ jsonrpc: '2.0', id: 9, method: 'ping' });
    t.is(refused.status, 429);
    t.regex(refused.body.detail, /Rate limit of 5 requests per minute/);
    // Work is counted apart: the key's 3 points are untouched.
    const list = await post({ jsonrpc: '2.0', id: 10, method: 'tools/list' });
    t.is(list.status, 200);
    t.is(list.headers['ratelimit-limit'], '3');
    t.is(list.headers['ratelimit-remaining'], '2');
  } finally {
    await h.close();
  }
});

/**
 * Loads a URL as a browser would, waiting (up to 30 s) for the server behind it to listen: a
 * bridge may print its authorization URL before its callback server has bound its port, and a
 * person is never that quick, but a test is. Any other failure is thrown at once.
 */
async function fetchWhenListening(url: string): Promise<Response> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await fetch(url);
    } catch (err) {
      const code = (err as { cause?: { code?: string } }).cause?.code;
      if (code !== 'ECONNREFUSED' || Date.now() > deadline)
        throw new Error(`loading ${url}: ${code ?? String(err)}`, { cause: err });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

test.serial(
  "mcp-remote's OAuth flow: it registers, sends the person to the consent page, takes the code at its callback and serves tools",
  async (t) => {
    const h = await startOAuthGateway();
    try {
      // A free port for mcp-remote's callback server (its second argument).
      const probe = createNetServer();
      await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
      const port = (probe.address() as AddressInfo).port;
      await new Promise((resolve) => probe.close(resolve));
      let authorized: Promise<void> | undefined;
      const steps: string[] = [];
      const out = await runTool([binOf('mcp-remote', 'mcp-remote'), h.url, String(port), '--transport', 'http-only'], {
        env: { MCP_REMOTE_CONFIG_DIR: t.context.configDir },
        input: SESSION,
        // Both answers, which may come in either order.
        until: (r) => [2, 3].every((id) => r.messages.some((m) => m.id === id)),
        // Headless: the authorization URL it would open in a browser is in its output; the
        // person's part is done through the real pages, and the browser's last step, loading
        // the callback with the code, is a fetch.
        onStderr: (stderr) => {
          const url = /Please authorize this client by visiting:\s*(\S+)/.exec(stderr)?.[1];
          if (!url || authorized) return;
          authorized = (async () => {
            const at = new URL(url);
            steps.push(`authorize ${at.searchParams.get('client_id')} ${at.searchParams.get('redirect_uri')}`);
            const back = await consent(await person(h.base, 'alice'), at.pathname + at.search);
            steps.push(`callback ${back.origin}${back.pathname}`);
            const res = await fetchWhenListening(back.href);
            steps.push(`callback answered ${res.status}`);
          })();
        },
      });
      await authorized;
      t.deepEqual(steps.slice(1), [`callback http://localhost:${port}/oauth/callback`, 'callback answered 200']);
      t.regex(steps[0]!, new RegExp(`^authorize mcp_\\S+ http://localhost:${port}/oauth/callback$`));
      const listed = out.messages.find((m) => m.id === 2);
      const called = out.messages.find((m) => m.id === 3);
      t.true(((listed?.result?.tools as unknown[] | undefined)?.length ?? 0) >= 5, out.stderr);
      const text = (called?.result as { content: Array<{ text: string }> }).content[0]!.text;
      t.deepEqual(
        (JSON.parse(text) as Array<{ id: number }>).map((a) => a.id),
        [h.fixture.accounts.work, h.fixture.accounts.shared],
      );
    } finally {
      await h.close();
    }
  },
);
