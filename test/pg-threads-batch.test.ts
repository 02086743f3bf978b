// Conversations on PostgreSQL are linked a batch at a time (engine/postgres/threads.ts linkBatch:
// what the table holds for the whole batch is read at once, then each message is linked in
// memory in id order). The batch must link exactly as one message at a time does, which is
// what the SQLite store does at import: the same generated mailbox (replies by References and
// In-Reply-To to earlier, later and missing messages, subjects with and without reply prefixes
// across the 30-day window, messages without a Message-ID, two accounts) imported into a SQLite
// file and into a Mail Archiver database must give the same conversations, message for message.
import test from 'ava';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openAdmin } from '../engine/archive.js';
import { importPaths } from '../engine/import/importer.js';
import { formatMboxEntry } from '../engine/import/mbox.js';
import { Random } from '../engine/demo/random.js';
import { tempDir } from './helpers/fixture.js';
import { createTestDatabase } from './helpers/postgres.js';
import pg from 'pg';
import { openArchive } from '../engine/sqlite/open.js';

const MESSAGES = 900;
const SUBJECTS = ['Budget', 'Weekly report', 'Hello', 'Offsite plan', 'Invoice 7', 'Question', ''];

function mailbox(seed: number): Array<{ raw: Buffer; date: Date }> {
  const rng = new Random(seed);
  const start = Date.UTC(2025, 0, 1);
  const out: Array<{ raw: Buffer; date: Date }> = [];
  for (let i = 0; i < MESSAGES; i++) {
    const date = new Date(start + rng.int(0, 120) * 86_400_000 + rng.int(0, 86_399) * 1000);
    const id = rng.chance(0.05) ? undefined : `<m${i}@${rng.chance(0.5) ? 'a' : 'b'}.example>`;
    // References may name an earlier message, a later one (archived before its parent) or none.
    const refs: string[] = [];
    if (rng.chance(0.45)) {
      const n = rng.int(1, 3);
      for (let k = 0; k < n; k++) refs.push(`<m${rng.int(0, MESSAGES + 50)}@${rng.chance(0.5) ? 'a' : 'b'}.example>`);
    }
    const base = SUBJECTS[rng.int(0, SUBJECTS.length - 1)]!;
    const subject = rng.chance(0.4) ? `${rng.chance(0.5) ? 'Re' : 'AW'}: ${base}` : base;
    const header = [
      `From: p${rng.int(0, 5)}@example.com`,
      'To: team@example.com',
      `Subject: ${subject}`,
      `Date: ${date.toUTCString()}`,
      ...(id ? [`Message-ID: ${id}`] : []),
      ...(refs.length ? [`References: ${refs.join(' ')}`] : []),
      ...(refs.length && rng.chance(0.5) ? [`In-Reply-To: ${refs.at(-1)}`] : []),
    ];
    out.push({ raw: Buffer.from(`${header.join('\r\n')}\r\n\r\nbody ${i}\r\n`), date });
  }
  return out;
}

/** Conversations as sets of message numbers (the body's `body <n>`), sorted, whatever the ids. */
const partition = (rows: Array<{ n: string; t: number }>): string[] => {
  const groups = new Map<number, number[]>();
  for (const r of rows) {
    const n = Number(/body (\d+)/.exec(r.n)![1]);
    groups.set(r.t, [...(groups.get(r.t) ?? []), n]);
  }
  return [...groups.values()].map((g) => g.sort((a, b) => a - b).join(',')).sort();
};

test('a batch links exactly as one message at a time: the same conversations as the SQLite store', async (t) => {
  const dir = tempDir();
  const pgdb = await createTestDatabase('threads_batch');
  t.teardown(async () => {
    dir.cleanup();
    await pgdb.drop();
  });
  // Two files per account, the second interleaving earlier dates: replies arrive before parents.
  const mail = mailbox(7);
  const files = [0, 1, 2, 3].map((f) => {
    const file = join(dir.dir, `part${f}.mbox`);
    writeFileSync(
      file,
      Buffer.concat(mail.filter((_, i) => i % 4 === f).map((m) => formatMboxEntry(m.raw, 'x@example.com', m.date))),
    );
    return file;
  });
  const load = async (target: string) => {
    const admin = await openAdmin(target, { create: true });
    try {
      const accounts = [
        (await admin.addAccount({ name: 'One', emailAddress: 'one@example.com' })).id,
        (await admin.addAccount({ name: 'Two', emailAddress: 'two@example.com' })).id,
      ];
      for (const [f, file] of files.entries())
        t.is(
          (await importPaths(admin, [file], { accountId: accounts[f % 2]!, folder: 'INBOX', batchSize: 100 })).failed,
          0,
        );
    } finally {
      await admin.close();
    }
  };
  const sqliteFile = join(dir.dir, 'archive.db');
  await load(sqliteFile);
  await load(pgdb.url);
  const db = openArchive(sqliteFile);
  const sqlite = partition(
    db
      .prepare('SELECT e.id, b.text_body AS n, e.thread_id AS t FROM emails e JOIN email_bodies b ON b.email_id = e.id')
      .all() as Array<{ n: string; t: number }>,
  );
  db.close();
  const client = new pg.Client({ connectionString: pgdb.url });
  await client.connect();
  const postgres = partition(
    (
      await client.query<{ n: string; t: number }>(
        `SELECT e."Body" AS n, t.thread_id AS t FROM mail_archiver."ArchivedEmails" e
           JOIN mail_archive_gateway.threads t ON t.email_id = e."Id"`,
      )
    ).rows,
  );
  await client.end();
  t.is(postgres.flatMap((g) => g.split(',')).length, MESSAGES);
  t.true(sqlite.filter((g) => g.includes(',')).length > 50, 'the mailbox links many conversations');
  t.true(
    postgres.some((g) => g.split(',').length >= 5),
    'and merges some',
  );
  t.deepEqual(postgres, sqlite);
});
