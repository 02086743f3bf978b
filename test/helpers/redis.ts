// Redis for the rate-limit tests: the shared server named by REDIS_URL (CI always runs one), and
// private servers a test starts and stops itself to prove the fallback.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect } from 'node:net';

/** The shared Redis of the test environment. */
export function redisUrl(): string {
  return process.env.REDIS_URL || 'redis://127.0.0.1:6379';
}

/** A TCP port that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Sends one inline command over a fresh connection and returns the first reply line. */
export function redisCommand(url: string, command: string, timeoutMs = 1000): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname || '127.0.0.1', port: Number(port || 6379) });
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no reply from ${url} to ${command}`));
    }, timeoutMs);
    socket.on('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (chunk) => {
      data += chunk.toString('utf8');
      const end = data.indexOf('\r\n');
      if (end === -1) return;
      // Bulk replies ($n) carry their value on the next line.
      if (data.startsWith('$') && !data.startsWith('$-1')) {
        const second = data.indexOf('\r\n', end + 2);
        if (second === -1) return;
        clearTimeout(timer);
        socket.end();
        resolve(data.slice(end + 2, second));
        return;
      }
      clearTimeout(timer);
      socket.end();
      resolve(data.slice(0, end));
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

export async function ping(url: string): Promise<boolean> {
  try {
    return (await redisCommand(url, 'PING', 500)) === '+PONG';
  } catch {
    return false;
  }
}

export async function waitFor(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 10_000,
  everyMs = 50,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface RedisServer {
  port: number;
  url: string;
  process: ChildProcess;
  /** SIGTERM, then wait for the process to exit. */
  stop(): Promise<void>;
}

/** Starts a throwaway redis-server (no persistence) on `port` and waits until it answers PING. */
export async function startRedisServer(port?: number): Promise<RedisServer> {
  const p = port ?? (await freePort());
  const child = spawn(
    'redis-server',
    ['--port', String(p), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `redis://127.0.0.1:${p}`;
  let failed: Error | undefined;
  child.once('error', (err) => (failed = err));
  try {
    await waitFor(`redis-server on port ${p}`, () => {
      if (failed) throw failed;
      if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}: ${stderr}`);
      return ping(url);
    });
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  let stopped: Promise<void> | undefined;
  return {
    port: p,
    url,
    process: child,
    stop: () =>
      (stopped ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        await exited;
      })()),
  };
}
