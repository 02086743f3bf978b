import { Presets, SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import { loadSettings } from '../../../shared/config.js';
import { StoreError } from '../../../shared/errors.js';
import { importLimits } from '../../import/limits.js';
import { reparseArchive, reparseStoreOf, type ReparseSummary } from '../../import/reparse.js';
import { REPARSE_FIELDS, type ReparseCounts } from '../../rules/reparse.js';
import { parseId, printJson, UsageError, withArchive } from '../context.js';

const count = (n: number) => n.toLocaleString('en');
const plural = (n: number, word: string) => `${count(n)} ${word}${n === 1 ? '' : 's'}`;

/** A bar on a terminal; a plain line now and then when stderr is a pipe or a file. */
function progressOutput(quiet: boolean): {
  update: (p: { done: number; total: number; counts: ReparseCounts }) => void;
  stop: () => void;
} {
  if (quiet) return { update: () => {}, stop: () => {} };
  if (!process.stderr.isTTY) {
    let last = 0;
    return {
      update: ({ done, total, counts }) => {
        const now = Date.now();
        if (now - last < 2000 && done < total) return;
        last = now;
        process.stderr.write(
          `reparse: ${count(done)} of ${count(total)} messages (${count(counts.changed)} changed)\n`,
        );
      },
      stop: () => {},
    };
  }
  const bar = new SingleBar(
    {
      format: 'Reparsing [{bar}] {percentage}% | {value} of {total} | {changed} changed | ETA {eta_formatted}',
      hideCursor: true,
      clearOnComplete: true,
    },
    Presets.shades_classic,
  );
  let started = false;
  return {
    update: ({ done, total, counts }) => {
      if (!started) {
        bar.start(Math.max(1, total), done, { changed: counts.changed });
        started = true;
      } else bar.update(done, { changed: counts.changed });
    },
    stop: () => bar.stop(),
  };
}

function summaryText(s: ReparseSummary): string {
  const fields = REPARSE_FIELDS.filter((f) => s.fields[f] > 0)
    .map((f) => `${f}: ${count(s.fields[f])}`)
    .join(', ');
  const changed = `${plural(s.changed, 'message')} ${s.dryRun ? 'would change' : 'changed'}${fields ? ` (${fields})` : ''}`;
  const rest = `${count(s.unchanged)} unchanged, ${count(s.withoutOriginal)} without original, ${count(s.failed)} failed to parse, ${count(s.damaged)} with a damaged original`;
  const head = s.dryRun ? 'Dry run: ' : '';
  const resumed = s.resumedAfter !== null ? ` (continued after message ${s.resumedAfter})` : '';
  const lines = [
    `${head}Reparsed ${plural(s.examined, 'message')}${resumed}: ${changed}; ${rest}${s.dryRun ? '; nothing was written' : ''} (${s.seconds.toFixed(1)} s).`,
  ];
  for (const f of s.failures.slice(0, 5)) lines.push(`Left as stored: message ${f.id}: ${f.reason}`);
  if (s.attachmentTexts > 0) lines.push(`Read the text of ${plural(s.attachmentTexts, 'new attachment')}.`);
  if (!s.complete) lines.push('Stopped before the last message; run reparse again to continue.');
  return `${lines.join('\n')}\n`;
}

/**
 * `reparse`: parses every message whose original is kept again with the current parser and
 * rewrites the stored fields that differ (docs/reparse.md). Resumable: an interrupted run (Ctrl-C,
 * kill) continues after the last saved batch when run again.
 */
export function registerReparse(program: Command): void {
  program
    .command('reparse')
    .description(
      're-derive every stored field from the kept originals with the current parser, so a parser fix reaches archived mail (resumable; SQLite archives)',
    )
    .option('--account <id>', 'only this account')
    .option('--dry-run', 'parse and compare everything and print the summary, writing nothing')
    .option('--restart', 'forget an unfinished run and start from the first message')
    .option('--batch-size <n>', 'messages per saved batch (one transaction)', '200')
    .option('--limit <n>', 'examine at most this many messages in this run; the next run continues after them')
    .option(
      '--json',
      'print {"examined":N,"changed":N,"unchanged":N,"withoutOriginal":N,"failed":N,"damaged":N,"fields":{"<field>":N},"failures":[{"id","reason"}],"resumedAfter":N|null,"complete":B,"dryRun":B,"attachmentTexts":N,"seconds":S} only',
    )
    .action(
      async (
        opts: {
          account?: string;
          dryRun?: boolean;
          restart?: boolean;
          batchSize: string;
          limit?: string;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        const accountId = opts.account !== undefined ? parseId(opts.account, '--account') : undefined;
        const batchSize = Number(opts.batchSize);
        if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000)
          throw new UsageError('--batch-size must be a whole number between 1 and 10000.');
        const limit = opts.limit !== undefined ? parseId(opts.limit, '--limit') : undefined;
        const progress = progressOutput(opts.json === true);
        let summary: ReparseSummary;
        try {
          summary = await withArchive(cmd, (admin) => {
            if (!reparseStoreOf(admin))
              throw new StoreError(
                "reparse works on a SQLite archive, which keeps each message's original; a PostgreSQL archive is Mail Archiver's database, which this service never rewrites.",
              );
            return reparseArchive(admin, {
              ...(accountId !== undefined ? { accountId } : {}),
              batchSize,
              ...(limit !== undefined ? { limit } : {}),
              dryRun: opts.dryRun === true,
              restart: opts.restart === true,
              maxTnefFiles: importLimits(loadSettings().Import).maxTnefFiles,
              onProgress: progress.update,
            });
          });
        } finally {
          progress.stop();
        }
        if (opts.json) {
          printJson({ ...summary, seconds: Math.round(summary.seconds * 1000) / 1000 });
        } else process.stdout.write(summaryText(summary));
      },
    );
}
