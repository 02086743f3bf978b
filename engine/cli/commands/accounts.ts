import type { Command } from 'commander';
import { clearTextWarning } from '../../sync/imap.js';
import { randomBytes } from 'node:crypto';
import { renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { loadSettings, parseSecretKey } from '../../../shared/config.js';
import { storeKind } from '../../archive.js';
import { SecretBox, syncSecretFilePath } from '../../rules/secrets.js';
import type { AccountChanges, AccountStatus } from '../../store-contract.js';
import { IMAP_SECURITIES, type ImapInput } from '../../rules/account-settings.js';
import type { ImapSecurity } from '../../rules/sync-state.js';
import { archivePath, parseId, printJson, printTable, readStdin, UsageError, withArchive } from '../context.js';

interface ImapOptions {
  imapHost?: string;
  imapPort?: string;
  imapSecurity?: string;
  imapUser?: string;
  passwordStdin?: boolean;
  folders?: string;
  exclude?: string;
}

/** The IMAP options every account command takes. */
function imapOptions(command: Command): Command {
  return command
    .option('--imap-host <host>', 'IMAP server host name or address')
    .option('--imap-port <port>', 'IMAP port (default: 993 for tls, 143 for starttls and none)')
    .option('--imap-security <mode>', 'tls, starttls or none (default: tls)')
    .option('--imap-user <user>', 'IMAP user name (default: the e-mail address)')
    .option('--password-stdin', 'read the IMAP password from standard input (one line)')
    .option('--folders <list>', 'only these folders, comma-separated, "/" between levels (default: all)')
    .option('--exclude <list>', 'never these folders (nor their subfolders), comma-separated');
}

function parsePort(value: string): number {
  const v = value.trim();
  if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 65535) {
    throw new UsageError(`--imap-port must be a whole number from 1 to 65535, not "${value}".`);
  }
  return Number(v);
}

function parseSecurity(value: string): ImapSecurity {
  const v = value.trim().toLowerCase();
  if (!(IMAP_SECURITIES as readonly string[]).includes(v)) {
    throw new UsageError(`--imap-security must be tls, starttls or none, not "${value}".`);
  }
  return v as ImapSecurity;
}

function parseList(value: string, option: string): string[] {
  const items = value.split(',').map((s) => s.trim());
  if (items.some((s) => s === '')) throw new UsageError(`${option} has an empty folder name: "${value}".`);
  return items;
}

function parseBool(value: string, option: string): boolean {
  if (/^true$/i.test(value.trim())) return true;
  if (/^false$/i.test(value.trim())) return false;
  throw new UsageError(`${option} must be true or false, not "${value}".`);
}

async function readPassword(): Promise<string> {
  // One line: the trailing newline of `echo secret |` is not part of the password.
  const password = (await readStdin()).replace(/\r?\n$/, '');
  if (password.length === 0) throw new UsageError('--password-stdin read no password from standard input.');
  if (/[\r\n]/.test(password)) throw new UsageError('--password-stdin reads one line; standard input held several.');
  return password;
}

/** The IMAP part of the options as given (undefined where not given), the password read when asked for. */
async function imapChanges(opts: ImapOptions): Promise<Partial<ImapInput>> {
  const out: Partial<ImapInput> = {};
  if (opts.imapHost !== undefined) {
    if (!opts.imapHost.trim()) throw new UsageError('--imap-host is empty.');
    out.host = opts.imapHost;
  }
  if (opts.imapPort !== undefined) out.port = parsePort(opts.imapPort);
  if (opts.imapSecurity !== undefined) out.security = parseSecurity(opts.imapSecurity);
  if (opts.imapUser !== undefined) out.user = opts.imapUser;
  if (opts.folders !== undefined)
    out.folders = opts.folders.trim() === '' ? null : parseList(opts.folders, '--folders');
  if (opts.exclude !== undefined) out.exclude = opts.exclude.trim() === '' ? [] : parseList(opts.exclude, '--exclude');
  if (opts.passwordStdin) out.password = await readPassword();
  return out;
}

const hasImapOption = (opts: ImapOptions) =>
  [opts.imapHost, opts.imapPort, opts.imapSecurity, opts.imapUser, opts.folders, opts.exclude].some(
    (v) => v !== undefined,
  ) || opts.passwordStdin === true;

/** What `accounts list` shows: never a credential. */
function listed(a: AccountStatus) {
  return {
    id: a.id,
    name: a.name,
    emailAddress: a.emailAddress,
    provider: a.provider,
    isEnabled: a.isEnabled,
    lastSync: a.lastSync,
    lastOutcome: a.lastOutcome === null ? null : a.lastOutcome.ok ? 'ok' : a.lastOutcome.error,
    lastOutcomeAt: a.lastOutcome === null ? null : new Date(a.lastOutcome.at).toISOString(),
    failures: a.failures,
    messages: a.messages,
    imap: a.imap,
  };
}

/** After IMAP settings change: one warning on stderr when the password now travels in clear text. */
async function warnClearText(cmd: Command, id: number): Promise<void> {
  const status = (await withArchive(cmd, (archive) => archive.listAccountStatus())).find((a) => a.id === id);
  if (status?.imap?.security === 'none')
    process.stderr.write(`mail-archive: warning: account ${id}: ${clearTextWarning(status.imap)}.\n`);
}

export function registerAccounts(program: Command): void {
  const accounts = program.command('accounts').description('manage archived mail accounts');

  imapOptions(
    accounts
      .command('add')
      .description('register a mail account: import-only, or an IMAP account `sync` fetches mail from')
      .requiredOption('--name <name>', 'display name')
      .requiredOption('--email <address>', "the account's own address; mail from it counts as outgoing")
      .option('--provider <provider>', 'IMAP, M365, IMPORT, … (default: IMAP; IMPORT on PostgreSQL)'),
  )
    .option('--json', 'print {"id":N}')
    .action(
      async (opts: { name: string; email: string; provider?: string; json?: boolean } & ImapOptions, cmd: Command) => {
        const imap = hasImapOption(opts);
        if (imap) {
          if (opts.provider !== undefined && opts.provider.trim().toUpperCase() !== 'IMAP') {
            throw new UsageError(`IMAP options are for --provider IMAP, not "${opts.provider}".`);
          }
          if (opts.imapHost === undefined) throw new UsageError('An IMAP account needs --imap-host.');
          if (!opts.passwordStdin) throw new UsageError('An IMAP account needs its password: give --password-stdin.');
        }
        const changes = imap ? await imapChanges(opts) : null;
        const account = await withArchive(
          cmd,
          (archive) =>
            changes
              ? archive.addImapAccount({
                  name: opts.name,
                  emailAddress: opts.email,
                  imap: { ...changes, host: changes.host!, password: changes.password! },
                })
              : archive.addAccount({
                  name: opts.name,
                  emailAddress: opts.email,
                  ...(opts.provider !== undefined ? { provider: opts.provider } : {}),
                }),
          { create: true },
        );
        if (changes) await warnClearText(cmd, account.id);
        if (opts.json) printJson({ id: account.id });
        else process.stdout.write(`${account.id}\n`);
      },
    );

  imapOptions(
    accounts
      .command('set <id>')
      .description("change an account's name, address, provider, enabled flag or IMAP settings")
      .option('--name <name>', 'display name')
      .option('--email <address>', "the account's own address")
      .option('--provider <provider>', 'IMAP, M365, IMPORT, …')
      .option('--enabled <bool>', 'true or false: whether `sync` fetches its mail'),
  )
    .option('--json', 'print the account as JSON')
    .action(
      async (
        idText: string,
        opts: { name?: string; email?: string; provider?: string; enabled?: string; json?: boolean } & ImapOptions,
        cmd: Command,
      ) => {
        const id = parseId(idText, 'The account id');
        const changes: AccountChanges = {};
        if (opts.name !== undefined) changes.name = opts.name;
        if (opts.email !== undefined) changes.emailAddress = opts.email;
        if (opts.provider !== undefined) changes.provider = opts.provider;
        if (opts.enabled !== undefined) changes.isEnabled = parseBool(opts.enabled, '--enabled');
        if (hasImapOption(opts)) changes.imap = await imapChanges(opts);
        if (Object.keys(changes).length === 0) throw new UsageError('Nothing to change: give at least one option.');
        const account = await withArchive(cmd, (archive) => archive.setAccount(id, changes));
        if (changes.imap) await warnClearText(cmd, account.id);
        if (opts.json) printJson(account);
        else process.stdout.write(`Updated account ${account.id}.\n`);
      },
    );

  accounts
    .command('list')
    .description('list mail accounts with their last sync and message count (never a credential)')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const rows = (await withArchive(cmd, (archive) => archive.listAccountStatus())).map(listed);
      if (opts.json) printJson(rows);
      else
        printTable(rows, [
          'id',
          'name',
          'emailAddress',
          'provider',
          'isEnabled',
          'lastSync',
          'lastOutcome',
          'messages',
        ]);
    });

  accounts
    .command('rotate-secret')
    .description('re-encrypt every stored IMAP password with a new key (stop the sync first; docs/sync.md)')
    .option('--new-key-stdin', 'read the new key (32 bytes, base64 or 64 hex digits) from standard input')
    .option('--json', 'print {"reencrypted":N}')
    .action(async (opts: { newKeyStdin?: boolean; json?: boolean }, cmd: Command) => {
      const configured = loadSettings().Sync.SecretKey !== undefined;
      const path = archivePath(cmd);
      // Without Sync:SecretKey a SQLite archive keeps its key in sync-secret beside the file.
      const keyFile = !configured && storeKind(path) === 'sqlite' ? syncSecretFilePath(path) : null;
      let next: Buffer;
      if (opts.newKeyStdin) {
        const key = parseSecretKey((await readStdin()).trim());
        if (!key) throw new UsageError('The new key must be 32 bytes as base64 or as 64 hexadecimal digits.');
        next = key;
      } else if (keyFile) {
        next = randomBytes(32);
      } else {
        throw new UsageError(
          'The key is Sync:SecretKey: give the new one with --new-key-stdin, then set Sync:SecretKey to it.',
        );
      }
      // The new key is on disk before the passwords are re-encrypted with it, and takes the old
      // key's place only once they are: a failure at any point leaves a key that opens them.
      const staged = keyFile ? `${keyFile}.next` : null;
      if (staged) {
        rmSync(staged, { force: true });
        writeFileSync(staged, `${next.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
      }
      let count: number;
      try {
        count = await withArchive(cmd, (archive) => archive.rotateSecret(new SecretBox(next)));
      } catch (err) {
        if (staged) unlinkSync(staged);
        throw err;
      }
      if (staged && keyFile) renameSync(staged, keyFile);
      if (opts.json) printJson({ reencrypted: count });
      else
        process.stdout.write(
          keyFile
            ? `Re-encrypted ${count} IMAP password(s); the new key is in ${keyFile}: back it up.\n`
            : `Re-encrypted ${count} IMAP password(s); set Sync:SecretKey to the new key before the next sync.\n`,
        );
    });
}
