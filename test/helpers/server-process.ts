// The built server (dist/gateway/server.js) as its own process on a free port, the way
// `npm start` runs it, with its JSON log lines collected.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Fixture } from './fixture.js';
import { waitFor } from './redis.js';

export const SERVER = fileURLToPath(new URL('../../gateway/server.js', import.meta.url));

export interface ServerProcess {
  child: ChildProcess;
  port: number;
  url: string;
  lines: Array<Record<string, unknown>>;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export async function startServerProcess(f: Fixture, extraEnv: Record<string, string> = {}): Promise<ServerProcess> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    Api__Enabled: 'true',
    Database__Path: f.dbPath,
    Server__Host: '127.0.0.1',
    Server__Port: '0',
    Engine__Threads: '1',
    LOG_LEVEL: 'info',
    ...extraEnv,
  };
  // cwd is the fixture directory so that no appsettings.json of the repository is read.
  const child = spawn(process.execPath, [SERVER], { cwd: f.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Array<Record<string, unknown>> = [];
  let stderr = '';
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    let nl: number;
    while ((nl = buffer.indexOf('\n')) !== -1) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        lines.push({ raw: line });
      }
    }
  });
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  await waitFor(
    'the server to listen',
    () => {
      if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}: ${stderr}`);
      return lines.some((l) => typeof l.port === 'number' && /listening/.test(String(l.msg)));
    },
    // Only the bound on a hang: a start on a 2-core machine shared with a benchmark took past 15 s.
    60_000,
  );
  const port = lines.find((l) => typeof l.port === 'number')!.port as number;
  return { child, port, url: `http://127.0.0.1:${port}`, lines, exit };
}
