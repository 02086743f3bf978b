// Reloads and stops under load (docs/performance.md, "Reloads"), on a 2,000-message demo archive.
//
// 1. PM2 cluster mode from ecosystem.config.cjs (pm2 from node_modules, a private daemon), 2
//    instances sharing rate limits in Redis (REDIS_URL, else 127.0.0.1:6379). autocannon drives a
//    search with 16 connections for 30 s: first without reloads (the baseline), then with
//    `pm2 reload` run `--reloads` times during the run. Prints 2xx, non-2xx and connection errors,
//    and the throughput against the baseline.
// 2. One server process (what `npm start` runs) under MCP `tools/call` load from keep-alive fetch
//    clients, stopped with SIGTERM, `--rounds` times. Every request is counted under the phase in
//    which it was sent: before the signal, while draining, after the exit. A refused connection
//    never reached the server (expected once it stops listening); any other error is a request
//    that reached an open connection and failed.
//
//   npm run bench:reload [-- --duration 30 --connections 16 --reloads 2 --rounds 3 --seconds 3]
import autocannon from 'autocannon';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildDemoArchive } from '../engine/demo/build.js';
import { issueDemoKeys } from '../engine/demo/keys.js';
import { openArchive } from '../engine/sqlite/open.js';
import { tempDir } from '../test/helpers/fixture.js';
import { freePort, ping, waitFor } from '../test/helpers/redis.js';
import { addTally, emptyTally, loadUntil, PHASES, type Phase, type Tally } from './lib/drain-client.js';
import { ratio } from './lib/load.js';
import { PrivatePm2 } from './lib/pm2.js';
import { startServer } from './lib/server.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const v = i === -1 ? fallback : Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v < 0) throw new Error(`${name} must be a whole number`);
  return v;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));
const APP = 'mail-archive-gateway'; // the name in ecosystem.config.cjs
const SEARCH = '/api/v1/emails?q=budget';
const UNLIMITED = { Api__RateLimitPerMinute: '1000000000', Mcp__RateLimitPerMinute: '1000000000' };

interface CannonResult {
  ok: number;
  non2xx: number;
  errors: number;
  byCode: Record<string, number>;
  rps: number;
  p99: number;
}

async function cannon(url: string, headers: Record<string, string>, seconds: number, connections: number) {
  const byCode: Record<string, number> = {};
  const r = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({ url: url + SEARCH, connections, duration: seconds, headers }, (err, result) =>
      err ? reject(err) : resolve(result),
    );
    instance.on('reqError', (err: NodeJS.ErrnoException) => {
      const code = err.code ?? err.message;
      byCode[code] = (byCode[code] ?? 0) + 1;
    });
  });
  return {
    ok: r['2xx'],
    non2xx: r.non2xx,
    errors: r.errors,
    byCode,
    rps: r.requests.average,
    p99: r.latency.p99,
  } satisfies CannonResult;
}

const codes = (byCode: Record<string, number>) =>
  Object.entries(byCode)
    .map(([code, n]) => `${code} ${n}`)
    .join(', ') || '-';

/** From 'shutting down' to 'stopped' in the log of every process that PM2 stopped. */
async function drainTimes(pm2Home: string): Promise<number[]> {
  const dir = join(pm2Home, 'logs');
  const times: number[] = [];
  for (const file of await readdir(dir)) {
    const since = new Map<number, number>();
    for (const line of (await readFile(join(dir, file), 'utf8')).split('\n')) {
      if (!line.startsWith('{')) continue;
      const entry = JSON.parse(line) as { pid: number; time: number; msg: string };
      if (entry.msg === 'shutting down') since.set(entry.pid, entry.time);
      if (entry.msg === 'stopped' && since.has(entry.pid)) times.push(entry.time - since.get(entry.pid)!);
    }
  }
  return times;
}

async function pm2Reloads(archive: { dbPath: string; key: string }, redisUrl: string): Promise<void> {
  const duration = arg('--duration', 30);
  const connections = arg('--connections', 16);
  const reloads = arg('--reloads', 2);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const headers = { Authorization: `Bearer ${archive.key}` };
  const pm2 = new PrivatePm2({
    WEB_CONCURRENCY: '2',
    Api__Enabled: 'true',
    Mcp__Enabled: 'true',
    Database__Path: archive.dbPath,
    Redis__Url: redisUrl,
    Server__Host: '127.0.0.1',
    Server__Port: String(port),
    ...UNLIMITED,
  });
  const interrupted = () => void pm2.kill().finally(() => process.exit(130));
  process.once('SIGINT', interrupted);
  try {
    await pm2.run('start', 'ecosystem.config.cjs', '--only', APP);
    const online = async () => (await pm2.list()).filter((p) => p.pm2_env.status === 'online');
    await waitFor('2 instances online', async () => (await online()).length === 2, 30_000, 250);
    await waitFor('the search to answer', async () => (await fetch(url + SEARCH, { headers })).ok, 15_000, 100);
    const first = (await (await fetch(url + SEARCH, { headers })).json()) as { totalItems: number };
    if (!(first.totalItems > 0)) throw new Error(`the search matches nothing: ${JSON.stringify(first)}`);
    await cannon(url, headers, 2, connections); // warm-up, not reported

    console.log(
      `PM2 cluster, 2 instances, rate limits in Redis; autocannon ${connections} connections, ${duration} s, GET ${SEARCH} (${first.totalItems} matches).`,
    );
    const baseline = await cannon(url, headers, duration, connections);

    const pidsBefore = (await online()).map((p) => p.pid);
    const start = Date.now();
    const run = cannon(url, headers, duration, connections);
    const took: number[] = [];
    for (let i = 1; i <= reloads; i++) {
      await sleep(start + (duration * 1000 * i) / (reloads + 1) - Date.now());
      const t = Date.now();
      await pm2.run('reload', APP);
      took.push(Date.now() - t);
    }
    const reloadsEnded = Date.now() - start;
    const reloaded = await run;
    await sleep(3000); // the last old processes finish their drain
    const drains = await drainTimes(pm2.home);
    const after = await online();
    const replaced = after.filter((p) => !pidsBefore.includes(p.pid)).length;
    if (reloadsEnded > duration * 1000) console.log('(the last reload ended after the load: use a longer --duration)');

    console.log('| run | 2xx | non-2xx | connection errors | req/s | p99 |');
    console.log('|---|---:|---:|---:|---:|---:|');
    for (const [name, r] of [
      ['baseline, no reload', baseline],
      [`${reloads} x pm2 reload`, reloaded],
    ] as const) {
      console.log(
        `| ${name} | ${r.ok} | ${r.non2xx} | ${r.errors} (${codes(r.byCode)}) | ${r.rps.toFixed(0)} | ${r.p99} ms |`,
      );
    }
    console.log(
      `Throughput with reloads / baseline: ${ratio(reloaded.rps, baseline.rps)}. Each reload took ${took.map((ms) => `${(ms / 1000).toFixed(1)} s`).join(', ')}; ${replaced} of ${after.length} processes are new.`,
    );
    console.log(
      `Stopped processes, from the signal to exit: ${drains.map((ms) => `${ms} ms`).join(', ') || 'none logged'}.`,
    );
    console.log(
      `Target: 0 errors and 0 non-2xx across reloads: ${reloaded.errors + reloaded.non2xx === 0 ? 'met' : 'MISSED'}.`,
    );
  } finally {
    process.removeListener('SIGINT', interrupted);
    await pm2.kill();
  }
}

async function sigtermRounds(archive: { dbPath: string; key: string }): Promise<void> {
  const rounds = arg('--rounds', 3);
  const seconds = arg('--seconds', 3);
  const connections = arg('--connections', 16);
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'search_emails', arguments: { q: 'budget', pageSize: 20 } },
  });
  const init: RequestInit = {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${archive.key}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
    },
    body,
  };
  console.log('');
  console.log(
    `One server process, POST /mcp tools/call search_emails from ${connections} keep-alive fetch clients; SIGTERM after ${seconds} s; ${rounds} rounds.`,
  );
  const total = Object.fromEntries(PHASES.map((p) => [p, emptyTally()])) as Record<Phase, Tally>;
  const exits: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const server = await startServer({
      Api__Enabled: 'true',
      Mcp__Enabled: 'true',
      Database__Path: archive.dbPath,
      Engine__Threads: '2',
      ...UNLIMITED,
    });
    let phase: Phase = 'before the signal';
    const exited = new Promise<void>((resolve) => server.process.once('exit', () => resolve()));
    const tallies = loadUntil({
      url: `${server.url}/mcp`,
      init,
      connections,
      phase: () => phase,
      // A little past the exit, so that the clients see that nothing listens any more.
      stop: exited.then(() => sleep(300)),
    });
    await sleep(seconds * 1000);
    const signalAt = Date.now();
    phase = 'while draining';
    server.process.kill('SIGTERM');
    await exited;
    exits.push(Date.now() - signalAt);
    phase = 'after the exit';
    const result = await tallies;
    for (const p of PHASES) addTally(total[p], result[p]);
    if (server.process.exitCode !== 0) throw new Error(`the server exited with ${server.process.exitCode}`);
  }
  console.log(
    '| sent | requests | 2xx | non-2xx | refused (never reached the server) | failed on an open connection |',
  );
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const p of PHASES) {
    const t = total[p];
    const why = t.failed ? ` (${codes(t.failures)})` : '';
    console.log(`| ${p} | ${t.sent} | ${t.ok} | ${t.non2xx} | ${t.refused} | ${t.failed}${why} |`);
  }
  const failed = PHASES.reduce((n, p) => n + total[p].failed, 0);
  const non2xx = PHASES.reduce((n, p) => n + total[p].non2xx, 0);
  console.log(`Exit after SIGTERM: ${exits.map((ms) => `${ms} ms`).join(', ')}.`);
  console.log(`Target: 0 failed and 0 non-2xx: ${failed + non2xx === 0 ? 'met' : 'MISSED'}.`);
}

async function main(): Promise<void> {
  const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  if (!(await ping(redisUrl))) throw new Error(`no Redis at ${redisUrl} (set REDIS_URL)`);
  const { dir, cleanup } = tempDir('mag-bench-reload-');
  try {
    const dbPath = join(dir, 'archive.db');
    const db = openArchive(dbPath);
    let key: string;
    try {
      await buildDemoArchive(db, { messages: 2000 });
      key = (await issueDemoKeys(db, 'bench')).admin.key;
    } finally {
      db.close();
    }
    const archive = { dbPath, key };
    if (arg('--reloads', 2) > 0) await pm2Reloads(archive, redisUrl);
    if (arg('--rounds', 3) > 0) await sigtermRounds(archive);
  } finally {
    cleanup();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
