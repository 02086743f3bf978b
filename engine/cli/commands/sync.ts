import type { Command } from 'commander';
import { hostname } from 'node:os';
import { loadSettings } from '../../../shared/config.js';
import { storeKind } from '../../archive.js';
import { StoreError } from '../../../shared/errors.js';
import { syncPass, type AccountSummary } from '../../sync/pass.js';
import { importLimits } from '../../import/limits.js';
import { printable } from '../../../shared/key-name.js';
import { archivePath, parseId, withArchive } from '../context.js';

/**
 * One line per account. Names, folder names and reasons may come from a hostile IMAP server (its
 * error texts, its folder names): printed with control characters escaped, they cannot rewrite
 * the operator's terminal (docs/security.md, "Mail shaped by an attacker", item 7).
 */
export function line(s: AccountSummary): string {
  const head = `${printable(s.name)} (id ${s.accountId})`;
  const reason = s.reason === undefined ? undefined : printable(s.reason);
  if (s.status === 'skipped' || s.status === 'busy') return `${head}: ${s.status}, ${reason}`;
  const tooLarge = s.tooLarge > 0 ? `, ${s.tooLarge} too large` : '';
  const counts = `${s.folders} folders, ${s.imported} new, ${s.duplicates} duplicates, ${s.failed} failed${tooLarge}, ${s.seconds.toFixed(1)} s`;
  return `${head}: ${s.status}${reason ? ` (${reason})` : ''}, ${counts}`;
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
              limits: importLimits(settings.Import),
              windowBytes: settings.Sync.WindowBytes,
              maxFolders: settings.Sync.MaxFolders,
              passMs: settings.Sync.PassMinutes * 60_000,
              onWarning: (message) => process.stderr.write(`mail-archive: warning: ${printable(message)}\n`),
              onProgress: (entry, folder, p) => {
                if (tty)
                  process.stderr.write(
                    `\r\u001b[K${printable(entry.account.name)} ${printable(folder)}: ${p.messages} messages`,
                  );
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
