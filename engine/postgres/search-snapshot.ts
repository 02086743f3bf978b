// The in-memory search index (engine/search/bitsets, ADR 13) serving a PostgreSQL archive
// (ADR 22). This file is the PostgreSQL side of it: it feeds the store-neutral index rows read
// in one exported database snapshot, answers the terms the index does not keep from the side
// index (search-index.ts) in that same snapshot, and reads each page there too, so a page and
// its totalItems always describe one state of the database.
//
// Building: in a REPEATABLE READ transaction whose snapshot is exported (pg_export_snapshot),
// every message's date, account, folder and direction, each side-index document's lexemes
// (tsvector_to_array), and the other sort orders as SQL gives them. The transaction stays open
// while the snapshot serves: a search imports it (SET TRANSACTION SNAPSHOT) and reads exactly
// what the index describes. Refreshing: a new exported snapshot, every message's attributes read
// again (a folder move, a reassignment or a delete is then in the next snapshot), and only the
// documents not yet in the index fetched and added. Searches check one thing against the present:
// a message with a higher id than the snapshot knows (new mail) sends them to SQL until the next
// refresh, so new mail is found at once, as before.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { EmailSummaryDto, PagedResult } from '../../shared/dto.js';
import type { SearchIndexInfo, SearchQuery, Viewer } from '../../shared/jobs.js';
import { parseQuery, type Node } from '../../shared/query-language.js';
import { RELEVANCE_WINDOW } from '../../shared/search-input.js';
import { compileSearch } from '../search/compile.js';
import { countMatches, leafKey, matchSet } from '../search/bitsets/count.js';
import { pageIds, rankedPageIds, relevanceWindow } from '../search/bitsets/page.js';
import { needsSubjects, rankedSets, termsFromSets } from '../search/bitsets/ranked.js';
import { grownSet, grownTerms, keptTerms, Postings, toTermSet, type PostingLists } from '../search/bitsets/rows.js';
import {
  DOCS_KEY,
  KEY_POSITIONS,
  ORDERS,
  pack,
  setBytes,
  Snapshot,
  termKey,
  wordsFor,
  type OrderKey,
  type TermSet,
} from '../search/bitsets/snapshot.js';
import { StaleSnapshot, type Leaf, type LeafSource } from '../search/bitsets/source.js';
import { MAX_TAIL_PREFIX, type TailCost } from '../search/bitsets/tails.js';
import { MAX_PAIR_WORDS, PAIR_SHARE, pairKey, pairsWithin, pairWordKey } from '../search/bitsets/pairs.js';
import { rankedLeaves, rankWindow } from '../search/relevance.js';
import { accountTag, directionTag, folderTag } from '../search/tags.js';
import { tokenize } from '../search/unicode61.js';
import { pageOf, toSummary, type RawSummary } from '../rules/summary.js';
import { SORT_COLUMNS, summaryColumns, T } from './columns.js';
import { CONNECT_TIMEOUT_MS } from './connect.js';
import { DOCS, pairedTsQuery, tagTsQuery, tsquery } from './search-index.js';
import { guessPresent, learnPresent, presentSql, sameAnswerBasis, type Present } from './search-present.js';
import { raw, reused, sql, type Sql } from './sql.js';
import { snapshotRows } from './snapshot-rows.js';
import type { PgContext, SnapshotSend } from './context.js';
import { narrowedToGrant } from '../rules/oauth.js';

// ---------------------------------------------------------------------------------------------
// Building and refreshing (the builder thread, search-snapshot-builder.ts)

export interface PgBuildOptions {
  /** A word is kept when at least this many messages hold it (default: SIDE_INDEX_MIN_DOCS). */
  minDocs?: number;
  /** Upper bound for the kept sets, in bytes. */
  maxBytes?: number;
  /** Keep a prefix tail when asking for its words one by one would cost more than this (µs). */
  tailMinCostUs?: number;
  /** Build whole even where `old` could be grown (it was built by an older rule of what to keep). */
  whole?: boolean;
}

/** What a refresh needs of the previous one, beside its snapshot. */
export interface PgSnapshotState {
  snapshot: Snapshot;
  /** The messages in date order with their attributes, to tell whether anything changed. */
  rows: MessageRows;
  /** Ids whose side-index document is in the kept sets. */
  indexed: Set<number>;
  /** Messages at the last full build: the choice of kept words is redone at 1.25 times that. */
  fullBuildRows: number;
  /** This state came from a full build (not from `old` grown). */
  full?: boolean;
  /**
   * The least messages a kept word had at the last full build (minDocs); undefined for a saved
   * file written before the rule was recorded, whose builds kept 1 in 1,000.
   */
  keptFrom?: number;
  /**
   * What the tables the index reads summed to at the last refresh that read them (fingerprint());
   * undefined for a state loaded from a file, whose first refresh compares row by row.
   */
  fingerprint?: string;
}

/**
 * The messages' attributes and the side index's documents, each summed on the server as a 64-bit
 * hash per row, seeded at random per process: a refresh that finds the same sums (and the same
 * pairs) has nothing to read. Mail Archiver writes without telling us, and the write counters are
 * only a hint, so a refresh must look at every row; summing them where they are costs the server
 * a scan, where reading them cost the scan, a sort, and the parsing of every row in this thread
 * (at 1,000,000 messages seconds, once a minute at least, on a server nobody writes to). A
 * change goes unseen only when the hashes of what changed sum to the same as before, which
 * nobody can aim at without the seed: about one chance in 2^64 by accident.
 */
const FINGERPRINT_SEED = randomBytes(8).readBigInt64BE().toString();

async function fingerprint(client: pg.Client): Promise<string> {
  const { rows } = await client.query<{ sums: string }>({
    // A record's hash is a fixed linear mix of its columns' hashes, so their sum over rows would
    // be the sum of each column's apart (two messages swapping folders would not change it):
    // each row's hash is hashed once more.
    text: `SELECT (SELECT count(*) || ':' || coalesce(sum(hashint8extended(hash_record_extended(
                           ROW(e."Id", e."SentDate", e."MailAccountId", e."FolderName", e."IsOutgoing"), $1::int8), $1::int8)), 0)
                     FROM mail_archiver."ArchivedEmails" e) || ' / ' ||
                  (SELECT count(*) || ':' || coalesce(sum(hashint4extended(d.email_id, $1::int8)), 0)
                     FROM mail_archive_gateway.search_docs d) AS sums`,
    values: [FINGERPRINT_SEED],
  });
  return rows[0]!.sums;
}

interface MessageRows {
  ids: Int32Array;
  /** SentDate as microseconds of its wall-clock time (the store's own date values). */
  sent: Float64Array;
  account: Int32Array;
  folder: Array<string | null>;
  outgoing: Uint8Array;
}

/**
 * A word, subject word or tag is kept in memory when at least this many messages hold it: far
 * rarer ones than on SQLite (1 in 1,000 there, at least 256), because the side index answers a
 * word it does not keep at a far higher price than FTS5. FTS5 reads one compact doclist; the side
 * index needs a round trip of its own within the search and a heap visit per message to read its
 * id (a word in 474 messages at 1,000,000: 4.2 ms of server time, 0.2 ms of it in GIN). Keeping
 * it costs 4 bytes per message: at 1,000,000 messages of the benchmark corpus, the words in 16 to
 * 1,000 messages hold at most 15.5 million postings (59 MiB); as built, 12 MiB more than SQLite's
 * 395 MiB (docs/performance.md). The memory budget
 * (maxBytes) still bounds the whole: sets are chosen commonest first, so when it binds the rarest
 * words go back to the side index, where they cost least. The floor keeps the many words of one
 * or a few messages (message ids, numbers, codes) out of the directory of kept terms.
 */
export const SIDE_INDEX_MIN_DOCS = 16;

/** Attribute tags (account, folder, direction) are read from ArchivedEmails at every refresh. */
const ATTRIBUTE_TAG = /^t:(a\d+|din|dout|f[0-9a-z]+)$/;
const DOC_BATCH = 2000;
const DEFAULT_MAX_BYTES = 768 * 1024 * 1024;

/** SentDate as the index stores it: microseconds of the naive (wall-clock) timestamp. */
const SENT_KEY = raw(`(extract(epoch FROM e."SentDate") * 1000000)::float8`);

async function readRows(client: pg.Client): Promise<MessageRows> {
  const { rows } = await client.query<[number, number, number, string | null, boolean]>({
    text: `SELECT e."Id", ${SENT_KEY.toQuery().text}, e."MailAccountId", e."FolderName", e."IsOutgoing"
             FROM mail_archiver."ArchivedEmails" e ORDER BY e."SentDate", e."Id"`,
    rowMode: 'array',
  });
  const n = rows.length;
  const out: MessageRows = {
    ids: new Int32Array(n),
    sent: new Float64Array(n),
    account: new Int32Array(n),
    folder: new Array<string | null>(n),
    outgoing: new Uint8Array(n),
  };
  rows.forEach(([id, sent, account, folder, outgoing], i) => {
    out.ids[i] = id;
    out.sent[i] = sent;
    out.account[i] = account;
    out.folder[i] = folder;
    out.outgoing[i] = outgoing ? 1 : 0;
  });
  return out;
}

const sameRows = (a: MessageRows, b: MessageRows) =>
  a.ids.length === b.ids.length &&
  a.ids.every((id, i) => id === b.ids[i]) &&
  a.sent.every((s, i) => s === b.sent[i]) &&
  a.account.every((x, i) => x === b.account[i]) &&
  a.outgoing.every((x, i) => x === b.outgoing[i]) &&
  a.folder.every((x, i) => x === b.folder[i]);

const sameIds = (a: MessageRows, b: MessageRows) =>
  a.ids.length === b.ids.length && a.ids.every((id, i) => id === b.ids[i]);

async function readOrders(
  client: pg.Client,
  sortColumns: Record<OrderKey, string>,
): Promise<Record<OrderKey, Int32Array>> {
  const orders = {} as Record<OrderKey, Int32Array>;
  for (const o of ORDERS) {
    const { rows } = await client.query<[number]>({
      text: `SELECT e."Id" FROM mail_archiver."ArchivedEmails" e ORDER BY ${sortColumns[o]}, e."Id"`,
      rowMode: 'array',
    });
    orders[o] = Int32Array.from(rows, (r) => r[0]);
  }
  return orders;
}

/**
 * Present (an empty set) when every side-index document in the snapshot has its word pairs
 * (migration 10): a phrase is then asked of the side index by its pairs (leafSql).
 */
export const PAIRS_KEY = 'x:pairs';
/** Keys a refresh sets anew each time, never grown from the old snapshot. */
const setAnew = (key: string) => ATTRIBUTE_TAG.test(key) || key === DOCS_KEY || key === PAIRS_KEY;

/** The field letters of the default columns' lexemes (search-index.ts FIELD): subject, body, from, to, cc, bcc. */
const DEFAULT_FIELDS = new Set(['s', 'b', 'f', 't', 'c', 'k']);

/**
 * Adds one document's lexemes to the postings: `d:` for a word of the default columns, `s:` for
 * the subject, `t:` for a hidden tag (`g:` lexemes). File names and attachment text stay with
 * the side index (they are asked of it, as FTS5 is asked on SQLite).
 */
export function addDocument(
  id: number,
  lexemes: string[],
  add: (key: string, id: number) => void,
  vocab: Set<string>,
): void {
  const seen = new Set<string>();
  for (const lex of lexemes) {
    const field = lex[0]!;
    const word = lex.slice(2);
    if (field === 'g') add(termKey('t', word), id);
    else if (DEFAULT_FIELDS.has(field)) {
      if (field === 's') add(termKey('s', word), id);
      if (!seen.has(word)) {
        seen.add(word);
        vocab.add(word);
        add(termKey('d', word), id);
      }
    }
  }
}

/**
 * Reads the lexemes of these documents in batches, as they are in the transaction's snapshot:
 * the default columns' words and the tags (LEXEME_FIELDS), not the word pairs of migration 10
 * (upper case, and `_:unpaired`), which the sets never hold and which are more than half of a
 * document's lexemes (measured: half the time to read 5,000 documents with them left out in
 * SQL), nor file names and attachment text, which addDocument passes over.
 */
async function* documents(client: pg.Client, ids: number[]): AsyncGenerator<[number, string[]]> {
  for await (const { rows } of inBatches(ids, (batch) =>
    client.query<[number, string]>({
      text: `SELECT email_id, array_to_string(ARRAY(SELECT l FROM unnest(tsvector_to_array(doc)) l
                                                   WHERE left(l, 1) IN (${LEXEME_FIELDS})), ' ')
               FROM mail_archive_gateway.search_docs WHERE email_id = ANY($1::int[])`,
      values: [batch],
      rowMode: 'array',
    }),
  ))
    for (const [id, lexemes] of rows) yield [id, lexemes === '' ? [] : lexemes.split(' ')];
}

/**
 * The fields whose lexemes a build reads: the default columns' and the hidden tags'. Their words
 * are the tokenizer's (unicode61.ts), which never hold a space, and the tags are letters and
 * digits; so a document's lexemes come as one string split here, for a fraction of the time
 * that parsing a text array took (a string made per character run, the largest part of this
 * thread's time after the sets themselves).
 */
const LEXEME_FIELDS = [...DEFAULT_FIELDS, 'g'].map((f) => `'${f}'`).join(', ');

/**
 * `query` for each batch of DOC_BATCH ids, the next batch asked before this one is handed over:
 * the server reads and unpacks documents while this thread adds the last ones to its sets, where
 * each waited for the other (a full build at 100,000 messages spent about half its time waiting
 * for the server).
 */
async function* inBatches<R>(ids: number[], query: (batch: number[]) => Promise<R>): AsyncGenerator<R> {
  let next = ids.length > 0 ? query(ids.slice(0, DOC_BATCH)) : undefined;
  try {
    for (let i = DOC_BATCH; next; i += DOC_BATCH) {
      const current = await next;
      next = i < ids.length ? query(ids.slice(i, i + DOC_BATCH)) : undefined;
      yield current;
    }
  } finally {
    // Left early (the build failed): the batch asked ahead must not become an unhandled rejection.
    next?.catch(() => {});
  }
}

/**
 * A full build's postings from side-index documents: the same terms and lists as addDocument
 * gives, for a fraction of its time. Each distinct lexeme is parsed once into the terms it adds to
 * (its `s:` or `t:` term, its word's `d:` term, by number), so a lexeme costs one lookup of its
 * string, and its ids go to lists kept by term number; a word is counted once per document by a
 * stamp. addDocument made three strings per lexeme and hashed
 * each, about two thirds of a PostgreSQL build's time in this thread. Terms come out in the order
 * addDocument adds them first, which keptTerms's order follows for words of equal counts.
 */
export class DocumentPostings implements PostingLists {
  readonly vocab = new Set<string>();
  /** Per lexeme: its `s:`/`t:` term and its word's `d:` term (-1: none). */
  readonly #lexemes = new Map<string, { own: number; word: number }>();
  readonly #words = new Map<string, number>();
  readonly #keys: string[] = [];
  /** Each term's ids, by the term's number. */
  readonly #lists = new Postings<number>();
  /** Per term: the last document that added to it (a word counts once per document). */
  #stamps = new Int32Array(1024);
  #document = 0;
  #byKey: Map<string, number> | undefined;

  add(id: number, lexemes: readonly string[]): void {
    const stamp = ++this.#document;
    for (const lexeme of lexemes) {
      const terms = this.#lexemes.get(lexeme) ?? this.#lexeme(lexeme);
      if (terms.own >= 0) this.#lists.add(terms.own, id);
      const word = terms.word;
      if (word >= 0 && this.#stamps[word] !== stamp) {
        this.#stamps[word] = stamp;
        this.#lists.add(word, id);
      }
    }
  }

  keys(): Iterable<string> {
    return this.#keys;
  }

  docs(key: string): number {
    return this.#lists.docs(this.#term(key));
  }

  ids(key: string): Int32Array {
    return this.#lists.ids(this.#term(key));
  }

  /** A lexeme seen for the first time: its terms, made in the order addDocument adds to them. */
  #lexeme(lexeme: string): { own: number; word: number } {
    const field = lexeme[0]!;
    const word = lexeme.slice(2);
    const terms = { own: -1, word: -1 };
    if (field === 'g') terms.own = this.#newTerm(termKey('t', word));
    else if (DEFAULT_FIELDS.has(field)) {
      if (field === 's') terms.own = this.#newTerm(termKey('s', word));
      let term = this.#words.get(word);
      if (term === undefined) {
        this.#words.set(word, (term = this.#newTerm(termKey('d', word))));
        this.vocab.add(word);
      }
      terms.word = term;
    }
    this.#lexemes.set(lexeme, terms);
    return terms;
  }

  #newTerm(key: string): number {
    const term = this.#keys.length;
    this.#keys.push(key);
    if (term === this.#stamps.length) {
      const grown = new Int32Array(term * 2);
      grown.set(this.#stamps);
      this.#stamps = grown;
    }
    return term;
  }

  /** A term's number; -1, which holds nothing, for a term never added. */
  #term(key: string): number {
    this.#byKey ??= new Map(this.#keys.map((k, i) => [k, i]));
    return this.#byKey.get(key) ?? -1;
  }
}

/**
 * Common word pairs (pairs.ts) from the side index's own positions: for each field of each
 * document, two pair words at positions p and p + 1 are a pair, which is exactly what the
 * tsquery `'b:w1' <-> 'b:w2'` matches (positions as stored: clamped, at most 256 per lexeme).
 * Returns each pair's ids (ascending by document order given).
 */
async function pairIds(client: pg.Client, pairWords: readonly string[], ids: number[]): Promise<Postings> {
  const out = new Postings();
  if (pairWords.length === 0 || ids.length === 0) return out;
  const index = new Map(pairWords.map((w, i) => [w, i]));
  const lexemes = pairWords.flatMap((w) => [...DEFAULT_FIELDS].map((f) => `${f}:${w}`));
  for await (const { rows } of inBatches(ids, (batch) =>
    client.query<[number, string, number[]]>({
      text: `SELECT d.email_id, u.lexeme, u.positions FROM mail_archive_gateway.search_docs d,
                    unnest(d.doc) AS u(lexeme, positions, weights)
              WHERE d.email_id = ANY($1::int[]) AND u.lexeme = ANY($2::text[])`,
      values: [batch, lexemes],
      rowMode: 'array',
    }),
  )) {
    // Per document and field: position -> pair word.
    const docs = new Map<number, Map<string, Map<number, number>>>();
    for (const [id, lexeme, positions] of rows) {
      let fields = docs.get(id);
      if (!fields) docs.set(id, (fields = new Map()));
      const field = lexeme[0]!;
      let at = fields.get(field);
      if (!at) fields.set(field, (at = new Map()));
      for (const p of positions ?? []) at.set(p, index.get(lexeme.slice(2))!);
    }
    for (const [id, fields] of docs) {
      const seen = new Set<string>();
      for (const at of fields.values())
        for (const [p, first] of at) {
          const second = at.get(p + 1);
          if (second === undefined) continue;
          const key = pairKey(pairWords[first]!, pairWords[second]!);
          if (!seen.has(key)) {
            seen.add(key);
            out.add(key, id);
          }
        }
    }
  }
  return out;
}

/** The account, folder and direction tags of every message, always kept whole. */
function attributeTerms(rows: MessageRows, words: number): Array<{ key: string; set: TermSet }> {
  const lists = new Postings();
  for (let i = 0; i < rows.ids.length; i++) {
    const id = rows.ids[i]!;
    lists.add(termKey('t', accountTag(rows.account[i]!)), id);
    lists.add(termKey('t', directionTag(rows.outgoing[i] === 1)), id);
    const folder = rows.folder[i];
    if (folder !== null && folder !== undefined) lists.add(termKey('t', folderTag(folder)), id);
  }
  return [...lists.keys()].map((key) => ({ key, set: toTermSet(lists.ids(key), words) }));
}

/**
 * Builds or refreshes the snapshot in `client`'s open REPEATABLE READ transaction (the caller
 * exported its snapshot). Returns the new state, or the old one unchanged (same buffer) when
 * nothing the index holds has changed.
 */
async function refreshPgSnapshot(
  client: pg.Client,
  sortColumns: Record<OrderKey, string>,
  old: PgSnapshotState | undefined,
  options: PgBuildOptions = {},
): Promise<PgSnapshotState> {
  const started = performance.now();
  const [{ paired }] = (
    await client.query<{ paired: boolean }>(
      'SELECT pairs_through >= pairs_goal AS paired FROM mail_archive_gateway.search_state',
    )
  ).rows as [{ paired: boolean }];
  const samePairs = old !== undefined && (old.snapshot.term(PAIRS_KEY) !== undefined) === paired;
  const print = await fingerprint(client);
  if (old && !options.whole && samePairs && old.fingerprint === print) return old;
  const rows = await readRows(client);
  const maxId = rows.ids.reduce((m, id) => Math.max(m, id), 0);
  const words = wordsFor(maxId);
  const universe = new Uint32Array(words);
  for (const id of rows.ids) universe[id >>> 5]! |= 1 << (id & 31);
  const withDocs = (
    await client.query<[number]>({ text: 'SELECT email_id FROM mail_archive_gateway.search_docs', rowMode: 'array' })
  ).rows
    .map((r) => r[0])
    .filter((id) => id <= maxId && (universe[id >>> 5]! & (1 << (id & 31))) !== 0);
  const full =
    !old || options.whole === true || rows.ids.length > old.fullBuildRows * 1.25 || old.snapshot.words > words * 2;
  const fresh = full ? withDocs : withDocs.filter((id) => !old.indexed.has(id));
  if (old && !full && fresh.length === 0 && samePairs && sameRows(rows, old.rows)) {
    old.fingerprint = print; // what the next refresh compares with: these rows, as summed now
    return old;
  }

  const postings = new Postings();
  const fullPostings = new DocumentPostings();
  const vocab = full ? fullPostings.vocab : new Set(old.snapshot.vocab);
  const keptBefore = (key: string) => !full && old.snapshot.term(key) !== undefined;
  // A refresh adds to the terms kept before, and a word not kept to the tails of its prefixes (as
  // engine/sqlite/index-extend.ts); a full build collects every term (DocumentPostings).
  const add = (key: string, id: number) => {
    if (keptBefore(key)) postings.add(key, id);
    else if (key.startsWith('d:')) {
      const chars = [...key.slice(2)];
      for (let l = 1; l <= Math.min(MAX_TAIL_PREFIX, chars.length); l++) {
        const tail = termKey('p', chars.slice(0, l).join(''));
        if (keptBefore(tail)) postings.add(tail, id);
      }
    }
  };
  for await (const [id, lexemes] of documents(
    client,
    [...fresh].sort((a, b) => a - b),
  ))
    if (full) fullPostings.add(id, lexemes);
    else addDocument(id, lexemes, add, vocab);

  const budget = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const minDocs = options.minDocs ?? SIDE_INDEX_MIN_DOCS;
  let terms: Array<{ key: string; set: TermSet }>;
  if (full) {
    terms = keptTerms({
      postings: fullPostings,
      vocab,
      words,
      minDocs,
      budget,
      ...(options.tailMinCostUs !== undefined ? { tailMinCostUs: options.tailMinCostUs } : {}),
      tailCost: SIDE_INDEX_TAIL_COST,
    });
  } else {
    const additions = new Map<string, number[]>();
    for (const key of postings.keys())
      additions.set(
        key,
        [...postings.ids(key)].sort((a, b) => a - b),
      );
    terms = grownTerms(old.snapshot, additions, words, setAnew);
  }
  // Common word pairs: those of as many pair words as fit (a pair not kept occurs nowhere), as on SQLite.
  const pairWords = full
    ? terms
        .filter((t) => t.key.startsWith('d:') && t.set.docs * PAIR_SHARE >= rows.ids.length)
        .sort((a, b) => b.set.docs - a.set.docs)
        .slice(0, MAX_PAIR_WORDS)
        .map((t) => t.key.slice(2))
    : old.snapshot.termKeys.filter((k) => k.startsWith('w:')).map((k) => k.slice(2));
  const pairs = await pairIds(
    client,
    pairWords,
    [...fresh].sort((a, b) => a - b),
  );
  if (full) {
    const sets = [...pairs.keys()].map((key) => ({ key, set: toTermSet(pairs.ids(key), words) }));
    const bytes = terms.reduce((sum, t) => sum + setBytes(t.set), 0);
    const markers = pairWords.map((w) => ({ key: pairWordKey(w), set: toTermSet([], words) }));
    terms.push(...pairsWithin(pairWords, [...markers, ...sets], budget - bytes));
  } else {
    const grown = new Map(terms.map((t, i) => [t.key, i]));
    for (const key of pairs.keys()) {
      const ids = [...pairs.ids(key)].sort((a, b) => a - b);
      const at = grown.get(key);
      if (at === undefined)
        terms.push({ key, set: toTermSet(ids, words) }); // occurred nowhere before
      else terms[at] = { key, set: grownSet(terms[at]!.set, ids, words) };
    }
  }
  terms = terms.filter((t) => !setAnew(t.key));
  terms.push(...attributeTerms(rows, words));
  terms.push({ key: DOCS_KEY, set: toTermSet(withDocs, words) });
  if (paired) terms.push({ key: PAIRS_KEY, set: toTermSet([], words) });

  const sent = new Float64Array(maxId + 1).fill(Number.NaN);
  rows.ids.forEach((id, i) => (sent[id] = rows.sent[i]!));
  const orders = old && sameIds(rows, old.rows) ? old.snapshot.orders : await readOrders(client, sortColumns);
  const buffer = pack({
    maxId,
    rewrites: 0,
    sent,
    keys: Float64Array.from(rows.ids, (_, i) => i),
    ids: rows.ids,
    orders,
    universe,
    terms,
    vocab,
    buildMs: performance.now() - started,
    keyKind: KEY_POSITIONS,
  });
  const indexed = full ? new Set(withDocs) : new Set([...old.indexed, ...fresh]);
  return {
    snapshot: new Snapshot(buffer),
    rows,
    indexed,
    fullBuildRows: full ? rows.ids.length : old.fullBuildRows,
    full,
    ...(full ? { keptFrom: minDocs } : old.keptFrom !== undefined ? { keptFrom: old.keptFrom } : {}),
    fingerprint: print,
  };
}

/** A snapshot posted with its token; release() ends the exporting transaction. */
export interface ExportedSnapshot {
  state: PgSnapshotState;
  token: string;
  release(): Promise<void>;
}

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: url,
    application_name: 'mail-archive-gateway search index',
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // The exporting transaction sits idle while its snapshot serves; nothing JIT-compiles here.
    options: '-c jit=off -c work_mem=64MB -c idle_in_transaction_session_timeout=0 -c statement_timeout=0',
  });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/**
 * Exports a database snapshot from a transaction that reads nothing (so it holds no lock on
 * Mail Archiver's tables, only the snapshot) and builds or refreshes the index in a second
 * transaction that imports it and ends. The first stays open until release().
 */
export async function exportSnapshot(
  url: string,
  old: PgSnapshotState | undefined,
  options: PgBuildOptions = {},
): Promise<ExportedSnapshot> {
  const exporter = await connect(url);
  let reader: pg.Client | undefined;
  try {
    await exporter.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const token = (await exporter.query<{ token: string }>('SELECT pg_export_snapshot() AS token')).rows[0]!.token;
    reader = await connect(url);
    await reader.query(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT '${token}'`);
    const state = await refreshPgSnapshot(reader, SORT_COLUMNS, old, options);
    await reader.query('COMMIT');
    return { state, token, release: () => exporter.end().catch(() => {}) };
  } catch (err) {
    await exporter.end().catch(() => {});
    throw err;
  } finally {
    await reader?.end().catch(() => {});
  }
}

// ---------------------------------------------------------------------------------------------
// Answering: the terms the snapshot does not keep, from the side index, in the same snapshot

/**
 * Side-index answers that took at least this long, per snapshot and thread (LRU), and per token:
 * the builder posts an unchanged snapshot again with each refresh's token, and an answer is the
 * side index as that token's transaction saw it.
 */
const leafCaches = new WeakMap<Snapshot, { token: string; answers: Map<string, number[]> }>();
/**
 * A rare word asked of the side index: a GIN lookup, then a heap visit per message to read its id
 * (measured at 100,000 messages: the 120 rare words under `tast`, 6,230 messages, 13 ms in one
 * statement). Five times FTS5's per message, so more short prefixes get a tail set here.
 */
export const SIDE_INDEX_TAIL_COST: TailCost = { perWordUs: 30, perPostingUs: 2 };

const LEAF_CACHE_SIZE = 64;
const LEAF_CACHE_MIN_MS = 2;

/**
 * A LeafSource that cannot answer synchronously: the first evaluation records what it needs
 * and gets empty sets; fetch() asks the side index for all of it in one round trip; the next
 * evaluation is exact.
 */
class PrefetchSource implements LeafSource {
  readonly cacheable = false;
  readonly #wanted = new Map<string, Leaf>();
  readonly #answers = new Map<string, number[]>();
  readonly #cache: Map<string, number[]>;
  readonly #pairs: boolean;

  constructor(snap: Snapshot, token: string) {
    this.#pairs = snap.term(PAIRS_KEY) !== undefined;
    let cache = leafCaches.get(snap);
    if (cache?.token !== token) leafCaches.set(snap, (cache = { token, answers: new Map() }));
    this.#cache = cache.answers;
  }

  ids(leaf: Leaf): number[] {
    const key = leafKey(leaf);
    const known = this.#answers.get(key) ?? this.#cache.get(key);
    if (known) return known;
    this.#wanted.set(key, leaf);
    return [];
  }

  get complete(): boolean {
    return this.#wanted.size === 0;
  }

  async fetch(send: SnapshotSend): Promise<void> {
    const asked: Array<[string, Leaf, Sql]> = [];
    for (const [key, leaf] of this.#wanted) {
      const statement = leafSql(leaf, this.#pairs);
      if (statement) asked.push([key, leaf, statement]);
      else this.#answers.set(key, []);
    }
    this.#wanted.clear();
    if (asked.length === 0) return;
    const started = performance.now();
    const { inSnapshot } = await send({ inSnapshot: asked.map(([, , statement]) => statement), end: false });
    const slow = performance.now() - started >= LEAF_CACHE_MIN_MS;
    asked.forEach(([key, leaf], i) => {
      const ids = unpackIds((inSnapshot[i] as Array<{ ids: Buffer | null }>)[0]?.ids ?? null);
      this.#answers.set(key, ids);
      if (slow && leaf.kind !== 'attachment') {
        this.#cache.set(key, ids);
        if (this.#cache.size > LEAF_CACHE_SIZE) this.#cache.delete(this.#cache.keys().next().value!);
      }
    });
  }
}

/**
 * The side-index statement that lists a leaf's messages; null when none can have it. `pairs`:
 * every document in the snapshot has its word pairs (PAIRS_KEY).
 */
function leafSql(leaf: Leaf, pairs: boolean): Sql | null {
  const paired = pairs && leaf.kind === 'text' ? pairedTsQuery(leaf.node) : null;
  // Two scans, not one OR: a phrase operator anywhere in a tsquery makes GIN recheck every match
  // in its document, which the pairs are there to avoid. A document is either paired or
  // unpaired, so the two lists never share an id.
  if (paired)
    return reused(
      sql`SELECT ${PACKED_IDS} FROM (SELECT email_id FROM ${DOCS} WHERE doc @@ ${paired.paired}::tsquery
            UNION ALL SELECT email_id FROM ${DOCS} WHERE doc @@ ${paired.unpaired}::tsquery) d`,
    );
  let tsq: string;
  switch (leaf.kind) {
    case 'text':
    case 'attachment':
      tsq = tsquery(leaf.node);
      break;
    case 'words': {
      // One statement for all of a prefix's rare words, each looked up on its own in the GIN
      // index: a statement each was a hundred statements to parse and plan for a four-letter
      // prefix, and one OR of all their lexemes is slower still in GIN (measured: 57 ms against
      // 13 ms for 120 words at 100,000 messages).
      const each = leaf.words.map((word) =>
        tsquery({ type: 'text', field: null, text: word, words: [word], prefix: false }),
      );
      return reused(sql`SELECT ${PACKED_IDS} FROM unnest(${each}::tsquery[]) w(q) JOIN ${DOCS} d ON d.doc @@ w.q`);
    }
    case 'tag':
      // Account, folder and direction tags are all kept: one not kept has no message.
      if (ATTRIBUTE_TAG.test(termKey('t', leaf.tag))) return null;
      tsq = tagTsQuery(leaf.tag);
      break;
    case 'thread':
      throw new StaleSnapshot(); // never asked: searches with thread: terms answer by SQL
  }
  return reused(sql`SELECT ${PACKED_IDS} FROM ${DOCS} d WHERE d.doc @@ ${tsq}::tsquery`);
}

/**
 * A leaf's ids as one value: each id's four bytes, big-endian, one after the other. A row per id
 * was a DataRow message, a row object and a parsed number per message in the gateway's thread,
 * and a rare word at 1,000,000 messages has thousands: one bytea is one message, decoded from hex
 * by Buffer's native code (docs/performance.md, "Where a PostgreSQL search's time goes").
 */
const PACKED_IDS = raw(`string_agg(int4send(d.email_id), ''::bytea) AS ids`);

/** PACKED_IDS back to ids; null (no row matched) is none. */
export function unpackIds(packed: Buffer | null): number[] {
  if (packed === null) return [];
  const ids = new Array<number>(packed.length >>> 2);
  for (let i = 0; i < ids.length; i++) ids[i] = packed.readInt32BE(i * 4);
  return ids;
}

/**
 * Terms the index leaves to SQL on the present state: `thread:` (conversations live in this
 * service's own tables) and `attachment:` (its text arrives after the message, by `reindex
 * --attachments`, and must be found at once, as on SQLite, not after the next refresh).
 */
const byPresentSql = (node: Node): boolean =>
  node.type === 'thread' ||
  node.type === 'attachment' ||
  node.type === 'read' ||
  ((node.type === 'and' || node.type === 'or') && node.children.some(byPresentSql)) ||
  (node.type === 'not' && byPresentSql(node.child));

/**
 * A search answered by the in-memory index, or undefined when it cannot answer (no snapshot,
 * new mail since it, a `thread:` or `attachment:` term, a snapshot no longer importable): the
 * caller answers by SQL then, exactly as before.
 *
 * Round trips: one for a search whose terms the index keeps, from a viewer this thread has
 * seen (search-present.ts); one more per round of terms asked of the side index, and for a
 * relevance window's subjects; one more when the guess of the present was wrong.
 */
export async function indexedSearch(
  ctx: PgContext,
  viewer: Viewer,
  query: SearchQuery,
): Promise<PagedResult<EmailSummaryDto> | undefined> {
  const latest = ctx.searchSnapshot();
  if (!latest?.token) return undefined;
  const { snapshot: snap, token } = latest;
  const text = query.q !== undefined && query.q.trim() !== '';
  const root = text ? parseQuery(query.q!) : null;
  if (text && root === null) return pageOf(query, [], 0); // nothing searchable: nothing matches
  if (root && byPresentSql(root)) return undefined;
  let guess = guessPresent(ctx, viewer, query, snap.maxId);
  if (!guess) {
    // Read on the server the snapshot is read on (with replicas, not the primary).
    const asked = await ctx.snapshotSession(token, (send) =>
      send({ inSnapshot: [], end: true, present: [presentSql(ctx, viewer, query)] }),
    );
    if (!asked) return undefined;
    guess = asked.present[0]![0] as Present;
    learnPresent(ctx, viewer, query, guess);
  }
  for (let attempt = 0; attempt < 2; attempt++) {
    if (guess.max > snap.maxId) return undefined; // new mail: SQL finds it at once
    const answer = await ctx.snapshotSession(token, (send) =>
      answerFromIndex(ctx, snap, token, send, viewer, query, root, guess!),
    );
    if (!answer) return undefined;
    const actual = answer.present;
    learnPresent(ctx, viewer, query, actual);
    if (actual.max > snap.maxId) return undefined;
    if (sameAnswerBasis(guess, actual)) return answer.result;
    guess = actual; // the viewer's accounts changed, or a bound was guessed wrong: once more
  }
  return undefined;
}

/**
 * Counts and pages in memory with the present as guessed, reading what the index lacks and the
 * page's rows in the snapshot, and the actual present after them in the same round trip.
 */
async function answerFromIndex(
  ctx: PgContext,
  snap: Snapshot,
  token: string,
  send: SnapshotSend,
  viewer: Viewer,
  query: SearchQuery,
  root: Node | null,
  present: Present,
): Promise<{ result: PagedResult<EmailSummaryDto> | undefined; present: Present }> {
  // An OAuth grant narrowed to some accounts sees those the user still may (ADR 19).
  const visible = narrowedToGrant(present.visible, viewer.oauth?.accountIds);
  // The date bounds in the index's units. Built without `delete`, which turns an object into a
  // dictionary: the bitset walks that read it then left their optimized code on most searches.
  const { from: _from, to: _to, ...rest } = query;
  const local: SearchQuery = {
    ...rest,
    ...(present.from !== null ? { from: present.from } : {}),
    ...(present.to !== null ? { to: present.to } : {}),
  };
  const compiled = compileSearch(query.q);
  const ranked = query.sortBy === 'relevance' && compiled.kind === 'query' && compiled.match !== null;
  const leaves = ranked ? rankedLeaves(root) : [];
  /** The last round trip: the page's rows (if any) in the snapshot, then the present. */
  const finish = async (pageSql: Sql | null) => {
    const out = await send({
      inSnapshot: pageSql ? [pageSql] : [],
      end: true,
      present: [presentSql(ctx, viewer, query)],
    });
    return { rows: (out.inSnapshot[0] ?? []) as RawSummary[], present: out.present[0]![0] as Present };
  };

  const source = new PrefetchSource(snap, token);
  // A dry run first: the leaves the side index must answer, asked in one round trip, and then
  // one evaluation over the whole archive, not one before the answers and one after.
  matchSet(source, snap, visible, local, root, true);
  if (ranked) rankedSets(source, snap, leaves, true);
  let matched: ReturnType<typeof countMatches>;
  let sets: ReturnType<typeof rankedSets>;
  for (let round = 0; ; round++) {
    if (!source.complete) await source.fetch(send);
    matched = countMatches(source, snap, visible, local, root);
    sets = ranked ? rankedSets(source, snap, leaves) : undefined;
    if (source.complete || round === 2) break;
  }
  if (!matched || !source.complete || (ranked && !sets)) return { result: undefined, present }; // SQL answers
  const page = (items: EmailSummaryDto[]) => pageOf(query, items, matched!.total);
  if ((query.page - 1) * query.pageSize >= matched.total) return { result: page([]), ...(await finish(null)) };
  let ids = pageIds(snap, matched.bits, local, root !== null);
  if (!ids) {
    // Relevance: the window first (keys are positions), its subjects if a term needs them, then the ranking.
    const found = relevanceWindow(snap, matched.bits, local, RELEVANCE_WINDOW);
    const window = found.newest.map((p) => snap.keys[p]!);
    const subjects = sets && needsSubjects(sets) ? await windowSubjects(send, snap, window) : new Map();
    const terms = sets
      ? termsFromSets(
          sets,
          (key) => snap.ids[key]!,
          () => subjects,
        )
      : [];
    ids = rankedPageIds(snap, matched.bits, local, matched.total, found, (keys) =>
      rankWindow(keys, terms, snap.rows, query.sortOrder === 'desc'),
    );
  }
  // Rows already read in this snapshot are not read again (snapshot-rows.ts).
  const byId = snapshotRows<RawSummary>(ctx, token);
  const missing = ids.filter((id) => !byId.has(id));
  const { rows, present: actual } = await finish(
    missing.length === 0
      ? null
      : reused(sql`SELECT ${summaryColumns(ctx)} FROM ${T.emails} e WHERE e."Id" = ANY(${missing}::int[])`),
  );
  for (const row of rows) byId.set(row.id, row);
  return {
    result: page(ids.flatMap((id) => (byId.has(id) ? [toSummary(byId.get(id)!)] : []))),
    present: actual,
  };
}

/** The window's subjects as tokens, by key (a position in date order). */
async function windowSubjects(send: SnapshotSend, snap: Snapshot, keys: number[]): Promise<Map<number, string[]>> {
  const ids = keys.map((k) => snap.ids[k]!);
  const { inSnapshot } = await send({
    inSnapshot: [
      reused(sql`SELECT e."Id" AS id, e."Subject" AS subject FROM ${T.emails} e WHERE e."Id" = ANY(${ids}::int[])`),
    ],
    end: false,
  });
  const rows = inSnapshot[0] as Array<{ id: number; subject: string | null }>;
  const byId = new Map(rows.map((r) => [r.id, tokenize(r.subject ?? '')]));
  return new Map(keys.map((k) => [k, byId.get(snap.ids[k]!) ?? []]));
}

/** What /readyz reports about the in-memory index of this thread; undefined when it is off. */
export async function searchIndexInfo(ctx: PgContext): Promise<SearchIndexInfo | undefined> {
  if (!ctx.searchIndexOn) return undefined;
  const latest = ctx.searchSnapshot();
  if (!latest) return { status: 'building' };
  const snap = latest.snapshot;
  const [now] = await ctx.primary<{ max: number }>(sql`SELECT coalesce(max("Id"), 0)::float8 AS max FROM ${T.emails}`);
  return {
    status: now && now.max > snap.maxId ? 'catching up' : 'current',
    ...(latest.origin ? { origin: latest.origin.kind, fromFile: latest.origin.fromFile } : {}),
    maxId: snap.maxId,
    bytes: snap.bytes,
    terms: snap.terms,
    builtAt: new Date(snap.builtAt).toISOString(),
    buildMs: Math.round(snap.buildMs),
  };
}
