// A phrase inside attachment text (`attachment:"net 30 days"`), matched at a bounded cost per
// message (docs/security.md, "Mail shaped by an attacker", 2; docs/search.md, "Plain words do not search attachment text").
//
// FTS5 matches a phrase by walking the positions of each of its words in every message that holds
// them all, so one message whose attachment text repeats the phrase's words costs time in
// proportion to its length: a 30-word phrase over three messages of 100 M characters held the
// query lane for 5 s. A message whose attachment text has more than Engine:PhraseScanWords words
// is therefore matched here, by reading its first that many words; every other message is matched
// by FTS5 as before, over rowid ranges that hold no long one (one query when there is none). The
// candidates (messages holding every word, found without comparing positions) and which of them
// are long come from FTS5's own per-row token counts (the %_docsize table): nothing is read to
// tell them apart.
// The count and the page of a search both come from this one set: they never disagree.
import type { Db } from './open.js';
import { prepared } from './statements.js';
import type { AttachmentLeaf } from '../search/bitsets/source.js';
import { attachmentExpression } from '../search/compile.js';
import { scanTokens, tokenize } from '../search/unicode61.js';

/**
 * Engine:PhraseScanWords's default: about 30 pages of prose, and just past the positions a
 * PostgreSQL tsvector keeps (16,383), so both stores find a phrase in about the same window.
 */
export const DEFAULT_PHRASE_SCAN_WORDS = 16_384;

let scanWords = DEFAULT_PHRASE_SCAN_WORDS;

/** Set once per worker thread from Engine:PhraseScanWords (engine/pool/worker.ts). */
export function setPhraseScanWords(words: number): void {
  scanWords = words;
}

/** The fts_keys (attachment_fts rowids), ascending, of the messages whose attachment text holds the term. */
export function attachmentPhraseKeys(db: Db, node: AttachmentLeaf): number[] {
  const phrase = node.words.flatMap((w) => tokenize(w));
  const match = (range: string, ...bounds: number[]) =>
    prepared(db, `SELECT rowid FROM attachment_fts WHERE attachment_fts MATCH ?${range} ORDER BY rowid`)
      .pluck()
      .all(attachmentExpression(node), ...bounds) as number[];
  // One word has no positions to compare: its cost is its posting list, whatever the text's length.
  if (phrase.length < 2) return match('');
  const parts = candidateRuns(db, node);
  if (!parts.some((p) => p.size !== null && readVarint(p.size) > scanWords)) return match('');
  // FTS5 over each run of short candidates (a range holding no long one), the scan for each long one.
  const out: number[] = [];
  for (const { first, last, size } of parts) {
    if (size === null || readVarint(size) <= scanWords)
      out.push(...match(' AND rowid >= ? AND rowid <= ?', first, last));
    else if (holdsPhrase(db, first, phrase, node.prefix)) out.push(first);
  }
  return out;
}

/**
 * The messages holding every word of the term (found without comparing positions: cheap), in
 * rowid order, as runs: each message whose token count may pass the bound (its varint is long
 * enough) on its own with that count, every run of others between them as one range. SQL does
 * the grouping, so a search without a long candidate hands back a single row.
 */
function candidateRuns(db: Db, node: AttachmentLeaf): Array<{ first: number; last: number; size: Buffer | null }> {
  const words = node.words.map((w, i) => `"${w}"${node.prefix && i === node.words.length - 1 ? ' *' : ''}`);
  return prepared(
    db,
    `WITH c AS (SELECT d.id AS key, length(d.sz) >= ? AS long, d.sz AS size FROM attachment_fts_docsize d
                 WHERE d.id IN (SELECT rowid FROM attachment_fts WHERE attachment_fts MATCH ?)),
          g AS (SELECT key, long, size, sum(long) OVER (ORDER BY key) AS run FROM c)
     SELECT min(key) AS first, max(key) AS last, CASE WHEN long THEN size END AS size
       FROM g GROUP BY run, long ORDER BY first`,
  ).all(varintBytes(scanWords + 1), words.join(' AND ')) as Array<{ first: number; last: number; size: Buffer | null }>;
}

/** The phrase among the first Engine:PhraseScanWords words of the message's attachment text, in index order. */
function holdsPhrase(db: Db, key: number, phrase: string[], prefix: boolean): boolean {
  // The same rows in the same order as the text attachment_fts was given (engine/sqlite/attachment-text.ts).
  const texts = prepared(
    db,
    `SELECT t.text FROM attachment_texts t
      WHERE t.content_id IN (SELECT content_id FROM attachments WHERE email_id = (SELECT id FROM emails WHERE fts_key = ?))
        AND t.status = 'ok' AND t.text <> ''`,
  )
    .pluck()
    .iterate(key) as Iterable<string>;
  const n = phrase.length;
  const recent: string[] = new Array<string>(n); // the last n tokens, as a ring
  let seen = 0;
  let found = false;
  const matches = () => {
    for (let i = 0; i < n; i++) {
      const token = recent[(seen - n + i) % n]!;
      const word = phrase[i]!;
      if (i === n - 1 && prefix ? !token.startsWith(word) : token !== word) return false;
    }
    return true;
  };
  for (const text of texts) {
    scanTokens(text, text.length, (token) => {
      recent[seen % n] = token;
      seen++;
      found = seen >= n && matches();
      return found || seen >= scanWords;
    });
    if (found || seen >= scanWords) break; // ends the statement too (for…of calls return())
  }
  return found;
}

/** Bytes of SQLite's varint for `value`: seven bits a byte. */
function varintBytes(value: number): number {
  let bytes = 1;
  while (bytes < 9 && value >= 2 ** (7 * bytes)) bytes++;
  return bytes;
}

/** The first varint of `buf`: seven bits a byte, most significant first, while the high bit is set. */
function readVarint(buf: Buffer): number {
  let value = 0;
  for (let i = 0; i < buf.length && i < 9; i++) {
    const b = buf[i]!;
    value = value * 128 + (b & 0x7f);
    if ((b & 0x80) === 0) break;
  }
  return value;
}
