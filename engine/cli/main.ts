#!/usr/bin/env node
// mail-archive: the operator's command line over the archive (a SQLite file or a Mail Archiver
// PostgreSQL database).
import Database from '../sqlite/driver.js';
import { Command, CommanderError } from 'commander';
import { createRequire } from 'node:module';
import { ConfigError } from '../../shared/config.js';
import { ArchiveOpenError, isArchiveUnavailable, StoreError } from '../../shared/errors.js';
import { registerAccessLog } from './commands/access-log.js';
import { registerAccounts } from './commands/accounts.js';
import { registerBackup } from './commands/backup.js';
import { registerDemo } from './commands/demo.js';
import { registerExport } from './commands/export.js';
import { registerImport } from './commands/import.js';
import { registerIndex } from './commands/index.js';
import { registerReindex } from './commands/reindex.js';
import { registerReparse } from './commands/reparse.js';
import { registerSearch } from './commands/search.js';
import { registerShow } from './commands/show.js';
import { registerSync } from './commands/sync.js';
import { registerKeys } from './commands/keys.js';
import { registerUsers } from './commands/users.js';
import { UsageError } from './context.js';

const { version } = createRequire(import.meta.url)('../../../package.json') as { version: string };

export function buildProgram(): Command {
  const program = new Command('mail-archive')
    .description('Manage the mail archive that mail-archive-gateway serves.')
    .version(version)
    .option(
      '--db <path>',
      'archive file or postgres:// URL of a Mail Archiver database (default: the Database:Path setting, ./data/archive.db)',
    )
    // Set before any subcommand exists: subcommands copy it. Commander's usage errors (unknown
    // command or option, missing argument) become one line like every other failure; its
    // suggestions ("Did you mean …?") arrive on a second line and are joined on.
    .configureOutput({
      outputError: (str, write) =>
        write(
          `mail-archive: ${str
            .replace(/^error: /, '')
            .replace(/\s*\n\s*/g, ' ')
            .trim()} (run with --help for usage)\n`,
        ),
    })
    .exitOverride();
  registerUsers(program);
  registerAccounts(program);
  registerKeys(program);
  registerImport(program);
  registerIndex(program);
  registerReindex(program);
  registerReparse(program);
  registerSync(program);
  registerSearch(program);
  registerShow(program);
  registerExport(program);
  registerAccessLog(program);
  registerBackup(program);
  registerDemo(program);
  for (const cmd of program.commands) {
    cmd.exitOverride();
    for (const sub of cmd.commands) sub.exitOverride();
  }
  return program;
}

/** SQLite failures caused by the file, the disk or a concurrent writer rather than by this program. */
const ENVIRONMENTAL_SQLITE_CODES = /^SQLITE_(BUSY|LOCKED|READONLY|CANTOPEN|NOTADB|CORRUPT|FULL|IOERR|PERM|AUTH)(_|$)/;

/**
 * PostgreSQL refusals caused by the server, its configuration or the role rather than by this
 * program: insufficient privilege, a read-only transaction (a replica), resources, locks,
 * cancellation, serialization failures and deadlocks.
 */
const ENVIRONMENTAL_PG_CODES = /^(42501|25006|53...|55P03|57014|40001|40P01)$/;

/** Known failures print one sentence; only a bug prints a stack. */
export async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv, { from: 'user' });
    // A command that finished its output but has a failure to report (a sync pass in which an
    // account failed) sets process.exitCode.
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
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
    const pgCode = (err as { code?: unknown; severity?: unknown })?.severity
      ? (err as { code?: unknown }).code
      : undefined;
    if (typeof pgCode === 'string' && ENVIRONMENTAL_PG_CODES.test(pgCode)) {
      // A PostgreSQL server that refuses the work (rights, a read-only replica, resources, locks).
      process.stderr.write(
        `mail-archive: the archive database refused the command (${pgCode}): ${(err as Error).message}.\n`,
      );
      return 1;
    }
    if (isArchiveUnavailable(err)) {
      // A PostgreSQL server that went away during the command: one sentence, no URL.
      process.stderr.write(`mail-archive: ${(err as Error).message}\n`);
      return 1;
    }
    if (err instanceof Database.SqliteError && ENVIRONMENTAL_SQLITE_CODES.test(err.code)) {
      // The file, the disk or another process, not a bug here: say so in one line.
      process.stderr.write(`mail-archive: the archive cannot be used (${err.code}): ${err.message}\n`);
      return 1;
    }
    process.stderr.write(`mail-archive: unexpected error: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  }
}

// A reader that stops early (`mail-archive users list --json | head`) closes the pipe: the rest of
// the output has nobody to go to, which is no error of the command's. Stop quietly, as other
// command-line tools do, rather than crash with a stack trace.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
  throw err;
});
process.exitCode = await main(process.argv.slice(2));
