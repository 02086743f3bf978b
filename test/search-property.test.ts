// Any q, however hostile, is either a result or a 400 that names q: never a 500.
// Tens of thousands of generated queries go through the same validation and planner the
// gateway uses, on a real archive; a sample also goes through real HTTP.
import test from 'ava';
import fc from 'fast-check';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openArchive, type Db } from '../engine/sqlite/open.js';
import { searchEmails } from '../engine/sqlite/emails.js';
import { createGateway, type Gateway } from '../gateway/app.js';
import { defaultSettings } from '../shared/config.js';
import { InvalidInput, parseSearchInput } from '../shared/search-input.js';
import { createFixture, type Fixture } from './helpers/fixture.js';
import { anyText, long, spaced, structured } from './helpers/query-arbitraries.js';

const limits = { defaultPageSize: 20, maxPageSize: 100 };
let fixture: Fixture;
let db: Db;

test.before(() => {
  fixture = createFixture();
  db = openArchive(fixture.dbPath);
});
test.after.always(() => {
  db?.close();
  fixture?.cleanup();
});

function check(q: string, viewer: { isAdmin: boolean; userId: number }): void {
  let query;
  try {
    query = parseSearchInput({ q, sortBy: q.length % 2 ? 'relevance' : 'sentDate' }, limits);
  } catch (err) {
    if (err instanceof InvalidInput && err.param === 'q') return; // a 400 naming q
    throw err;
  }
  searchEmails(db, viewer, query); // must not throw: a throw here would be a 500
}

test('generated queries never fail the planner (structured, spaced, arbitrary, long)', (t) => {
  const admin = { isAdmin: true, userId: fixture.users.admin };
  const restricted = { isAdmin: false, userId: fixture.users.alice };
  let runs = 0;
  for (const [arb, numRuns] of [
    [structured, 12_000],
    [spaced, 8_000],
    [anyText, 8_000],
    [long, 300],
  ] as const) {
    fc.assert(
      fc.property(arb, fc.boolean(), (q, asAdmin) => {
        runs++;
        check(q, asAdmin ? admin : restricted);
      }),
      { numRuns, seed: 20261121 },
    );
  }
  t.true(runs >= 28_300);
});

test('through real HTTP, generated queries answer 200 or a 400 problem naming q', async (t) => {
  const gateway: Gateway = createGateway(
    defaultSettings({
      Api: { Enabled: true, RateLimitPerMinute: 1_000_000 },
      Database: { Path: fixture.dbPath },
      Engine: { Threads: 1 },
    }),
  );
  const server: Server = createServer(gateway.app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(async () => {
    server.close();
    await gateway.close();
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const samples = fc.sample(fc.oneof(structured, spaced, anyText), { numRuns: 400, seed: 7 });
  const statuses = new Map<number, number>();
  for (const raw of samples) {
    const q = raw.toWellFormed(); // a URL cannot carry a lone surrogate
    const res = await fetch(`${base}/api/v1/emails?q=${encodeURIComponent(q)}`, {
      headers: { Authorization: `Bearer ${fixture.keys.admin}` },
    });
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    const body = (await res.json()) as { detail?: string; items?: unknown[] };
    if (res.status === 400) t.regex(body.detail ?? '', /\bq\b/, `400 for ${JSON.stringify(q)} must name q`);
    else t.is(res.status, 200, `q=${JSON.stringify(q)}`);
  }
  t.log(`statuses: ${JSON.stringify(Object.fromEntries(statuses))}`);
  t.false(statuses.has(500));
});
