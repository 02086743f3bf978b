// Soak benchmark (docs/performance.md, "Soak"): the real server for a long run at about 80% of
// the capacity measured at the start of the same run, over a mix of searches, message reads,
// attachment downloads and MCP calls. Prints RSS, heap and event-loop delay over time, error
// counts, and the access-log rows written against the requests that must be logged.
//
//   npm run bench:soak [-- --minutes 10 --messages 200000 --load 0.8 --warmup 2]
//
// Targets (docs/performance.md, "Soak"): 0 errors, RSS drift under 10% after warm-up, every logged request present
// in the access log.
import autocannon from 'autocannon';
import { readFileSync } from 'node:fs';
import { openArchive } from '../engine/sqlite/open.js';
import { createKey } from '../engine/sqlite/keys.js';
import { COMMON_WORDS, ensureCorpus } from './corpus.js';
import { startServer, type RunningServer } from './lib/server.js';

const TARGETS = { rssDrift: 0.1 };

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const v = i === -1 ? fallback : Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return v;
}

type Request = { method: 'GET' | 'POST'; path: string; body?: string };

/** One stream of the mix: its requests, whether each 2xx answer is an access-log entry, its connections. */
interface Stream {
  name: string;
  requests: Request[];
  logged: boolean;
  connections: number;
}

const MCP_HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };

function mcpCall(id: number, name: string, args: Record<string, unknown>): Request {
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
  return { method: 'POST', path: '/mcp', body };
}

/** Different requests, not a few repeated ones: words across the frequency range, ids across the archive. */
function streams(db: ReturnType<typeof openArchive>, messages: number): Stream[] {
  const rnd = (n: number) => Math.floor(Math.random() * n);
  const words = COMMON_WORDS.slice(0, 400);
  const sorts = ['sentDate', 'receivedDate', 'subject', 'from'];
  const searches: Request[] = Array.from({ length: 400 }, (_, i) => {
    const q = i % 3 === 0 ? `${words[rnd(words.length)]} ${words[rnd(words.length)]}` : words[i % words.length]!;
    const params = new URLSearchParams({ q, sortBy: sorts[i % sorts.length]!, page: String(1 + (i % 5)) });
    return { method: 'GET', path: `/api/v1/emails?${params}` };
  });
  const details: Request[] = Array.from({ length: 400 }, () => ({
    method: 'GET',
    path: `/api/v1/emails/${1 + rnd(messages)}`,
  }));
  const attachments = db
    .prepare('SELECT email_id AS emailId, id FROM attachments ORDER BY random() LIMIT 300')
    .all() as Array<{ emailId: number; id: number }>;
  const downloads: Request[] = attachments.map((a) => ({
    method: 'GET',
    path: `/api/v1/emails/${a.emailId}/attachments/${a.id}`,
  }));
  const mcp: Request[] = Array.from({ length: 400 }, (_, i) =>
    i % 2 === 0
      ? mcpCall(i, 'search_emails', { q: words[rnd(words.length)], pageSize: 10 })
      : mcpCall(i, 'get_email', { id: 1 + rnd(messages) }),
  );
  return [
    { name: 'search', requests: searches, logged: true, connections: 4 },
    { name: 'detail', requests: details, logged: true, connections: 2 },
    { name: 'download', requests: downloads, logged: true, connections: 1 },
    { name: 'mcp', requests: mcp, logged: true, connections: 2 },
  ];
}

interface StreamResult {
  rps: number;
  total: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  p99: number;
}

function runStream(
  url: string,
  key: string,
  stream: Stream,
  seconds: number,
  overallRate?: number,
): Promise<StreamResult> {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url,
        connections: stream.connections,
        duration: seconds,
        timeout: 30,
        headers: { Authorization: `Bearer ${key}`, ...MCP_HEADERS },
        requests: stream.requests,
        ...(overallRate ? { overallRate: Math.max(1, Math.round(overallRate)) } : {}),
      },
      (err, result) => {
        if (err) return reject(err);
        const statuses = result as unknown as Record<string, number>;
        resolve({
          rps: result.requests.average,
          total: result.requests.total,
          ok: statuses['2xx'] ?? 0,
          non2xx: result.non2xx,
          errors: result.errors,
          timeouts: result.timeouts,
          p99: result.latency.p99,
        });
      },
    );
    autocannon.track(instance, { renderProgressBar: false, renderResultsTable: false, renderLatencyTable: false });
  });
}

/** A Prometheus text scrape's value of one unlabelled series. */
function series(text: string, name: string): number {
  const m = new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text);
  return m ? Number(m[1]) : Number.NaN;
}

interface Sample {
  t: number;
  rssMb: number;
  heapMb: number;
  loopP99Ms: number;
  loopMaxMs: number;
}

async function sample(server: RunningServer, started: number): Promise<Sample> {
  // RSS from the kernel, so it is right whatever the server reports; heap and event-loop delay
  // from the server's own /metrics (prom-client's default process metrics).
  const status = readFileSync(`/proc/${server.process.pid}/status`, 'utf8');
  const rssKb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1]);
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return {
    t: (Date.now() - started) / 1000,
    rssMb: rssKb / 1024,
    heapMb: series(text, 'nodejs_heap_size_used_bytes') / 1048576,
    loopP99Ms: series(text, 'nodejs_eventloop_lag_p99_seconds') * 1000,
    loopMaxMs: series(text, 'nodejs_eventloop_lag_max_seconds') * 1000,
  };
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const f1 = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : 'n/a');

async function main(): Promise<void> {
  const minutes = arg('--minutes', 10);
  const messages = arg('--messages', 200_000);
  const loadShare = arg('--load', 0.8);
  const warmupMinutes = Math.min(arg('--warmup', 2), minutes / 2);
  const probeSeconds = arg('--probe', 20);
  const dbPath = ensureCorpus({ messages });

  const db = openArchive(dbPath);
  // One key for the capacity probe and another for the soak, so that the soak's access-log rows
  // are counted by their key prefix, whatever the probe's last batch does.
  const probeKey = createKey(db, { username: 'admin', name: `soak probe ${new Date().toISOString()}` }).key;
  const soakKey = createKey(db, { username: 'admin', name: `soak ${new Date().toISOString()}` });
  const mix = streams(db, messages);
  const countRows = () =>
    db.prepare('SELECT count(*) FROM access_log WHERE key_prefix = ?').pluck().get(soakKey.prefix) as number;

  const server = await startServer({
    Api__Enabled: 'true',
    Mcp__Enabled: 'true',
    Metrics__Enabled: 'true',
    Database__Path: dbPath,
    Engine__Threads: '2',
    Api__RateLimitPerMinute: '1000000000',
    Mcp__RateLimitPerMinute: '1000000000',
  });
  let stopped = false;
  try {
    console.log(`Corpus: ${messages.toLocaleString('en')} messages (${dbPath}); server pid ${server.process.pid}.`);
    // Capacity: every stream at once, unthrottled; each stream's share of it is what it reached.
    const probe = await Promise.all(mix.map((s) => runStream(server.url, probeKey, s, probeSeconds)));
    const capacity = probe.reduce((a, r) => a + r.rps, 0);
    console.log(
      `Capacity (${probeSeconds} s, unthrottled): ${capacity.toFixed(0)} req/s (${mix.map((s, i) => `${s.name} ${probe[i]!.rps.toFixed(0)}`).join(', ')}).`,
    );
    const rates = probe.map((r) => r.rps * loadShare);
    console.log(
      `Soak: ${minutes} min at ${(loadShare * 100).toFixed(0)}% = ${rates.reduce((a, b) => a + b, 0).toFixed(0)} req/s; warm-up ${warmupMinutes} min.`,
    );

    const started = Date.now();
    const samples: Sample[] = [];
    const sampler = setInterval(() => {
      void sample(server, started).then(
        (s) => {
          samples.push(s);
          console.log(
            `  t=${String(Math.round(s.t)).padStart(4)} s  RSS ${f1(s.rssMb).padStart(7)} MB  heap ${f1(s.heapMb).padStart(6)} MB  event-loop delay p99 ${f1(s.loopP99Ms).padStart(6)} ms (max ${f1(s.loopMaxMs)} ms)`,
          );
        },
        (err: Error) => console.log(`  sample failed: ${err.message}`),
      );
    }, 15_000);
    const results = await Promise.all(mix.map((s, i) => runStream(server.url, soakKey.key, s, minutes * 60, rates[i])));
    clearInterval(sampler);

    // A clean stop flushes the access log; only then are the rows all there to count.
    await server.stop();
    stopped = true;
    const rows = countRows();
    const logged = results.reduce((a, r, i) => a + (mix[i]!.logged ? r.ok : 0), 0);
    // When the load stops, autocannon drops the requests still in flight (at most one per
    // connection): the server answers and logs them, but they are not counted as answered.
    const inFlightAtStop = mix.reduce((a, s) => a + s.connections, 0);
    const missing = Math.max(0, logged - rows);
    const extra = rows - logged;

    console.log('\nstream      req/s   requests      2xx   non-2xx   errors  timeouts   p99');
    results.forEach((r, i) =>
      console.log(
        `${mix[i]!.name.padEnd(10)} ${r.rps.toFixed(0).padStart(6)} ${String(r.total).padStart(10)} ${String(r.ok).padStart(8)} ${String(r.non2xx).padStart(9)} ${String(r.errors).padStart(8)} ${String(r.timeouts).padStart(9)} ${String(r.p99).padStart(5)} ms`,
      ),
    );
    const errors = results.reduce((a, r) => a + r.non2xx + r.errors + r.timeouts, 0);
    const afterWarmup = samples.filter((s) => s.t >= warmupMinutes * 60);
    // RSS moves by tens of MB between samples as the heap and SQLite's page cache breathe, so
    // drift compares minute means: the first minute after warm-up against the last minute.
    const firstMinute = afterWarmup.filter((s) => s.t < warmupMinutes * 60 + 60).map((s) => s.rssMb);
    const base = mean(firstMinute);
    const lastMinute = afterWarmup.filter((s) => s.t >= minutes * 60 - 60).map((s) => s.rssMb);
    const drift = (mean(lastMinute) - base) / base;
    const peak = Math.max(...afterWarmup.map((s) => s.rssMb));
    console.log(`\nErrors (non-2xx, connection errors, timeouts): ${errors} (target 0).`);
    console.log(
      `RSS mean of the first minute after warm-up ${f1(base)} MB, of the last minute ${f1(mean(lastMinute))} MB, peak ${f1(peak)} MB: drift ${(drift * 100).toFixed(1)}% (target < ${TARGETS.rssDrift * 100}%); ratio ${(mean(lastMinute) / base).toFixed(3)}x.`,
    );
    console.log(
      `Heap used: ${f1(Math.min(...afterWarmup.map((s) => s.heapMb)))}–${f1(Math.max(...afterWarmup.map((s) => s.heapMb)))} MB after warm-up. Event-loop delay p99: mean ${f1(mean(afterWarmup.map((s) => s.loopP99Ms)))} ms, worst ${f1(Math.max(...afterWarmup.map((s) => s.loopP99Ms)))} ms.`,
    );
    console.log(
      `Access log: ${rows} rows for ${logged} logged requests answered 2xx: ${missing} missing (target 0), ${Math.max(0, extra)} more (requests in flight when the load stopped; at most ${inFlightAtStop}).`,
    );
    const pass = errors === 0 && drift < TARGETS.rssDrift && missing === 0 && extra <= inFlightAtStop;
    console.log(pass ? 'All soak targets met.' : 'Soak targets missed.');
    if (!pass) process.exitCode = 1;
  } finally {
    if (!stopped) await server.stop();
    db.close();
  }
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
