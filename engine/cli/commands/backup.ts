import type { Command } from 'commander';
import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { storeKind } from '../../archive.js';
import Database from '../../sqlite/driver.js';
import { StoreError } from '../../../shared/errors.js';
import type { SqliteAdmin } from '../../sqlite/admin.js';
import { archivePath, printJson, UsageError, withArchive } from '../context.js';

export interface BackupSummary {
  destination: string;
  bytes: number;
  pages: number;
  seconds: number;
  check: 'ok';
}

/**
 * `backup <destination>`: a consistent copy of the archive made with SQLite's online backup,
 * safe while the gateway serves and an import or sync writes (copying the file, its -wal and
 * -shm by hand while they change is not). The copy is checked before it is reported done.
 */
export function registerBackup(program: Command): void {
  program
    .command('backup <destination>')
    .description('write a consistent copy of the archive to a new file, while the service runs')
    .option('--force', 'replace the destination if it exists')
    .option('--json', 'print JSON')
    .action(async (destination: string, opts: { force?: boolean; json?: boolean }, cmd: Command) => {
      if (storeKind(archivePath(cmd)) === 'postgres') {
        throw new StoreError(
          'backup copies a SQLite archive file; back up a PostgreSQL archive with pg_dump (see docs/postgres.md).',
        );
      }
      const target = resolve(destination);
      if (existsSync(target) && !opts.force)
        throw new UsageError(`${target} already exists; choose a new file or pass --force to replace it.`);
      // better-sqlite3 answers a missing folder with a TypeError, which would read as a bug here.
      const folder = dirname(target);
      if (!existsSync(folder) || !statSync(folder).isDirectory())
        throw new UsageError(`the folder ${folder} does not exist; create it first or choose another destination.`);
      const started = Date.now();
      const partial = `${target}.partial`;
      rmSync(partial, { force: true });
      const pages = await withArchive(cmd, async (archive) => {
        const result = await (archive as SqliteAdmin).db.backup(partial);
        return result.totalPages;
      });
      // The copy must open and pass SQLite's structural check before it replaces anything.
      const copy = new Database(partial, { readonly: true });
      try {
        const check = copy.pragma('quick_check', { simple: true });
        if (check !== 'ok') throw new Error(`the copy failed SQLite's quick_check: ${String(check)}`);
      } finally {
        copy.close();
      }
      rmSync(target, { force: true });
      renameSync(partial, target);
      const summary: BackupSummary = {
        destination: target,
        bytes: statSync(target).size,
        pages,
        seconds: (Date.now() - started) / 1000,
        check: 'ok',
      };
      if (opts.json) printJson(summary);
      else
        process.stdout.write(
          `Backed up the archive to ${target}: ${(summary.bytes / 1e6).toFixed(1)} MB in ${summary.seconds.toFixed(1)} s; quick_check ok.\n`,
        );
    });
}
