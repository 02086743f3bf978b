#!/usr/bin/env node
// mail-archive: the operator's command line over the archive file.
import { Command, CommanderError } from 'commander';
import { createRequire } from 'node:module';
import { ConfigError } from '../../shared/config.js';
import { ArchiveOpenError } from '../db/open.js';
import { StoreError } from '../store/errors.js';
import { registerAccessLog } from './commands/access-log.js';
import { registerAccounts } from './commands/accounts.js';
import { registerDemo } from './commands/demo.js';
import { registerImport } from './commands/import.js';
import { registerKeys } from './commands/keys.js';
import { registerUsers } from './commands/users.js';
import { UsageError } from './context.js';

const { version } = createRequire(import.meta.url)('../../../package.json') as { version: string };

export function buildProgram(): Command {
  const program = new Command('mail-archive')
    .description('Manage the mail archive that mail-archive-gateway serves.')
    .version(version)
    .option('--db <path>', 'archive file (default: the Database:Path setting, ./data/archive.db)')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  registerUsers(program);
  registerAccounts(program);
  registerKeys(program);
  registerImport(program);
  registerAccessLog(program);
  registerDemo(program);
  for (const cmd of program.commands) {
    cmd.exitOverride();
    for (const sub of cmd.commands) sub.exitOverride();
  }
  return program;
}

/** Known failures print one sentence; only a bug prints a stack. */
export async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander has already printed its message (or the help/version text).
      return err.exitCode === 0 || err.code === 'commander.helpDisplayed' || err.code === 'commander.version' ? 0 : 2;
    }
    if (err instanceof UsageError) {
      process.stderr.write(`mail-archive: ${err.message}\n`);
      return 2;
    }
    if (err instanceof StoreError || err instanceof ConfigError || err instanceof ArchiveOpenError) {
      process.stderr.write(`mail-archive: ${err.message}\n`);
      return 1;
    }
    process.stderr.write(`mail-archive: unexpected error: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
