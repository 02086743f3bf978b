// Exports (docs/export.md): GET /api/v1/emails/export of a whole benchmark archive through the
// real server, in both formats, with the server's resident memory sampled throughout; against, in
// the same run, paging the same messages' summaries through GET /api/v1/emails (the read a client
// would otherwise make to list what it exports).
//
//   npm run bench:export [-- --messages 20000 --rounds 2 --originals 1]
//
// The bench corpus keeps no originals (bench/corpus.ts writes fields, not messages), so every
// message is a reconstruction: the export's slow case. With --originals 1 the archive is instead
// one of N generated messages, each stored with its original (about 2 KB of varied text, cached
// under bench/.cache/): the case of mail imported or synced on SQLite. Peak memory is the server process's (its
// worker threads included), read from /proc every 50 ms as RssAnon: SQLite maps the archive file,
// and the pages of it a run touches count in VmRSS but are the file's, not the process's memory;
// "before" is after a warm-up export.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { openArchive } from '../engine/sqlite/open.js';
import { addAccount } from '../engine/sqlite/accounts.js';
import { addUser } from '../engine/sqlite/users.js';
import { ArchiveWriter } from '../engine/sqlite/writer.js';
import { dedupKeyFor } from '../engine/rules/new-email.js';
import { arg } from './lib/args.js';
import { createCaller } from './lib/callers.js';
import { startArchiveServer } from './lib/server.js';
import { CACHE_DIR, COMMON_WORDS, ensureCorpus } from './corpus.js';

const messages = arg('--messages', 20_000);
const rounds = arg('--rounds', 2);
const originals = arg('--originals', 0, { zero: true }) > 0;

/** N generated messages, each with its original, in one account (cached). */
function originalsArchive(n: number): string {
  const path = `${CACHE_DIR}/export-originals-${n}.db`;
  if (existsSync(path)) return path;
  const building = `${path}.building`;
  rmSync(building, { force: true });
  const db = openArchive(building);
  const account = addAccount(db, { name: 'Bench', emailAddress: 'bench@example.org' });
  addUser(db, { username: 'admin', isAdmin: true });
  const writer = new ArchiveWriter(db);
  let seed = 42;
  const word = () => COMMON_WORDS[(seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) % COMMON_WORDS.length]!;
  const words = (k: number) => Array.from({ length: k }, word).join(' ');
  for (let start = 0; start < n; start += 5000) {
    writer.batch(() => {
      for (let i = start; i < Math.min(n, start + 5000); i++) {
        const sentDate = Date.parse('2015-01-01T00:00:00Z') + i * 600_000;
        const messageId = `<export-bench-${i}@example.org>`;
        const subject = words(5);
        const body = Array.from({ length: 25 }, () => words(12)).join('\r\n');
        const original = Buffer.from(
          `From: Sender ${i % 97} <s${i % 97}@example.org>\r\nTo: bench@example.org\r\nSubject: ${subject}\r\n` +
            `Message-ID: ${messageId}\r\nDate: ${new Date(sentDate).toUTCString()}\r\n\r\n${body}\r\n`,
        );
        writer.add({
          accountId: account.id,
          folder: 'INBOX',
          messageId,
          subject,
          from: `s${i % 97}@example.org`,
          to: 'bench@example.org',
          cc: '',
          bcc: '',
          sentDate,
          receivedDate: sentDate,
          isOutgoing: false,
          textBody: body,
          htmlBody: null,
          attachments: [],
          dedupKey: dedupKeyFor(messageId, original, createHash('sha256').update(original).digest('hex')),
          original,
        });
      }
    });
  }
  db.close();
  renameSync(building, path);
  return path;
}

const dbPath = originals ? originalsArchive(messages) : ensureCorpus({ messages });
const db = openArchive(dbPath);
const admin = createCaller(db, 'admin');
db.close();

const server = await startArchiveServer(dbPath, {
  searchIndex: false,
  env: { Api__MaxExportMessages: String(Math.max(messages, 1)), Api__MaxPageSize: '100' },
});
const pid = server.process.pid!;
/** The server's resident memory that is its own (RssAnon: heaps, buffers), not the archive file's pages SQLite maps. */
const rssMiB = () => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/RssAnon:\s+(\d+) kB/.exec(status)![1]) / 1024;
};

/** Runs `work` while sampling the server's RSS; the peak seen. */
async function sampled<T>(work: () => Promise<T>): Promise<{ result: T; peakMiB: number; seconds: number }> {
  let peak = rssMiB();
  const timer = setInterval(() => (peak = Math.max(peak, rssMiB())), 50);
  const started = performance.now();
  try {
    const result = await work();
    return { result, peakMiB: Math.max(peak, rssMiB()), seconds: (performance.now() - started) / 1000 };
  } finally {
    clearInterval(timer);
  }
}

/** The whole export, read as fast as it comes and thrown away; its size in bytes. */
async function exportAll(format: string): Promise<number> {
  const res = await fetch(`${server.url}/api/v1/emails/export?format=${format}`, { headers: admin.headers });
  if (res.status !== 200) throw new Error(`export answered ${res.status}: ${await res.text()}`);
  let bytes = 0;
  for await (const chunk of res.body!) bytes += (chunk as Uint8Array).byteLength;
  return bytes;
}

/** Every summary, a page of 100 at a time, oldest first: the messages a client would list. */
async function pageAll(): Promise<number> {
  let seen = 0;
  for (let page = 1; ; page++) {
    const res = await fetch(`${server.url}/api/v1/emails?sortBy=sentDate&sortOrder=asc&pageSize=100&page=${page}`, {
      headers: admin.headers,
    });
    if (res.status !== 200) throw new Error(`search answered ${res.status}`);
    const body = (await res.json()) as { items: unknown[]; totalPages: number };
    seen += body.items.length;
    if (page >= body.totalPages) return seen;
  }
}

const rate = (n: number, s: number) => Math.round(n / s).toLocaleString('en');
try {
  await exportAll('eml-zip'); // warm-up: JIT, SQLite's page cache
  const before = rssMiB();
  console.log(
    `# Export: ${messages.toLocaleString('en')} messages (${originals ? 'all originals' : 'all reconstructions'}), ${rounds} rounds`,
  );
  console.log(`Server RssAnon before: ${before.toFixed(0)} MiB (the archive's mapped pages not counted)`);
  console.log(
    '| run | messages/s | MB/s out | seconds | peak RssAnon (MiB) | ratio to paging |\n|---|---:|---:|---:|---:|---:|',
  );
  for (let round = 1; round <= rounds; round++) {
    const paged = await sampled(pageAll);
    const pagingRate = paged.result / paged.seconds;
    console.log(
      `| GET /api/v1/emails, pages of 100, round ${round} | ${rate(paged.result, paged.seconds)} | | ${paged.seconds.toFixed(1)} | ${paged.peakMiB.toFixed(0)} | 1 |`,
    );
    for (const format of ['eml-zip', 'mbox']) {
      const run = await sampled(() => exportAll(format));
      console.log(
        `| export ${format}, round ${round} | ${rate(messages, run.seconds)} | ${(run.result / 1e6 / run.seconds).toFixed(1)} | ${run.seconds.toFixed(1)} | ${run.peakMiB.toFixed(0)} | ${(messages / run.seconds / pagingRate).toFixed(2)} |`,
      );
    }
  }
} finally {
  await server.stop();
}
