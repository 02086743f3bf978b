// What reading attachment text costs at import, and what its index weighs (ADR 16's figures).
// Two corpora, each imported twice into fresh archives, with attachment text off and on:
//   - the import benchmark's typical mail (one message in five carries a 2-20 KB "PDF" of random
//     bytes: the worst case per byte, every one is opened and refused as damaged);
//   - the demo archive (real generated PDFs and CSVs, as people attach them).
//
//   npm run build && node dist/bench/attachment-text.js [--messages 2000]
import { createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openArchive, type Db } from '../engine/sqlite/open.js';
import { buildDemoArchive } from '../engine/demo/build.js';
import { importPaths } from '../engine/import/importer.js';
import { formatMboxEntry } from '../engine/import/mbox.js';
import { addAccount } from '../engine/sqlite/accounts.js';
import { typicalMail } from './typical-mail.js';

function argValue(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive whole number.`);
  return value;
}

const bytesOf = (db: Db, like: string) =>
  (db.prepare('SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE ?').pluck().get(like) as number) / 1e6;

function report(label: string, path: string, seconds: number, messages: number): Record<string, unknown> {
  const db = openArchive(path);
  try {
    const statuses = db
      .prepare(
        "SELECT CASE WHEN status LIKE 'failed%' THEN 'failed' ELSE status END AS s, count(*) AS n FROM attachment_texts GROUP BY s",
      )
      .all() as Array<{ s: string; n: number }>;
    return {
      label,
      messages,
      seconds: Math.round(seconds * 100) / 100,
      perSecond: Math.round(messages / seconds),
      attachmentContents: db.prepare('SELECT count(*) FROM attachment_contents').pluck().get(),
      statuses: Object.fromEntries(statuses.map((r) => [r.s, r.n])),
      textChars: db.prepare('SELECT coalesce(sum(chars), 0) FROM attachment_texts').pluck().get(),
      emailFtsMB: bytesOf(db, 'email_fts%').toFixed(2),
      attachmentFtsMB: bytesOf(db, 'attachment_fts%').toFixed(2),
      attachmentTextsMB: bytesOf(db, 'attachment_texts%').toFixed(2),
      fileMB: (statSync(path).size / 1e6).toFixed(2),
    };
  } finally {
    db.close();
  }
}

async function main(): Promise<void> {
  const count = argValue('--messages', 2000);
  const dir = mkdtempSync(join(tmpdir(), 'mag-bench-atext-'));
  try {
    const mbox = join(dir, 'corpus.mbox');
    const out = createWriteStream(mbox);
    for (const m of typicalMail(count))
      if (!out.write(formatMboxEntry(m.raw, m.sender, m.date))) await once(out, 'drain');
    out.end();
    await once(out, 'finish');
    const rows: Array<Record<string, unknown>> = [];
    for (const on of [false, true]) {
      const path = join(dir, `typical-${on}.db`);
      const db = openArchive(path);
      const account = addAccount(db, { name: 'Bench', emailAddress: 'bench@example.com' }).id;
      const s = await importPaths(db, [mbox], { accountId: account, attachmentText: on });
      db.close();
      rows.push(report(`typical mail, attachment text ${on ? 'on' : 'off'}`, path, s.seconds, s.imported));
    }
    for (const on of [false, true]) {
      const path = join(dir, `demo-${on}.db`);
      const db = openArchive(path);
      const started = performance.now();
      const demo = await buildDemoArchive(db, { messages: count, attachmentText: on });
      db.close();
      rows.push(
        report(
          `demo archive, attachment text ${on ? 'on' : 'off'}`,
          path,
          (performance.now() - started) / 1000,
          demo.messages,
        ),
      );
    }
    console.log(JSON.stringify(rows, null, 2));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
