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
// Beside them, the parser's own rate: the same messages parsed (originals packed) on every core
// and thrown away, the floor under any import's time on this machine.
//
//   --mail typical   bench/typical-mail.ts: 8 KB of text from 60 words (the default: the
//                    baseline of earlier runs);
//   --mail corpus    the search benchmark's corpus (bench/corpus.ts) as MIME: a 50,000-word
//                    vocabulary, 5,000 correspondents, threads: what real mail costs the index.
//   --source mbox    one mbox (the default); maildir: a Maildir, one file per message.
//
//   npm run bench:import [-- --messages 20000] [-- --runs before,now] [-- --mail corpus] [-- --source maildir]
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { openArchive } from '../engine/sqlite/open.js';
import { importPaths } from '../engine/import/importer.js';
import { formatMboxEntry } from '../engine/import/mbox.js';
import { inOrder, MessageParser } from '../engine/import/parsers.js';
import { planSources, readSources } from '../engine/import/sources.js';
import { addAccount } from '../engine/sqlite/accounts.js';
import { corpusMail, typicalMail, type TypicalMessage } from './typical-mail.js';

/** msg/s on a 2-core machine from an mbox or a Maildir at 1,000,000 messages (docs/import.md, "Performance"). */
const TARGET = 2000;

function argValue(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive whole number.`);
  return value;
}

function option(name: string, values: readonly string[]): string {
  const i = process.argv.indexOf(name);
  const value = i >= 0 ? process.argv[i + 1]! : values[0]!;
  if (!values.includes(value)) throw new Error(`${name} takes ${values.join(' or ')}, not ${value}`);
  return value;
}

/** The messages as an mbox file, or as a Maildir (one file per message in cur/); returns the bytes. */
async function writeCorpus(path: string, mail: Iterable<TypicalMessage>, source: string): Promise<number> {
  if (source === 'maildir') {
    let bytes = 0;
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(path, sub), { recursive: true });
    let i = 0;
    for (const m of mail) {
      writeFileSync(join(path, 'cur', `${m.date.getTime()}.${i++}.bench:2,S`), m.raw);
      bytes += m.raw.length;
    }
    return bytes;
  }
  const out = createWriteStream(path);
  for (const m of mail) {
    if (!out.write(formatMboxEntry(m.raw, m.sender, m.date))) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return statSync(path).size;
}

/** Reads and parses every message on every core, originals packed, and keeps nothing: the floor. */
async function parseOnly(path: string, count: number): Promise<number> {
  const parser = new MessageParser({ threads: availableParallelism(), inlineFirst: 0 });
  const t = performance.now();
  let parsed = 0;
  try {
    const ctx = { accountId: 1, accountEmail: 'person0@example.com', folder: 'INBOX', fallbackDate: Date.now() };
    const work = (m: { raw: Buffer; folder: string }) =>
      parser.parse({ raw: m.raw, ctx: { ...ctx, folder: m.folder }, keepOriginal: true });
    for await (const r of inOrder(readSources(planSources([path]).sources), parser, (m) => m.raw.length, work))
      if (r.ok) parsed++;
  } finally {
    await parser.close();
  }
  if (parsed !== count) throw new Error(`parsed ${parsed} of ${count}`);
  return (performance.now() - t) / 1000;
}

const rate = (n: number, seconds: number) => Math.round(n / seconds);

async function main(): Promise<void> {
  const count = argValue('--messages', 5000);
  const mailKind = option('--mail', ['typical', 'corpus']);
  const source = option('--source', ['mbox', 'maildir']);
  const dir = mkdtempSync(join(tmpdir(), 'mag-bench-import-'));
  try {
    const mbox = join(dir, source === 'maildir' ? 'Maildir' : 'corpus.mbox');
    const mail = mailKind === 'corpus' ? corpusMail(count) : typicalMail(count);
    const mb = (await writeCorpus(mbox, mail, source)) / 1e6;
    console.log(
      `Corpus: ${count} messages (${mailKind} mail), ${mb.toFixed(1)} MB ${source} (avg ${((mb * 1e3) / count).toFixed(1)} KB).`,
    );

    let t = performance.now();
    let split = 0;
    for await (const _ of readSources(planSources([mbox]).sources)) split++;
    const splitSeconds = (performance.now() - t) / 1000;
    if (split !== count) throw new Error(`the reader found ${split} messages, expected ${count}`);
    const splitRate = rate(count, splitSeconds);
    console.log(
      `Read + split only: ${splitRate} msg/s (${(mb / splitSeconds).toFixed(0)} MB/s), ${splitSeconds.toFixed(2)} s.`,
    );
    const parseSeconds = await parseOnly(mbox, count);
    console.log(
      `Parse only, on all ${availableParallelism()} cores, originals packed, nothing written (the floor): ` +
        `${rate(count, parseSeconds)} msg/s, ${parseSeconds.toFixed(2)} s.`,
    );

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
      `Target ${TARGET} msg/s (${last.name}): ${(importRate / TARGET).toFixed(2)}x. Parse + write cost ${(splitRate / importRate).toFixed(1)}x the read + split time; ` +
        `the import runs at ${(importRate / rate(count, parseSeconds)).toFixed(2)}x the parser's own rate.`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
