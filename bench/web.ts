// The reading pages' speed (docs/performance.md, "Reading pages") on the benchmark corpus, through
// the full HTTP stack (the server as its own process, as bench:search runs it):
//
// 1. Each page's time, one request at a time on one connection (the server's time plus loopback),
//    beside the REST call it corresponds to: the search page over the varied stream (different
//    queries, none twice, so no per-query cache flatters it), the search page with an account
//    chosen (its folder tree drawn), the message page, the message's body document, a preview.
//    Target: p50 ≤ 50 ms each.
// 2. The search page under the varied stream with 8 connections, against REST's /api/v1/emails
//    with the same searches (snippets on), each on a fresh server. Target: ≥ 80% of REST's rate.
//
//   npm run bench:web [-- --messages 1000000 --duration 10 --connections 8 --requests 300 --rounds 4]
import { hashPassword } from '../engine/rules/password-hash.js';
import { openArchive } from '../engine/sqlite/open.js';
import { setPasswordHash } from '../engine/sqlite/users.js';
import { ACCOUNTS, ensureCorpus, sampleAddresses } from './corpus.js';
import { arg } from './lib/args.js';
import { processCpuMs } from './lib/cpu.js';
import { createCaller } from './lib/callers.js';
import { loadStream, ms, percentile, ratio, type StreamRequest } from './lib/load.js';
import { queryStream, type StreamQuery } from './lib/query-stream.js';
import { Scorecard } from './lib/scorecard.js';
import { SerialClient } from './lib/serial-client.js';
import { startArchiveServer, type RunningServer } from './lib/server.js';

const PASSWORD = 'bench-web-password';
/** Budgets out of the way: the benchmark measures the pages, not the limits. */
const UNLIMITED = {
  Web__ReadingRequestsPerMinute: '1000000000',
  Web__LoginAttemptsPerUserPerMinute: '1000000',
  Web__LoginAttemptsPerIpPerMinute: '1000000',
  Web__LoginAttemptsPerUserAllAddressesPerMinute: '1000000',
};

/** A stream search as both front ends can say it: the page's sorts are newest, oldest and relevance. */
function expressible(query: StreamQuery): Record<string, string> {
  const { sortBy, sortOrder, ...rest } = query.params;
  const by = sortBy === 'relevance' ? 'relevance' : 'sentDate';
  return { ...rest, sortBy: by, ...(sortOrder ? { sortOrder } : {}) };
}

function restPath(params: Record<string, string>): string {
  return `/api/v1/emails?${new URLSearchParams({ ...params, snippets: 'true' }).toString()}`;
}

function pagePath(params: Record<string, string>): string {
  const { sortBy, sortOrder, ...rest } = params;
  const sort = sortBy === 'relevance' ? 'relevance' : sortOrder === 'asc' ? 'oldest' : '';
  return `/search?${new URLSearchParams({ ...rest, ...(sort ? { sort } : {}) }).toString()}`;
}

/** Signs in through the form; the session's cookies. */
async function signIn(url: string, username: string): Promise<string> {
  const form = await fetch(`${url}/login`);
  const cookies = form.headers.getSetCookie().map((c) => c.split(';')[0]);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
  if (!csrf) throw new Error('no CSRF token on the sign-in page');
  const res = await fetch(`${url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookies.join('; ') },
    body: new URLSearchParams({ _csrf: csrf, username, password: PASSWORD }).toString(),
  });
  if (res.status !== 303) throw new Error(`sign-in answered ${res.status}`);
  return res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
}

interface Timed {
  times: number[];
  failed: number;
}

async function timeEach(client: SerialClient, paths: string[], headers: Record<string, string>): Promise<Timed> {
  const times: number[] = [];
  let failed = 0;
  for (const path of paths) {
    const res = await client.get(path, headers);
    if (res.status === 200) times.push(res.ms);
    else failed++;
  }
  return { times, failed };
}

const row = (name: string, page: Timed, rest: Timed | null) =>
  `| ${name} | ${ms(percentile(page.times, 50))} | ${ms(percentile(page.times, 95))} | ${ms(percentile(page.times, 99))} | ${
    rest ? `${ms(percentile(rest.times, 50))} (${ratio(percentile(page.times, 50), percentile(rest.times, 50))})` : ''
  } | ${page.failed + (rest?.failed ?? 0)} |`;

async function main(): Promise<void> {
  const messages = arg('--messages', 1_000_000);
  const duration = arg('--duration', 10);
  const connections = arg('--connections', 8);
  const requests = arg('--requests', 300);
  const dbPath = ensureCorpus({ messages });

  const db = openArchive(dbPath);
  const admin = createCaller(db, 'admin');
  setPasswordHash(db, 'admin', await hashPassword(PASSWORD));
  const addresses = sampleAddresses(db, 200);
  const ids = (sql: string) =>
    db
      .prepare(sql)
      .raw()
      .all(requests * 2) as number[][];
  const messageIds = ids('SELECT id FROM emails ORDER BY random() LIMIT ?').map((r) => r[0]!);
  const htmlIds = ids('SELECT email_id FROM email_bodies WHERE html_body IS NOT NULL ORDER BY random() LIMIT ?').map(
    (r) => r[0]!,
  );
  const attachments = ids('SELECT email_id, id FROM attachments ORDER BY random() LIMIT ?');
  db.close();

  console.log(
    `# Reading pages: ${messages.toLocaleString('en')} messages (${dbPath}); ${requests} sequential requests per page, then ${connections} connections for ${duration} s.`,
  );
  const scorecard = new Scorecard();
  const rest = admin.headers;
  // Different searches for the page and for REST (even and odd entries of one stream): both
  // halves are drawn alike, and no search is answered from a count the other already made.
  const stream = queryStream(requests * 4, { addresses }).map(expressible);
  const half = (k: 0 | 1, from = 0) => stream.filter((_, i) => i % 2 === k).slice(from, from + requests);

  let server: RunningServer = await startArchiveServer(dbPath, { env: UNLIMITED });
  try {
    const web = { Cookie: await signIn(server.url, 'admin') };
    const client = new SerialClient(server.url);
    // Warm-up: the first requests of each kind load code and fill the page cache.
    await timeEach(client, half(0, requests).slice(0, 20).map(pagePath), web);
    await timeEach(client, half(1, requests).slice(0, 20).map(restPath), rest);

    const pages: Array<[string, Timed, Timed | null]> = [];
    pages.push([
      'search (varied stream)',
      await timeEach(client, half(0).map(pagePath), web),
      await timeEach(client, half(1).map(restPath), rest),
    ]);
    const accountIds = Array.from({ length: requests }, (_, i) => (i % ACCOUNTS) + 1);
    pages.push([
      'search, an account chosen (folder tree)',
      await timeEach(
        client,
        accountIds.map((a, i) => `/search?accountId=${a}&page=${(i % 5) + 1}`),
        web,
      ),
      await timeEach(
        client,
        accountIds.map((a, i) => `/api/v1/emails?accountId=${a}&page=${(i % 5) + 6}`),
        rest,
      ),
    ]);
    pages.push([
      'message',
      await timeEach(
        client,
        messageIds.slice(0, requests).map((id) => `/emails/${id}`),
        web,
      ),
      await timeEach(
        client,
        messageIds.slice(requests).map((id) => `/api/v1/emails/${id}`),
        rest,
      ),
    ]);
    pages.push([
      'message body (HTML, sanitized)',
      await timeEach(
        client,
        htmlIds.slice(0, requests).map((id) => `/emails/${id}/body`),
        web,
      ),
      null,
    ]);
    if (attachments.length > 0)
      pages.push([
        'attachment preview',
        await timeEach(
          client,
          attachments.slice(0, requests).map(([email, id]) => `/emails/${email}/attachments/${id}/preview`),
          web,
        ),
        await timeEach(
          client,
          attachments.slice(requests).map(([email, id]) => `/api/v1/emails/${email}/attachments/${id}`),
          rest,
        ),
      ]);
    client.close();

    console.log('');
    console.log('## Each page, one request at a time');
    console.log('');
    console.log('| page | p50 | p95 | p99 | REST p50 (page / REST) | failed |');
    console.log('|---|---:|---:|---:|---:|---:|');
    for (const [name, page, restTimes] of pages) {
      console.log(row(name, page, restTimes));
      scorecard.atMost(name, 'p50', percentile(page.times, 50), 50, ms);
      scorecard.add(name, 'every request answered 200', `${page.failed} failed`, page.failed === 0);
    }
  } finally {
    await server.stop();
  }

  // The stream: each front end on a fresh server, the same searches in the same order, in
  // alternating rounds (REST, page, page, REST, ...): a shared machine's speed drifts by tens of
  // percent between minutes, and the medians of interleaved rounds compare like with like. The
  // server's CPU per request is read from /proc as well: what each answer costs the machine.
  const rounds = arg('--rounds', 4);
  const many = queryStream(Math.max(40_000, requests * 8), { addresses, seed: 11 }).map(expressible);
  const run = async (paths: string[], headers: (url: string) => Promise<Record<string, string>>) => {
    server = await startArchiveServer(dbPath, { env: UNLIMITED });
    try {
      const h = await headers(server.url);
      const list: StreamRequest[] = paths.map((path) => ({ path, headers: h }));
      // Two seconds of other searches first: the fresh process compiles its code and fills its
      // caches on them, not on the measured run.
      await loadStream({ url: server.url, connections, duration: 2, requests: list.slice(list.length / 2) });
      const cpu0 = processCpuMs(server.process.pid);
      const result = await loadStream({
        url: server.url,
        connections,
        duration,
        requests: list.slice(0, list.length / 2),
      });
      const cpu = (processCpuMs(server.process.pid) ?? NaN) - (cpu0 ?? NaN);
      return { ...result, cpuPerRequest: cpu / result.requests };
    } finally {
      await server.stop();
    }
  };
  const restRuns: Array<Awaited<ReturnType<typeof run>>> = [];
  const pageRuns: Array<Awaited<ReturnType<typeof run>>> = [];
  const restRound = async () => restRuns.push(await run(many.map(restPath), async () => rest));
  const pageRound = async () =>
    pageRuns.push(await run(many.map(pagePath), async (url) => ({ Cookie: await signIn(url, 'admin') })));
  // A first run fills the operating system's page cache with the corpus, so no round is the cold one.
  await run(many.map(restPath), async () => rest);
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      await restRound();
      await pageRound();
    } else {
      await pageRound();
      await restRound();
    }
  }
  // The middle of the values (the mean of the two middle ones for an even count).
  const median = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  };
  console.log('');
  console.log(`## The varied stream, ${connections} connections, ${duration} s each, ${rounds} rounds`);
  console.log('');
  console.log('| front end | req/s (each round) | median | p50 | p99 | server CPU per request | non-2xx |');
  console.log('|---|---|---:|---:|---:|---:|---:|');
  for (const [name, runs] of [
    ['REST /api/v1/emails (snippets)', restRuns],
    ['search page /search', pageRuns],
  ] as const)
    console.log(
      `| ${name} | ${runs.map((r) => r.rps.toFixed(0)).join(', ')} | ${median(runs.map((r) => r.rps)).toFixed(0)} | ${Math.round(
        median(runs.map((r) => r.p50)),
      )} ms | ${Math.round(median(runs.map((r) => r.p99)))} ms | ${ms(median(runs.map((r) => r.cpuPerRequest)))} | ${runs.reduce(
        (n, r) => n + r.non2xx,
        0,
      )} |`,
    );
  // Each round's two runs are next to each other in time: their ratio is the least disturbed by
  // the machine's drift. The CPU per request compares what each answer costs, whatever the drift.
  const ratios = pageRuns.map((r, i) => r.rps / restRuns[i]!.rps);
  const cpuRatio = median(restRuns.map((r) => r.cpuPerRequest)) / median(pageRuns.map((r) => r.cpuPerRequest));
  console.log('');
  console.log(
    `Page / REST rate per round: ${ratios.map((x) => `${(x * 100).toFixed(0)}%`).join(', ')}; median ${(median(ratios) * 100).toFixed(0)}%. ` +
      `REST's server CPU per request / the page's: ${(cpuRatio * 100).toFixed(0)}%.`,
  );
  const non2xx = [...restRuns, ...pageRuns].reduce((n, r) => n + r.non2xx, 0);
  scorecard.atLeast(
    'search page under the varied stream',
    "rate vs REST's (median of the rounds' ratios)",
    median(ratios),
    0.8,
    (n) => `${(n * 100).toFixed(0)}%`,
  );
  scorecard.add('search page under the varied stream', 'no error answers', `${non2xx} non-2xx`, non2xx === 0);

  console.log('');
  console.log('## Targets');
  console.log('');
  scorecard.print();
}

await main();
