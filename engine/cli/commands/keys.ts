import type { Command } from 'commander';
import { InvalidInput, parseDateBound } from '../../../shared/search-input.js';
import { printJson, printTable, UsageError, withArchive } from '../context.js';
import { loadSettings } from '../../../shared/config.js';

/**
 * An ISO 8601 date (midnight UTC) or date-time (UTC unless it names an offset), parsed by the
 * same rules as search dates: never Date.parse, which rolls 2027-02-30 over to 2 March and
 * reads a date-time without an offset as local time.
 */
export function parseExpiry(text: string): number {
  try {
    return parseDateBound('--expires', text, 'lower');
  } catch (err) {
    if (!(err instanceof InvalidInput)) throw err;
    throw new UsageError(
      `--expires must be an ISO 8601 date or date-time, such as 2027-01-31 or 2027-01-31T12:00:00Z, not "${text}".`,
    );
  }
}

export function registerKeys(program: Command): void {
  const keys = program.command('keys').description('create, list and revoke API keys');

  keys
    .command('create <username>')
    .description('create an API key for a user; the key is printed once and cannot be shown again')
    .requiredOption('--name <name>', 'what the key is for')
    .option('--expires <iso8601>', 'expiry date or date-time in the future (UTC unless an offset is given)')
    .option('--json', 'print {"id":N,"key":"ma_…","prefix":"ma_…"}')
    .action(async (username: string, opts: { name: string; expires?: string; json?: boolean }, cmd: Command) => {
      const expiresAt = opts.expires !== undefined ? parseExpiry(opts.expires) : null;
      // A key born expired is refused on its first request: a typo, never a wish. The web form
      // refuses such dates too (docs/web.md, "Pages").
      if (expiresAt !== null && expiresAt <= Date.now())
        throw new UsageError(
          `--expires ${opts.expires} is in the past (${new Date(expiresAt).toISOString()}); give a future date or leave it out for a key that never expires.`,
        );
      const maxActive = loadSettings().Web.MaxActiveKeysPerUser;
      const created = await withArchive(cmd, (archive) =>
        archive.createKey({ username, name: opts.name, expiresAt, maxActive }),
      );
      if (opts.json) {
        printJson({ id: created.id, key: created.key, prefix: created.prefix });
        return;
      }
      process.stdout.write(
        `${created.key}\n` +
          `Key ${created.id} (${created.prefix}…) for ${created.row.username}. Store it now: it cannot be shown again.\n`,
      );
    });

  keys
    .command('list')
    .description('list keys (never the key itself or its hash)')
    .option('--user <username>', "only this user's keys")
    .option('--json', 'print JSON')
    .action(async (opts: { user?: string; json?: boolean }, cmd: Command) => {
      const rows = await withArchive(cmd, (archive) =>
        archive.listKeys(opts.user !== undefined ? { username: opts.user } : {}),
      );
      if (opts.json) printJson(rows);
      else
        printTable(rows, [
          'id',
          'username',
          'name',
          'prefix',
          'status',
          'createdAt',
          'lastUsedAt',
          'expiresAt',
          'revokedAt',
        ]);
    });

  keys
    .command('revoke <idOrPrefix>')
    .description('revoke a key by id or prefix; it is refused from the next request on')
    .option('--json', 'print the revoked key as JSON')
    .action(async (idOrPrefix: string, opts: { json?: boolean }, cmd: Command) => {
      const row = await withArchive(cmd, async (archive) => archive.revokeKey((await archive.findKey(idOrPrefix)).id));
      if (opts.json) printJson(row);
      else process.stdout.write(`Revoked key ${row.id} (${row.prefix}…) of ${row.username} at ${row.revokedAt}.\n`);
    });
}
