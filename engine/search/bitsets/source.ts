// What the in-memory index asks of the store it serves: the messages matching a term it does
// not keep (a rare word, a phrase, a field other than subject, a tag, attachment text, a
// conversation). Each store answers from its own full-text index: FTS5 on SQLite
// (engine/sqlite/fts-source.ts), the side index on PostgreSQL (engine/postgres/search-snapshot.ts).
// The index itself (snapshot.ts, count.ts, page.ts) never reads a database.
import type { Node } from '../../../shared/query-language.js';
import type { Snapshot } from './snapshot.js';

export type TextLeaf = Extract<Node, { type: 'text' }>;
export type AttachmentLeaf = Extract<Node, { type: 'attachment' }>;

export type Leaf =
  /** A term of the query language: a word, a phrase or a prefix, in its field or the default ones. */
  | { kind: 'text'; node: TextLeaf }
  /**
   * Words of the default columns, any of them: a prefix's words the snapshot does not keep. One
   * leaf for all of them, so that a store whose every question is a round trip to a server asks
   * once, not once per word (a four-letter prefix can have a hundred rare words).
   */
  | { kind: 'words'; words: readonly string[] }
  /** A filter tag of tags.ts. */
  | { kind: 'tag'; tag: string }
  | { kind: 'attachment'; node: AttachmentLeaf }
  | { kind: 'thread'; id: number };

export interface LeafSource {
  /**
   * The ids of the messages matching `leaf` in the state the snapshot describes, in any order.
   * Throws StaleSnapshot when the store can tell it has moved past the snapshot.
   */
  ids(leaf: Leaf, snap: Snapshot): Iterable<number>;
  /** False when answers must not be kept with the snapshot (a source that only records requests). */
  readonly cacheable?: boolean;
}

/** The store holds a message the snapshot does not know: the archive moved on. */
export class StaleSnapshot extends Error {}
