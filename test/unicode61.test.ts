// The PostgreSQL store's search index tokenises in JavaScript (engine/search/unicode61.ts);
// it must split and fold exactly as SQLite's FTS5 `unicode61 remove_diacritics 2` does, or the
// two stores would answer the same query differently. Checked against the SQLite in use.
import test from 'ava';
import Database from '../engine/sqlite/driver.js';
import fc from 'fast-check';
import { tokenize } from '../engine/search/unicode61.js';

function sqliteTokens(texts: string[]): string[][] {
  const db = new Database(':memory:');
  try {
    db.exec(`CREATE VIRTUAL TABLE f USING fts5(t, tokenize = 'unicode61 remove_diacritics 2');
             CREATE VIRTUAL TABLE v USING fts5vocab(f, instance);`);
    const insert = db.prepare('INSERT INTO f (rowid, t) VALUES (?, ?)');
    db.transaction(() => texts.forEach((t, i) => insert.run(i + 1, t)))();
    const out: string[][] = texts.map(() => []);
    for (const r of db.prepare('SELECT doc, term FROM v ORDER BY doc, offset').iterate() as Iterable<{
      doc: number;
      term: string;
    }>) {
      out[r.doc - 1]!.push(r.term);
    }
    return out;
  } finally {
    db.close();
  }
}

test('every code point is split and folded as SQLite does', (t) => {
  const texts: string[] = [];
  for (let c = 1; c <= 0x10ffff; c++) {
    if (c >= 0xd800 && c < 0xe000) continue;
    texts.push(`q${String.fromCodePoint(c)}q`);
  }
  const expected = sqliteTokens(texts);
  const wrong = texts.filter((text, i) => tokenize(text).join(' ') !== expected[i]!.join(' '));
  t.deepEqual(wrong.slice(0, 10), []);
  t.is(texts.length, 0x10ffff - 2048);
});

test('generated mixed text tokenises as in SQLite, positions included', (t) => {
  const alphabet = fc.constantFrom(
    ...'aZé É ß-@.,:;/\'"\u0300\u0301\u0305\u00b5\u01e0øØİı日本語 😀\t\n0123456789'.split(''),
    'e\u0301',
    'Grüße',
    'München',
    'alice@example.com',
    '\u00a0',
    '\u200b',
  );
  const texts = fc.sample(
    fc.array(alphabet, { maxLength: 30 }).map((a) => a.join('')),
    { numRuns: 3000, seed: 61 },
  );
  const expected = sqliteTokens(texts);
  texts.forEach((text, i) => t.deepEqual(tokenize(text), expected[i], JSON.stringify(text)));
});
