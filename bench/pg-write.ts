// The write rate into a Mail Archiver PostgreSQL database (docs/performance.md, "Writing into
// PostgreSQL"): N typical messages (bench/typical-mail.ts) in an mbox, imported through the real
// importer (`mail-archive import`'s path: engine/import/importer.ts into the PostgreSQL writer),
// into a fresh database; beside it the same mbox into a fresh SQLite file in the same run, the
// baseline. Prints each tenth's rate (does the rate fall as the archive grows?), the importer's
// and the server's CPU per message, and checks the counts.
//
//   npm run bench:pg-write [-- --messages 100000]
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openAdmin } from '../engine/archive.js';
import { importPaths } from '../engine/import/importer.js';
import { formatMboxEntry } from '../engine/import/mbox.js';
import { postgresCpuMs } from './lib/cpu.js';
import { typicalMail } from './typical-mail.js';

/** msg/s into PostgreSQL at 100,000 messages (the target). */
export const PG_WRITE_TARGET = 600;

function argValue(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive whole number.`);
  return value;
}

const server = () => ({
  host: process.env.PGHOST || '127.0.0.1',
  port: Number(process.env.PGPORT || 5432),
  user: process.env.PGUSER || 'postgres',
});

async function admin<T>(work: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ ...server(), database: 'postgres' });
  await c.connect();
  try {
    return await work(c);
  } finally {
    await c.end();
  }
}

export interface WriteRun {
  store: 'SQLite' | 'PostgreSQL';
  seconds: number;
  rate: number;
  tenths: number[];
  importerCpuMsPerMessage: number;
  serverCpuMsPerMessage?: number;
  imported: number;
}

async function writeMbox(path: string, count: number): Promise<void> {
  const out = createWriteStream(path);
  for (const m of typicalMail(count))
    if (!out.write(formatMboxEntry(m.raw, m.sender, m.date))) await once(out, 'drain');
  out.end();
  await once(out, 'finish');
}

async function importInto(
  store: WriteRun['store'],
  target: string,
  mbox: string,
  count: number,
  database?: string,
): Promise<WriteRun> {
  const archive = await openAdmin(target, { create: true });
  try {
    const accountId = (await archive.addAccount({ name: 'Bench', emailAddress: 'person0@example.com' })).id;
    const tenths: number[] = [];
    let mark = performance.now();
    const t0 = mark;
    const cpu = process.cpuUsage();
    const server0 = database ? postgresCpuMs(database) : undefined;
    const summary = await importPaths(archive, [mbox], {
      accountId,
      onProgress: (p) => {
        if (p.messages < ((tenths.length + 1) * count) / 10) return;
        const now = performance.now();
        tenths.push(Math.round(count / 10 / ((now - mark) / 1000)));
        mark = now;
      },
    });
    const seconds = (performance.now() - t0) / 1000;
    const { user, system } = process.cpuUsage(cpu);
    const server1 = database ? postgresCpuMs(database) : undefined;
    if (summary.imported !== count)
      throw new Error(`${store}: imported ${summary.imported} of ${count} (${summary.failed} failed)`);
    return {
      store,
      seconds,
      rate: Math.round(count / seconds),
      tenths,
      importerCpuMsPerMessage: (user + system) / 1000 / count,
      ...(server0 !== undefined && server1 !== undefined ? { serverCpuMsPerMessage: (server1 - server0) / count } : {}),
      imported: summary.imported,
    };
  } finally {
    await archive.close();
  }
}

export async function measureWrites(
  count: number,
  log = (line: string) => console.log(line),
): Promise<{ sqlite: WriteRun; postgres: WriteRun }> {
  const dir = mkdtempSync(join(tmpdir(), 'mag-bench-pg-write-'));
  const database = `mag_bench_write_${process.pid}`;
  try {
    const mbox = join(dir, 'corpus.mbox');
    await writeMbox(mbox, count);
    await admin((c) => c.query(`CREATE DATABASE "${database}"`));
    // --log-statements: every statement's duration in the server's log, for profiling (without its
    // parameters: each batch's bodies would be logged again, as text).
    if (process.argv.includes('--log-statements'))
      await admin(async (c) => {
        await c.query(`ALTER DATABASE "${database}" SET log_min_duration_statement = 0`);
        await c.query(`ALTER DATABASE "${database}" SET log_parameter_max_length = 0`);
      });
    const { host, port, user } = server();
    const postgres = await importInto(
      'PostgreSQL',
      `postgres://${user}@${host}:${port}/${database}`,
      mbox,
      count,
      database,
    );
    // --postgres-only: no baseline (profiling the PostgreSQL path alone).
    const sqlite = process.argv.includes('--postgres-only')
      ? postgres
      : await importInto('SQLite', join(dir, 'archive.db'), mbox, count);
    for (const r of [postgres, sqlite])
      log(
        `Write ${r.store}: ${r.rate} msg/s (${r.seconds.toFixed(1)} s), importer ${r.importerCpuMsPerMessage.toFixed(2)} ms CPU/msg` +
          (r.serverCpuMsPerMessage !== undefined ? `, server ${r.serverCpuMsPerMessage.toFixed(2)} ms CPU/msg` : '') +
          `\n  msg/s by tenth: ${r.tenths.join(', ')}`,
      );
    log(
      `Write PostgreSQL/SQLite: ${(postgres.rate / sqlite.rate).toFixed(2)}x; target ${PG_WRITE_TARGET} msg/s: ${(postgres.rate / PG_WRITE_TARGET).toFixed(2)}x ${postgres.rate >= PG_WRITE_TARGET ? 'met' : 'MISSED'}`,
    );
    return { sqlite, postgres };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    if (!process.argv.includes('--keep'))
      await admin((c) => c.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`));
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await measureWrites(argValue('--messages', 20_000));
