// The terms of a relevance ranking (../relevance.ts) from a snapshot, for either store: each
// ranked leaf's set (kept, or the store's answer through its LeafSource), so a term's document
// count is a popcount and a window message's membership a bit test. Subject hits come from the
// snapshot where it keeps them, else from the window's own subjects, which the store reads.
import { tokenize } from '../unicode61.js';
import type { RelevanceTerm } from '../relevance.js';
import { subjectLeaf } from '../relevance.js';
import { leafSets } from './count.js';
import type { Snapshot } from './snapshot.js';
import type { LeafSource, TextLeaf } from './source.js';

export type RankedSets = Array<{ leaf: TextLeaf; sets: NonNullable<ReturnType<typeof leafSets>> }>;

/** Each leaf's sets, or undefined when the store has moved past the snapshot. `dry`: as matchSet's. */
export function rankedSets(
  source: LeafSource,
  snap: Snapshot,
  leaves: TextLeaf[],
  dry = false,
): RankedSets | undefined {
  const out: RankedSets = [];
  for (const leaf of leaves) {
    const sets = leafSets(source, snap, leaf, subjectLeaf(leaf), dry);
    if (!sets) return undefined;
    out.push({ leaf, sets });
  }
  return out;
}

/** Whether any leaf needs the window's subjects read (its subject hits are not in the snapshot). */
export const needsSubjects = (sets: RankedSets) => sets.some((s) => s.sets.subject === 'unkept');

/**
 * The ranking's terms over a window of keys: `idOf` gives a key's message id, `subjects` the
 * window's subject tokens by key (called only when a leaf needs them).
 */
export function termsFromSets(
  sets: RankedSets,
  idOf: (key: number) => number,
  subjects: () => Map<number, string[]>,
): RelevanceTerm[] {
  const has = (bits: Uint32Array | null, key: number) => {
    const id = idOf(key);
    return bits !== null && (bits[id >>> 5]! & (1 << (id & 31))) !== 0;
  };
  return sets.map(({ leaf, sets: s }) => ({
    docs: s.docs,
    inText: (key: number) => has(s.text, key),
    inSubject:
      s.subject === 'unkept'
        ? subjectMatcher(subjectLeaf(leaf)!, subjects())
        : (key: number) => has(s.subject as Uint32Array | null, key),
  }));
}

/**
 * Whether a message's subject holds the leaf, as FTS5 would answer `{subject} : "w1 w2" *`: its
 * tokens in a row, the last one a prefix when the leaf is.
 */
export function subjectMatcher(leaf: TextLeaf, subjects: Map<number, string[]>): (key: number) => boolean {
  const words = leaf.words.flatMap((w) => tokenize(w));
  const last = words.length - 1;
  const at = (tokens: string[], i: number) =>
    words.every((w, j) => (j === last && leaf.prefix ? tokens[i + j]!.startsWith(w) : tokens[i + j] === w));
  return (key) => {
    const tokens = subjects.get(key);
    if (!tokens || words.length === 0) return false;
    for (let i = 0; i + words.length <= tokens.length; i++) if (at(tokens, i)) return true;
    return false;
  };
}
