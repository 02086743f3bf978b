import type { Command } from 'commander';
import { hostname } from 'node:os';
import { loadSettings } from '../../../shared/config.js';
import { storeKind } from '../../archive.js';
import { StoreError } from '../../store/errors.js';
import { syncPass, type AccountSummary } from '../../sync/sync.js';
import { archivePath, parseId, withArchive } from '../context.js';

function line(s: AccountSummary): string {
  const head = `${s.name} (id ${s.accountId})`;
  if (s.status === 'skipped' || s.status === 'busy') return `${head}: ${s.status}, ${s.reason}`;
  const counts = `${s.folders} folders, ${s.imported} new, ${s.duplicates} duplicates, ${s.failed} failed, ${s.seconds.toFixed(1)} s`;
  return `${head}: ${s.status}${s.reason ? ` (${s.reason})` : ''}, ${counts}`;
}

/**
 * `sync [ids…]`: one pass over the enabled IMAP accounts; `--watch` repeats a pass every
 * Sync:IntervalMinutes until SIGTERM/SIGINT, which finish the message in hand and stop cleanly.
 * Run one watcher per archive (ecosystem.config.cjs); a lease per account keeps a second one out.
 */
export function registerSync(program: Command): void {
  program
    .command('sync [accountIds...]')
    .description('fetch new mail from the IMAP accounts (all enabled ones, or those named) into the archive')
    .option('--watch', 'keep running: a pass every Sync:IntervalMinutes, until SIGTERM or SIGINT')
    .option('--json', 'print one JSON value (per pass with --watch: one line each)')
    .action(async (ids: string[], opts: { watch?: boolean; json?: boolean }, cmd: Command) => {
      const settings = loadSettings();
      const path = archivePath(cmd);
      const enabled = settings.Sync.Enabled ?? storeKind(path) === 'sqlite';
      if (!enabled && opts.watch) {
        // Under PM2 (ecosystem.config.cjs) an exit would be restarted over and over: say why
        // nothing is synced once, then wait to be stopped.
        // The handlers go in before the line is written: whoever reads it may signal at once.
        await new Promise<void>((resolve) => {
          const keepAlive = setInterval(() => {}, 3_600_000); // a pending promise alone would let Node exit
          const done = () => {
            clearInterval(keepAlive);
            resolve();
          };
          process.once('SIGTERM', done);
          process.once('SIGINT', done);
          process.stderr.write(
            'mail-archive: sync is off for this archive (Sync:Enabled); waiting for SIGTERM without syncing.\n',
          );
        });
        return;
      }
      if (!enabled) {
        throw new StoreError(
          'Sync is off for this archive (Sync:Enabled): on a Mail Archiver database, Mail Archiver syncs its own accounts; set Sync:Enabled=true to sync here instead.',
        );
      }
      const accountIds = ids.map((id) => parseId(id, 'An account id'));
      const stop = new AbortController();
      const onSignal = () => stop.abort();
      process.once('SIGTERM', onSignal);
      process.once('SIGINT', onSignal);
      const tty = process.stderr.isTTY && !opts.json;
      const holder = `${hostname()}:${process.pid}`;
      let failedAny = false;
      try {
        for (;;) {
          const summaries = await withArchive(cmd, (archive) =>
            syncPass(archive, archive.sync(), {
              ...(accountIds.length ? { ids: accountIds } : {}),
              holder,
              signal: stop.signal,
              backoff: opts.watch === true,
              onWarning: (message) => process.stderr.write(`mail-archive: warning: ${message}\n`),
              onProgress: (entry, folder, p) => {
                if (tty) process.stderr.write(`\r\u001b[K${entry.account.name} ${folder}: ${p.messages} messages`);
              },
            }),
          );
          if (tty) process.stderr.write('\r\u001b[K');
          failedAny ||= summaries.some((s) => s.status === 'failed');
          if (opts.json) process.stdout.write(`${JSON.stringify(summaries, null, opts.watch ? 0 : 2)}\n`);
          else for (const s of summaries) process.stdout.write(`${line(s)}\n`);
          if (!opts.watch || stop.signal.aborted) break;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, settings.Sync.IntervalMinutes * 60_000);
            stop.signal.addEventListener('abort', () => {
              clearTimeout(timer);
              resolve();
            });
          });
          if (stop.signal.aborted) break;
        }
      } finally {
        process.off('SIGTERM', onSignal);
        process.off('SIGINT', onSignal);
      }
      if (failedAny && !opts.watch) process.exitCode = 1;
    });
}
