import type { Command } from 'commander';
import { addAccount, listAllAccounts } from '../../store/accounts.js';
import { printJson, printTable, withArchive } from '../context.js';

export function registerAccounts(program: Command): void {
  const accounts = program.command('accounts').description('manage archived mail accounts');

  accounts
    .command('add')
    .description('register a mail account to import mail into (no credentials are stored)')
    .requiredOption('--name <name>', 'display name')
    .requiredOption('--email <address>', "the account's own address; mail from it counts as outgoing")
    .option('--provider <provider>', 'IMAP, M365, …', 'IMAP')
    .option('--json', 'print {"id":N}')
    .action(async (opts: { name: string; email: string; provider: string; json?: boolean }, cmd: Command) => {
      const account = await withArchive(
        cmd,
        (db) => addAccount(db, { name: opts.name, emailAddress: opts.email, provider: opts.provider }),
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
      const rows = await withArchive(cmd, (db) => listAllAccounts(db));
      if (opts.json) printJson(rows);
      else printTable(rows, ['id', 'name', 'emailAddress', 'provider', 'isEnabled', 'lastSync']);
    });
}
