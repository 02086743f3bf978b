// What large reads cost everyone else (docs/security.md, items 4 and 6), against the real server process:
//
// 1. Peak resident memory of the server while 200 MCP get_attachment calls for a 9.9 MB file run
//    at once: with the byte budget (Mcp:MaxConcurrentAttachmentBytes, default) and without it
//    (the budget set beyond 200 files). Each answer carries the bytes once (base64 in the text).
// 2. GET /api/v1/accounts latency (p50, p99) from one client while four others read a message
//    with a 35 MB body over and over, and with nobody reading it, for comparison: the large
//    message is read on the query lane, so the interactive lane keeps answering key checks.
//
//   npm run bench:hostile-reads [-- --calls 200 --seconds 10]
import { request } from 'node:http';
import { createFixture, email } from '../test/helpers/fixture.js';
import { writeBigAttachment } from '../test/helpers/api.js';
import { openArchive } from '../engine/sqlite/open.js';
import { ArchiveWriter } from '../engine/sqlite/writer.js';
import { mib, rssBytes } from './lib/memory.js';
import { startServer, type RunningServer } from './lib/server.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const v = i === -1 ? fallback : Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${name} must be a positive whole number`);
  return v;
}

const CALLS = arg('--calls', 200);
const SECONDS = arg('--seconds', 10);
const ATTACHMENT_BYTES = 9_900_000;
const BODY_BYTES = 35_000_000;

/** One HTTP request whose answer is counted, never kept: the load generator's memory stays flat. */
function fetchCounting(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method ?? 'GET', headers: init.headers, agent: false }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

async function peakRss(server: RunningServer, work: () => Promise<unknown>): Promise<{ before: number; peak: number }> {
  const before = rssBytes(server.process.pid) ?? 0;
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, rssBytes(server.process.pid) ?? 0)), 10);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return { before, peak };
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

async function accountsLatency(base: string, auth: Record<string, string>, until: number): Promise<number[]> {
  const times: number[] = [];
  while (Date.now() < until) {
    const started = performance.now();
    const res = await fetchCounting(`${base}/api/v1/accounts`, { headers: auth });
    if (res.status !== 200) throw new Error(`/accounts answered ${res.status}`);
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b);
}

async function main(): Promise<void> {
  const fixture = createFixture();
  try {
    const file = await writeBigAttachment(fixture.dbPath, fixture.accounts.work, ATTACHMENT_BYTES);
    const db = openArchive(fixture.dbPath);
    const writer = new ArchiveWriter(db, { bodyLimit: BODY_BYTES * 2 });
    const large = writer.batch(() =>
      writer.add(
        email({
          accountId: fixture.accounts.work,
          subject: 'A 35 MB message',
          textBody: 'word '.repeat(BODY_BYTES / 5),
        }),
      )!,
    );
    db.close();
    const auth = { Authorization: `Bearer ${fixture.keys.admin}` };
    const call = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'get_attachment', arguments: { id: file.emailId, attachmentId: file.attachmentId } },
    });
    const mcpHeaders = { ...auth, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };

    console.log(`1. ${CALLS} concurrent MCP get_attachment calls for a ${(ATTACHMENT_BYTES / 1e6).toFixed(1)} MB file`);
    for (const [label, budget] of [
      ['byte budget on (default 64,000,000)', undefined],
      ['byte budget off', String(ATTACHMENT_BYTES * CALLS * 2)],
    ] as const) {
      const server = await startServer({
        Api__Enabled: 'true',
        Mcp__Enabled: 'true',
        Mcp__RateLimitPerMinute: '1000000000',
        Api__RateLimitPerMinute: '1000000000',
        Mcp__AttachmentWaitSeconds: '600',
        Engine__MaxQueue: '100000',
        Engine__MaxQueueWaitMs: '60000',
        Database__Path: fixture.dbPath,
        ...(budget ? { Mcp__MaxConcurrentAttachmentBytes: budget } : {}),
      });
      try {
        const one = await fetchCounting(`${server.url}/mcp`, { method: 'POST', headers: mcpHeaders, body: call });
        if (one.status !== 200) throw new Error(`get_attachment answered ${one.status}`);
        const started = performance.now();
        let failed = 0;
        const { before, peak } = await peakRss(server, () =>
          Promise.all(
            Array.from({ length: CALLS }, () =>
              fetchCounting(`${server.url}/mcp`, { method: 'POST', headers: mcpHeaders, body: call }).then((r) => {
                if (r.status !== 200 || r.bytes < ATTACHMENT_BYTES) failed++;
              }),
            ),
          ),
        );
        const seconds = ((performance.now() - started) / 1000).toFixed(1);
        console.log(
          `   ${label}: answer ${(one.bytes / 1e6).toFixed(1)} MB; RSS before ${mib(before)}, peak ${mib(peak)}; ${CALLS - failed}/${CALLS} served in ${seconds} s`,
        );
      } finally {
        await server.stop();
      }
    }

    console.log(`2. GET /api/v1/accounts while 4 clients read a ${BODY_BYTES / 1e6} MB message (${SECONDS} s each)`);
    const server = await startServer({
      Api__Enabled: 'true',
      Api__RateLimitPerMinute: '1000000000',
      Database__Path: fixture.dbPath,
    });
    try {
      const detail = await fetchCounting(`${server.url}/api/v1/emails/${large}`, { headers: auth });
      if (detail.status !== 200 || detail.bytes < BODY_BYTES) throw new Error(`detail answered ${detail.status}`);
      const idle = await accountsLatency(server.url, auth, Date.now() + SECONDS * 1000);
      const until = Date.now() + SECONDS * 1000;
      let reads = 0;
      const readers = Array.from({ length: 4 }, async () => {
        while (Date.now() < until) {
          await fetchCounting(`${server.url}/api/v1/emails/${large}`, { headers: auth });
          reads++;
        }
      });
      const busy = await accountsLatency(server.url, auth, until);
      await Promise.all(readers);
      const fmt = (t: number[]) =>
        `p50 ${percentile(t, 0.5).toFixed(2)} ms, p99 ${percentile(t, 0.99).toFixed(2)} ms, max ${t.at(-1)!.toFixed(1)} ms (${t.length} requests)`;
      console.log(`   nobody reading it: ${fmt(idle)}`);
      console.log(`   4 clients reading it (${reads} reads): ${fmt(busy)}`);
      const p99 = percentile(busy, 0.99);
      console.log(
        `   p99 beside the readers: ${p99.toFixed(2)} ms, ${(p99 / percentile(idle, 0.99)).toFixed(1)}x idle; target ≤ 20 ms: ${p99 <= 20 ? 'met' : 'MISSED'}`,
      );
    } finally {
      await server.stop();
    }
  } finally {
    fixture.cleanup();
  }
}

await main();
