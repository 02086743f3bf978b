// Import benchmark: N typical messages (default 5,000) in an mbox, imported into a fresh archive
// through the real importer. The same run also times reading and splitting the mbox alone, so
// the ratio between the two shows what parsing and writing cost, and imports the same mbox in up
// to three ways (docs/import.md, "Performance"; docs/evidence.md, "What it costs"):
//   before  parsed on the importer's own thread, no originals: the import as it was before
//           originals were kept and parsing moved to threads (the baseline);
//   threads parsed on worker threads, no originals: what the threads buy;
//   now     parsed on worker threads, originals kept: the import as it runs now.
// Each prints its rate, CPU, the rate of each tenth of the run, archive size and `backup` time.
// Each archive is deleted after it is measured, so a 1,000,000-message run needs the disk of one.
//
//   npm run bench:import [-- --messages 20000] [-- --runs before,now]
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

    const runsArg = process.argv.includes('--runs') ? process.argv[process.argv.indexOf('--runs') + 1]! : '';
    const wanted = runsArg ? runsArg.split(',') : ['before', 'threads', 'now'];
    const configs = {
      before: { originals: false, parse: { threads: 0 } },
      threads: { originals: false, parse: {} },
      now: { originals: true, parse: {} },
    } as const;
    for (const name of wanted)
      if (!(name in configs)) throw new Error(`--runs takes before, threads and now, not ${name}`);
    const runs = [];
    for (const name of wanted as Array<keyof typeof configs>) {
      const { originals, parse } = configs[name];
      const file = join(dir, `archive-${name}.db`);
      const db = openArchive(file);
      const accountId = addAccount(db, { name: 'Bench', emailAddress: 'person0@example.com' }).id;
      // The rate of each tenth of the run: whether it falls as the archive grows.
      const tenths: number[] = [];
      let mark = performance.now();
      const t0 = mark;
      const cpu = process.cpuUsage();
      const summary = await importPaths(db, [mbox], {
        accountId,
        originals,
        parse,
        onProgress: (p) => {
          if (p.messages < ((tenths.length + 1) * count) / 10) return;
          const now = performance.now();
          tenths.push(rate(count / 10, (now - mark) / 1000));
          mark = now;
        },
      });
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
      const bytes = statSync(file).size;
      for (const f of [file, `${file}.backup`, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
      runs.push({ name, originals, seconds, cpuSeconds: (user + system) / 1e6, bytes, kept, backupSeconds, tenths });
      console.log(
        `Import ${name} (${originals ? 'originals kept' : 'no originals'}, ${name === 'before' ? 'parsed on its own thread' : 'parsed on threads'}): ` +
          `${rate(count, seconds)} msg/s, ${seconds.toFixed(2)} s (${rate(count, (user + system) / 1e6)} msg per CPU-second); ` +
          `archive ${(bytes / 1e6).toFixed(1)} MB (${(bytes / 1e6 / mb).toFixed(2)}x the mbox); backup ${backupSeconds.toFixed(2)} s.` +
          (originals
            ? ` Originals ${(kept.raw / 1e6).toFixed(1)} MB stored in ${(kept.stored / 1e6).toFixed(1)} MB.`
            : '') +
          `\n  msg/s by tenth of the run: ${tenths.join(', ')}`,
      );
    }
    const splitRate = rate(count, splitSeconds);
    console.log(
      `Read + split only: ${splitRate} msg/s (${(mb / splitSeconds).toFixed(0)} MB/s), ${splitSeconds.toFixed(2)} s.`,
    );
    const by = new Map<string, (typeof runs)[number]>(runs.map((r) => [r.name, r]));
    const ratio = (a: string, b: string, what: string) => {
      const x = by.get(a);
      const y = by.get(b);
      if (!x || !y) return;
      console.log(
        `${what}: rate ${(y.seconds / x.seconds).toFixed(2)}x, messages per CPU-second ${(y.cpuSeconds / x.cpuSeconds).toFixed(2)}x, ` +
          `archive ${(x.bytes / y.bytes).toFixed(2)}x, backup ${(x.backupSeconds / y.backupSeconds).toFixed(2)}x.`,
      );
    };
    ratio('now', 'before', 'Now against before (target: rate >= 0.90x)');
    ratio('threads', 'before', 'Parse threads against before');
    ratio('now', 'threads', 'Keeping originals, both on threads');
    const last = runs[runs.length - 1]!;
    const importRate = rate(count, last.seconds);
    console.log(
      `Target ${TARGET} msg/s (${last.name}): ${(importRate / TARGET).toFixed(2)}x. Parse + write cost ${(splitRate / importRate).toFixed(1)}x the read + split time.`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
