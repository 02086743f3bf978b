// mail-archive export: a search's messages as the package GET /api/v1/emails/export sends
// (docs/export.md), written by the same code (engine/export/package.ts) to a file, as the
// operator: every account. Like the CLI's other administrative reads it is not in the access log (docs/export.md,
// "From the command line").
import { SingleBar, Presets } from 'cli-progress';
import type { Command } from 'commander';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { loadSettings } from '../../../shared/config.js';
import { parseSearchInput } from '../../../shared/search-input.js';
import { InvalidInput } from '../../../shared/errors.js';
import type { Principal } from '../../../shared/jobs.js';
import { openStore, storeKind } from '../../archive.js';
import { DEFAULT_EXPORT_FORMAT, EXPORT_FORMATS, exportPackage, type ExportFormat } from '../../export/package.js';
import { archivePath, parseId, printJson, UsageError, withArchive } from '../context.js';

/** The operator at the command line reads every account. */
const OPERATOR: Principal = { userId: 0, username: 'operator', isAdmin: true, keyId: 0, keyPrefix: '' };

/** The most ids one export may hold from the command line (they travel in one job's answer). */
const CLI_MAX_EXPORT = 1_000_000;

interface ExportOptions {
  q?: string;
  account?: string;
  folder?: string;
  from?: string;
  to?: string;
  direction?: string;
  format: string;
  out: string;
  json?: boolean;
}

/** A progress bar on a terminal; nothing when stderr is a pipe or a file. */
function progressBar(): { update: (done: number, total: number) => void; stop: () => void } {
  if (!process.stderr.isTTY) return { update: () => {}, stop: () => {} };
  const bar = new SingleBar(
    { format: 'Exporting [{bar}] {percentage}% | {value} of {total} messages | ETA {eta_formatted}', hideCursor: true },
    Presets.shades_classic,
  );
  let started = false;
  return {
    update: (done, total) => {
      if (!started) bar.start(total, 0);
      started = true;
      bar.update(done);
    },
    stop: () => {
      if (started) bar.stop();
    },
  };
}

export function registerExport(program: Command): void {
  program
    .command('export')
    .description('write the messages a search matches, with manifest.csv and export.json, to a ZIP file')
    .requiredOption('--out <file>', 'the ZIP file to write')
    .option('--q <query>', 'the search, in the query language of GET /api/v1/emails (docs/search.md)')
    .option('--account <id>', 'only this account')
    .option('--folder <path>', 'only this folder (and its subfolders)')
    .option('--from <date>', 'sent on or after this date (ISO 8601)')
    .option('--to <date>', 'sent on or before this date (ISO 8601)')
    .option('--direction <direction>', 'incoming or outgoing')
    .option('--format <format>', `${EXPORT_FORMATS.join(' or ')}`, DEFAULT_EXPORT_FORMAT)
    .option('--json', 'print the summary as JSON')
    .action(async (opts: ExportOptions, cmd: Command) => {
      if (!(EXPORT_FORMATS as readonly string[]).includes(opts.format)) {
        throw new UsageError(`--format must be one of ${EXPORT_FORMATS.join(', ')}, not "${opts.format}".`);
      }
      const format = opts.format as ExportFormat;
      const filters: Record<string, string> = {
        ...(opts.account !== undefined ? { accountId: String(parseId(opts.account, '--account')) } : {}),
        ...(opts.folder !== undefined ? { folder: opts.folder } : {}),
        ...(opts.from !== undefined ? { from: opts.from } : {}),
        ...(opts.to !== undefined ? { to: opts.to } : {}),
        ...(opts.direction !== undefined ? { direction: opts.direction } : {}),
      };
      let query;
      try {
        query = parseSearchInput(
          { ...filters, ...(opts.q !== undefined ? { q: opts.q } : {}) },
          {
            defaultPageSize: 1,
            maxPageSize: 1,
          },
        );
      } catch (err) {
        if (err instanceof InvalidInput)
          throw new UsageError(`--${err.param === 'q' ? 'q' : err.param}: ${err.message}`);
        throw err;
      }
      // withArchive says what is wrong with a missing or unreadable archive before any job runs.
      await withArchive(cmd, () => undefined);
      const path = archivePath(cmd);
      const store = await openStore({
        path,
        ...(storeKind(path) === 'postgres' ? { timeZone: loadSettings().Database.TimeZone } : {}),
      });
      const partial = `${opts.out}.partial`;
      const bar = progressBar();
      try {
        const { total, ids } = await store.run({ kind: 'exportIds', principal: OPERATOR, query, max: CLI_MAX_EXPORT });
        if (!ids) {
          throw new UsageError(
            `the search matches ${total} messages; one export holds at most ${CLI_MAX_EXPORT}. Narrow it with --from/--to, --account, --folder or --q.`,
          );
        }
        const pkg = exportPackage(
          {
            ids,
            batch: async (from, to) => {
              const { copies, next } = await store.run({
                kind: 'messageCopies',
                principal: OPERATOR,
                ids: ids.slice(from, to),
                reconstruct: true,
              });
              return { copies, next: from + next };
            },
          },
          {
            format,
            query: opts.q ?? null,
            filters,
            who: { username: 'operator', keyPrefix: null, via: 'cli' },
            createdAt: new Date(),
          },
          { onProgress: (done, all) => bar.update(done, all) },
        );
        // Written beside the target and renamed once whole: a failed export leaves no file that looks complete.
        await Promise.all([pipeline(pkg.stream, createWriteStream(partial)), pkg.done]);
        await rename(partial, opts.out);
        const summary = await pkg.done;
        bar.stop();
        if (opts.json) printJson({ file: opts.out, format, ...summary });
        else
          process.stdout.write(
            `Exported ${summary.messages} messages (${summary.originals} originals, ${summary.reconstructed} reconstructed) to ${opts.out}; manifest.csv SHA-256 ${summary.manifestSha256}.\n`,
          );
      } catch (err) {
        bar.stop();
        await rm(partial, { force: true });
        throw err;
      } finally {
        await store.close();
      }
    });
}
