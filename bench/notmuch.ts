// Our search against notmuch (Debian package `notmuch`) on the same 200,000 messages.
//
// The slice is the benchmark corpus built with --messages 200000 (the same seed, so the first
// 200,000 messages of the 1M corpus). It is exported once to a Maildir under bench/.cache/,
// indexed by `notmuch new`, and then each query of the mix runs both ways, one at a time:
// ours through HTTP (count + first page), notmuch as `notmuch count` + `notmuch search
// --limit=20` (two process starts, which the table also shows on their own).
//
//   npm run bench:notmuch [-- --messages 200000 --runs 15]
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openArchive } from '../engine/sqlite/open.js';
import { createKey } from '../engine/sqlite/keys.js';
import { CACHE_DIR, ensureCorpus, sampleAddress } from './corpus.js';
import { ms, percentile, ratio, sequential } from './lib/load.js';
import { startArchiveServer } from './lib/server.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}

interface Pair {
  name: string;
  ours: Record<string, string>;
  /** null where notmuch has no equivalent. */
  notmuch: { query: string; offset?: number } | null;
}

function pairs(address: string): Pair[] {
  return [
    { name: 'rare word', ours: { q: 'zanzibar' }, notmuch: { query: 'zanzibar' } },
    { name: 'very common word', ours: { q: 'meeting' }, notmuch: { query: 'meeting' } },
    { name: 'two words', ours: { q: 'project budget' }, notmuch: { query: 'project budget' } },
    { name: 'phrase', ours: { q: '"the project"' }, notmuch: { query: '"the project"' } },
    { name: 'from: an address', ours: { q: `from:${address}` }, notmuch: { query: `from:${address}` } },
    { name: 'subject: a word', ours: { q: 'subject:review' }, notmuch: { query: 'subject:review' } },
    {
      name: 'date range, no q',
      ours: { from: '2019-01-01', to: '2019-03-31' },
      notmuch: { query: 'date:2019-01-01..2019-03-31' },
    },
    {
      name: 'folder, by subject',
      ours: { folder: 'INBOX/Projects/Apollo', sortBy: 'subject', sortOrder: 'asc' },
      notmuch: null,
    },
    { name: 'page 500', ours: { q: 'project', page: '500' }, notmuch: { query: 'project', offset: 9980 } },
  ];
}

/** Writes every message of the archive as a Maildir file, once. */
function exportMaildir(dbPath: string, root: string): void {
  if (existsSync(join(root, '.done'))) return;
  rmSync(root, { recursive: true, force: true });
  const db = openArchive(dbPath, { readonly: true });
  const folders = new Set<string>();
  const rows = db
    .prepare(
      `SELECT e.id, e.folder, e.message_id, e.subject, e.from_addr, e.to_addr, e.cc_addr, e.sent_date, body_text(b.text_body) AS text_body
       FROM emails e JOIN email_bodies b ON b.email_id = e.id`,
    )
    .iterate() as IterableIterator<{
    id: number;
    folder: string;
    message_id: string;
    subject: string;
    from_addr: string;
    to_addr: string;
    cc_addr: string;
    sent_date: number;
    text_body: string;
  }>;
  for (const r of rows) {
    const dir = join(root, ...r.folder.split('/'));
    if (!folders.has(dir)) {
      for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(dir, sub), { recursive: true });
      folders.add(dir);
    }
    const headers = [
      `Message-ID: ${r.message_id}`,
      `Date: ${new Date(r.sent_date).toUTCString().replace('GMT', '+0000')}`,
      `From: ${r.from_addr}`,
      `To: ${r.to_addr}`,
      ...(r.cc_addr ? [`Cc: ${r.cc_addr}`] : []),
      `Subject: =?UTF-8?B?${Buffer.from(r.subject).toString('base64')}?=`,
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 8bit',
    ];
    writeFileSync(join(dir, 'cur', `${r.id}.bench:2,S`), `${headers.join('\n')}\n\n${r.text_body ?? ''}\n`);
  }
  db.close();
  writeFileSync(join(root, '.done'), '');
}

function time(fn: () => void, runs: number): number {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    fn();
    samples.push(performance.now() - t);
  }
  return percentile(samples, 50);
}

async function main(): Promise<void> {
  const messages = arg('--messages', 200_000);
  const runs = arg('--runs', 15);
  if (spawnSync('notmuch', ['--version']).status !== 0)
    throw new Error('notmuch is not installed: apt-get install notmuch');
  const dbPath = ensureCorpus({ messages });
  const root = join(CACHE_DIR, `maildir-${messages}`);
  const config = join(CACHE_DIR, `notmuch-${messages}.config`);
  const env = { ...process.env, NOTMUCH_CONFIG: config };
  exportMaildir(dbPath, root);
  writeFileSync(config, `[database]\npath=${root}\n[new]\ntags=inbox;\n[search]\nexclude_tags=\n`);
  if (!existsSync(join(root, '.notmuch'))) {
    const t = performance.now();
    execFileSync('notmuch', ['new', '--quiet'], { env, stdio: 'inherit' });
    console.log(`notmuch indexed ${messages} messages in ${((performance.now() - t) / 1000).toFixed(0)} s.`);
  }
  const nm = (...args: string[]) => execFileSync('notmuch', args, { env, maxBuffer: 1 << 26 });

  const db = openArchive(dbPath);
  const key = createKey(db, { username: 'admin', name: 'bench' }).key;
  const address = sampleAddress(db);
  db.close();
  const server = await startArchiveServer(dbPath);
  try {
    const startup = time(() => nm('--version'), runs);
    // Warm the server: every worker opens its connection on its first job. A word outside the
    // mix, so that no count of the mix is cached before its first call is timed.
    await Promise.all(
      Array.from({ length: 6 }, () =>
        fetch(`${server.url}/api/v1/emails?q=warmup`, { headers: { Authorization: `Bearer ${key}` } }),
      ),
    );
    const agree: string[] = [];
    let compared = 0;
    console.log(`\n${messages.toLocaleString('en')} messages; p50 of ${runs} runs, one query at a time.`);
    console.log(
      'Ours: the first call (count computed) and the p50 of repeated calls (count cached); notmuch computes every time.',
    );
    console.log(
      '| query | ours, first call | ours, repeated | our count | notmuch count + search | notmuch count | first call / notmuch | repeated / notmuch |',
    );
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const p of pairs(address)) {
      const url = `${server.url}/api/v1/emails?${new URLSearchParams(p.ours)}`;
      const headers = { Authorization: `Bearer ${key}` };
      const t = performance.now();
      const first = (await (await fetch(url, { headers })).json()) as { totalItems: number };
      const firstMs = performance.now() - t;
      const ours = percentile(await sequential(url, headers, runs), 50);
      if (!p.notmuch) {
        console.log(
          `| ${p.name} | ${ms(firstMs)} | ${ms(ours)} | ${first.totalItems} | no equivalent (notmuch sorts by date only) | | | |`,
        );
        continue;
      }
      const { query, offset } = p.notmuch;
      let counted = 0;
      const theirs = time(() => {
        counted = Number(nm('count', '--output=messages', query).toString().trim());
        nm(
          'search',
          '--format=json',
          '--output=messages',
          '--sort=newest-first',
          '--limit=20',
          ...(offset ? [`--offset=${offset}`] : []),
          query,
        );
      }, runs);
      compared++;
      if (counted === first.totalItems) agree.push(p.name);
      console.log(
        `| ${p.name} | ${ms(firstMs)} | ${ms(ours)} | ${first.totalItems} | ${ms(theirs)} | ${counted} | ${ratio(firstMs, theirs)} | ${ratio(ours, theirs)} |`,
      );
    }
    console.log(
      `\nnotmuch's own process start (notmuch --version): p50 ${ms(startup)}; each notmuch row includes two.`,
    );
    console.log(
      `Counts: ${agree.length === compared ? 'equal for every query' : `equal for ${agree.length} of ${compared} queries`}.`,
    );
  } finally {
    await server.stop();
  }
}

await main();
