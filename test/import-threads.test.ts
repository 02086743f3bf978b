// Parsing on every core (docs/import.md, "Parsing on every core"): an import whose messages are
// parsed on worker threads stores exactly what one parsed on the importer's own thread stores, row
// for row, in the same order, with the same summary and warnings; what is read ahead is bounded
// by messages and by bytes; a failure of the threads stops the import instead of counting every
// message after it as unparseable.
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openArchive, type Db } from '../engine/sqlite/open.js';
import { addAccount } from '../engine/sqlite/accounts.js';
import { importMessages, type ImportSummary } from '../engine/import/importer.js';
import { inOrder, MessageParser, ParserFailed, type ParserOptions } from '../engine/import/parsers.js';
import type { RawMessage } from '../engine/import/sources.js';
import type { ParsedMessage } from '../engine/import/parse.js';
import { DEMO_ACCOUNTS, type DemoAccountSpec } from '../engine/demo/corpus.js';
import { demoMail } from '../engine/demo/generate.js';
import { tempDir } from './helpers/fixture.js';

const FIXTURES = fileURLToPath(new URL('../../test/fixtures/mail/', import.meta.url));

/** Generated mail with the real-mail fixtures, a duplicate, an empty and an oversized message among it. */
function source(): RawMessage[] {
  const raw = (bytes: Buffer, origin: string, folder = 'INBOX'): RawMessage => ({
    raw: bytes,
    folder,
    origin,
    mtime: Date.parse('2024-05-01T00:00:00Z'),
    bytes: bytes.length,
  });
  const out: RawMessage[] = [];
  const fixtures = readdirSync(FIXTURES)
    .filter((name) => name.endsWith('.eml'))
    .map((name) => raw(readFileSync(join(FIXTURES, name)), name, 'Fixtures'));
  let i = 0;
  for (const m of demoMail(DEMO_ACCOUNTS[0] as DemoAccountSpec, 450, 7)) {
    out.push(raw(m.raw, `generated ${++i}`, m.folder));
    if (i % 60 === 0) out.push(fixtures[(i / 60) % fixtures.length]!);
    if (i === 100) out.push(raw(Buffer.alloc(0), 'empty message'));
    if (i === 200) out.push(raw(Buffer.concat([m.raw, Buffer.alloc(2_200_000, 0x41)]), 'oversized message'));
    if (i === 300) out.push({ ...out[10]!, origin: 'the 11th again' });
  }
  return out;
}

interface Run {
  summary: Omit<ImportSummary, 'seconds'>;
  warnings: string[];
  tables: Record<string, unknown[]>;
}

const TABLES = [
  'emails',
  'email_bodies',
  'attachments',
  'attachment_contents',
  'originals',
  'email_originals',
  'threads',
] as const;

async function importWith(parse: ParserOptions): Promise<Run> {
  const tmp = tempDir('mag-import-threads-');
  const db: Db = openArchive(join(tmp.dir, 'archive.db'));
  try {
    const accountId = addAccount(db, { name: 'Work', emailAddress: DEMO_ACCOUNTS[0]!.emailAddress }).id;
    const warnings: string[] = [];
    const { seconds: _seconds, ...summary } = await importMessages(db, source(), {
      accountId,
      parse,
      batchSize: 50,
      limits: { maxMessageBytes: 2_000_000 },
      onWarning: (w) => warnings.push(w),
    });
    const tables: Record<string, unknown[]> = {};
    for (const table of TABLES) {
      const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table);
      if (exists) tables[table] = db.prepare(`SELECT * FROM ${table} ORDER BY rowid`).all();
    }
    return { summary, warnings, tables };
  } finally {
    db.close();
    tmp.cleanup();
  }
}

test('parsed on threads, an import stores row for row what one parsed on its own thread stores', async (t) => {
  const here = await importWith({ threads: 0 });
  t.is(here.summary.failed, 1, 'the empty message');
  t.is(here.summary.tooLarge, 1, 'the oversized message');
  t.is(here.summary.duplicates, 1, 'the 11th message again');
  t.true(here.summary.imported > 450);
  t.true((here.tables.originals ?? []).length > 450, 'originals are kept');
  t.true((here.tables.attachments ?? []).length > 0, 'attachments were parsed');
  // All on threads from the first message; and switching to threads mid-stream, as a long import does.
  for (const parse of [
    { threads: 2, inlineFirst: 0 },
    { threads: 1, inlineFirst: 37 },
  ]) {
    const there = await importWith(parse);
    t.deepEqual(there.summary, here.summary, JSON.stringify(parse));
    t.deepEqual(there.warnings, here.warnings, JSON.stringify(parse));
    for (const table of Object.keys(here.tables)) {
      t.deepEqual(there.tables[table], here.tables[table], `${table}, ${JSON.stringify(parse)}`);
    }
  }
});

test('what is read ahead is bounded by messages and by bytes, and comes back in the order read', async (t) => {
  let read = 0;
  let taken = 0;
  let most = 0;
  const sizes = Array.from({ length: 40 }, (_, i) => (i % 7 === 0 ? 50 : 5));
  async function* items() {
    for (const [i, size] of sizes.entries()) {
      read++;
      most = Math.max(most, read - taken);
      yield { i, size };
    }
  }
  // A parser that answers out of order (later messages first), with a window of 4 messages or 60 bytes.
  const parser = { ahead: { messages: 4, bytes: 60 }, send: () => {} } as unknown as MessageParser;
  const order: number[] = [];
  const work = (item: { i: number }) =>
    new Promise<ParsedMessage>((resolve) => setTimeout(() => resolve({ i: item.i } as never), 40 - item.i));
  for await (const parsed of inOrder(items(), parser, (x) => x.size, work)) {
    taken++;
    order.push(parsed.item.i);
  }
  t.deepEqual(
    order,
    sizes.map((_, i) => i),
  );
  t.true(most <= 4, `at most 4 read ahead, saw ${most}`);

  // By bytes: 50-byte items leave room for little else.
  read = 0;
  taken = 0;
  most = 0;
  let bytesAhead = 0;
  let mostBytes = 0;
  const big = { ahead: { messages: 100, bytes: 60 }, send: () => {} } as unknown as MessageParser;
  async function* heavy() {
    for (const [i, size] of sizes.entries()) {
      bytesAhead += size;
      mostBytes = Math.max(mostBytes, bytesAhead);
      yield { i, size };
    }
  }
  for await (const parsed of inOrder(heavy(), big, (x) => x.size, work)) bytesAhead -= parsed.item.size;
  t.true(mostBytes < 60 + 50, `bytes ahead stay within the bound and one message: ${mostBytes}`);
});

test("a failure of the threads themselves is ParserFailed, not the message's fault", async (t) => {
  const parser = new MessageParser({ threads: 1, inlineFirst: 0 });
  try {
    // A context the threads cannot be handed (a function does not cross to a thread).
    const parsed = parser.parse({
      raw: Buffer.from('Subject: x\r\n\r\nbody\r\n'),
      ctx: { accountId: 1, accountEmail: 'a@example.com', folder: 'INBOX', fallbackDate: (() => 0) as never },
      keepOriginal: true,
    });
    parser.send(parsed);
    const err = await t.throwsAsync(parsed);
    t.true(err instanceof ParserFailed, String(err));
    // A message's own fault on a thread is an ordinary failure with its reason.
    const empty = parser.parse({
      raw: Buffer.from('   \r\n'),
      ctx: { accountId: 1, accountEmail: 'a@example.com', folder: 'INBOX', fallbackDate: 0 },
      keepOriginal: false,
    });
    parser.send(empty);
    const own = await t.throwsAsync(empty);
    t.false(own instanceof ParserFailed);
    t.is(own?.message, 'the message is empty');
  } finally {
    await parser.close();
  }
});
