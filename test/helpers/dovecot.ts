// A private Dovecot IMAP server for the sync tests: Debian's binary (dovecot-imapd, installed by
// scripts/test-prereqs.sh) run in the foreground as a child process, on free ports, with its own
// configuration, Maildir, passwd-file and self-signed certificate in one temporary directory.
// No system account, no system path, nothing left behind: destroy() kills it and removes the dir.
//
// Dovecot refuses to run login processes or mail access as root, so when the tests run as root
// the login processes run as `dovenull`, internal ones as `dovecot` and every mailbox as `nobody`
// (the mail directory is chowned to it and the temporary directory is made traversable). When the
// tests run as an ordinary user, everything runs as that user.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, rmSync, chmodSync, chownSync, mkdirSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { promisify } from 'node:util';
import { ImapFlow, type ImapFlowOptions } from 'imapflow';
import { freePort } from './redis.js';

const run = promisify(execFile);

export const DOVECOT_BINARY = '/usr/sbin/dovecot';
export const DOVEADM_BINARY = '/usr/bin/doveadm';

/** How a client secures its connection: implicit TLS (tlsPort), STARTTLS or cleartext (port). */
export type ImapSecurity = 'tls' | 'starttls' | 'none';

export interface DovecotUser {
  user: string;
  password: string;
}

export interface DovecotOptions {
  /** Accounts to create; default one: alice@example.test / alice-password. */
  users?: DovecotUser[];
  /** The hierarchy delimiter the server announces; default '.' (Dovecot's own for Maildir). */
  separator?: '.' | '/';
  /** A label for the temporary directory name. */
  label?: string;
}

export interface DovecotServer {
  host: string;
  /** Cleartext port, STARTTLS offered (and plaintext login allowed without it). */
  port: number;
  /** Implicit-TLS port (IMAPS). */
  tlsPort: number;
  users: DovecotUser[];
  /** The server's self-signed certificate (PEM file), to trust as a CA: `tls: { ca }`. */
  certPath: string;
  /** The same certificate's PEM text. */
  ca: string;
  /** The hierarchy delimiter announced by the server. */
  separator: '.' | '/';
  /** The temporary directory holding everything (config, mail, logs). */
  dir: string;
  /** Dovecot's log file (useful when a test fails). */
  logPath: string;
  /** Milliseconds the last start() took until the greeting arrived. */
  startMs: number;
  /** Whether the server process is running. */
  running(): boolean;
  /** Stops the server (SIGTERM, waits for exit); data and ports are kept. Idempotent. */
  stop(): Promise<void>;
  /** Starts it again after stop(), same ports and data; resolves once the greeting arrives. */
  start(): Promise<void>;
  /** stop() and remove the temporary directory. Idempotent. */
  destroy(): Promise<void>;
}

interface Teardown {
  teardown(fn: () => Promise<void> | void): void;
}

const CERT_DAYS = '2';
const STOP_GRACE_MS = 500;

function accountsOf(runAsRoot: boolean) {
  if (!runAsRoot) {
    const me = userInfo();
    return { login: me.username, internal: me.username, uid: me.uid, gid: me.gid };
  }
  // Debian's dovecot-core package creates dovenull and dovecot; nobody/nogroup are 65534.
  return { login: 'dovenull', internal: 'dovecot', uid: 65534, gid: 65534 };
}

function checkUsers(users: DovecotUser[]): void {
  if (users.length === 0) throw new Error('startDovecot: at least one user');
  for (const { user, password } of users) {
    if (!/^[^\s:%/\\]+$/.test(user)) throw new Error(`startDovecot: unusable user name ${JSON.stringify(user)}`);
    if (/[:\r\n]/.test(password) || password === '') throw new Error('startDovecot: unusable password');
  }
}

/** Starts a private Dovecot; with `t`, its destroy() runs in t.teardown even when the test fails. */
export async function startDovecot(options: DovecotOptions = {}, t?: Teardown): Promise<DovecotServer> {
  const users = options.users ?? [{ user: 'alice@example.test', password: 'alice-password' }];
  checkUsers(users);
  const separator = options.separator ?? '.';
  const runAsRoot = process.getuid?.() === 0;
  const who = accountsOf(runAsRoot);

  const dir = mkdtempSync(join(tmpdir(), `mag-dovecot-${options.label ?? 'test'}-`));
  let destroyed = false;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  let ports: number[] = [];

  // The master runs in its own process group with its login, auth and imap processes: signal the
  // whole group, or a login process outliving the master would keep the ports (a restart then
  // fails with "Address already in use"). The master alone takes a second to exit, and now and then
  // hangs after SIGTERM (seen with 2.3.19): the group gets SIGKILL after a short grace period.
  const stop = async (): Promise<void> => {
    const proc = child;
    if (!proc || proc.pid === undefined) return;
    const group = proc.pid;
    if (proc.exitCode === null && proc.signalCode === null) {
      signalGroup(group, 'SIGTERM');
      const timer = setTimeout(() => signalGroup(group, 'SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    }
    // Stragglers of the group (none normally) go too; then wait until the ports refuse connections.
    signalGroup(group, 'SIGKILL');
    live.delete(group);
    for (const port of ports) await waitForClosed('127.0.0.1', port, 5000);
  };
  const destroy = async (): Promise<void> => {
    if (destroyed) return;
    destroyed = true;
    await stop();
    rmSync(dir, { recursive: true, force: true });
  };
  t?.teardown(destroy);

  try {
    // mkdtemp makes the directory 0700: the login, auth and mail processes must traverse it.
    chmodSync(dir, 0o755);
    const run_ = join(dir, 'run');
    const state = join(dir, 'state');
    const mail = join(dir, 'mail');
    for (const d of [run_, state, mail]) mkdirSync(d, { mode: 0o755 });
    if (runAsRoot) chownSync(mail, who.uid, who.gid);

    const certPath = join(dir, 'cert.pem');
    const keyPath = join(dir, 'key.pem');
    await run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      CERT_DAYS,
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout',
      keyPath,
      '-out',
      certPath,
    ]);
    chmodSync(keyPath, 0o600);

    const passwdPath = join(dir, 'passwd');
    writeFileSync(passwdPath, users.map(({ user, password }) => `${user}:{PLAIN}${password}::::::\n`).join(''), {
      mode: 0o644,
    });

    const host = '127.0.0.1';
    // A free port can be taken by another test process between freePort() and Dovecot's bind:
    // a first start that fails is tried again on new ports (a restart keeps its ports).
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      let tlsPort = await freePort();
      while (tlsPort === port) tlsPort = await freePort();
      ports = [port, tlsPort];
      const logPath = join(dir, 'dovecot.log');
      const configPath = join(dir, 'dovecot.conf');
      writeFileSync(
        configPath,
        `# Generated by test/helpers/dovecot.ts
base_dir = ${run_}
state_dir = ${state}
instance_name = mag-test-${port}
log_path = ${logPath}
protocols = imap
listen = ${host}
ssl = yes
ssl_cert = <${certPath}
ssl_key = <${keyPath}
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
default_login_user = ${who.login}
default_internal_user = ${who.internal}
first_valid_uid = 1
first_valid_gid = 1
mail_location = maildir:~/Maildir
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${passwdPath}
}
userdb {
  driver = static
  args = uid=${who.uid} gid=${who.gid} home=${mail}/%u
}
namespace inbox {
  inbox = yes
  separator = ${separator}
}
service imap-login {
  inet_listener imap {
    port = ${port}
  }
  inet_listener imaps {
    port = ${tlsPort}
    ssl = yes
  }
  chroot =
}
service anvil {
  chroot =
  # No growing delay (up to 15 s) after failed logins from one address: tests fail logins on purpose.
  unix_listener anvil-auth-penalty {
    mode = 0
  }
}
`,
      );

      const server: DovecotServer = {
        host,
        port,
        tlsPort,
        users,
        certPath,
        ca: readFileSync(certPath, 'utf8'),
        separator,
        dir,
        logPath,
        startMs: 0,
        running: () => !!child && child.exitCode === null && child.signalCode === null,
        stop,
        destroy,
        start: async () => {
          if (destroyed) throw new Error('this Dovecot was destroyed');
          if (server.running()) return;
          const began = Date.now();
          let output = '';
          const proc = spawn(DOVECOT_BINARY, ['-F', '-c', configPath], {
            stdio: ['ignore', 'pipe', 'pipe'],
            detached: true,
          });
          child = proc;
          if (proc.pid !== undefined) live.add(proc.pid);
          proc.stdout?.on('data', (c: Buffer) => (output += c.toString()));
          proc.stderr?.on('data', (c: Buffer) => (output += c.toString()));
          exited = new Promise((resolve) => proc.once('exit', () => resolve()));
          proc.once('error', (err) => (output += String(err)));
          try {
            await waitForGreeting(host, port, () => !server.running(), 15_000);
            await waitForGreeting(host, tlsPort, () => !server.running(), 15_000, true);
          } catch (err) {
            // Killed either way; its ports may be another process's now, which must not hide why.
            await stop().catch(() => {});
            let log = '';
            try {
              log = readFileSync(logPath, 'utf8').split('\n').slice(-20).join('\n');
            } catch {
              // no log yet
            }
            throw new Error(`Dovecot did not start: ${(err as Error).message}\n${output}\n${log}`);
          }
          server.startMs = Date.now() - began;
        },
      };
      try {
        await server.start();
        return server;
      } catch (err) {
        if (attempt >= 3) throw err;
      }
    }
  } catch (err) {
    await destroy();
    throw err;
  }
}

/** Process groups of running servers, killed if the test process exits without stopping them. */
const live = new Set<number>();
process.once('exit', () => {
  for (const group of live) signalGroup(group, 'SIGKILL');
});

function signalGroup(group: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-group, signal);
  } catch {
    // already gone
  }
}

/** Resolves once nothing accepts connections on the port any more. */
async function waitForClosed(host: string, port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ host, port });
      socket.setTimeout(500, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (!open) return;
    if (Date.now() > deadline) throw new Error(`port ${port} still accepts connections after stop`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Resolves once the port answers with an IMAP greeting (a TCP connect for the TLS port). */
function waitForGreeting(
  host: string,
  port: number,
  gone: () => boolean,
  timeoutMs: number,
  connectOnly = false,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const attempt = (): Promise<boolean> =>
    new Promise((resolve) => {
      const socket = connect({ host, port });
      let data = '';
      const done = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.setTimeout(1000, () => done(false));
      socket.once('error', () => done(false));
      socket.once('connect', () => {
        if (connectOnly) done(true);
      });
      socket.on('data', (chunk: Buffer) => {
        data += chunk.toString('latin1');
        if (data.includes('\r\n')) done(data.startsWith('* OK'));
      });
    });
  return (async () => {
    for (;;) {
      if (gone()) throw new Error('the dovecot process exited');
      if (await attempt()) return;
      if (Date.now() > deadline) throw new Error(`no IMAP greeting on ${host}:${port}`);
      await new Promise((r) => setTimeout(r, 30));
    }
  })();
}

function account(server: DovecotServer, user?: string): DovecotUser {
  const found = user === undefined ? server.users[0] : server.users.find((u) => u.user === user);
  if (!found) throw new Error(`no such user on this Dovecot: ${user}`);
  return found;
}

/**
 * ImapFlow options for a user of this server with the given security:
 *   'none'      port,    secure: false, doSTARTTLS: false
 *   'starttls'  port,    secure: false, doSTARTTLS: true,  tls: { ca }
 *   'tls'       tlsPort, secure: true,                     tls: { ca }
 * The certificate names localhost and 127.0.0.1, so verification stays on (no rejectUnauthorized).
 */
export function imapOptions(
  server: DovecotServer,
  user?: string,
  security: ImapSecurity = 'none',
  overrides: Partial<ImapFlowOptions> = {},
): ImapFlowOptions {
  const { user: name, password } = account(server, user);
  const base: ImapFlowOptions = {
    host: server.host,
    port: security === 'tls' ? server.tlsPort : server.port,
    secure: security === 'tls',
    auth: { user: name, pass: password },
    logger: false,
    connectionTimeout: 5000,
    greetingTimeout: 5000,
  };
  if (security === 'none') base.doSTARTTLS = false;
  if (security === 'starttls') base.doSTARTTLS = true;
  if (security !== 'none') base.tls = { ca: server.ca };
  return { ...base, ...overrides };
}

/** Runs fn with a logged-in ImapFlow client (cleartext, the helpers' default) and logs out. */
export async function withImap<T>(
  server: DovecotServer,
  user: string | undefined,
  fn: (client: ImapFlow) => Promise<T>,
  security: ImapSecurity = 'none',
): Promise<T> {
  const client = new ImapFlow(imapOptions(server, user, security));
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.logout().catch(() => client.close());
  }
}

/** A folder path written with '/' (e.g. 'Archive/2024') in the server's own delimiter. */
export function serverPath(server: DovecotServer, folder: string): string {
  return folder.split('/').join(server.separator);
}

/** Creates the folder and its parents when missing (names in UTF-8; imapflow encodes them). */
async function ensureFolder(client: ImapFlow, server: DovecotServer, folder: string): Promise<string> {
  const parts = folder.split('/');
  if (parts.length === 1 && parts[0]!.toUpperCase() === 'INBOX') return 'INBOX';
  const existing = new Set((await client.list()).map((box) => box.path));
  for (let i = 1; i <= parts.length; i++) {
    const path = parts.slice(0, i).join(server.separator);
    if (!existing.has(path)) {
      await client.mailboxCreate(path);
      existing.add(path);
    }
  }
  return serverPath(server, folder);
}

/**
 * Appends raw RFC 822 messages to a folder ('/'-separated, UTF-8 names), creating it and its
 * parents as needed. Returns the UIDs the server assigned (in order) and the folder's UIDVALIDITY.
 */
export async function appendMessages(
  server: DovecotServer,
  user: string | undefined,
  folder: string,
  rawMessages: Array<string | Buffer>,
  options: { flags?: string[]; internalDate?: Date } = {},
): Promise<{ uids: number[]; uidValidity: bigint | undefined }> {
  return withImap(server, user, async (client) => {
    const path = await ensureFolder(client, server, folder);
    const uids: number[] = [];
    let uidValidity: bigint | undefined;
    for (const raw of rawMessages) {
      const result = await client.append(path, raw, options.flags ?? [], options.internalDate);
      if (!result) throw new Error(`APPEND to ${folder} failed`);
      if (result.uid !== undefined) uids.push(result.uid);
      if (result.uidValidity !== undefined) uidValidity = result.uidValidity;
    }
    return { uids, uidValidity };
  });
}

/**
 * Bulk fill for benchmarks: creates the folder over IMAP, then writes the messages straight into
 * its Maildir `cur/` directory (owned by the mail uid), far faster than one APPEND each. Dovecot
 * assigns their UIDs, in file name order (the order given), when the folder is next opened.
 * Returns the Maildir directory written to.
 */
export async function writeMaildirMessages(
  server: DovecotServer,
  user: string | undefined,
  folder: string,
  rawMessages: Iterable<string | Buffer>,
): Promise<string> {
  const { user: name } = account(server, user);
  const listed = await withImap(server, name, async (client) => {
    const path = await ensureFolder(client, server, folder);
    return (await client.list()).find((box) => box.path === path);
  });
  if (!listed) throw new Error(`folder ${folder} not found after creating it`);
  // Maildir++ on disk: INBOX is the Maildir itself, others are ".<name in modified UTF-7, '.'-separated>".
  const maildir = join(server.dir, 'mail', name, 'Maildir');
  const folderDir =
    listed.path === 'INBOX' ? maildir : join(maildir, '.' + listed.pathAsListed.split(listed.delimiter).join('.'));
  const cur = join(folderDir, 'cur');
  mkdirSync(cur, { recursive: true });
  const { uid, gid } = accountsOf(process.getuid?.() === 0);
  const stamp = Math.floor(Date.now() / 1000);
  let n = 0;
  for (const raw of rawMessages) {
    const bytes = typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw;
    n++;
    // Dovecot sorts new files by name when it assigns UIDs: a zero-padded counter keeps the order.
    const file = join(cur, `${stamp}.M${String(n).padStart(9, '0')}P${process.pid}.mag-test,S=${bytes.length}:2,`);
    writeFileSync(file, bytes, { mode: 0o600 });
    chownSync(file, uid, gid);
  }
  return folderDir;
}

/** Creates a folder (and parents) without messages. */
export async function createFolder(server: DovecotServer, user: string | undefined, folder: string): Promise<void> {
  await withImap(server, user, async (client) => {
    await ensureFolder(client, server, folder);
  });
}

/** Deletes a folder (its messages go with it). */
export async function deleteFolder(server: DovecotServer, user: string | undefined, folder: string): Promise<void> {
  await withImap(server, user, async (client) => {
    await client.mailboxDelete(serverPath(server, folder));
  });
}

/** STATUS of a folder: message count, UIDVALIDITY and UIDNEXT. */
export async function folderStatus(
  server: DovecotServer,
  user: string | undefined,
  folder: string,
): Promise<{ messages: number; uidValidity: bigint; uidNext: number }> {
  return withImap(server, user, async (client) => {
    const status = await client.status(serverPath(server, folder), {
      messages: true,
      uidValidity: true,
      uidNext: true,
    });
    if (!status) throw new Error(`STATUS ${folder} failed`);
    return { messages: status.messages ?? 0, uidValidity: status.uidValidity ?? 0n, uidNext: status.uidNext ?? 0 };
  });
}

/** Number of messages in a folder. */
export async function countMessages(server: DovecotServer, user: string | undefined, folder: string): Promise<number> {
  return (await folderStatus(server, user, folder)).messages;
}

/** Every folder of the account as '/'-separated UTF-8 paths (imapflow decodes modified UTF-7). */
export async function listFolders(server: DovecotServer, user?: string): Promise<string[]> {
  return withImap(server, user, async (client) =>
    (await client.list()).map((box) => box.path.split(box.delimiter || server.separator).join('/')).sort(),
  );
}

/**
 * Gives a folder a new UIDVALIDITY while keeping its messages (doveadm mailbox update on the
 * running server), as a server does after rebuilding its index: a client must resync it fully.
 * Returns the new value (default: the current one plus 1000).
 */
export async function changeUidValidity(
  server: DovecotServer,
  user: string | undefined,
  folder: string,
  value?: number,
): Promise<bigint> {
  const { user: name } = account(server, user);
  const before = await folderStatus(server, name, folder);
  const next = BigInt(value ?? Number(before.uidValidity) + 1000);
  if (next === before.uidValidity || next <= 0n || next > 0xffffffffn) {
    throw new Error(`changeUidValidity: unusable value ${next}`);
  }
  await run(DOVEADM_BINARY, [
    '-c',
    join(server.dir, 'dovecot.conf'),
    'mailbox',
    'update',
    '-u',
    name,
    '--uid-validity',
    String(next),
    serverPath(server, folder),
  ]);
  return next;
}
