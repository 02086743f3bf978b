import type { Command } from 'commander';
import type { AccessType } from '../../../shared/dto.js';
import { parseId, printJson, printTable, UsageError, withArchive } from '../context.js';

const TYPES: readonly AccessType[] = ['Search', 'Open', 'Download'];

export function registerAccessLog(program: Command): void {
  const log = program
    .command('access-log')
    .description('show who searched, opened or downloaded what, newest first')
    .option('--user <username>', "only this user's entries")
    .option('--type <type>', 'Search, Open or Download')
    .option('--limit <n>', 'at most this many entries', '50')
    .option('--json', 'print JSON')
    .action(async (opts: { user?: string; type?: string; limit: string; json?: boolean }, cmd: Command) => {
      const type =
        opts.type === undefined ? undefined : TYPES.find((t) => t.toLowerCase() === opts.type!.toLowerCase());
      if (opts.type !== undefined && !type)
        throw new UsageError(`--type must be one of ${TYPES.join(', ')}, not "${opts.type}".`);
      const limit = parseId(opts.limit, '--limit');
      const rows = await withArchive(cmd, async (archive) =>
        archive.listAccessLog({
          ...(opts.user !== undefined ? { userId: (await archive.requireUser(opts.user)).id } : {}),
          ...(type ? { type } : {}),
          limit,
        }),
      );
      if (opts.json) printJson(rows);
      else printTable(rows, ['at', 'username', 'type', 'source', 'keyPrefix', 'clientIp', 'emailId', 'accountId']);
    });

  // docs/evidence.md, "Verifying the access log".
  log
    .command('verify')
    .description("check the access log's hash chain: intact, or the first entry that does not follow")
    .option('--head <hash>', 'a head printed by an earlier verify: it must still be in the chain')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean; head?: string }, cmd: Command) => {
      if (opts.head !== undefined && !/^[0-9a-f]{64}$/.test(opts.head))
        throw new UsageError(`--head must be a hash as verify prints it (64 hex digits), not "${opts.head}".`);
      const report = await withArchive(cmd, (archive) =>
        archive.verifyAccessLog(opts.head !== undefined ? { head: opts.head } : {}),
      );
      if (!report.intact) process.exitCode = 1;
      // `access-log --json verify` and `access-log verify --json` alike: the parent has --json too.
      if (opts.json || cmd.parent?.opts<{ json?: boolean }>().json) return printJson(report);
      const before = report.before > 0 ? `; ${report.before} written before the chain began, not covered` : '';
      if (report.intact) {
        const head = report.head ? `\nhead: entry ${report.head.id} ${report.head.hash}` : '';
        process.stdout.write(`intact, ${report.entries} entries${before}${head}\n`);
      } else {
        process.stdout.write(
          `broken at entry ${report.brokenAt}: ${report.reason} (${report.entries} entries before it intact${before})\n`,
        );
      }
    });
}
