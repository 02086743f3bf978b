// The folder filter on a Mail Archiver database without and with 2609's folder index
// (`ix_archivedemails_foldername_pattern`, FolderName text_pattern_ops; docs/compat.md): a
// folder of 10 messages spread over an archive of N, searched with no q, newest first, the way
// the PostgreSQL store searches it (engine/postgres/search.ts: the exact count, then the first page).
// Each statement runs under EXPLAIN ANALYZE (best of 5), and the whole search job through the
// store (median of 5), first without the index, then with it, in this one run; the ratio is
// without / with.
//
// The archive is synthetic (short subjects and bodies, 5 accounts, folders INBOX, Sent and 180
// archive folders), written with generate_series into Mail Archiver's 2608.1 schema, in a
// database of its own that is dropped at the end. Mail Archiver's full-text GIN index is left out
// while loading: no folder plan reads it, and building it would take most of the run. The folder
// is named `Projects/a_b%c`, beside 1,000 messages in `Projects/aXbYc`, which a LIKE pattern with
// its wildcards unescaped would also match: both statements must count exactly 10.
//
//   npm run bench:pg-folder [-- --messages 1000000]
import pg from 'pg';
import { performance } from 'node:perf_hooks';
import { MAIL_ARCHIVER_DDL } from '../engine/postgres/schema.js';
import { filterConditions } from '../engine/postgres/search.js';
import { summaryColumns, T } from '../engine/postgres/columns.js';
import { join, sql, type Sql } from '../engine/postgres/sql.js';
import { PgStore } from '../engine/postgres/store.js';
import { readFileSync } from 'node:fs';
import { ms, ratio } from './lib/load.js';

const FOLDER = 'Projects/a_b%c';
const DECOY = 'Projects/aXbYc';
const SMALL = 10;
const RUNS = 5;

const messages = (() => {
  const i = process.argv.indexOf('--messages');
  const n = i === -1 ? 1_000_000 : Number(process.argv[i + 1]);
  if (!Number.isInteger(n) || n < 10_000) throw new Error('--messages must be a whole number of at least 10000');
  return n;
})();

const server = {
  host: process.env.PGHOST || '127.0.0.1',
  port: Number(process.env.PGPORT || 5432),
  user: process.env.PGUSER || 'postgres',
};
const name = `mag_bench_folder_${messages}_${process.pid}`;
const url = `postgres://${encodeURIComponent(server.user)}@${server.host}:${server.port}/${name}`;
const say = (line: string) => process.stdout.write(`${line}\n`);

async function onMaintenance(statement: string): Promise<void> {
  const c = new pg.Client({ ...server, database: 'postgres' });
  await c.connect();
  try {
    await c.query(statement);
  } finally {
    await c.end();
  }
}

/** One query's EXPLAIN ANALYZE: its plan's first line and the best execution time of RUNS. */
async function explain(client: pg.Client, q: Sql): Promise<{ plan: string; ms: number }> {
  const { text, values } = q.toQuery();
  let best = Infinity;
  let plan = '';
  for (let i = 0; i < RUNS; i++) {
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, values);
    const lines = rows.map((r) => r['QUERY PLAN']);
    const time = Number(/Execution Time: ([\d.]+) ms/.exec(lines.at(-1)!)?.[1]);
    if (time < best) {
      best = time;
      // The top node and the scan that feeds it.
      plan = [lines[0]!, lines.find((l) => /Scan/.test(l)) ?? '']
        .map((l) =>
          l
            .trim()
            .replace(/^->\s*/, '')
            .replace(/\s+\(cost=[^)]*\)/, ''),
        )
        .join(' <- ');
    }
  }
  return { plan, ms: best };
}

async function measure(client: pg.Client, store: PgStore, label: string) {
  const ctx = { zone: 'UTC', isRead: false } as Parameters<typeof filterConditions>[0];
  const admin = { isAdmin: true, userId: 1 };
  const query = { folder: FOLDER, page: 1, pageSize: 20, sortBy: 'sentDate' as const, sortOrder: 'desc' as const };
  const where = join(filterConditions(ctx, admin, query), ' AND ', 'true');
  // The two statements engine/postgres/search.ts runs for a search without q.
  const count = await explain(client, sql`SELECT count(*) AS n FROM ${T.emails} e WHERE ${where}`);
  const page = await explain(
    client,
    sql`SELECT ${summaryColumns(ctx)} FROM ${T.emails} e WHERE ${where}
         ORDER BY e."SentDate" DESC, e."Id" DESC LIMIT 20 OFFSET 0`,
  );
  const times: number[] = [];
  let total = -1;
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    const result = await store.run({
      kind: 'search',
      principal: { userId: 1, username: 'bench', isAdmin: true, keyId: 1, keyPrefix: 'ma_bench' },
      query,
    });
    times.push(performance.now() - started);
    total = result.totalItems;
  }
  if (total !== SMALL) throw new Error(`${label}: the folder search counted ${total}, not ${SMALL}`);
  const job = times.sort((a, b) => a - b)[Math.floor(RUNS / 2)]!;
  say(`${label}`);
  say(`  count  ${ms(count.ms).padStart(10)}   ${count.plan}`);
  say(`  page   ${ms(page.ms).padStart(10)}   ${page.plan}`);
  say(`  search job (count + page, through the store), median of ${RUNS}: ${ms(job)}`);
  return { count: count.ms, page: page.ms, job };
}

await onMaintenance(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
await onMaintenance(`CREATE DATABASE "${name}"`);
const client = new pg.Client({ connectionString: url });
await client.connect();
try {
  const started = performance.now();
  await client.query(readFileSync(MAIL_ARCHIVER_DDL, 'utf8'));
  await client.query('DROP INDEX mail_archiver.idx_archivedemails_fulltext_search');
  await client.query(`
    INSERT INTO mail_archiver."MailAccounts" ("Name", "EmailAddress", "UseSSL", "LastSync", "IsEnabled")
    SELECT 'Account ' || a, 'user' || a || '@example.org', true, '1970-01-01', true FROM generate_series(1, 5) a;
    INSERT INTO mail_archiver."Users" ("Username", "Email", "IsAdmin", "IsActive", "CreatedAt")
    VALUES ('bench', 'bench@example.org', true, true, now() AT TIME ZONE 'UTC');`);
  // Message i: sent i * 5 minutes after 2015-01-01 (about 9.5 years at 1M); every (N / 10)th
  // in the small folder, the 1,000 before each of those in the decoy's range spread alike.
  const step = Math.floor(messages / SMALL);
  await client.query(
    `INSERT INTO mail_archiver."ArchivedEmails"
       ("MailAccountId", "MessageId", "Subject", "Body", "HtmlBody", "From", "To", "Cc", "Bcc",
        "SentDate", "ReceivedDate", "IsOutgoing", "HasAttachments", "FolderName")
     SELECT 1 + i % 5, '<' || i || '@bench.example>', 'Message ' || i || ' about the quarterly numbers',
            'Body of message ' || i || '. Regards.', '', 'sender' || (i % 997) || '@example.org',
            'user' || (1 + i % 5) || '@example.org', '', '',
            timestamp '2015-01-01' + i * interval '5 minutes', timestamp '2015-01-01' + i * interval '5 minutes',
            i % 5 = 0, false,
            CASE WHEN i % $1 = 0 AND i / $1 <= ${SMALL} THEN $2
                 WHEN i % 997 = 1 AND i / 997 < 1000 THEN $3
                 WHEN i % 10 < 6 THEN 'INBOX' WHEN i % 10 < 8 THEN 'Sent'
                 ELSE 'Archive/' || (2000 + i % 180) END
       FROM generate_series(1, $4::int) i`,
    [step, FOLDER, DECOY, messages],
  );
  await client.query('VACUUM ANALYZE mail_archiver."ArchivedEmails"');
  const [{ n, decoy }] = (
    await client.query<{ n: number; decoy: number }>(
      `SELECT count(*) FILTER (WHERE "FolderName" = $1)::int AS n, count(*) FILTER (WHERE "FolderName" = $2)::int AS decoy
         FROM mail_archiver."ArchivedEmails"`,
      [FOLDER, DECOY],
    )
  ).rows as [{ n: number; decoy: number }];
  say(
    `archive: ${messages.toLocaleString('en')} messages (${n} in ${FOLDER}, ${decoy} in ${DECOY}), built in ${((performance.now() - started) / 1000).toFixed(0)} s; PostgreSQL ${(await client.query('SHOW server_version')).rows[0].server_version}`,
  );
  const store = new PgStore({ url, timeZone: 'UTC', connections: 1 });
  try {
    const without = await measure(client, store, 'without ix_archivedemails_foldername_pattern (2608.1)');
    const built = performance.now();
    await client.query(
      `CREATE INDEX ix_archivedemails_foldername_pattern ON mail_archiver."ArchivedEmails" ("FolderName" text_pattern_ops)`,
    );
    await client.query('ANALYZE mail_archiver."ArchivedEmails"');
    say(`index built in ${((performance.now() - built) / 1000).toFixed(1)} s`);
    const withIndex = await measure(client, store, 'with ix_archivedemails_foldername_pattern (2609.1 and later)');
    say(
      `ratio without / with: count ${ratio(without.count, withIndex.count)}, page ${ratio(without.page, withIndex.page)}, search job ${ratio(without.job, withIndex.job)}`,
    );
  } finally {
    await store.close();
  }
} finally {
  await client.end();
  await onMaintenance(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
}
