// The access log as a hash chain (docs/evidence.md, "An access log nobody can quietly edit"): each
// entry this service writes carries SHA-256(previous entry's hash, "\n", its own stored fields as a
// JSON array), so an entry edited, removed, inserted or moved breaks every link after it. Both
// stores chain their entries this way; each says which fields an entry has as stored.
import { createHash } from 'node:crypto';

/** The hash the first chained entry follows. */
export const CHAIN_GENESIS = '0'.repeat(64);

export type ChainField = string | number | null;

/** `fields` as an array, or already as its JSON text (a store whose server writes the text). */
export function chainHash(previous: string, fields: readonly ChainField[] | string): string {
  const text = typeof fields === 'string' ? fields : JSON.stringify(fields);
  return createHash('sha256').update(previous).update('\n').update(text).digest('hex');
}

/** An entry as verification reads it: its id, its recorded hash (null: none), its stored fields. */
export interface ChainEntry {
  id: number;
  hash: string | null;
  fields: readonly ChainField[] | string;
}

export type ChainReport =
  | {
      intact: true;
      /** Chained entries checked. */
      entries: number;
      /** Entries written before the chain began (by a release that did not chain), not covered. */
      before: number;
      /** The newest chained entry: note it elsewhere to detect a later removal of the newest entries. */
      head: { id: number; hash: string } | null;
    }
  | { intact: false; entries: number; before: number; brokenAt: number; reason: string };

/**
 * Checks entries fed in id order, holding only the previous hash: a log of any length verifies
 * in constant memory. The first entry that does not follow is the report.
 */
export class ChainVerifier {
  /**
   * `head`: a head hash noted earlier (what verify printed then); the chain must still hold it, or
   * its newest entries since then were removed or rewritten, which the links alone cannot show.
   */
  constructor(readonly head?: string) {}

  #headSeen = false;
  #entries = 0;
  #before = 0;
  /** The last entry that followed: the next one must follow its hash. */
  #head: { id: number; hash: string } | null = null;
  #broken: { id: number; reason: string } | null = null;

  /** false once broken: the caller may stop reading. */
  feed(entry: ChainEntry): boolean {
    if (this.#broken) return false;
    if (entry.hash === null) {
      if (this.#entries === 0) {
        this.#before++;
        return true;
      }
      this.#broken = {
        id: entry.id,
        reason:
          'it has no hash although entries before it have: it was added by something other than this service, or its hash was removed',
      };
      return false;
    }
    if (chainHash(this.#head?.hash ?? CHAIN_GENESIS, entry.fields) !== entry.hash) {
      this.#broken = {
        id: entry.id,
        reason:
          this.#entries === 0 && this.#before === 0
            ? 'its hash does not match its fields: it was changed, or entries before it were removed'
            : 'its hash does not match its fields and the entry before it: it was changed, or an entry before it was changed, removed, added or moved',
      };
      return false;
    }
    if (entry.hash === this.head) this.#headSeen = true;
    this.#head = { id: entry.id, hash: entry.hash };
    this.#entries++;
    return true;
  }

  report(): ChainReport {
    if (this.#broken)
      return {
        intact: false,
        entries: this.#entries,
        before: this.#before,
        brokenAt: this.#broken.id,
        reason: this.#broken.reason,
      };
    if (this.head !== undefined && !this.#headSeen)
      return {
        intact: false,
        entries: this.#entries,
        before: this.#before,
        brokenAt: this.#head?.id ?? 0,
        reason: `the head noted earlier (${this.head}) is no longer in the chain: entries were removed or rewritten since`,
      };
    return { intact: true, entries: this.#entries, before: this.#before, head: this.#head };
  }
}
