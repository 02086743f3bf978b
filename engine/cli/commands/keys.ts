import type { Command } from 'commander';
import { createKey, findKey, listKeys, revokeKey } from '../../store/keys.js';
import { printJson, printTable, UsageError, withArchive } from '../context.js';

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * Parses the date or date-time by hand rather than with Date.parse, which rolls impossible
 * dates over (2027-02-30 becomes 2 March) and reads a date-time without an offset as local
 * time, while the option promises UTC.
 */
export function parseExpiry(text: string): number {
  const invalid = () =>
    new UsageError(`--expires must be an ISO 8601 date or date-time, such as 2027-01-31 or 2027-01-31T12:00:00Z, not "${text}".`);
  const m = ISO_8601.exec(text.trim());
  if (!m) throw invalid();
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map((v) => Number(v ?? 0)) as [number, number, number, number, number, number];
  const millis = Number((m[7] ?? '').padEnd(3, '0').slice(0, 3));
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, millis);
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) throw invalid();
  if (hour > 23 || minute > 59 || second > 59) throw invalid();
  let offsetMinutes = 0;
  const zone = m[8];
  if (zone && zone.toUpperCase() !== 'Z') {
    const z = /^([+-])(\d{2}):?(\d{2})$/.exec(zone)!;
    const hours = Number(z[2]);
    const minutes = Number(z[3]);
    if (hours > 23 || minutes > 59) throw invalid();
    offsetMinutes = (z[1] === '-' ? -1 : 1) * (hours * 60 + minutes);
  }
  return date.getTime() - offsetMinutes * 60_000;
}

export function registerKeys(program: Command): void {
  const keys = program.command('keys').description('create, list and revoke API keys');

  keys
    .command('create <username>')
    .description('create an API key for a user; the key is printed once and cannot be shown again')
    .requiredOption('--name <name>', 'what the key is for')
    .option('--expires <iso8601>', 'expiry date or date-time (UTC unless an offset is given)')
    .option('--json', 'print {"id":N,"key":"ma_…","prefix":"ma_…"}')
    .action(async (username: string, opts: { name: string; expires?: string; json?: boolean }, cmd: Command) => {
      const expiresAt = opts.expires !== undefined ? parseExpiry(opts.expires) : null;
      const created = await withArchive(cmd, (db) => createKey(db, { username, name: opts.name, expiresAt }));
      if (expiresAt !== null && expiresAt <= Date.now()) {
        process.stderr.write(`Warning: this key expired at ${new Date(expiresAt).toISOString()}; it will be refused.\n`);
      }
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
      const rows = await withArchive(cmd, (db) => listKeys(db, opts.user !== undefined ? { username: opts.user } : {}));
      if (opts.json) printJson(rows);
      else printTable(rows, ['id', 'username', 'name', 'prefix', 'status', 'createdAt', 'lastUsedAt', 'expiresAt', 'revokedAt']);
    });

  keys
    .command('revoke <idOrPrefix>')
    .description('revoke a key by id or prefix; it is refused from the next request on')
    .option('--json', 'print the revoked key as JSON')
    .action(async (idOrPrefix: string, opts: { json?: boolean }, cmd: Command) => {
      const row = await withArchive(cmd, (db) => revokeKey(db, findKey(db, idOrPrefix).id));
      if (opts.json) printJson(row);
      else process.stdout.write(`Revoked key ${row.id} (${row.prefix}…) of ${row.username} at ${row.revokedAt}.\n`);
    });
}
