import type { Command } from 'commander';
import { printJson, printTable, withArchive } from '../context.js';

export function registerAccounts(program: Command): void {
  const accounts = program.command('accounts').description('manage archived mail accounts');

  accounts
    .command('add')
    .description('register a mail account to import mail into (no credentials are stored)')
    .requiredOption('--name <name>', 'display name')
    .requiredOption('--email <address>', "the account's own address; mail from it counts as outgoing")
    .option('--provider <provider>', 'IMAP, M365, IMPORT, … (default: IMAP; IMPORT on PostgreSQL)')
    .option('--json', 'print {"id":N}')
    .action(async (opts: { name: string; email: string; provider?: string; json?: boolean }, cmd: Command) => {
      const account = await withArchive(
        cmd,
        (archive) =>
          archive.addAccount({
            name: opts.name,
            emailAddress: opts.email,
            ...(opts.provider !== undefined ? { provider: opts.provider } : {}),
          }),
        { create: true },
      );
      if (opts.json) printJson({ id: account.id });
      else process.stdout.write(`${account.id}\n`);
    });

  accounts
    .command('list')
    .description('list mail accounts')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const rows = await withArchive(cmd, (archive) => archive.listAccounts());
      if (opts.json) printJson(rows);
      else printTable(rows, ['id', 'name', 'emailAddress', 'provider', 'isEnabled', 'lastSync']);
    });
}
