// What every CLI command needs: the archive it works on and a way to print results.
import type { Command } from 'commander';
import { loadSettings } from '../../shared/config.js';
import { type ArchiveAdmin } from '../store-contract.js';
import { openAdmin, storeKind } from '../archive.js';
import { printable } from '../../shared/key-name.js';

export interface GlobalOptions {
  db?: string;
}

/** The archive path: --db, else the Database:Path setting. */
export function archivePath(cmd: Command): string {
  const opts = cmd.optsWithGlobals<GlobalOptions>();
  return opts.db ?? loadSettings().Database.Path;
}

/**
 * Opens the archive (a SQLite file or a PostgreSQL database, engine/archive.ts openAdmin) for the duration of
 * `work` and closes it however `work` ends. Only the commands that start an archive (`create`)
 * may create a missing file, or Mail Archiver's schema in an empty PostgreSQL database; the
 * others say that there is none.
 */
export async function withArchive<T>(
  cmd: Command,
  work: (archive: ArchiveAdmin) => T | Promise<T>,
  options: { create?: boolean } = {},
): Promise<T> {
  const path = archivePath(cmd);
  const admin = await openAdmin(path, {
    create: options.create ?? false,
    setting: cmd.optsWithGlobals<GlobalOptions>().db !== undefined ? '--db' : 'Database:Path',
    // Encrypts and decrypts stored IMAP passwords (engine/rules/secrets.ts).
    secretKey: loadSettings().Sync.SecretKey,
    // A Mail Archiver schema newer than this release was tested with is served, with one line.
    onNotice: (line) => process.stderr.write(`mail-archive: ${line}\n`),
    // SentDate is written in Mail Archiver's display zone (PostgreSQL only).
    ...(storeKind(path) === 'postgres' ? { timeZone: loadSettings().Database.TimeZone } : {}),
  });
  try {
    return await work(admin);
  } finally {
    await admin.close();
  }
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** A plain aligned table for people; scripts use --json. */
export function printTable<T extends object>(items: readonly T[], columns: readonly string[]): void {
  const rows = items as unknown as ReadonlyArray<Record<string, unknown>>;
  if (rows.length === 0) {
    process.stdout.write('(none)\n');
    return;
  }
  // Stored text is printed escaped: a name with terminal escapes or line breaks (stored before
  // they were refused) cannot rewrite the screen or fake rows.
  const cell = (v: unknown) =>
    v === null || v === undefined ? '-' : printable(Array.isArray(v) ? v.join(',') || '-' : String(v));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  process.stdout.write(`${line([...columns])}\n`);
  for (const r of rows) process.stdout.write(`${line(columns.map((c) => cell(r[c])))}\n`);
}

export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export function parseId(value: string, what: string): number {
  if (!/^\d+$/.test(value.trim()) || Number(value) > 2_147_483_647 || Number(value) < 1) {
    throw new UsageError(`${what} must be a positive whole number, not "${value}".`);
  }
  return Number(value);
}

/** A mistake in how the command was called: printed as one sentence, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}
