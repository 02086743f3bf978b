// A private PM2 daemon for benchmarks: pm2 from node_modules with its own PM2_HOME in a
// temporary directory, so that a user's daemon and process list are never touched. kill()
// stops the daemon and everything it runs, and removes the directory.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file runs from dist/bench/lib). */
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const PM2 = join(REPO, 'node_modules/pm2/bin/pm2');

export interface Pm2Process {
  name: string;
  pm_id: number;
  pid: number;
  pm2_env: { status: string; restart_time: number };
}

export class PrivatePm2 {
  readonly home = mkdtempSync(join(tmpdir(), 'mag-pm2-'));
  private killed: Promise<void> | undefined;

  /** `env` is the environment of every pm2 command, and so of the daemon and its apps. */
  constructor(private readonly env: Record<string, string>) {}

  run(...args: string[]): Promise<string> {
    return new Promise((resolvePromise, reject) => {
      execFile(
        process.execPath,
        [PM2, ...args],
        {
          cwd: REPO,
          // PM2_DISCRETE_MODE: no banner and no version check over the network.
          env: { ...process.env, ...this.env, PM2_HOME: this.home, PM2_DISCRETE_MODE: 'true' },
          maxBuffer: 16 * 1024 * 1024,
        },
        (err, stdout, stderr) =>
          err ? reject(new Error(`pm2 ${args.join(' ')}: ${err.message}\n${stderr}`)) : resolvePromise(stdout),
      );
    });
  }

  async list(): Promise<Pm2Process[]> {
    return JSON.parse(await this.run('jlist')) as Pm2Process[];
  }

  kill(): Promise<void> {
    return (this.killed ??= this.run('kill')
      .then(
        () => undefined,
        (err: Error) => console.error(err.message),
      )
      .finally(() => rmSync(this.home, { recursive: true, force: true })));
  }
}
