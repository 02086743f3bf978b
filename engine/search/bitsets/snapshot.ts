// One immutable picture of the archive for counting searches, laid out in a single
// SharedArrayBuffer so that every worker thread reads the same memory (share.ts hands it round).
//
// Documents are numbered by `emails.id`. For the words most messages contain (and the filter
// tags of tags.ts), the set of messages holding the word is kept ready: as a bitset when the
// word is in more than one message in 32 (a bit per message is then smaller than a 4-byte id
// per match), else as a sorted list of ids. A count is then a few word-wide ANDs and ORs and a
// popcount instead of FTS5 decoding a doclist of hundreds of thousands of entries. Words not
// kept here are rare by construction: FTS5 finds them quickly, and `keys` turns the full-text
// rowids it returns into message ids.
//
// Layout (byte offsets, every section 8-aligned):
//   header   Float64 x 16      HEADER fields below
//   sent     Float64 x (maxId+1)  sent date (epoch ms) by message id, NaN where no message
//   keys     Float64 x rows     date order: full-text rowids (emails.fts_key), ascending; or, for
//                                a store without such rowids (KEY_POSITIONS), the position itself
//                                (the messages sorted by sent date, then id)
//   ids      Int32   x rows     the message id of each of those rowids
//   orders   Int32   x rows x 4 message ids sorted as SQL sorts them by receivedDate, subject, from, to
//   universe Uint32  x words    the ids that exist
//   entries  Float64 x 3*terms  per kept term: byte offset, length (ids, or -1 for a bitset), documents
//   dict     bytes              the kept terms, '\n'-separated, in entry order
//   vocab    bytes              every word of the default columns, sorted, '\n'-separated (prefix search)
//   data     bitsets and id lists

import { gallop } from './lower-bound.js';

export const MAGIC = 0x6d616731; // 'mag1'

export const HEADER = {
  magic: 0,
  maxId: 1,
  rows: 2,
  rewrites: 3,
  words: 4,
  terms: 5,
  dictBytes: 6,
  vocabBytes: 7,
  builtAt: 8,
  buildMs: 9,
  dataBytes: 10,
  keyKind: 11,
} as const;
const HEADER_SLOTS = 16;

/**
 * Term groups: which columns a kept term was counted over (compile.ts's column sets): the
 * default columns, subject, tags; `p` is a prefix tail (engine/sqlite/index-build.ts, addPrefixTails); `b` a common
 * word pair and `w` marks a pair word (pairs.ts).
 */
export type Group = 'd' | 's' | 't' | 'p' | 'b' | 'w';
export const termKey = (group: Group, token: string) => `${group}:${token}`;
/**
 * A store whose text queries match only messages with a full-text document (PostgreSQL's
 * side index, joined) keeps the set of those under this key; matchSet ANDs it into text queries.
 */
export const DOCS_KEY = 'x:docs';

/** `keys` are full-text rowids of fts-key.ts (SQLite). */
export const KEY_ROWIDS = 0;
/** `keys` are positions in date order; `sent` holds the store's own date values (PostgreSQL). */
export const KEY_POSITIONS = 1;

/** The sort keys kept as permutations, in their order in the buffer. */
export const ORDERS = ['receivedDate', 'subject', 'from', 'to'] as const;
export type OrderKey = (typeof ORDERS)[number];

export type TermSet =
  { kind: 'bits'; bits: Uint32Array; docs: number } | { kind: 'ids'; ids: Int32Array; docs: number };

const align8 = (n: number) => Math.ceil(n / 8) * 8;

export interface SnapshotParts {
  maxId: number;
  rewrites: number;
  sent: Float64Array;
  keys: Float64Array;
  ids: Int32Array;
  orders: Record<OrderKey, Int32Array>;
  universe: Uint32Array;
  terms: Array<{ key: string; set: TermSet }>;
  /** Every word of the default columns, in any order. */
  vocab: Iterable<string>;
  buildMs: number;
  /** KEY_ROWIDS (default) or KEY_POSITIONS. */
  keyKind?: number;
}

/** Packs what a store's builder (engine/sqlite/index-build.ts, engine/postgres/search-snapshot.ts) gathered into one shared buffer. */
export function pack(parts: SnapshotParts): SharedArrayBuffer {
  const words = wordsFor(parts.maxId);
  const encoder = new TextEncoder();
  const dict = encoder.encode(parts.terms.map((t) => t.key).join('\n'));
  const vocab = encodeWords([...parts.vocab].sort());
  const rows = parts.keys.length;
  const dataBytes = parts.terms.reduce((sum, t) => sum + align8(4 * lengthOf(t.set)), 0);
  const sizes = [
    HEADER_SLOTS * 8,
    (parts.maxId + 1) * 8,
    rows * 8,
    align8(rows * 4),
    align8(rows * 4) * ORDERS.length,
    align8(words * 4),
    parts.terms.length * 3 * 8,
    align8(dict.length),
    align8(vocab.length),
    dataBytes,
  ];
  const buffer = new SharedArrayBuffer(sizes.reduce((a, b) => a + b, 0));
  let at = 0;
  const next = (i: number) => {
    const start = at;
    at += sizes[i]!;
    return start;
  };
  const header = new Float64Array(buffer, next(0), HEADER_SLOTS);
  new Float64Array(buffer, next(1), parts.maxId + 1).set(parts.sent);
  new Float64Array(buffer, next(2), rows).set(parts.keys);
  new Int32Array(buffer, next(3), rows).set(parts.ids);
  const orders = next(4);
  ORDERS.forEach((o, i) => new Int32Array(buffer, orders + i * align8(rows * 4), rows).set(parts.orders[o]));
  new Uint32Array(buffer, next(5), words).set(parts.universe);
  const entries = new Float64Array(buffer, next(6), parts.terms.length * 3);
  new Uint8Array(buffer, next(7), dict.length).set(dict);
  new Uint8Array(buffer, next(8), vocab.length).set(vocab);
  let data = next(9);
  parts.terms.forEach((t, i) => {
    entries[i * 3] = data;
    entries[i * 3 + 1] = t.set.kind === 'bits' ? -1 : t.set.ids.length;
    entries[i * 3 + 2] = t.set.docs;
    if (t.set.kind === 'bits') new Uint32Array(buffer, data, words).set(t.set.bits);
    else new Int32Array(buffer, data, t.set.ids.length).set(t.set.ids);
    data += align8(4 * lengthOf(t.set));
  });
  header[HEADER.maxId] = parts.maxId;
  header[HEADER.rows] = rows;
  header[HEADER.rewrites] = parts.rewrites;
  header[HEADER.words] = words;
  header[HEADER.terms] = parts.terms.length;
  header[HEADER.dictBytes] = dict.length;
  header[HEADER.vocabBytes] = vocab.length;
  header[HEADER.builtAt] = Date.now();
  header[HEADER.buildMs] = parts.buildMs;
  header[HEADER.dataBytes] = dataBytes;
  header[HEADER.keyKind] = parts.keyKind ?? KEY_ROWIDS;
  header[HEADER.magic] = MAGIC;
  return buffer;
}

// The vocabulary goes in and out of the buffer in pieces: as one string, every word joined, it
// passes the longest string V8 holds (2^29 − 24 characters, buffer.constants.MAX_STRING_LENGTH)
// at about 50 million words of mail, and the build ended in "Invalid string length".
const VOCAB_PIECE_WORDS = 65_536;
const VOCAB_PIECE_BYTES = 16 * 1024 * 1024;

/** Words as UTF-8, '\n' between them: the join of them all, built `pieceWords` at a time. */
export function encodeWords(words: readonly string[], pieceWords = VOCAB_PIECE_WORDS): Uint8Array {
  const encoder = new TextEncoder();
  const pieces: Uint8Array[] = [];
  let total = 0;
  for (let i = 0; i < words.length; i += pieceWords) {
    const piece = encoder.encode((i > 0 ? '\n' : '') + words.slice(i, i + pieceWords).join('\n'));
    pieces.push(piece);
    total += piece.length;
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.length;
  }
  return out;
}

/** encodeWords' bytes as words again, decoded about `pieceBytes` at a time (cut at a '\n'). */
export function decodeWords(bytes: Uint8Array, pieceBytes = VOCAB_PIECE_BYTES): string[] {
  const words: string[] = [];
  if (bytes.length === 0) return words;
  const decoder = new TextDecoder();
  for (let start = 0; ;) {
    // A '\n' byte is never inside a character's UTF-8, so every cut is between two words.
    const newline = start + pieceBytes < bytes.length ? bytes.indexOf(0x0a, start + pieceBytes) : -1;
    const end = newline < 0 ? bytes.length : newline;
    for (const word of decoder.decode(bytes.subarray(start, end)).split('\n')) words.push(word);
    if (end === bytes.length) return words;
    start = end + 1;
  }
}

/**
 * A copy of a packed snapshot's bytes with when and how long it was built left out (zero): two
 * builds of the same archive by different paths (helper threads or one, bench/build.ts) must
 * give the very same bytes but for those.
 */
export function contentBytes(buffer: SharedArrayBuffer): Buffer {
  const bytes = Buffer.from(new Uint8Array(buffer));
  const header = new Float64Array(bytes.buffer, bytes.byteOffset, HEADER_SLOTS);
  header[HEADER.builtAt] = 0;
  header[HEADER.buildMs] = 0;
  return bytes;
}

export const wordsFor = (maxId: number) => Math.ceil((maxId + 1) / 32);
const lengthOf = (set: TermSet) => (set.kind === 'bits' ? set.bits.length : set.ids.length);
/** The bytes a kept set takes of the budget (and of the snapshot, before alignment). */
export const setBytes = (set: TermSet): number => 4 * lengthOf(set);

/** A reader's view of a packed buffer; cheap to construct once per buffer and thread. */
export class Snapshot {
  readonly buffer: SharedArrayBuffer;
  readonly maxId: number;
  readonly rows: number;
  readonly rewrites: number;
  readonly words: number;
  readonly builtAt: number;
  readonly buildMs: number;
  readonly keyKind: number;
  readonly sent: Float64Array;
  readonly keys: Float64Array;
  readonly ids: Int32Array;
  readonly orders = {} as Record<OrderKey, Int32Array>;
  readonly universe: Uint32Array;
  readonly #entries: Float64Array;
  readonly #index = new Map<string, number>();
  /** Sorted default-column words, for prefix terms. */
  readonly vocab: string[];

  constructor(buffer: SharedArrayBuffer) {
    this.buffer = buffer;
    const header = new Float64Array(buffer, 0, HEADER_SLOTS);
    if (header[HEADER.magic] !== MAGIC) throw new Error('not a search snapshot');
    this.maxId = header[HEADER.maxId]!;
    this.rows = header[HEADER.rows]!;
    this.rewrites = header[HEADER.rewrites]!;
    this.words = header[HEADER.words]!;
    this.builtAt = header[HEADER.builtAt]!;
    this.buildMs = header[HEADER.buildMs]!;
    this.keyKind = header[HEADER.keyKind]!;
    const terms = header[HEADER.terms]!;
    const dictBytes = header[HEADER.dictBytes]!;
    const vocabBytes = header[HEADER.vocabBytes]!;
    let at = HEADER_SLOTS * 8;
    this.sent = new Float64Array(buffer, at, this.maxId + 1);
    at += (this.maxId + 1) * 8;
    this.keys = new Float64Array(buffer, at, this.rows);
    at += this.rows * 8;
    this.ids = new Int32Array(buffer, at, this.rows);
    at += align8(this.rows * 4);
    for (const o of ORDERS) {
      this.orders[o] = new Int32Array(buffer, at, this.rows);
      at += align8(this.rows * 4);
    }
    this.universe = new Uint32Array(buffer, at, this.words);
    at += align8(this.words * 4);
    this.#entries = new Float64Array(buffer, at, terms * 3);
    at += terms * 3 * 8;
    // TextDecoder does not read from shared memory: copy the (small) dictionaries out first.
    const decoder = new TextDecoder();
    const dict = decoder.decode(new Uint8Array(buffer, at, dictBytes).slice());
    at += align8(dictBytes);
    if (terms > 0) dict.split('\n').forEach((key, i) => this.#index.set(key, i));
    this.vocab = decodeWords(new Uint8Array(buffer, at, vocabBytes).slice());
  }

  get bytes(): number {
    return this.buffer.byteLength;
  }

  get terms(): number {
    return this.#index.size;
  }

  /** The kept terms' keys, in the order they are stored. */
  get termKeys(): string[] {
    return [...this.#index.keys()];
  }

  /** The default columns' word in the most messages, or undefined when none is kept. */
  commonestWord(): string | undefined {
    let best: string | undefined;
    let most = -1;
    for (const [key, i] of this.#index) {
      const docs = this.#entries[i * 3 + 2]!;
      if (docs > most && key.startsWith('d:')) [best, most] = [key.slice(2), docs];
    }
    return best;
  }

  /** The kept set of a term, or undefined when the term is not kept (it is rare, or unknown). */
  term(key: string): TermSet | undefined {
    const i = this.#index.get(key);
    if (i === undefined) return undefined;
    const offset = this.#entries[i * 3]!;
    const length = this.#entries[i * 3 + 1]!;
    const docs = this.#entries[i * 3 + 2]!;
    return length < 0
      ? { kind: 'bits', bits: new Uint32Array(this.buffer, offset, this.words), docs }
      : { kind: 'ids', ids: new Int32Array(this.buffer, offset, length), docs };
  }

  /**
   * Where a full-text rowid sits in `keys` (its id is `ids` there) at or after `from`, or -1 -
   * insertion point. Callers walk a word's rowids in ascending order, mostly close together, so
   * this gallops from `from` rather than searching the rest of the archive for each.
   */
  positionOfKey(key: number, from = 0): number {
    const p = gallop(this.keys, key, from);
    return this.keys[p] === key ? p : -1 - p;
  }
}
