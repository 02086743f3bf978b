import { SingleBar, Presets } from 'cli-progress';
import type { Command } from 'commander';
import { DEFAULT_LIMITS } from '../../attachments/extract.js';
import { Extractor } from '../../attachments/extractor.js';
import { reindexAttachments, type ExtractSummary } from '../../attachments/index-texts.js';
import { printJson, UsageError, withArchive } from '../context.js';

const plural = (n: number, word: string) => `${n.toLocaleString('en')} ${word}${n === 1 ? '' : 's'}`;

function summaryLine(s: ExtractSummary, seconds: number): string {
  const statuses = Object.entries(s.byStatus)
    .sort((a, b) => b[1] - a[1])
    .map(([status, n]) => `${n} ${status}`)
    .join(', ');
  return (
    `Read ${plural(s.contents, 'attachment')}${statuses ? ` (${statuses}` : ''}${s.truncated ? `; ${s.truncated} truncated` : ''}${statuses ? ')' : ''} ` +
    `in ${seconds.toFixed(1)} s.\n`
  );
}

/**
 * `reindex --attachments`: reads the text inside every stored attachment that has none recorded
 * yet (imported before this feature, imported with it off, or, on PostgreSQL, archived by Mail
 * Archiver itself). Each attachment's outcome is saved with its batch, so an interrupted run
 * continues where it stopped when run again.
 */
export function registerReindex(program: Command): void {
  program
    .command('reindex')
    .description('read the text inside stored attachments that have none yet, for attachment: searches (resumable)')
    .option('--attachments', 'read attachment text (the one thing reindex does today)')
    .option('--batch-size <n>', 'attachments per saved batch', '25')
    .option(
      '--time-limit <seconds>',
      'seconds one attachment may take before it is recorded as a timeout (a busy or slow machine may need more)',
      String(DEFAULT_LIMITS.timeoutMs / 1000),
    )
    .option('--json', 'print {"contents":N,"byStatus":{...},"truncated":N,"seconds":S} only')
    .action(
      async (opts: { attachments?: boolean; batchSize: string; timeLimit: string; json?: boolean }, cmd: Command) => {
        if (!opts.attachments) throw new UsageError('reindex needs --attachments (what to reindex).');
        const batchSize = Number(opts.batchSize);
        if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000)
          throw new UsageError('--batch-size must be a whole number between 1 and 10000.');
        const timeLimit = Number(opts.timeLimit);
        if (!Number.isFinite(timeLimit) || timeLimit <= 0 || timeLimit > 3600)
          throw new UsageError('--time-limit must be a number of seconds above 0 and at most 3600.');
        const started = Date.now();
        const bar =
          process.stderr.isTTY && !opts.json
            ? new SingleBar(
                {
                  format: 'Reading attachments [{bar}] {percentage}% | {value} of {total} | ETA {eta_formatted}',
                  hideCursor: true,
                  clearOnComplete: true,
                },
                Presets.shades_classic,
              )
            : undefined;
        const extractor = new Extractor({ timeoutMs: Math.round(timeLimit * 1000) });
        let summary: ExtractSummary;
        try {
          summary = await withArchive(cmd, (admin) =>
            reindexAttachments(admin.attachmentTexts(), extractor, {
              batchSize,
              onProgress: ({ done, total }) => {
                if (!bar) return;
                if (done === 0) bar.start(Math.max(1, total), 0);
                else {
                  bar.setTotal(Math.max(1, total));
                  bar.update(done);
                }
              },
            }),
          );
        } finally {
          bar?.stop();
          await extractor.close();
        }
        const seconds = (Date.now() - started) / 1000;
        if (opts.json) printJson({ ...summary, seconds: Math.round(seconds * 1000) / 1000 });
        else process.stdout.write(summaryLine(summary, seconds));
      },
    );
}
