// Streaming a 200 MB attachment through the real HTTP server: the bytes arrive intact
// (SHA-256, Content-Length) and the process's memory does not grow with the file's size.
import test from 'ava';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { get as httpGet } from 'node:http';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { bearer, listen, startApi } from './helpers/api.js';
import { createFixture } from './helpers/fixture.js';

const SIZE = 200 * 1024 * 1024;
const HELPERS = fileURLToPath(new URL('./helpers/api.js', import.meta.url));

/**
 * Resident memory split as Linux reports it: anonymous (heaps, buffers: what the process
 * holds) and file-backed (pages of files mapped into the process: here the database, which
 * SQLite maps with PRAGMA mmap_size, so every page read counts towards RSS).
 */
function residentParts(): { anon: number; file: number } {
  const status = readFileSync('/proc/self/status', 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN) * 1024;
  return { anon: kb('RssAnon'), file: kb('RssFile') };
}

/** PRAGMA mmap_size of the archive connections (engine/sqlite/open.ts): the most file-backed RSS a connection adds. */
const MMAP_BYTES = 256 * 1024 * 1024;

test('a 200 MB attachment streams intact with bounded memory', async (t) => {
  t.timeout(120_000);
  const f = createFixture();
  t.teardown(f.cleanup);
  // Build the content in a child process: its 200 MB buffer never touches this process's RSS.
  const script = `
    const { writeBigAttachment } = await import(${JSON.stringify(HELPERS)});
    const out = await writeBigAttachment(${JSON.stringify(f.dbPath)}, ${f.accounts.work}, ${SIZE});
    process.stdout.write(JSON.stringify(out));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    maxBuffer: 1 << 20,
  });
  const big = JSON.parse(stdout) as { emailId: number; attachmentId: number; sha256: string; size: number };
  t.is(big.size, SIZE);

  const api = await startApi({}, { useFixture: f });
  const server = await listen(api.gateway);
  t.teardown(async () => {
    await server.close();
    await api.close();
  });
  const path = `/api/v1/emails/${big.emailId}/attachments/${big.attachmentId}`;
  // Warm up: the pool's worker, its connection and the HTTP stack exist before the baseline.
  const meta = await api.request.get(`/api/v1/emails/${big.emailId}`).set(bearer(f.keys.admin));
  t.is(meta.body.attachments[0].size, SIZE);

  const baseline = process.memoryUsage.rss();
  const base = residentParts();
  let peak = baseline;
  let peakAnon = base.anon;
  let peakFile = base.file;
  let peakArrayBuffers = process.memoryUsage().arrayBuffers;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
    const now = residentParts();
    peakAnon = Math.max(peakAnon, now.anon);
    peakFile = Math.max(peakFile, now.file);
    peakArrayBuffers = Math.max(peakArrayBuffers, process.memoryUsage().arrayBuffers);
  }, 50);
  const started = Date.now();
  const result = await new Promise<{
    status: number;
    headers: Record<string, string | string[] | undefined>;
    bytes: number;
    sha256: string;
  }>((resolve, reject) => {
    const req = httpGet(`${server.url}${path}`, { headers: bearer(f.keys.admin) }, (res) => {
      const hash = createHash('sha256');
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        hash.update(chunk);
      });
      res.on('end', () =>
        resolve({ status: res.statusCode!, headers: res.headers, bytes, sha256: hash.digest('hex') }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
  });
  clearInterval(sampler);
  const seconds = (Date.now() - started) / 1000;
  const mb = (n: number) => (n / 1048576).toFixed(1);
  t.log(
    `200 MB in ${seconds.toFixed(1)} s. RSS growth during the download: ${mb(peak - baseline)} MB ` +
      `(baseline ${mb(baseline)} MB, peak ${mb(peak)} MB); of which anonymous ${mb(peakAnon - base.anon)} MB, ` +
      `file-backed (database pages mapped by SQLite) ${mb(peakFile - base.file)} MB; peak ArrayBuffer memory ${mb(peakArrayBuffers)} MB`,
  );

  t.is(result.status, 200);
  t.is(result.headers['content-length'], String(SIZE));
  t.is(result.headers['content-type'], 'application/octet-stream');
  t.is(result.bytes, SIZE);
  t.is(result.sha256, big.sha256);
  // Bounded, not proportional to the file: holding the attachment (or the response) whole
  // would take at least SIZE of anonymous memory. What does grow is garbage awaiting GC (each
  // 256 KiB chunk is copied out of the worker) and, file-backed, the mapped database pages,
  // which mmap_size caps.
  t.true(peakAnon - base.anon < 150 * 1048576, `anonymous RSS grew by ${mb(peakAnon - base.anon)} MB`);
  t.true(peakFile - base.file < MMAP_BYTES + 32 * 1048576, `file-backed RSS grew by ${mb(peakFile - base.file)} MB`);
  t.true(peak - baseline < MMAP_BYTES + 150 * 1048576, `RSS grew by ${mb(peak - baseline)} MB`);
});
