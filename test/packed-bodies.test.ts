// Packed bodies (engine/sqlite/body-codec.ts; docs/performance.md, "Where the bytes go"): a SQLite
// archive stores a long text or HTML body as brotli-packed bytes, and everything that reads a body
// (a message's detail, search and its snippets, a conversation's excerpts, the search index, a
// reparse) reads the same text as before; rows stored as text by an earlier version read as they are.
import test from 'ava';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildMessage } from '../engine/demo/mime.js';
import { formatMboxEntry } from '../engine/import/mbox.js';
import { importPaths } from '../engine/import/importer.js';
import { openArchive, type Db } from '../engine/sqlite/open.js';
import { addAccount } from '../engine/sqlite/accounts.js';
import { getEmailDetail, searchPage } from '../engine/sqlite/emails.js';
import { getThread } from '../engine/sqlite/threads.js';
import { buildSnapshot } from '../engine/sqlite/index-build.js';
import type { SearchQuery } from '../shared/jobs.js';
import { tempDir } from './helpers/fixture.js';

const ADMIN = { isAdmin: true, userId: 0 };
const query = (q: string, extra: Partial<SearchQuery> = {}): SearchQuery => ({
  q,
  page: 1,
  pageSize: 5,
  sortBy: 'sentDate',
  sortOrder: 'desc',
  ...extra,
});
/** More than the 200 messages an import parses on its own thread: the rest are packed on a parse thread. */
const MESSAGES = 260;

const paragraph = (i: number) =>
  `Paragraph ${i} of the quarterly review: the budget for the harbour project stays as agreed, ` +
  `and the delivery schedule moves by a week. Grüße aus München, Françoise.\n\n`;
const textOf = (i: number) => `Message ${i}.\n\n${Array.from({ length: 30 }, (_, p) => paragraph(p)).join('')}`;

async function archive(t: { teardown: (f: () => void) => void }): Promise<{ db: Db; dir: string; ids: number[] }> {
  const { dir, cleanup } = tempDir();
  t.teardown(cleanup);
  const mbox = join(dir, 'mail.mbox');
  writeFileSync(
    mbox,
    Buffer.concat(
      Array.from({ length: MESSAGES }, (_, i) => {
        const date = new Date(Date.UTC(2024, 0, 1) + i * 60_000);
        const raw = buildMessage({
          from: { name: 'Ann', address: 'ann@example.com' },
          to: [{ address: 'bob@example.com' }],
          subject: i === 0 ? 'Harbour review' : `Re: Harbour review`,
          date,
          messageId: `review.${i}@example.com`,
          ...(i > 0 ? { inReplyTo: 'review.0@example.com' } : {}),
          text: textOf(i),
          ...(i % 2 ? { html: `<html><body><p>${textOf(i).replace(/\n\n/g, '</p><p>')}</p></body></html>` } : {}),
          // A short body stays text.
          ...(i === 7 ? { text: 'Short note.' } : {}),
        });
        return formatMboxEntry(raw, 'ann@example.com', date);
      }),
    ),
  );
  const db = openArchive(join(dir, 'archive.db'));
  t.teardown(() => db.close());
  const accountId = addAccount(db, { name: 'Ann', emailAddress: 'ann@example.com' }).id;
  const summary = await importPaths(db, [mbox], { accountId });
  if (summary.imported !== MESSAGES) throw new Error(`imported ${summary.imported}`);
  const ids = db.prepare('SELECT id FROM emails ORDER BY sent_date').pluck().all() as number[];
  return { db, dir, ids };
}

test('long bodies are stored packed, in a fraction of their size; a short one stays text', async (t) => {
  const { db, ids } = await archive(t);
  const rows = db
    .prepare(
      'SELECT email_id, typeof(text_body) AS kind, octet_length(text_body) AS bytes, typeof(html_body) AS html FROM email_bodies',
    )
    .all() as Array<{ email_id: number; kind: string; bytes: number; html: string }>;
  const byId = new Map(rows.map((r) => [r.email_id, r]));
  t.is(byId.get(ids[7]!)!.kind, 'text');
  const long = rows.filter((r) => r.email_id !== ids[7]);
  t.true(
    long.every((r) => r.kind === 'blob'),
    'every long text body is packed',
  );
  t.true(
    long.filter((r) => r.html !== 'null').every((r) => r.html === 'blob'),
    'every long HTML body is packed',
  );
  // Packed and unpacked sizes: the table holds a fraction of the text it stands for.
  const text = long.reduce((sum, r) => sum + Buffer.byteLength(textOf(ids.indexOf(r.email_id))), 0);
  const stored = long.reduce((sum, r) => sum + r.bytes, 0);
  t.true(stored < text / 4, `${stored} bytes stored for ${text} bytes of text`);
});

test('detail, search with snippets, a conversation and the search index read the text as it was', async (t) => {
  const { db, ids } = await archive(t);
  for (const i of [0, 1, 7, 100, MESSAGES - 1]) {
    const detail = getEmailDetail(db, ADMIN, ids[i]!)!;
    t.is(detail.textBody!.trim(), (i === 7 ? 'Short note.' : textOf(i)).trim());
    if (i % 2 && i !== 7) t.true(detail.htmlBody!.includes('<p>Paragraph 29 of the quarterly review'));
  }
  // The full-text index was fed the text (a word deep in every long body), and snippets show it.
  const found = searchPage(db, ADMIN, query('harbour Françoise', { snippets: true }));
  t.is(found.totalItems, MESSAGES - 1);
  t.regex(found.items[0]!.snippet ?? '', /<mark>/);
  const words = searchPage(db, ADMIN, query('"delivery schedule moves"'));
  t.is(words.totalItems, MESSAGES - 1);
  // A conversation's excerpts start with the body's first words.
  const thread = getThread(db, ADMIN, ids[3]!, true)!;
  t.is(thread.length, MESSAGES);
  t.regex(thread[3]!.excerpt ?? '', /^Message 3\./);
  // The in-memory index reads the bodies to build itself: it finds the same messages.
  t.true(buildSnapshot(db).byteLength > 0);
});

test('a body stored as text by an earlier version reads and searches as before', async (t) => {
  const { db, ids } = await archive(t);
  const id = ids[5]!;
  // What an archive written before bodies were packed holds.
  db.prepare(
    'UPDATE email_bodies SET text_body = body_text(text_body), html_body = body_text(html_body) WHERE email_id = ?',
  ).run(id);
  t.is(db.prepare('SELECT typeof(text_body) FROM email_bodies WHERE email_id = ?').pluck().get(id), 'text');
  t.is(getEmailDetail(db, ADMIN, id)!.textBody!.trim(), textOf(5).trim());
  const found = searchPage(db, ADMIN, query('"Message 5"'));
  t.true(found.items.some((m) => m.id === id));
});
