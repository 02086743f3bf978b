import type { Command } from 'commander';
import { printJson, withArchive } from '../context.js';

/** Messages indexed before a catch-up without a terminal prints its first progress line. */
const LOGGED_FROM = 1000;

/**
 * `index`: brings the search index up to date. On a PostgreSQL archive that Mail Archiver fills
 * itself, the service's side index (docs/search.md, "On PostgreSQL") catches up by itself before
 * a search, but the first catch-up of a large existing database takes minutes: run this once
 * after pointing the service at it, so that no request has to wait for it. After an upgrade to
 * own schema version 10 it also gives the documents written before it their word pairs (ADR 24),
 * which a serving process otherwise does five seconds at a time.
 */
export function registerIndex(program: Command): void {
  program
    .command('index')
    .description('bring the search index up to date with every archived message (PostgreSQL archives)')
    .option('--json', 'print {"indexed":N,"pruned":N,"seconds":S}')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const started = Date.now();
      const tty = process.stderr.isTTY && !opts.json;
      let shown = 0;
      let pairsShown = 0;
      // Without a terminal (a log, a pipe), a line at each tenth of the way instead of a redrawn one.
      let tenthShown = 0;
      const result = await withArchive(cmd, (admin) =>
        admin.refreshSearchIndex(
          (indexed, ids) => {
            const done = ids && ids.last > 0 ? ids.through / ids.last : undefined;
            const tenth = done === undefined ? 0 : Math.floor(done * 10);
            // In a log, only a long catch-up speaks: a short one leaves stderr empty, as every
            // command that succeeds does.
            if (tty ? indexed - shown < 10_000 : opts.json || tenth <= tenthShown || indexed < LOGGED_FROM) return;
            shown = indexed;
            tenthShown = tenth;
            const line = `indexed ${indexed.toLocaleString('en')} messages${done === undefined ? '' : `, ${progressOf(done, Date.now() - started)}`}`;
            process.stderr.write(tty ? `\r${line}\x1b[K` : `${line}\n`);
          },
          (through, goal) => {
            if (tty && (through - pairsShown >= 10_000 || through >= goal)) {
              if (shown > 0 && pairsShown === 0) process.stderr.write('\n');
              pairsShown = Math.max(through, 1);
              const of = `${through.toLocaleString('en')} of ${goal.toLocaleString('en')}`;
              process.stderr.write(`\rword pairs added through message ${of}`);
            }
          },
        ),
      );
      if (tty && (shown > 0 || pairsShown > 0)) process.stderr.write('\n');
      const seconds = (Date.now() - started) / 1000;
      if (opts.json) printJson({ ...result, seconds });
      else
        process.stdout.write(
          `Search index up to date: ${result.indexed} messages indexed, ${result.pruned} entries of deleted messages removed (${seconds.toFixed(1)} s).\n`,
        );
    });
}

/**
 * How far, and the time left at the rate so far (by ids: Mail Archiver's ids grow with its
 * archive, so the share of ids passed is the share of messages read, near enough).
 */
export function progressOf(done: number, elapsedMs: number): string {
  const percent = `${Math.min(100, Math.floor(done * 100))} %`;
  if (done <= 0 || done >= 1 || elapsedMs < 2_000) return percent;
  const left = (elapsedMs * (1 - done)) / done / 1000;
  const when = left < 90 ? `${Math.ceil(left / 5) * 5} s` : `${Math.round(left / 60)} min`;
  return `${percent}, about ${when} left`;
}
