// The access log as a hash chain (docs/evidence.md, "An access log nobody can quietly edit"), on a
// SQLite file and on a Mail Archiver database: entries written the way the gateway writes them
// verify as intact; an edited field, a removed entry, two entries swapped, an entry added behind
// the service's back, each is reported at the first entry that no longer follows; writers
// appending at once never fork the chain.
import test, { type ExecutionContext } from 'ava';
import Database from '../engine/sqlite/driver.js';
import { openStore } from '../engine/archive.js';
import type { AccessLogEntry } from '../shared/jobs.js';
import { cliArchive, json, ok, STORE_KINDS, type CliArchive } from './helpers/cli-archive.js';
import type { ChainReport } from '../engine/rules/access-chain.js';

function eachStore(title: string, body: (t: ExecutionContext, a: CliArchive) => Promise<void>): void {
  for (const kind of STORE_KINDS) test(`[${kind}] ${title}`, async (t) => body(t, await cliArchive(t, kind)));
}

const entry = (userId: number, n: number): AccessLogEntry => ({
  userId,
  type: n % 3 === 0 ? 'Search' : n % 3 === 1 ? 'Open' : 'Download',
  at: Date.UTC(2026, 10, 28, 12, 0, 0, n * 7),
  keyPrefix: `ma_prefix${n}`,
  clientIp: `192.0.2.${n}`,
  ...(n % 3 === 0 ? { searchParams: { q: `budget ${n}`, pageSize: 20 } } : { emailId: 1000 + n, accountId: 1 }),
  source: n % 2 ? 'api' : 'mcp',
});

/** An archive with a user and `count` chained entries written in three batches; their ids, in order. */
async function withEntries(t: ExecutionContext, a: CliArchive, count = 9): Promise<number[]> {
  ok(t, await a.cli(['users', 'add', 'alice']));
  const userId = (await a.admin().then((admin) => admin.requireUser('alice'))).id;
  const all = Array.from({ length: count }, (_, i) => entry(userId, i + 1));
  for (let i = 0; i < count; i += 3) await a.writeAccessLog(all.slice(i, i + 3));
  const ids = await sql<{ id: number }>(
    a,
    'SELECT id FROM access_log ORDER BY id',
    'SELECT access_log_id AS id FROM mail_archive_gateway.access_log_details ORDER BY 1',
  );
  t.is(ids.length, count);
  return ids.map((r) => r.id);
}

/** Runs the statement for the archive's store, outside the service. */
async function sql<R = Record<string, unknown>>(a: CliArchive, sqlite: string, postgres: string): Promise<R[]> {
  if (a.kind === 'postgres') return a.pgQuery<R>(postgres);
  const db = new Database(a.db);
  try {
    const statement = db.prepare(sqlite);
    return statement.reader ? (statement.all() as R[]) : (statement.run(), []);
  } finally {
    db.close();
  }
}

async function verify(a: CliArchive) {
  return a.cli(['access-log', 'verify']);
}

eachStore('entries written by the service verify as intact, with the head to note elsewhere', async (t, a) => {
  const ids = await withEntries(t, a);
  const out = ok(t, await verify(a));
  t.regex(out, /^intact, 9 entries\nhead: entry \d+ [0-9a-f]{64}\n$/);
  t.true(out.includes(`head: entry ${ids.at(-1)} `));
  const report = json<ChainReport>(t, await a.cli(['access-log', 'verify', '--json']));
  t.like(report, { intact: true, entries: 9, before: 0 });
});

eachStore('an edited field breaks the chain at that entry', async (t, a) => {
  const ids = await withEntries(t, a);
  const target = ids[4]!;
  await sql(
    a,
    `UPDATE access_log SET client_ip = '203.0.113.66' WHERE id = ${target}`,
    `UPDATE mail_archive_gateway.access_log_details SET client_ip = '203.0.113.66' WHERE access_log_id = ${target}`,
  );
  const r = await verify(a);
  t.is(r.code, 1);
  t.regex(r.stdout, new RegExp(`^broken at entry ${target}: .*\\(4 entries before it intact\\)\\n$`));
});

test("[postgres] an edit to the row in Mail Archiver's own AccessLogs breaks the chain too", async (t) => {
  const a = await cliArchive(t, 'postgres');
  const ids = await withEntries(t, a);
  const target = ids[2]!;
  await a.pgQuery(
    `UPDATE mail_archiver."AccessLogs" SET "Timestamp" = "Timestamp" + interval '1 microsecond' WHERE "Id" = $1`,
    [target],
  );
  const r = await verify(a);
  t.is(r.code, 1);
  t.regex(r.stdout, new RegExp(`^broken at entry ${target}:`));
});

eachStore('a removed entry breaks the chain at the entry after it', async (t, a) => {
  const ids = await withEntries(t, a);
  await sql(
    a,
    `DELETE FROM access_log WHERE id = ${ids[3]}`,
    `DELETE FROM mail_archive_gateway.access_log_details WHERE access_log_id = ${ids[3]}`,
  );
  const r = await verify(a);
  t.is(r.code, 1);
  t.regex(r.stdout, new RegExp(`^broken at entry ${ids[4]}:`));
});

eachStore('two entries swapped break the chain at the first of them', async (t, a) => {
  const ids = await withEntries(t, a);
  const [x, y] = [ids[1]!, ids[6]!];
  // Their contents exchanged, each keeping its place and hash: the order they happened in is gone.
  await sql(
    a,
    `UPDATE access_log SET client_ip = CASE id WHEN ${x} THEN (SELECT client_ip FROM access_log WHERE id = ${y})
                                              ELSE (SELECT client_ip FROM access_log WHERE id = ${x}) END,
                           at = CASE id WHEN ${x} THEN (SELECT at FROM access_log WHERE id = ${y})
                                        ELSE (SELECT at FROM access_log WHERE id = ${x}) END
      WHERE id IN (${x}, ${y})`,
    `UPDATE mail_archive_gateway.access_log_details d SET client_ip = o.client_ip, key_prefix = o.key_prefix
       FROM mail_archive_gateway.access_log_details o
      WHERE (d.access_log_id, o.access_log_id) IN ((${x}, ${y}), (${y}, ${x}))`,
  );
  const r = await verify(a);
  t.is(r.code, 1);
  t.regex(r.stdout, new RegExp(`^broken at entry ${x}:`));
});

eachStore('an entry added behind the service is reported', async (t, a) => {
  const ids = await withEntries(t, a);
  const next = ids.at(-1)! + 1;
  await sql(
    a,
    `INSERT INTO access_log (id, user_id, type, at, key_prefix, client_ip, source) VALUES (${next}, 1, 'Open', 1, 'ma_x', '198.51.100.1', 'api')`,
    `INSERT INTO mail_archive_gateway.access_log_details (access_log_id, user_id, source) VALUES (${next}, 1, 'api')`,
  );
  const r = await verify(a);
  t.is(r.code, 1);
  t.regex(r.stdout, new RegExp(`^broken at entry ${next}: it has no hash`));
});

test('[sqlite] entries written before the chain began are counted, not covered', async (t) => {
  const a = await cliArchive(t, 'sqlite');
  ok(t, await a.cli(['users', 'add', 'alice']));
  // As an archive written by a release that did not chain has them.
  await sql(
    a,
    `INSERT INTO access_log (user_id, type, at, key_prefix, client_ip, source) VALUES (1, 'Open', 1, 'ma_old', '198.51.100.1', 'api'), (1, 'Search', 2, 'ma_old', '198.51.100.1', 'api')`,
    '',
  );
  await a.writeAccessLog([entry(1, 1), entry(1, 2)]);
  t.is(ok(t, await verify(a)).split('\n')[0], 'intact, 2 entries; 2 written before the chain began, not covered');
});

eachStore('writers appending at once never fork the chain', async (t, a) => {
  ok(t, await a.cli(['users', 'add', 'alice']));
  await a.admin();
  const stores = await Promise.all(Array.from({ length: 4 }, () => openStore({ path: a.db })));
  t.teardown(() => Promise.all(stores.map((s) => s.close())));
  // Each store one job at a time, as a worker thread runs them; the four at once, as four threads
  // or processes do.
  await Promise.all(
    stores.map(async (store, s) => {
      for (let b = 0; b < 5; b++)
        await store.run({ kind: 'accessLog', entries: [entry(1, s * 10 + b), entry(1, s * 10 + b + 100)] });
    }),
  );
  t.regex(ok(t, await verify(a)), /^intact, 40 entries\n/);
});

eachStore('the newest entries removed: the links still hold, the head noted earlier does not', async (t, a) => {
  const ids = await withEntries(t, a);
  const noted = /^head: entry \d+ ([0-9a-f]{64})$/m.exec(ok(t, await verify(a)))![1]!;
  ok(t, await a.cli(['access-log', 'verify', '--head', noted]));
  await sql(
    a,
    `DELETE FROM access_log WHERE id = ${ids.at(-1)}`,
    `DELETE FROM mail_archive_gateway.access_log_details WHERE access_log_id = ${ids.at(-1)}`,
  );
  t.regex(ok(t, await verify(a)), /^intact, 8 entries\n/, 'a chain cannot show this by itself');
  const r = await a.cli(['access-log', 'verify', '--head', noted]);
  t.is(r.code, 1);
  t.regex(
    r.stdout,
    new RegExp(`^broken at entry ${ids.at(-2)}: the head noted earlier \\(${noted}\\) is no longer in the chain`),
  );
  const bad = await a.cli(['access-log', 'verify', '--head', 'nothex']);
  t.is(bad.code, 2);
});
