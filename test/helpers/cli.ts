// Runs the built `mail-archive` CLI as a child process, the way an operator or a script does.
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import pLimit from 'p-limit';

export const CLI = fileURLToPath(new URL('../../engine/cli/main.js', import.meta.url));

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * At most this many CLI processes at once per test process. ava starts every test of a file at
 * once: cli.test.ts alone had some thirty node processes starting together, a load average of
 * 40 on two cores, and every other test file sharing the machine then saw its PostgreSQL
 * connections time out and its first searches pass Engine:JobTimeoutSeconds. A CLI run is mostly
 * node starting up, CPU work that more processes than cores only slow down. Runs wait their turn
 * here, never for a time; none of them waits on another, so the queue always moves.
 */
const cliSlots = pLimit(Math.max(2, availableParallelism()));

/** `env` replaces the environment (plus PATH and TZ=UTC), so no stray setting applies. */
export function runCli(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {},
): Promise<Run> {
  return cliSlots(() => spawnCli(args, options));
}

function spawnCli(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      ...(options.cwd ? { cwd: options.cwd } : {}),
      env: { PATH: process.env.PATH, TZ: 'UTC', ...options.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}
