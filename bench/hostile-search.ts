// What hostile mail costs other people's searches and reads (docs/security.md, "Mail shaped by an attacker", 2 and 29.3),
// against the real server process, each figure beside a baseline measured in the same run:
//
// 1. Phrases over huge attachment texts (item 2): three messages whose attachments hold
//    --mb-per-message million characters of text that repeats five words (never in the phrase's
//    order), and a 30-word attachment:"…" phrase of those words. One phrase alone, then four at
//    once while another key searches: with Engine:PhraseScanWords (default) and with it lifted
//    to 10,000,000 words, which is how every message was matched before (by FTS5, in full).
// 2. A winmail.dat of 50,000 files (item 3): GET /api/v1/accounts p50 while four clients open that
//    message over REST, then over MCP get_email, against nobody opening it.
//
//   npm run bench:hostile-search [-- --mb-per-message 100 --attachments-per-message 100 --seconds 10]
import { request } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openArchive } from '../engine/sqlite/open.js';
import { importPaths } from '../engine/import/importer.js';
import { saveAttachmentTexts } from '../engine/sqlite/attachment-text.js';
import { ArchiveWriter } from '../engine/sqlite/writer.js';
import { eml } from '../test/helpers/attachment-mail.js';
import { createFixture, email } from '../test/helpers/fixture.js';
import { tnef } from '../test/helpers/tnef.js';
import { arg } from './lib/args.js';
import { startServer } from './lib/server.js';

const MB_PER_MESSAGE = arg('--mb-per-message', 100);
const ATTACHMENTS = arg('--attachments-per-message', 100);
const SECONDS = arg('--seconds', 10);
const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'echo'];
/** 30 words: the five, six times over; the text holds them in another order only. */
const PHRASE = Array.from({ length: 30 }, (_, i) => WORDS[i % 5]).join(' ');

function get(url: string, headers: Record<string, string>, body?: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { method: body ? 'POST' : 'GET', headers, agent: false }, (res) => {
      res.on('data', () => {});
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const p50 = (t: number[]) => [...t].sort((a, b) => a - b)[Math.floor(t.length / 2)]!;
const fmt = (t: number[]) => `p50 ${p50(t).toFixed(1)} ms, max ${Math.max(...t).toFixed(0)} ms (${t.length} requests)`;

/** Requests one after another, at least one, until `until`; their latencies. */
async function loop(until: () => boolean, one: () => Promise<{ status: number; ms: number }>): Promise<number[]> {
  const times: number[] = [];
  do {
    const r = await one();
    if (r.status !== 200) throw new Error(`answered ${r.status}`);
    times.push(r.ms);
  } while (!until());
  return times;
}

async function phrases(): Promise<void> {
  const fixture = createFixture();
  try {
    const db = openArchive(fixture.dbPath);
    const writer = new ArchiveWriter(db, {});
    const unit = 'echo delta charlie bravo alpha ';
    const chunk = unit.repeat(Math.ceil((MB_PER_MESSAGE * 1e6) / ATTACHMENTS / unit.length));
    const ids = writer.batch(() =>
      [0, 1, 2].map((m) =>
        writer.add(
          email({
            accountId: fixture.accounts.work,
            subject: `Hostile attachments ${m}`,
            attachments: Array.from({ length: ATTACHMENTS }, (_, i) => ({
              fileName: `d${i}.docx`,
              contentType: 'application/octet-stream',
              content: Buffer.from(`message ${m} file ${i}`),
            })),
          }),
        )!,
      ),
    );
    // One save per message: each save rebuilds the index rows of the messages it touches.
    for (const id of ids) {
      const contents = db
        .prepare('SELECT DISTINCT content_id FROM attachments WHERE email_id = ?')
        .pluck()
        .all(id) as number[];
      saveAttachmentTexts(
        db,
        contents.map((contentId) => ({ contentId, result: { status: 'ok' as const, text: chunk, truncated: false } })),
      );
    }
    db.close();
    console.log(
      `1. three messages of ${ATTACHMENTS} attachments, ${((chunk.length * ATTACHMENTS) / 1e6).toFixed(0)} M characters of text each; a 30-word attachment: phrase`,
    );
    const admin = { Authorization: `Bearer ${fixture.keys.admin}` };
    const alice = { Authorization: `Bearer ${fixture.keys.alice}` };
    const q = encodeURIComponent(`attachment:"${PHRASE}"`);
    const results: Record<string, { one: number; four: number; other: number[] }> = {};
    for (const [label, words] of [
      ['bounded (Engine:PhraseScanWords default)', undefined],
      ['unbounded (every message by FTS5)', '10000000'],
    ] as const) {
      const server = await startServer({
        Api__Enabled: 'true',
        Api__RateLimitPerMinute: '1000000000',
        Database__Path: fixture.dbPath,
        Engine__MaxQueue: '1000',
        Engine__MaxQueueWaitMs: '60000',
        ...(words ? { Engine__PhraseScanWords: words } : {}),
      });
      try {
        const search = (key: Record<string, string>, query: string) =>
          get(`${server.url}/api/v1/emails?q=${query}`, key);
        await search(admin, q); // warm: threads, statements, the index
        const idle = await loop(
          (() => {
            const until = Date.now() + 2_000;
            return () => Date.now() > until;
          })(),
          () => search(alice, 'budget'),
        );
        const single = await search(admin, q);
        let running = 4;
        const started = performance.now();
        const four = Array.from({ length: 4 }, () => search(admin, q).finally(() => running--));
        const other = await loop(
          () => running === 0,
          () => search(alice, 'budget'),
        );
        const answers = await Promise.all(four);
        const fourMs = performance.now() - started;
        console.log(`   ${label}:`);
        console.log(`     one phrase alone: ${single.ms.toFixed(0)} ms (${single.status})`);
        console.log(
          `     four at once: ${fourMs.toFixed(0)} ms (${answers.map((a) => a.status).join(', ')}); another key's search meanwhile: ${fmt(other)}; idle ${fmt(idle)}`,
        );
        results[label] = { one: single.ms, four: fourMs, other };
      } finally {
        await server.stop();
      }
    }
    const [bounded, unbounded] = Object.values(results) as [(typeof results)[string], (typeof results)[string]];
    console.log(
      `   ratio bounded/unbounded: one phrase ${(bounded.one / unbounded.one).toFixed(3)}, four ${(bounded.four / unbounded.four).toFixed(3)}, another key's worst wait ${(Math.max(...bounded.other) / Math.max(...unbounded.other)).toFixed(3)}`,
    );
  } finally {
    fixture.cleanup();
  }
}

async function winmail(): Promise<void> {
  const fixture = createFixture();
  try {
    const path = join(fixture.dir, 'winmail.eml');
    const data = tnef(
      Array.from({ length: 50_000 }, (_, i) => ({ name: `f${i}.txt`, data: Buffer.from(`file ${i}`) })),
    );
    writeFileSync(path, eml('Outlook', 'x', [{ name: 'winmail.dat', type: 'application/ms-tnef', data }], 'winmail'));
    const db = openArchive(fixture.dbPath);
    await importPaths(db, [path], { accountId: fixture.accounts.work });
    const id = db.prepare("SELECT id FROM emails WHERE message_id = '<winmail@test>'").pluck().get() as number;
    const attachments = db.prepare('SELECT count(*) FROM attachments WHERE email_id = ?').pluck().get(id) as number;
    db.close();
    console.log(`2. GET /api/v1/accounts beside a winmail.dat of 50,000 files (${attachments} attachments stored)`);
    const auth = { Authorization: `Bearer ${fixture.keys.admin}` };
    const server = await startServer({
      Api__Enabled: 'true',
      Mcp__Enabled: 'true',
      Api__RateLimitPerMinute: '1000000000',
      Mcp__RateLimitPerMinute: '1000000000',
      Database__Path: fixture.dbPath,
    });
    const mcp = { ...auth, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
    const call = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'get_email', arguments: { id } },
    });
    const readers: Record<string, () => Promise<{ status: number; ms: number }>> = {
      'REST detail': () => get(`${server.url}/api/v1/emails/${id}`, auth),
      'MCP get_email': () => get(`${server.url}/mcp`, mcp, call),
    };
    try {
      const accounts = () => get(`${server.url}/api/v1/accounts`, auth);
      await accounts();
      const forSeconds = () => {
        const until = Date.now() + SECONDS * 1000;
        return () => Date.now() > until;
      };
      const idle = await loop(forSeconds(), accounts);
      console.log(`   nobody opening it: ${fmt(idle)}`);
      for (const [label, read] of Object.entries(readers)) {
        const done = forSeconds();
        let reads = 0;
        const four = Array.from({ length: 4 }, () =>
          loop(done, read).then((t) => {
            reads += t.length;
            return t;
          }),
        );
        const busy = await loop(done, accounts);
        const readTimes = (await Promise.all(four)).flat();
        console.log(
          `   4 clients opening it over ${label} (${reads} reads, ${fmt(readTimes)}): /accounts ${fmt(busy)}; ratio to idle p50 ${(p50(busy) / p50(idle)).toFixed(2)}`,
        );
      }
    } finally {
      await server.stop();
    }
  } finally {
    fixture.cleanup();
  }
}

await phrases();
await winmail();
