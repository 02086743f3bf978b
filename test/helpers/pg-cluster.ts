// Private PostgreSQL servers (15, or the version in PG_BIN) for tests that must stop, start or replicate a server: a primary
// made by initdb in a temporary directory and, from it, streaming replicas made by pg_basebackup.
// Each listens on 127.0.0.1 on a free port, with its unix socket inside its own directory, so it
// never meets the shared server at 127.0.0.1:5432 nor another test's.
//
// PostgreSQL refuses to run as root. When the tests run as root (as in the CI containers), the
// server programs run as the `postgres` OS user through runuser, and the directories are handed
// to that user; otherwise they run as the current user.
import { execFile } from 'node:child_process';
import {
  appendFileSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, waitFor } from './redis.js';

export const PG_BIN = process.env.PG_BIN || '/usr/lib/postgresql/15/bin';
const SERVER_USER = 'postgres';

const asRoot = process.getuid?.() === 0;

/** The owner the data directories need: the postgres OS user under root, else ourselves. */
function owner(): { uid: number; gid: number } {
  if (!asRoot) return { uid: userInfo().uid, gid: userInfo().gid };
  const info = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((l) => l.split(':'))
    .find((f) => f[0] === SERVER_USER);
  if (!info) throw new Error(`Tests run as root need an OS user "${SERVER_USER}" to run PostgreSQL.`);
  return { uid: Number(info[2]), gid: Number(info[3]) };
}

/** Runs one PostgreSQL program (as the postgres user under root); rejects with its output. */
function run(program: string, args: readonly string[], timeoutMs = 60_000): Promise<string> {
  const file = join(PG_BIN, program);
  const [cmd, argv] = asRoot ? ['runuser', ['-u', SERVER_USER, '--', file, ...args]] : [file, [...args]];
  return new Promise((resolve, reject) => {
    execFile(cmd, argv, { timeout: timeoutMs, cwd: tmpdir() }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${program} ${args.join(' ')} failed: ${err.message}\n${stdout}${stderr}`));
      else resolve(stdout + stderr);
    });
  });
}

export interface PgServer {
  readonly role: 'primary' | 'replica';
  readonly port: number;
  /** Temporary directory holding data/, sock/ and server.log. */
  readonly root: string;
  readonly dataDir: string;
  /** postgres:// URL of `database` on this server, as `user` (trusted unless a password is given). */
  url(database?: string, user?: string, password?: string): string;
  /** Whether the server process is running (by our own start/stop bookkeeping). */
  readonly running: boolean;
  start(): Promise<void>;
  /** pg_ctl stop; `fast` (default) ends sessions, `immediate` is a crash. Safe when stopped. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Stops the server (immediate) and removes its directory. Safe to call twice. */
  destroy(): Promise<void>;
  /** A one-shot query as the postgres superuser on `database`. */
  query<R extends pg.QueryResultRow = Record<string, unknown>>(
    text: string,
    params?: unknown[],
    database?: string,
  ): Promise<R[]>;
  /** The server's log so far (for failure messages). */
  log(): string;
}

class Server implements PgServer {
  running = false;
  #destroyed = false;
  readonly dataDir: string;
  readonly sockDir: string;
  readonly logFile: string;

  constructor(
    readonly role: 'primary' | 'replica',
    readonly root: string,
    readonly port: number,
  ) {
    this.dataDir = join(root, 'data');
    this.sockDir = join(root, 'sock');
    this.logFile = join(root, 'server.log');
  }

  url(database = 'postgres', user = 'postgres', password?: string): string {
    const auth =
      password === undefined ? encodeURIComponent(user) : `${encodeURIComponent(user)}:${encodeURIComponent(password)}`;
    return `postgres://${auth}@127.0.0.1:${this.port}/${database}`;
  }

  async start(): Promise<void> {
    if (this.running) return;
    await run('pg_ctl', [
      '-D',
      this.dataDir,
      '-l',
      this.logFile,
      '-w',
      '-t',
      '60',
      '-o',
      `-p ${this.port} -k ${this.sockDir}`,
      'start',
    ]);
    this.running = true;
  }

  /** Stops the server; stopping one that is already stopped changes nothing (tests stop twice on purpose). */
  async stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    if (this.running) await run('pg_ctl', ['-D', this.dataDir, '-m', mode, '-w', '-t', '60', 'stop']);
    this.running = false;
  }

  async destroy(): Promise<void> {
    if (this.#destroyed) return;
    this.#destroyed = true;
    live.delete(this);
    try {
      // Ask pg_ctl even if our bookkeeping says stopped: a failed start may have left a postmaster.
      if (existsSync(join(this.dataDir, 'postmaster.pid'))) {
        await run('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', 'stop']).catch(() => {});
      }
    } finally {
      this.running = false;
      rmSync(this.root, { recursive: true, force: true });
    }
  }

  async query<R extends pg.QueryResultRow = Record<string, unknown>>(
    text: string,
    params: unknown[] = [],
    database = 'postgres',
  ): Promise<R[]> {
    const client = new pg.Client({ connectionString: this.url(database), connectionTimeoutMillis: 5_000 });
    client.on('error', () => {});
    await client.connect();
    try {
      return (await client.query<R>(text, params)).rows;
    } finally {
      await client.end().catch(() => {});
    }
  }

  log(): string {
    try {
      return readFileSync(this.logFile, 'utf8');
    } catch {
      return '';
    }
  }
}

/** Servers not yet destroyed: killed at process exit if a test forgot (or crashed before) teardown. */
const live = new Set<Server>();
process.once('exit', () => {
  for (const s of live) {
    try {
      const pid = Number(readFileSync(join(s.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      if (pid > 0) process.kill(pid, 'SIGQUIT');
    } catch {
      // already gone
    }
    rmSync(s.root, { recursive: true, force: true });
  }
});

function makeRoot(prefix: string): string {
  const root = mkdtempSync(join(tmpdir(), prefix));
  const { uid, gid } = owner();
  chownSync(root, uid, gid);
  return root;
}

/** Settings every private server gets: small, fast (no fsync: throwaway data), ready to replicate. */
const CONF = [
  "listen_addresses = '127.0.0.1'",
  'wal_level = replica',
  'max_wal_senders = 10',
  'max_replication_slots = 10',
  'hot_standby = on',
  'fsync = off', // commits still flush WAL to the OS, so a walsender streams them at once
  'full_page_writes = off',
  'shared_buffers = 16MB',
  'max_connections = 50',
  "log_min_messages = 'warning'",
];

export interface PrimaryOptions {
  /** postgresql.conf lines after CONF's (a later line wins). */
  settings?: readonly string[];
  /**
   * A login role that must give a password (scram-sha-256 over TCP); every other role stays
   * trusted. For tests of refused credentials.
   */
  passwordRole?: { name: string; password: string };
}

/** initdb a new cluster (trust auth, superuser `postgres`) and start it on a free port. */
export async function startPrimary(options: PrimaryOptions = {}): Promise<PgServer> {
  const root = makeRoot('mag-pg-primary-');
  const server = new Server('primary', root, await freePort());
  live.add(server);
  try {
    const { uid, gid } = owner();
    await run('initdb', [
      '-D',
      server.dataDir,
      '-A',
      'trust',
      '-U',
      'postgres',
      '--no-sync',
      '-E',
      'UTF8',
      '--locale=C',
    ]);
    // The socket directory must exist and belong to the server user.
    mkdirSync(server.sockDir);
    chownSync(server.sockDir, uid, gid);
    const conf = [...CONF, ...(options.settings ?? [])];
    appendFileSync(join(server.dataDir, 'postgresql.conf'), `\n${conf.join('\n')}\n`);
    if (options.passwordRole) {
      // pg_hba.conf is read top down: the password line must come before the trust lines.
      const hba = join(server.dataDir, 'pg_hba.conf');
      const rule = `host all ${options.passwordRole.name} 127.0.0.1/32 scram-sha-256\n`;
      writeFileSync(hba, rule + readFileSync(hba, 'utf8'));
    }
    await server.start();
    if (options.passwordRole) {
      const { name, password } = options.passwordRole;
      await server.query(`SET password_encryption = 'scram-sha-256'`);
      const quotedPassword = `'${password.replace(/'/g, "''")}'`;
      await server.query(`CREATE ROLE "${name}" LOGIN SUPERUSER PASSWORD ${quotedPassword}`);
    }
    return server;
  } catch (err) {
    const log = server.log();
    await server.destroy();
    throw new Error(`${(err as Error).message}\n${log}`);
  }
}

/**
 * A streaming replica of `primary`: pg_basebackup -R (which writes primary_conninfo and
 * standby.signal) into a new directory, started on another free port. Resolves once it accepts
 * read-only connections.
 */
export async function startReplica(primary: PgServer): Promise<PgServer> {
  const root = makeRoot('mag-pg-replica-');
  const server = new Server('replica', root, await freePort());
  live.add(server);
  try {
    const { uid, gid } = owner();
    await run('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-D',
      server.dataDir,
      '-R',
      '-X',
      'stream',
      '--no-sync',
      '-c',
      'fast',
    ]);
    mkdirSync(server.sockDir);
    chownSync(server.sockDir, uid, gid);
    await server.start();
    await waitFor('the replica to accept connections', async () => {
      try {
        const rows = await server.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r');
        return rows[0]?.r === true;
      } catch {
        return false;
      }
    });
    return server;
  } catch (err) {
    const log = server.log();
    await server.destroy();
    throw new Error(`${(err as Error).message}\n${log}`);
  }
}

/** Waits until `replica` has replayed everything `primary` had written when this was called. */
export async function waitForReplay(primary: PgServer, replica: PgServer, timeoutMs = 15_000): Promise<void> {
  const [{ lsn }] = (await primary.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')) as [
    { lsn: string },
  ];
  await waitFor(
    `the replica to replay up to ${lsn}`,
    async () => {
      const rows = await replica.query<{ caught: boolean }>('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS caught', [
        lsn,
      ]);
      return rows[0]?.caught === true;
    },
    timeoutMs,
  );
}
