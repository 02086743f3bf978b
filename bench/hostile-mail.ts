// Mail shaped by an attacker (docs/security.md, "Mail shaped by an attacker"): what one hostile message costs the archive with the
// bounds (the defaults of Import:* and Sync:WindowBytes) against the same run without them, each
// in a child process of its own so that its peak RSS is its own.
//
//   docx   one message of N small DOCX files that each expand to 1,000,000 characters (item 1):
//          archive growth, peak RSS, seconds.
//   tnef   one message whose winmail.dat carries 50,000 files (item 3): attachments stored,
//          seconds, peak RSS.
//   large  one message of M MB imported from a file, with Import:MaxMessageBytes below it (item 5).
//   sync   K messages of S MB in a private Dovecot, synced (item 5): peak RSS with the byte
//          windows (Sync:WindowBytes) against windows of 100 messages whatever their size.
//
//   npm run bench:hostile-mail [-- --docx 60 --large-mb 120 --sync-count 8 --sync-mb 24]
//
// The sync scenario needs Dovecot (scripts/test-prereqs.sh).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openAdmin } from '../engine/archive.js';
import { importPaths } from '../engine/import/importer.js';
import { DEFAULT_IMPORT_LIMITS, type ImportLimits } from '../engine/import/limits.js';
import { syncPass } from '../engine/sync/pass.js';
import { docx, eml } from '../test/helpers/attachment-mail.js';
import { tnef } from '../test/helpers/tnef.js';
import { arg as argValue } from './lib/args.js';

const UNBOUNDED: ImportLimits = {
  maxMessageBytes: Number.MAX_SAFE_INTEGER,
  maxTnefFiles: Number.MAX_SAFE_INTEGER,
  text: {
    charsPerMessage: Number.MAX_SAFE_INTEGER,
    charsPerByte: 0,
    charsPerPass: Number.MAX_SAFE_INTEGER,
    msPerMessage: 86_400_000,
    msPerPass: 86_400_000,
  },
};

interface Result {
  seconds: number;
  peakRssMB: number;
  [k: string]: number | string;
}

const sizeOf = (path: string) =>
  ['', '-wal'].reduce((n, s) => n + (existsSync(path + s) ? statSync(path + s).size : 0), 0);

/** One scenario in this process (the child): prints its Result as JSON. */
async function child(scenario: string, bounded: boolean, dir: string): Promise<void> {
  const limits = bounded ? DEFAULT_IMPORT_LIMITS : UNBOUNDED;
  const dbPath = join(dir, `${scenario}-${bounded ? 'bounded' : 'unbounded'}.db`);
  const admin = await openAdmin(dbPath, { create: true });
  const account = await admin.addAccount({ name: 'Bench', emailAddress: 'bench@example.test' });
  const before = sizeOf(dbPath);
  const started = performance.now();
  let extra: Record<string, number> = {};
  try {
    if (scenario === 'sync') {
      const [summary] = await syncPass(admin, admin.sync(), {
        holder: `bench:${process.pid}`,
        limits,
        ...(bounded ? {} : { windowBytes: Number.MAX_SAFE_INTEGER }),
      });
      if (summary?.status !== 'synced') throw new Error(`sync: ${summary?.status} ${summary?.reason ?? ''}`);
      extra = { imported: summary.imported, tooLarge: summary.tooLarge };
    } else {
      const summary = await importPaths(admin, [join(dir, scenario)], { accountId: account.id, limits });
      extra = { imported: summary.imported, tooLarge: summary.tooLarge };
    }
  } finally {
    await admin.close();
  }
  const seconds = (performance.now() - started) / 1000;
  if (scenario !== 'sync') {
    const { default: Database } = await import('../engine/sqlite/driver.js');
    const db = new Database(dbPath);
    db.pragma('wal_checkpoint(TRUNCATE)');
    extra.attachments = db.prepare('SELECT count(*) FROM attachments').pluck().get() as number;
    extra.textChars = db.prepare('SELECT coalesce(sum(chars), 0) FROM attachment_texts').pluck().get() as number;
    db.close();
    extra.growthMB = Math.round(((sizeOf(dbPath) - before) / 1e6) * 10) / 10;
  }
  const result: Result = {
    seconds: Math.round(seconds * 100) / 100,
    peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024),
    ...extra,
  };
  process.stdout.write(JSON.stringify(result));
}

function runChild(scenario: string, bounded: boolean, dir: string, env: NodeJS.ProcessEnv = {}): Result {
  const out = execFileSync(
    process.execPath,
    [fileURLToPath(import.meta.url), '--child', scenario, bounded ? 'bounded' : 'unbounded', dir],
    { env: { ...process.env, ...env }, maxBuffer: 1 << 20, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return JSON.parse(out.toString()) as Result;
}

function compare(label: string, bounded: Result, unbounded: Result, keys: string[]): void {
  process.stdout.write(`\n${label}\n`);
  for (const k of keys) {
    const b = Number(bounded[k]);
    const u = Number(unbounded[k]);
    const ratio = u > 0 ? (b / u).toFixed(3) : '-';
    process.stdout.write(
      `  ${k.padEnd(12)} bounded ${String(b).padStart(10)}  unbounded ${String(u).padStart(10)}  ratio ${ratio}\n`,
    );
  }
}

async function main(): Promise<void> {
  const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1]!.split(',') : null;
  const wants = (s: string) => only === null || only.includes(s);
  const dir = mkdtempSync(join(tmpdir(), 'mag-bench-hostile-'));
  try {
    if (wants('docx')) {
      const n = argValue('--docx', 60);
      const words = 'lorem ipsum '.repeat(1_000_000 / 12);
      const files = await Promise.all(Array.from({ length: n }, (_, i) => docx(`doc${i} ${words}`)));
      const message = eml(
        'Expanding documents',
        'See attached.',
        files.map((data, i) => ({
          name: `d${i}.docx`,
          type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
          data,
        })),
      );
      mkdirSync(join(dir, 'docx'));
      writeFileSync(join(dir, 'docx', 'a.eml'), message);
      process.stdout.write(
        `docx: one message of ${(message.length / 1e6).toFixed(2)} MB with ${n} DOCX files of about ${(files[0]!.length / 1e3).toFixed(1)} KB, each 1,000,000 characters of text\n`,
      );
      compare('docx (item 1)', runChild('docx', true, dir), runChild('docx', false, dir), [
        'growthMB',
        'textChars',
        'peakRssMB',
        'seconds',
      ]);
    }
    if (wants('tnef')) {
      const winmail = tnef(
        Array.from({ length: 50_000 }, (_, i) => ({ name: `f${i}.txt`, data: Buffer.from(`file ${i}`) })),
      );
      mkdirSync(join(dir, 'tnef'));
      writeFileSync(
        join(dir, 'tnef', 'a.eml'),
        eml('Outlook', 'x', [{ name: 'winmail.dat', type: 'application/ms-tnef', data: winmail }]),
      );
      process.stdout.write(
        `\ntnef: one winmail.dat of ${(winmail.length / 1e6).toFixed(2)} MB carrying 50,000 files\n`,
      );
      compare('tnef (item 3)', runChild('tnef', true, dir), runChild('tnef', false, dir), [
        'attachments',
        'peakRssMB',
        'seconds',
      ]);
    }
    if (wants('large')) {
      const mb = argValue('--large-mb', 120);
      mkdirSync(join(dir, 'large'));
      const line = `${'y'.repeat(76)}\r\n`;
      writeFileSync(join(dir, 'large', 'a.eml'), eml('Large', line.repeat(Math.ceil((mb * 1e6) / line.length)), []));
      process.stdout.write(
        `\nlarge: one message of ${mb} MB from a file, Import:MaxMessageBytes ${DEFAULT_IMPORT_LIMITS.maxMessageBytes}\n`,
      );
      compare('large (item 5)', runChild('large', true, dir), runChild('large', false, dir), [
        'tooLarge',
        'peakRssMB',
        'seconds',
      ]);
    }
    if (wants('sync')) {
      const count = argValue('--sync-count', 8);
      const mb = argValue('--sync-mb', 24);
      const { startDovecot, writeMaildirMessages } = await import('../test/helpers/dovecot.js');
      const server = await startDovecot({ label: 'bench-hostile' });
      try {
        const line = `${'s'.repeat(76)}\r\n`;
        const body = line.repeat(Math.ceil((mb * 1e6) / line.length));
        await writeMaildirMessages(
          server,
          undefined,
          'INBOX',
          Array.from({ length: count }, (_, i) => Buffer.from(eml(`Large ${i}`, body, [], `large${i}`))),
        );
        const { user, password } = server.users[0]!;
        for (const bounded of [true, false]) {
          const admin = await openAdmin(join(dir, `sync-${bounded ? 'bounded' : 'unbounded'}.db`), { create: true });
          await admin.addImapAccount({
            name: 'Bench',
            emailAddress: user,
            imap: { host: '127.0.0.1', port: server.port, security: 'none', user, password },
          });
          await admin.close();
        }
        process.stdout.write(`\nsync: ${count} messages of ${mb} MB over IMAP, Sync:WindowBytes 64 MiB\n`);
        compare('sync (item 5)', runChild('sync', true, dir), runChild('sync', false, dir), [
          'imported',
          'peakRssMB',
          'seconds',
        ]);
      } finally {
        await server.destroy();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--child') {
  // The sync child opens the archive the parent prepared (with its account): see child().
  await child(process.argv[3]!, process.argv[4] === 'bounded', process.argv[5]!);
} else {
  await main();
}
