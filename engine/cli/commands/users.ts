import type { Command } from 'commander';
import { parseId, printJson, printTable, readStdin, UsageError, withArchive } from '../context.js';

/** A web password from standard input, without the newline that ends it: at least 8 characters. */
async function readPassword(): Promise<string> {
  const password = (await readStdin()).replace(/\r?\n$/, '');
  if (password.length < 8) throw new UsageError('The password must be at least 8 characters.');
  return password;
}

export function registerUsers(program: Command): void {
  const users = program.command('users').description('manage the people who may read the archive');

  users
    .command('add <username>')
    .description('create a user (inactive users and their keys are refused everywhere)')
    .option('--admin', 'administrator: sees every account and may revoke any key')
    .option('--email <address>', 'contact address')
    .option('--password-stdin', 'read the web sign-in password from standard input')
    .option('--json', 'print the new user as JSON')
    .action(
      async (
        username: string,
        opts: { admin?: boolean; email?: string; passwordStdin?: boolean; json?: boolean },
        cmd: Command,
      ) => {
        const password = opts.passwordStdin ? await readPassword() : null;
        const user = await withArchive(
          cmd,
          async (archive) =>
            archive.addUser({
              username,
              email: opts.email ?? null,
              isAdmin: opts.admin ?? false,
              // The store's own format: scrypt in a SQLite file, Mail Archiver's PBKDF2 on PostgreSQL.
              passwordHash: password === null ? null : await archive.hashPassword(password),
            }),
          { create: true },
        );
        if (opts.json) printJson(user);
        else
          process.stdout.write(
            `Created ${user.isAdmin ? 'administrator' : 'user'} ${user.username} (id ${user.id}).\n`,
          );
      },
    );

  users
    .command('set-password <username>')
    .description("replace a user's web sign-in password, read from standard input; their web sessions end")
    .option('--json', 'print the user as JSON')
    .action(async (username: string, opts: { json?: boolean }, cmd: Command) => {
      const password = await readPassword();
      const user = await withArchive(cmd, async (archive) =>
        archive.setUserPassword(username, await archive.hashPassword(password)),
      );
      if (opts.json) printJson(user);
      else process.stdout.write(`Set a new web password for ${user.username}; their web sessions have ended.\n`);
    });

  users
    .command('list')
    .description('list users with their assigned accounts')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const rows = await withArchive(cmd, (archive) => archive.listUsers());
      if (opts.json) printJson(rows);
      else printTable(rows, ['id', 'username', 'email', 'isAdmin', 'isActive', 'accountIds', 'createdAt']);
    });

  users
    .command('set-active <username> <active>')
    .description('activate (true) or deactivate (false) a user; their keys follow at once')
    .option('--json', 'print the user as JSON')
    .action(async (username: string, active: string, opts: { json?: boolean }, cmd: Command) => {
      if (!/^(true|false)$/i.test(active)) throw new UsageError(`<active> must be true or false, not "${active}".`);
      const user = await withArchive(cmd, (archive) => archive.setUserActive(username, /^true$/i.test(active)));
      if (opts.json) printJson(user);
      else process.stdout.write(`${user.username} is now ${user.isActive ? 'active' : 'inactive'}.\n`);
    });

  for (const [name, verb, fn] of [
    ['assign', 'give a user read access to a mail account', 'assignAccount'],
    ['unassign', "take a mail account out of a user's view", 'unassignAccount'],
  ] as const) {
    users
      .command(`${name} <username> <accountId>`)
      .description(verb)
      .option('--json', 'print the result as JSON')
      .action(async (username: string, accountId: string, opts: { json?: boolean }, cmd: Command) => {
        const id = parseId(accountId, '<accountId>');
        const changed = await withArchive(cmd, (archive) => archive[fn](username, id));
        if (opts.json) printJson({ username, accountId: id, changed });
        else
          process.stdout.write(
            `${changed ? 'Done' : 'Nothing to change'}: ${username} ${name === 'assign' ? 'sees' : 'does not see'} account ${id}.\n`,
          );
      });
  }
}
