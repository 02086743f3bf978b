import { MultiBar, Presets } from 'cli-progress';
import type { Command } from 'commander';
import { loadSettings } from '../../../shared/config.js';
import { importPaths, type ImportProgress, type ImportSummary } from '../../import/importer.js';
import { REPAIR_LABELS, type Repair } from '../../import/repairs.js';
import { importLimits } from '../../import/limits.js';
import { archivePath, parseId, printJson, withArchive } from '../context.js';
import type { ArchiveAdmin } from '../../store-contract.js';
import { savedIndexFile } from '../../pool/pool.js';

/**
 * The import's last step: the saved search index brought up to the mail just written, so that the
 * service's next start loads it instead of building it (docs/import.md, "The search index after an
 * import"). Said on a terminal, as progress is; a script's stderr gets warnings only, its stdout
 * the summary (or --json) alone.
 */
async function saveIndex(archive: ArchiveAdmin, path: string): Promise<void> {
  const { Engine } = loadSettings();
  const file = savedIndexFile(path, Engine.SearchIndexFile);
  if (!archive.saveSearchIndex || file === undefined || Engine.SearchMemoryMB === 0) return;
  const say = (line: string) => process.stderr.write(`mail-archive: ${line}\n`);
  const tell = process.stderr.isTTY ? say : () => {};
  tell(`bringing the search index in ${file} up to date (a start of the service then loads it)…`);
  const outcome = await archive.saveSearchIndex({
    file,
    maxBytes: Engine.SearchMemoryMB * 1024 * 1024,
    log: (line, level) => {
      if (level === 'warn') say(`warning: ${line}`);
    },
  });
  if (outcome.kind === 'busy') tell('search index: another process (the service) is building it and saves it itself.');
  else if (outcome.kind === 'current') tell(`search index: already current (${outcome.rows} messages).`);
  else
    tell(
      `search index: ${outcome.kind === 'built' ? 'built' : 'caught up'} for ${outcome.rows} messages and saved in ${outcome.seconds.toFixed(1)} s.`,
    );
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

/** A progress bar on a terminal; nothing at all when stderr is a pipe or a file. */
function progressBar(): { update: (p: ImportProgress) => void; log: (line: string) => void; stop: () => void } {
  if (!process.stderr.isTTY) {
    return { update: () => {}, log: (line) => process.stderr.write(line), stop: () => {} };
  }
  const bars = new MultiBar(
    {
      format:
        'Importing [{bar}] {percentage}% | {done} of {size} | {messages} messages, {failed} failed | ETA {eta_formatted}',
      hideCursor: true,
      clearOnComplete: true,
    },
    Presets.shades_classic,
  );
  const bar = bars.create(1, 0, { done: '0 MB', size: '0 MB', messages: 0, failed: 0 });
  return {
    update: (p) => {
      bar.setTotal(Math.max(1, p.bytesTotal));
      bar.update(p.bytesDone, {
        done: megabytes(p.bytesDone),
        size: megabytes(p.bytesTotal),
        messages: p.messages,
        failed: p.failed,
      });
    },
    // Printed above the bar, which is then redrawn.
    log: (line) => bars.log(line),
    stop: () => bars.stop(),
  };
}

function summaryLine(accountId: number, s: ImportSummary, dryRun: boolean): string {
  const shared = s.sameIdDifferentContent
    ? `, ${s.sameIdDifferentContent} with a Message-ID another message has (different content)`
    : '';
  const tooLarge = s.tooLarge > 0 ? `, ${s.tooLarge} too large` : '';
  const attached =
    s.originalsAttached > 0 ? `; ${plural(s.originalsAttached, 'duplicate')} given the original it lacked` : '';
  const counts = `(${plural(s.duplicates, 'duplicate')}${shared}, ${s.failed} failed${tooLarge}, ${s.ignored.length} ignored)`;
  const line = dryRun
    ? `Dry run: would import ${plural(s.imported, 'message')} into account ${accountId} ${counts}${attached}; nothing was written (${s.seconds.toFixed(1)} s).\n`
    : `Imported ${plural(s.imported, 'message')} into account ${accountId} ${counts}${attached} in ${s.seconds.toFixed(1)} s.\n`;
  return line + repairLines(s);
}

/** Per reason, the messages stored with a repair: how many, and the first few by where they came from. */
function repairLines(s: ImportSummary): string {
  const shown = 5;
  return (Object.keys(REPAIR_LABELS) as Repair[])
    .flatMap((reason) => {
      const r = s.repaired[reason];
      if (!r) return [];
      const more = r.count > shown ? `, and ${r.count - shown} more (--json lists them)` : '';
      return [
        `Repaired (${REPAIR_LABELS[reason]}): ${plural(r.count, 'message')}: ${r.messages.slice(0, shown).join(', ')}${more}.\n`,
      ];
    })
    .join('');
}

/** Whether an import left a message out (failed, too large) or found no message to read. */
export function importFailed(s: ImportSummary): boolean {
  const read = s.imported + s.duplicates + s.failed + s.tooLarge;
  return s.failed > 0 || s.tooLarge > 0 || read === 0;
}

export function registerImport(program: Command): void {
  program
    .command('import <accountId> <path...>')
    .description(
      'import mail into an account from mbox files, message files (.eml, MH, any name), Maildir trees and directories of any of these; exits 1 when any message failed or was too large, or when there was no message to read',
    )
    .option(
      '--folder <fullPath>',
      "put everything in this folder (a Maildir keeps its sub-folders beneath it); default: INBOX, or the Maildir's own folders",
    )
    .option('--dry-run', 'read and parse everything and print the summary, writing nothing')
    .option(
      '--json',
      'print {"imported":N,"duplicates":N,"failed":N,"tooLarge":N,"ignored":N,"ignoredFiles":[{"path","reason"}],"sameIdDifferentContent":N,"repaired":{"<reason>":{"count":N,"messages":[origin]}},"dryRun":B,"seconds":S} only',
    )
    .action(
      async (
        accountIdText: string,
        paths: string[],
        opts: { folder?: string; json?: boolean; dryRun?: boolean },
        cmd: Command,
      ) => {
        const accountId = parseId(accountIdText, '<accountId>');
        const progress = progressBar();
        let summary: ImportSummary;
        try {
          summary = await withArchive(cmd, async (archive) => {
            const done = await importPaths(archive, paths, {
              accountId,
              ...(opts.folder !== undefined ? { folder: opts.folder } : {}),
              onProgress: progress.update,
              onWarning: (message) => progress.log(`mail-archive: warning: ${message}\n`),
              onIgnored: (file) => progress.log(`mail-archive: ignored ${file.path}: ${file.reason}.\n`),
              dryRun: opts.dryRun === true,
              limits: importLimits(loadSettings().Import),
            });
            progress.stop();
            if (done.imported > 0 && opts.dryRun !== true) await saveIndex(archive, archivePath(cmd));
            return done;
          });
        } finally {
          progress.stop();
        }
        if (opts.json) {
          const { imported, duplicates, failed, tooLarge, ignored, sameIdDifferentContent, repaired, seconds } =
            summary;
          printJson({
            imported,
            duplicates,
            failed,
            tooLarge,
            ignored: ignored.length,
            ignoredFiles: ignored,
            sameIdDifferentContent,
            repaired,
            dryRun: opts.dryRun === true,
            seconds: Math.round(seconds * 1000) / 1000,
          });
        } else {
          process.stdout.write(summaryLine(accountId, summary, opts.dryRun === true));
        }
        // A script sees what the summary says: a message left out, or no mail at all, is a
        // failure of the import even though the rest was written (docs/import.md, "Failures").
        if (importFailed(summary)) process.exitCode = 1;
      },
    );
}
