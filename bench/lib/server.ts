// Benchmarks run the real server as its own process, so the load generator never shares its
// event loop. The server logs a JSON line with its port once it listens.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { dirname, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { isPostgresUrl } from '../../shared/config.js';
import type { SearchIndexInfo } from '../../shared/jobs.js';

const SERVER = resolve(dirname(fileURLToPath(import.meta.url)), '../../gateway/server.js');
export const FLOOR_SERVER = resolve(dirname(fileURLToPath(import.meta.url)), 'floor-server.js');

export interface RunningServer {
  url: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts dist/gateway/server.js (or another script) with these env vars (and Node options) on a
 * free port; `onLine` hears every line the server writes to stdout, from the first.
 */
export async function startServer(
  env: Record<string, string>,
  script = SERVER,
  nodeOptions: string[] = [],
  onLine: (line: string) => void = () => {},
): Promise<RunningServer> {
  // A PostgreSQL server saves its index under its working directory, here the repository's data/,
  // unless told where: a benchmark that means to keep one names it (pg-corpus.ts pgIndexFile).
  const unsaved = isPostgresUrl(env.Database__Path ?? '') ? { Engine__SearchIndexFile: '' } : {};
  const child = spawn(process.execPath, [...nodeOptions, script], {
    env: { ...unsaved, ...process.env, Server__Port: '0', Server__Host: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolvePort, reject) => {
    child.once('exit', (code) => reject(new Error(`server exited with code ${code} before listening`)));
    lines.on('line', (line) => {
      onLine(line);
      try {
        const entry = JSON.parse(line) as { port?: number; msg?: string };
        if (entry.port && entry.msg?.startsWith('listening')) resolvePort(entry.port);
      } catch {
        // not a log line
      }
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    process: child,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/**
 * The real server on a benchmark archive: REST on, two query threads, no rate limit in the way;
 * returned once its shared search index (SQLite) is built, so that no run measures the SQL
 * fallback by accident (unless `searchIndex: false`: no index at all).
 */
export async function startArchiveServer(
  dbPath: string,
  options: { searchIndex?: boolean; nodeOptions?: string[]; env?: Record<string, string> } = {},
): Promise<RunningServer> {
  const server = await startServer(
    {
      Api__Enabled: 'true',
      Database__Path: dbPath,
      Engine__Threads: '2',
      Api__RateLimitPerMinute: '1000000000',
      // Benchmarks that do not search need not spend a core building the index.
      ...(options.searchIndex === false ? { Engine__SearchMemoryMB: '0' } : {}),
      ...options.env,
    },
    SERVER,
    options.nodeOptions,
  );
  if (options.searchIndex === false) return server;
  const started = performance.now();
  const index = await searchIndexOf(server, (i) => i === undefined || i.status === 'current');
  if (index)
    console.log(
      `Server's search index: ${(index.bytes! / 1024 / 1024).toFixed(0)} MiB, ${index.terms} terms, built in ${(index.buildMs! / 1000).toFixed(1)} s (ready after ${((performance.now() - started) / 1000).toFixed(1)} s).`,
    );
  return server;
}

/** The server's search index as /readyz reports it, once `until` holds (`waitMs`, 10 minutes by default, at most). */
export async function searchIndexOf(
  server: RunningServer,
  until: (index: SearchIndexInfo | undefined) => boolean = () => true,
  waitMs = 600_000,
): Promise<SearchIndexInfo | undefined> {
  for (const deadline = Date.now() + waitMs; ;) {
    const body = (await (await fetch(`${server.url}/readyz`)).json()) as { checks: { searchIndex?: SearchIndexInfo } };
    const index = body.checks.searchIndex;
    if (until(index) || Date.now() > deadline) return index;
    await new Promise((r) => setTimeout(r, 500));
  }
}
