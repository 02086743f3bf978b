// Import benchmark: N typical messages (default 5,000) in an mbox, imported into a fresh archive
// through the real importer. The same run also times reading and splitting the mbox alone, so
// the ratio between the two shows what parsing and writing cost, and imports the same mbox twice,
// without and with originals kept (docs/evidence.md, "What it costs"): rate, CPU, size, backup.
//
//   npm run bench:import [-- --messages 20000]
import { createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { openArchive } from '../engine/sqlite/open.js';
import { importPaths } from '../engine/import/importer.js';
import { formatMboxEntry, readMbox } from '../engine/import/mbox.js';
import { addAccount } from '../engine/sqlite/accounts.js';
import { typicalMail } from './typical-mail.js';

const TARGET = 1000; // messages per second, the importer's stated goal

function argValue(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive whole number.`);
  return value;
}

async function writeCorpus(path: string, count: number): Promise<void> {
  const out = createWriteStream(path);
  for (const m of typicalMail(count)) {
    if (!out.write(formatMboxEntry(m.raw, m.sender, m.date))) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

const rate = (n: number, seconds: number) => Math.round(n / seconds);

async function main(): Promise<void> {
  const count = argValue('--messages', 5000);
  const dir = mkdtempSync(join(tmpdir(), 'mag-bench-import-'));
  try {
    const mbox = join(dir, 'corpus.mbox');
    await writeCorpus(mbox, count);
    const mb = statSync(mbox).size / 1e6;
    console.log(`Corpus: ${count} messages, ${mb.toFixed(1)} MB mbox (avg ${((mb * 1e3) / count).toFixed(1)} KB).`);

    let t = performance.now();
    let split = 0;
    for await (const _ of readMbox(mbox)) split++;
    const splitSeconds = (performance.now() - t) / 1000;
    if (split !== count) throw new Error(`the splitter found ${split} messages, expected ${count}`);

    // The same mbox twice: without keeping originals (the import as it was before they were kept),
    // then as the importer runs now; each archive's size and backup time beside its rate.
    const runs = [];
    for (const originals of [false, true]) {
      const file = join(dir, `archive-${originals ? 'originals' : 'none'}.db`);
      const db = openArchive(file);
      const accountId = addAccount(db, { name: 'Bench', emailAddress: 'person0@example.com' }).id;
      const t0 = performance.now();
      const cpu = process.cpuUsage();
      const summary = await importPaths(db, [mbox], { accountId, originals });
      const seconds = (performance.now() - t0) / 1000;
      const { user, system } = process.cpuUsage(cpu);
      if (summary.imported !== count)
        throw new Error(`imported ${summary.imported} of ${count} (${summary.failed} failed)`);
      const kept = db
        .prepare('SELECT coalesce(sum(size), 0) AS raw, coalesce(sum(length(data)), 0) AS stored FROM originals')
        .get() as {
        raw: number;
        stored: number;
      };
      db.pragma('wal_checkpoint(TRUNCATE)');
      const b0 = performance.now();
      await db.backup(`${file}.backup`);
      const backupSeconds = (performance.now() - b0) / 1000;
      db.close();
      runs.push({
        originals,
        seconds,
        cpuSeconds: (user + system) / 1e6,
        bytes: statSync(file).size,
        kept,
        backupSeconds,
      });
    }
    const splitRate = rate(count, splitSeconds);
    console.log(
      `Read + split only: ${splitRate} msg/s (${(mb / splitSeconds).toFixed(0)} MB/s), ${splitSeconds.toFixed(2)} s.`,
    );
    for (const r of runs) {
      // CPU time as well: on a shared machine it stays put while wall-clock time does not.
      console.log(
        `Import ${r.originals ? 'keeping originals' : 'without originals'}: ${rate(count, r.seconds)} msg/s, ${r.seconds.toFixed(2)} s ` +
          `(${rate(count, r.cpuSeconds)} msg per CPU-second); archive ${(r.bytes / 1e6).toFixed(1)} MB (${(r.bytes / 1e6 / mb).toFixed(2)}x the mbox); ` +
          `backup ${r.backupSeconds.toFixed(2)} s.` +
          (r.originals
            ? ` Originals ${(r.kept.raw / 1e6).toFixed(1)} MB stored in ${(r.kept.stored / 1e6).toFixed(1)} MB.`
            : ''),
      );
    }
    const [off, on] = runs as [(typeof runs)[0], (typeof runs)[0]];
    const importRate = rate(count, on.seconds);
    console.log(
      `Keeping originals: rate ${(off.seconds / on.seconds).toFixed(2)}x, CPU ${(off.cpuSeconds / on.cpuSeconds).toFixed(2)}x ` +
        `(target: within 10 %, >= 0.90x), archive ${(on.bytes / off.bytes).toFixed(2)}x, backup ${(on.backupSeconds / off.backupSeconds).toFixed(2)}x.`,
    );
    console.log(
      `Target ${TARGET} msg/s: ${(importRate / TARGET).toFixed(2)}x. Parse + write cost ${(splitRate / importRate).toFixed(1)}x the read + split time.`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
