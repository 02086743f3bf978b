// The PostgreSQL store's own search index (docs/search.md, "On PostgreSQL"; ADR 11).
//
// Mail Archiver's GIN index tokenises with the 'simple' configuration: an address is one token,
// accents stay, and its six columns are one run of text. The query language means something
// else (docs/search.md), so this store keeps a side-index in its own schema: per message, a
// tsvector built here, in JavaScript, with SQLite FTS5's tokenizer (engine/search/unicode61.ts),
// whose lexemes carry their field (`s:budget`, `b:budget`, `n:report`, ...) and their positions,
// plus hidden tags (`g:hatt` for has:attachment, exact-address tags from engine/search/tags.ts).
// A query compiles to one tsquery over those lexemes; the meaning of every operator is then
// the same set of messages as FTS5's MATCH on the SQLite store.
//
// Keeping it current: Mail Archiver (or anyone) inserts into ArchivedEmails without telling us.
// `catchUpSearchIndex` indexes, in bounded batches on the primary, the messages above a
// watermark (the highest "Id" looked at) that have no row yet; a search first compares
// max("Id") with the watermark (one index probe each) and catches up when behind. Deleted
// messages never show: searches join ArchivedEmails.
import { hasFileAttachments, NOT_A_FILE } from '../rules/attachment-counts.js';
import { prepareBody, STORED_BODY_LIMIT } from '../rules/body.js';
import type { NewEmail } from '../rules/new-email.js';
import type { Node } from '../../shared/query-language.js';
import { SearchIndexBuilding } from '../../shared/errors.js';
import { parseQuery } from '../../shared/query-language.js';
import { addressTags, ATTACHMENT_TAG, exactAddressTag } from '../search/tags.js';
import { tokenize } from '../search/unicode61.js';
import { tsvectorArray } from './binary.js';
import { nextBatch } from './catch-up.js';
import { T } from './columns.js';
import { join, raw, sql, type Sql } from './sql.js';
import type { PgContext, Query } from './context.js';

export const DOCS = raw('mail_archive_gateway.search_docs');
const STATE = raw('mail_archive_gateway.search_state');
const TEXTS = raw('mail_archive_gateway.attachment_texts');

/** The field letter each lexeme starts with. */
const FIELD = {
  subject: 's',
  body: 'b',
  from: 'f',
  to: 't',
  cc: 'c',
  bcc: 'k',
  filename: 'n',
  attachment: 'a',
  tag: 'g',
} as const;
type Field = keyof typeof FIELD;
/** Free words search subject, body, from, to, cc and bcc, as on SQLite. */
const DEFAULT_FIELDS: Field[] = ['subject', 'body', 'from', 'to', 'cc', 'bcc'];

// PostgreSQL's tsvector limits: a lexeme of at most 2046 bytes (15 takes 2047 in a tsquery, 14
// refuses it in both), positions 1..16383, at most 256 positions per lexeme, at most 1 MB of
// lexeme text per value.
const MAX_LEXEME_BYTES = 2046;
const MAX_POSITION = 16383;
const MAX_POSITIONS = 256;
const MAX_LEXEME_TEXT = 1_000_000;

/** A lexeme as PostgreSQL will store it: field-qualified and cut to the byte limit. */
function lexeme(field: Field, token: string): string {
  let text = `${FIELD[field]}:${token}`;
  if (Buffer.byteLength(text) > MAX_LEXEME_BYTES) {
    let bytes = 0;
    let cut = '';
    for (const ch of text) {
      bytes += Buffer.byteLength(ch);
      if (bytes > MAX_LEXEME_BYTES) break;
      cut += ch;
    }
    text = cut;
  }
  return text;
}

/** A quoted lexeme for tsvector and tsquery input. */
const quote = (lex: string) => `'${lex.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;

export interface IndexedText {
  subject: string;
  body: string;
  from: string;
  to: string;
  cc: string;
  bcc: string;
  /** Attachment file names joined by spaces, in attachment order (as SQLite's index). */
  filenames: string;
  hasAttachments: boolean;
  /** The text found inside the attachments (attachment-text.ts), joined; "a:" lexemes. */
  attachmentText?: string;
}

/**
 * One field's part of a document: its distinct words (each cut to the lexeme size) in the order
 * first seen, with their positions and UTF-8 sizes, and its adjacent pairs by word number
 * (`first * PAIR_RADIX + second`), distinct, in the order first seen.
 */
interface FieldWords {
  letter: string;
  words: string[];
  /** Each word's number. */
  numbers: Map<string, number>;
  positions: number[][];
  bytes: number[];
  pairs: number[];
}

/** A document as built: its tags (`g:` lexemes, no positions) and its fields' words and pairs. */
interface Document {
  tags: Set<string>;
  fields: FieldWords[];
  /** Whether the pairs are kept; false: the document says `_:unpaired` instead. */
  paired: boolean;
}

/** Word numbers in a pair key: a field holds fewer words than this (1 MB of lexemes of 3 bytes at least). */
const PAIR_RADIX = 2 ** 19;

/**
 * A message's document: each lexeme with its positions (distinct, ascending), then its adjacent
 * word pairs (ADR 24; no positions) exactly as migration 10's with_pairs derives them from the
 * stored positions: per field, each word stored at a position with each word stored at the next
 * (`B:first second`), or `_:unpaired` when a pair would pass a lexeme's size or the pairs the
 * document's 1 MB. Built here, where the server's SQL function took 1.5 ms a document (the
 * larger part of a write's cost); migration 13's trigger keeps a document that brings its pairs.
 * Words are numbered per field, so a pair is a number until the document is written.
 */
function buildDocument(m: IndexedText): Document {
  const fields: FieldWords[] = [];
  let lexemeText = 0;
  const add = (field: Field, text: string) => {
    const numbers = new Map<string, number>();
    const f: FieldWords = { letter: FIELD[field], words: [], numbers, positions: [], bytes: [], pairs: [] };
    const pairs = new Set<number>();
    // The word stored at the previous position, and at 16382: every word clamped to 16383 follows it.
    let previous = -1;
    let beforeLast = -1;
    const tokens = tokenize(text);
    for (let i = 0; i < tokens.length; i++) {
      const token = tokens[i]!;
      // At most three bytes per UTF-16 unit: only a long token can pass the lexeme limit.
      const word = 2 + 3 * token.length <= MAX_LEXEME_BYTES ? token : lexeme(field, token).slice(2);
      const position = Math.min(i + 1, MAX_POSITION);
      let n = numbers.get(word);
      if (n === undefined) {
        const bytes = Buffer.byteLength(word);
        lexemeText += 2 + bytes;
        if (lexemeText > MAX_LEXEME_TEXT) {
          previous = -1; // a huge body: its last distinct words are not indexed
          continue;
        }
        n = f.words.length;
        numbers.set(word, n);
        f.words.push(word);
        f.positions.push([]);
        f.bytes.push(bytes);
      }
      const list = f.positions[n]!;
      if (list.length >= MAX_POSITIONS) {
        previous = -1; // this occurrence keeps no position
        continue;
      }
      list.push(position);
      const before = position < MAX_POSITION ? previous : beforeLast;
      if (before >= 0) {
        const pair = before * PAIR_RADIX + n;
        if (!pairs.has(pair)) {
          pairs.add(pair);
          f.pairs.push(pair);
        }
      }
      previous = n;
      if (position === MAX_POSITION - 1) beforeLast = n;
    }
    // Clamped positions repeat at 16383; PostgreSQL wants them distinct.
    for (const list of f.positions)
      if (list.length > 1 && list[list.length - 1] === MAX_POSITION && list[list.length - 2] === MAX_POSITION)
        list.splice(list.indexOf(MAX_POSITION) + 1);
    if (f.words.length > 0) fields.push(f);
  };
  // Tags first: they are few and must never be lost to the size limit.
  const tags = addressTags(m);
  if (m.hasAttachments) tags.push(ATTACHMENT_TAG);
  add('subject', m.subject);
  add('from', m.from);
  add('to', m.to);
  add('cc', m.cc);
  add('bcc', m.bcc);
  add('filename', m.filenames);
  add('body', m.body);
  // Last: a long document may lose its last distinct words to the size limit, never the body.
  add('attachment', m.attachmentText ?? '');
  const doc = { tags: new Set(tags.map((tag) => lexeme('tag', tag))), fields, paired: true };
  doc.paired = pairsFit(doc, lexemeText);
  return doc;
}

/** Whether the pairs fit: no pair passes a lexeme's size, and with them the document its 1 MB. */
function pairsFit(doc: Document, counted: number): boolean {
  // UTF-8 takes at most three bytes per UTF-16 unit: most documents fit by that bound alone.
  let bound = counted;
  for (const tag of doc.tags) bound += 3 * tag.length;
  for (const f of doc.fields)
    for (const pair of f.pairs) {
      const length = 3 + f.words[Math.floor(pair / PAIR_RADIX)]!.length + f.words[pair % PAIR_RADIX]!.length;
      if (3 * length > MAX_LEXEME_BYTES) bound = Infinity;
      bound += 3 * length;
    }
  if (counted <= MAX_LEXEME_TEXT && bound <= MAX_LEXEME_TEXT) return true;
  let bytes = 0;
  for (const tag of doc.tags) bytes += Buffer.byteLength(tag);
  for (const f of doc.fields) for (const size of f.bytes) bytes += 2 + size;
  for (const f of doc.fields)
    for (const pair of f.pairs) {
      const size = 3 + f.bytes[Math.floor(pair / PAIR_RADIX)]! + f.bytes[pair % PAIR_RADIX]!;
      bytes += size;
      if (size > MAX_LEXEME_BYTES || bytes > MAX_LEXEME_TEXT) return false;
    }
  return true;
}

/**
 * A document in tsvector's binary form (tsvectorrecv's layout): the number of lexemes, then each
 * lexeme NUL-terminated with its positions (weight D: 0 in the top two bits). The lexemes go in
 * the server's order (memcmp of the UTF-8 bytes, a prefix first), which JavaScript's order of
 * strings is but for characters past U+FFFF: the server then need not sort them itself
 * (tsvectorrecv sorts only a vector it finds out of order), a quarter of its time per document.
 * That order is the field letter's (the pairs' capitals, `_`, then the small letters: every
 * lexeme is a letter and a colon), then the word's within a field, and a pair's by its first word
 * and then its second, as no word holds a space or anything below it (they separate words). So a
 * field's words are sorted once, and its pairs as numbers by the ranks of their words.
 */
function documentBuffer(doc: Document): Buffer {
  type Run = { letter: number; write: () => void };
  const runs: Run[] = [];
  let count = 0;
  let size = 4;
  let out: Buffer;
  let at = 0;
  const ending = (positions: readonly number[]) => {
    out[at++] = 0;
    out[at++] = positions.length >> 8;
    out[at++] = positions.length & 0xff;
    for (const p of positions) {
      out[at++] = p >> 8;
      out[at++] = p & 0xff;
    }
  };
  const copy = (from: Buffer, start: number, end: number) => {
    if (end - start > 32) at += from.copy(out, at, start, end);
    else for (let i = start; i < end; i++) out[at++] = from[i]!;
  };
  const tags = [...doc.tags].sort().map((tag) => Buffer.from(tag, 'utf8'));
  count += tags.length;
  for (const tag of tags) size += tag.length + 3;
  runs.push({
    letter: FIELD.tag.charCodeAt(0),
    write: () => {
      for (const tag of tags) {
        copy(tag, 0, tag.length);
        ending([]);
      }
    },
  });
  if (!doc.paired) {
    const mark = Buffer.from('_:unpaired');
    count++;
    size += mark.length + 3;
    runs.push({
      letter: mark[0]!,
      write: () => {
        copy(mark, 0, mark.length);
        ending([]);
      },
    });
  }
  for (const f of doc.fields) {
    const words = [...f.words].sort();
    const byRank = words.map((w) => f.numbers.get(w)!);
    const rank = new Int32Array(words.length);
    byRank.forEach((n, r) => (rank[n] = r));
    // The sorted words' UTF-8 bytes back to back (NUL between), and where each begins.
    const text = Buffer.from(words.join('\0'), 'utf8');
    const starts = new Int32Array(words.length);
    for (let r = 1; r < words.length; r++) starts[r] = starts[r - 1]! + f.bytes[byRank[r - 1]!]! + 1;
    const letter = f.letter.charCodeAt(0);
    count += words.length;
    for (let r = 0; r < words.length; r++) size += 2 + f.bytes[byRank[r]!]! + 3 + 2 * f.positions[byRank[r]!]!.length;
    runs.push({
      letter,
      write: () => {
        for (let r = 0; r < words.length; r++) {
          out[at++] = letter;
          out[at++] = 0x3a; // ':'
          copy(text, starts[r]!, starts[r]! + f.bytes[byRank[r]!]!);
          ending(f.positions[byRank[r]!]!);
        }
      },
    });
    if (!doc.paired || f.pairs.length === 0) continue;
    const pairs = new Float64Array(f.pairs.length);
    for (let i = 0; i < pairs.length; i++) {
      const p = f.pairs[i]!;
      const first = rank[Math.floor(p / PAIR_RADIX)]!;
      const second = rank[p % PAIR_RADIX]!;
      pairs[i] = first * PAIR_RADIX + second;
      size += 6 + f.bytes[byRank[first]!]! + f.bytes[byRank[second]!]!;
    }
    pairs.sort();
    count += pairs.length;
    const upper = f.letter.toUpperCase().charCodeAt(0);
    runs.push({
      letter: upper,
      write: () => {
        for (const p of pairs) {
          const first = Math.floor(p / PAIR_RADIX);
          const second = p % PAIR_RADIX;
          out[at++] = upper;
          out[at++] = 0x3a;
          copy(text, starts[first]!, starts[first]! + f.bytes[byRank[first]!]!);
          out[at++] = 0x20; // ' '
          copy(text, starts[second]!, starts[second]! + f.bytes[byRank[second]!]!);
          ending([]);
        }
      },
    });
  }
  out = Buffer.allocUnsafe(size);
  out.writeInt32BE(count, 0);
  at = 4;
  for (const run of runs.sort((a, b) => a.letter - b.letter)) run.write();
  return out;
}

/** The document's lexemes with their positions, in no particular order (documentVector). */
export function documentLexemes(m: IndexedText): Map<string, number[]> {
  const doc = buildDocument(m);
  const lexemes = new Map<string, number[]>();
  for (const tag of doc.tags) lexemes.set(tag, []);
  for (const f of doc.fields) {
    f.words.forEach((w, n) => lexemes.set(`${f.letter}:${w}`, f.positions[n]!));
    if (doc.paired) {
      const upper = f.letter.toUpperCase();
      for (const p of f.pairs)
        lexemes.set(`${upper}:${f.words[Math.floor(p / PAIR_RADIX)]!} ${f.words[p % PAIR_RADIX]!}`, []);
    }
  }
  if (!doc.paired) lexemes.set('_:unpaired', []);
  return lexemes;
}

/** The tsvector input text of a message's document (tests compare it with the server's). */
export function documentVector(m: IndexedText): string {
  const parts: string[] = [];
  for (const [lex, list] of documentLexemes(m))
    parts.push(list.length ? `${quote(lex)}:${list.join(',')}` : quote(lex));
  return parts.join(' ');
}

/** A message's document in tsvector's binary form, as insertDocuments and the writer send it. */
export const documentBinary = (m: IndexedText): Buffer => documentBuffer(buildDocument(m));

/**
 * The document of a new message as the writer stores it (writer.ts; built ahead on a parse
 * thread by prepare.ts), the very one the catch-up would build from the stored row: the stored
 * fields (NUL dropped, the body as prepareBody keeps it, strings well-formed as the server stores
 * them), attachment names in order, and no attachment text (a message whose attachment bytes
 * were stored before, and may have text, is left to the catch-up).
 */
export function newEmailDocument(e: NewEmail, bodyLimit = STORED_BODY_LIMIT): Buffer {
  const field = (text: string) => (text.includes('\0') ? text.replaceAll('\0', '') : text).toWellFormed();
  return documentBinary({
    subject: field(e.subject),
    body: (prepareBody(e.textBody, bodyLimit).stored ?? '').toWellFormed(),
    from: field(e.from),
    to: field(e.to),
    cc: field(e.cc),
    bcc: field(e.bcc),
    filenames: e.attachments.map((a) => field(a.fileName)).join(' '),
    // As insertDocuments' SQL: HasAttachments, or a part whose type (before ';', lower case) is a file's.
    hasAttachments:
      hasFileAttachments(e.attachments) ||
      e.attachments.some((a) => !NOT_A_FILE_TYPES.has(field(a.contentType).split(';')[0]!.toLowerCase())),
  });
}
const NOT_A_FILE_TYPES = new Set<string>(NOT_A_FILE);

/** Inserts documents (rows already there are kept), in the caller's transaction. */
export async function insertBuilt(query: Query, ids: readonly number[], docs: readonly Buffer[]): Promise<void> {
  if (ids.length === 0) return;
  await query(
    sql`INSERT INTO ${DOCS} (email_id, doc)
        SELECT * FROM unnest(${[...ids]}::int[], ${tsvectorArray(docs)}::tsvector[])
        ON CONFLICT (email_id) DO NOTHING`,
  );
}

/** A filter tag of engine/search/tags.ts as tsquery input (the `g:` lexemes). */
export const tagTsQuery = (tag: string) => quote(lexeme('tag', tag));

/** A lexeme no message has: what a term with nothing indexable compiles to. */
const NOTHING = quote('0:');

function phrase(field: Field, tokens: string[], prefix: boolean): string {
  const lexemes = tokens.map((t, i) => quote(lexeme(field, t)) + (prefix && i === tokens.length - 1 ? ':*' : ''));
  return lexemes.length === 1 ? lexemes[0]! : `(${lexemes.join(' <-> ')})`;
}

/**
 * Marks a document whose word pairs did not fit tsvector's limits (migration 10's with_pairs):
 * it has no pair lexemes, and a phrase is checked in it by position.
 */
const UNPAIRED = quote('_:unpaired');

/**
 * A phrase of a text node as two tsqueries over the word pairs of migration 10: `paired` for
 * documents holding pairs, `unpaired` for the few that could not. For a phrase of two words
 * `paired` is one pair lexeme per field, which GIN answers from its posting list without
 * reading a document; a longer one ANDs its pairs with the positions (GIN reads only the
 * documents holding all the pairs). Null when the node is not such a phrase, or a pair would
 * exceed a lexeme's size: then tsquery(node) is the only form.
 */
export function pairedTsQuery(node: Node): { paired: string; unpaired: string } | null {
  if (node.type !== 'text') return null;
  if (exactAddressTag(node)) return null; // an exact address is its tag
  const { field } = node;
  const tokens = tokenize(node.words.join(' '));
  if (tokens.length < 2) return null;
  const paired: string[] = [];
  for (const f of field ? [field] : DEFAULT_FIELDS) {
    const words = tokens.map((t) => lexeme(f, t).slice(2));
    const pairs: string[] = [];
    for (let i = 1; i < words.length; i++) {
      const pair = `${FIELD[f].toUpperCase()}:${words[i - 1]} ${words[i]}`;
      if (Buffer.byteLength(pair) > MAX_LEXEME_BYTES) return null;
      pairs.push(quote(pair) + (node.prefix && i === words.length - 1 ? ':*' : ''));
    }
    paired.push(pairs.length === 1 ? pairs[0]! : `(${pairs.join(' & ')} & ${phrase(f, tokens, node.prefix)})`);
  }
  const join = (list: string[]) => (list.length === 1 ? list[0]! : `(${list.join(' | ')})`);
  return { paired: join(paired), unpaired: `(${UNPAIRED} & ${tsquery(node)})` };
}

/** A query node (no `thread:` in it) as tsquery input over the side index's lexemes. */
export function tsquery(node: Node): string {
  switch (node.type) {
    case 'thread':
    case 'read':
      // Not expressible as lexemes; compileMatch turns a query holding thread: or is: terms
      // into SQL over per-leaf tsqueries and never asks for this.
      throw new Error('unreachable: thread: and is: are compiled by compileMatch');
    case 'has':
      return quote(lexeme('tag', ATTACHMENT_TAG));
    case 'attachment': {
      // "a:" lexemes: the text inside attachments (attachment-text.ts adds them to the document).
      const tokens = tokenize(node.words.join(' '));
      return tokens.length === 0 ? NOTHING : phrase('attachment', tokens, node.prefix);
    }
    case 'not':
      return `!${tsquery(node.child)}`;
    case 'and':
    case 'or':
      return `(${node.children.map(tsquery).join(node.type === 'and' ? ' & ' : ' | ')})`;
    case 'text': {
      const { field } = node;
      const address = exactAddressTag(node);
      if (address) return quote(lexeme('tag', address)); // as on SQLite: exact address
      // FTS5 tokenises the phrase it is given (the parser's words) once more: the same here.
      const tokens = tokenize(node.words.join(' '));
      if (tokens.length === 0) return NOTHING;
      const fields = field ? [field] : DEFAULT_FIELDS;
      const alternatives = fields.map((f) => phrase(f, tokens, node.prefix));
      return alternatives.length === 1 ? alternatives[0]! : `(${alternatives.join(' | ')})`;
    }
  }
}

/** Whether the tree holds a term of `type`. */
const holds = (node: Node, type: 'thread' | 'read'): boolean =>
  node.type === type ||
  ((node.type === 'and' || node.type === 'or') && node.children.some((c) => holds(c, type))) ||
  (node.type === 'not' && holds(node.child, type));

/**
 * is:read / is:unread on the side-index row `d`: Mail Archiver's flag of its message, probed by
 * primary key (the column exists: engine/postgres/search.ts checks before compiling).
 */
const readCondition = (read: boolean): Sql =>
  sql`EXISTS (SELECT 1 FROM ${T.emails} r WHERE r."Id" = d.email_id AND r."IsRead" = ${read})`;

/** Whether a text node is a phrase that pairedTsQuery can answer by its word pairs. */
const pairable = (node: Node): boolean => node.type === 'text' && pairedTsQuery(node) !== null;

/** Whether the tree holds such a phrase. */
const holdsPairable = (node: Node): boolean =>
  pairable(node) ||
  ((node.type === 'and' || node.type === 'or') && node.children.some(holdsPairable)) ||
  (node.type === 'not' && holdsPairable(node.child));

/**
 * A phrase by its word pairs (pairedTsQuery), as two conditions ORed rather than one tsquery:
 * a phrase operator anywhere in a tsquery makes GIN recheck every match in its document (read
 * and decompressed from the table), while a pair lexeme alone is answered from its posting list.
 * As two conditions the planner ORs two GIN bitmaps, and only the unpaired documents' matches
 * are rechecked. A document is either paired or unpaired (migration 10), so the two never overlap.
 */
function pairedCondition(node: Node): Sql {
  const { paired, unpaired } = pairedTsQuery(node)!;
  return sql`(d.doc @@ ${paired}::tsquery OR d.doc @@ ${unpaired}::tsquery)`;
}

/**
 * `q` as a condition on the side-index row `d`, or null when q holds nothing searchable. One
 * tsquery when it can be (the GIN index answers it whole); a query with `thread:` or `is:`
 * terms, which are not in the index, becomes SQL (`bySql`) over a tsquery per leaf, `thread`
 * (engine/postgres/threads.ts) and the read flag. With `pairs` (every document has its word
 * pairs: search_state), a phrase is matched by its pairs (pairedCondition) and the rest of the
 * tree by tsqueries around it; `bySql` stays false, as the whole still ranks by one tsquery.
 */
export function compileMatch(
  q: string,
  thread: (id: number) => Sql,
  pairs = false,
): { sql: Sql; hasThread: boolean; bySql: boolean } | null {
  const root = parseQuery(q);
  if (!root) return null;
  const hasThread = holds(root, 'thread');
  const bySql = hasThread || holds(root, 'read');
  const paired = pairs && holdsPairable(root);
  if (!bySql && !paired) {
    return { sql: sql`d.doc @@ ${tsquery(root)}::tsquery`, hasThread: false, bySql: false };
  }
  const toSql = (node: Node): Sql => {
    // A subtree with neither a thread:, an is: nor a paired phrase stays one tsquery.
    if (!holds(node, 'thread') && !holds(node, 'read') && !(paired && holdsPairable(node)))
      return sql`d.doc @@ ${tsquery(node)}::tsquery`;
    switch (node.type) {
      case 'thread':
        return thread(node.id);
      case 'read':
        return readCondition(node.read);
      case 'not':
        return sql`NOT (${toSql(node.child)})`;
      case 'and':
      case 'or':
        return join(
          node.children.map((c) => sql`(${toSql(c)})`),
          node.type === 'and' ? ' AND ' : ' OR ',
        );
      default:
        return pairedCondition(node); // only a pairable phrase is left here
    }
  };
  // Parenthesised whole: callers AND it with the filters, and a top-level OR must stay inside.
  return { sql: sql`(${toSql(root)})`, hasThread, bySql };
}

/** `q` as tsquery input; null when q holds nothing searchable (nothing can match). */
export function compileTsQuery(q: string): string | null {
  const root = parseQuery(q);
  return root ? tsquery(root) : null;
}

// ---------------------------------------------------------------------------------------------
// Keeping the index current

/**
 * Ids a search catches up itself before it answers (engine/postgres/search.ts). Past it, with the
 * builder thread at work, the search is refused with SearchIndexBuilding: fifty batches are ten to
 * twenty seconds on a 2-core machine, within a search's budget; a first start on a million
 * messages is half an hour.
 */
export const INLINE_CATCH_UP_MAX = 10_000;

/** Messages per catch-up transaction: bounded memory (bodies are up to 1 MB) and lock time. */
export const CATCH_UP_BATCH = 200;
/**
 * Ids this far below the watermark are looked at again by each catch-up: a message whose
 * transaction committed after a higher id had already been indexed is still found.
 */
export const RECHECK_WINDOW = 1000;
const LOCK = 'mail_archive_gateway.search_index';

/** A message as the index reads it: the document's text, selected in IndexedText's shape. */
type SourceRow = IndexedText & { id: number };

export const INDEX_LOCK = LOCK;

/** Builds and inserts the documents of these messages (rows already there are kept). */
async function insertDocuments(query: Query, ids: readonly number[]): Promise<void> {
  const rows = await query<SourceRow>(
    sql`SELECT e."Id" AS id, e."Subject" AS subject, e."Body" AS body, e."From" AS "from", e."To" AS "to",
               e."Cc" AS cc, e."Bcc" AS bcc,
               COALESCE((SELECT string_agg(a."FileName", ' ' ORDER BY a."Id") FROM ${T.attachments} a
                 WHERE a."ArchivedEmailId" = e."Id"), '') AS filenames,
               e."HasAttachments" OR EXISTS (SELECT 1 FROM ${T.attachments} a WHERE a."ArchivedEmailId" = e."Id"
                 AND lower(split_part(a."ContentType", ';', 1)) <> ALL(${[...NOT_A_FILE]}::text[]))
                 AS "hasAttachments",
               COALESCE((SELECT string_agg(t.text, E'\n' ORDER BY t.content_id) FROM ${TEXTS} t
                 WHERE t.status = 'ok' AND t.content_id IN (SELECT COALESCE(a."AttachmentContentId", -a."Id")
                   FROM ${T.attachments} a WHERE a."ArchivedEmailId" = e."Id")), '') AS "attachmentText"
          FROM ${T.emails} e WHERE e."Id" = ANY(${[...ids]}::int[])`,
  );
  if (rows.length === 0) return;
  await insertBuilt(
    query,
    rows.map((r) => r.id),
    rows.map(documentBinary),
  );
}

/**
 * Indexes these messages again (attachment text arrived for them), in the caller's transaction.
 * Takes the catch-up's lock, so a catch-up cannot insert a document read before the text.
 * Messages above the watermark are left to the catch-up, which will read the text itself.
 */
export async function reindexDocuments(query: Query, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await query(sql`SELECT pg_advisory_xact_lock(hashtext(${LOCK}))`);
  const kept = await query<{ id: number }>(
    sql`DELETE FROM ${DOCS} WHERE email_id = ANY(${[...ids]}::int[]) RETURNING email_id AS id`,
  );
  const [state] = await query<{ through: number }>(sql`SELECT indexed_through AS through FROM ${STATE}`);
  const redo = new Set(kept.map((r) => r.id));
  for (const id of ids) if (id <= state!.through) redo.add(id);
  await insertDocuments(query, [...redo]);
}

async function indexBatch(
  query: Query,
  after: number,
  limit: number,
): Promise<{ seen: number; indexed: number; last: number }> {
  await query(sql`SELECT pg_advisory_xact_lock(hashtext(${LOCK}))`);
  const { ids, missing } = await nextBatch(query, DOCS, after, limit);
  if (missing.length > 0) await insertDocuments(query, missing);
  const last = ids.at(-1) ?? after;
  await query(sql`UPDATE ${STATE} SET indexed_through = greatest(indexed_through, ${last}) WHERE id = 1`);
  return { seen: ids.length, indexed: missing.length, last };
}

/**
 * Indexes every message not yet in the search index, in batches on the primary; returns how
 * many it indexed. Safe to call from several processes at once (they take turns per batch).
 * `onBatch` hears after each batch (the CLI's `index` command shows progress with it).
 * The import writer calls it after each batch; a search calls it when the index is behind.
 */
export async function catchUpSearchIndex(
  ctx: PgContext,
  onBatch?: (progress: { indexed: number; through: number }) => void,
): Promise<number> {
  const [state] = await ctx.primary<{ through: number }>(sql`SELECT indexed_through AS through FROM ${STATE}`);
  let after = Math.max(0, state!.through - RECHECK_WINDOW);
  let indexed = 0;
  for (;;) {
    const { seen, indexed: n, last } = await ctx.transaction((query) => indexBatch(query, after, CATCH_UP_BATCH));
    indexed += n;
    after = last;
    onBatch?.({ indexed, through: last });
    if (seen < CATCH_UP_BATCH) break;
  }
  // Fresh statistics let the planner tell a common word (walk the date index) from a rare one
  // (read the GIN index) on a newly filled index; autovacuum keeps them current afterwards.
  if (indexed >= 1000) await ctx.primary(sql`ANALYZE ${DOCS}`);
  return indexed;
}

/**
 * Before a search: is a message in ArchivedEmails above the watermark? Checked where the
 * search will read (a replica shows the index as of its replay); when behind, the primary
 * catches up. Without replicas the search then sees every message that existed when it began.
 */
export async function ensureSearchIndex(ctx: PgContext): Promise<{ pairs: boolean }> {
  const [state] = await ctx.read<{ top: number; through: number; pairs: boolean }>(
    sql`SELECT coalesce((SELECT max("Id") FROM ${T.emails}), 0) AS top, s.indexed_through AS through,
               s.pairs_through >= s.pairs_goal AS pairs
          FROM ${STATE} s`,
  );
  const { top, through } = state!;
  if (top > through) {
    // Far behind, with the index builder thread catching up (it runs wherever the in-memory index
    // is on): answered at once, not after the search's time budget (SearchIndexBuilding).
    if (ctx.searchIndexOn && top - through > INLINE_CATCH_UP_MAX) throw new SearchIndexBuilding(through, top);
    await catchUpSearchIndex(ctx);
  }
  // Whether every document has its word pairs (migration 10; addWordPairs brings older ones).
  return { pairs: state!.pairs };
}

/** Documents given their word pairs per transaction by addWordPairs. */
const PAIRS_BATCH = 1000;

/**
 * Gives the documents written before migration 10 their word pairs (its trigger recomputes a
 * document on update), in id order, a batch per transaction, until `deadline` (performance.now()
 * milliseconds) or the end; returns whether every document has them. Safe to run from several
 * processes at once: each batch takes the catch-up's lock and starts where the last one ended.
 */
export async function addWordPairs(
  ctx: PgContext,
  deadline = Infinity,
  onBatch?: (through: number, goal: number) => void,
): Promise<boolean> {
  for (;;) {
    const done = await ctx.transaction(async (query) => {
      await query(sql`SELECT pg_advisory_xact_lock(hashtext(${LOCK}))`);
      const [state] = await query<{ through: number; goal: number }>(
        sql`SELECT pairs_through AS through, pairs_goal AS goal FROM ${STATE}`,
      );
      if (state!.through >= state!.goal) return true;
      const [batch] = await query<{ last: number | null }>(
        sql`WITH batch AS (SELECT email_id FROM ${DOCS} WHERE email_id > ${state!.through} AND email_id <= ${state!.goal}
                             ORDER BY email_id LIMIT ${PAIRS_BATCH}),
                 done AS (UPDATE ${DOCS} d SET doc = d.doc FROM batch b WHERE d.email_id = b.email_id RETURNING d.email_id)
            SELECT max(email_id) AS last FROM done`,
      );
      const last = batch!.last ?? state!.goal; // nothing left up to the goal
      await query(sql`UPDATE ${STATE} SET pairs_through = ${last} WHERE id = 1`);
      onBatch?.(last, state!.goal);
      return last >= state!.goal;
    });
    if (done) return true;
    if (performance.now() >= deadline) return false;
  }
}

/** Removes index rows of messages deleted from ArchivedEmails (they are never shown anyway). */
export async function pruneSearchIndex(ctx: PgContext): Promise<number> {
  const rows = await ctx.primary<{ n: number }>(
    sql`WITH gone AS (DELETE FROM ${DOCS} d WHERE NOT EXISTS
          (SELECT 1 FROM ${T.emails} e WHERE e."Id" = d.email_id) RETURNING 1)
        SELECT count(*)::int AS n FROM gone`,
  );
  return rows[0]!.n;
}
