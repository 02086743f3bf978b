// Import benchmark: N typical messages (default 5,000) in an mbox, imported into a fresh archive
// through the real importer. The same run also times reading and splitting the mbox alone, so
// the ratio between the two shows what parsing and writing cost.
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

    const db = openArchive(join(dir, 'archive.db'));
    const accountId = addAccount(db, { name: 'Bench', emailAddress: 'person0@example.com' }).id;
    t = performance.now();
    const cpu = process.cpuUsage();
    const summary = await importPaths(db, [mbox], { accountId });
    const importSeconds = (performance.now() - t) / 1000;
    const { user, system } = process.cpuUsage(cpu);
    const cpuSeconds = (user + system) / 1e6;
    db.close();
    if (summary.imported !== count)
      throw new Error(`imported ${summary.imported} of ${count} (${summary.failed} failed)`);

    const importRate = rate(count, importSeconds);
    const splitRate = rate(count, splitSeconds);
    console.log(
      `Read + split only: ${splitRate} msg/s (${(mb / splitSeconds).toFixed(0)} MB/s), ${splitSeconds.toFixed(2)} s.`,
    );
    // CPU time as well: on a shared machine it stays put while wall-clock time does not.
    console.log(
      `Import (parse + write): ${importRate} msg/s, ${importSeconds.toFixed(2)} s (${rate(count, cpuSeconds)} msg per CPU-second).`,
    );
    console.log(
      `Target ${TARGET} msg/s: ${(importRate / TARGET).toFixed(2)}x. Parse + write cost ${(splitRate / importRate).toFixed(1)}x the read + split time.`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
