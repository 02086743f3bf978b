// `sortBy=relevance` on the SQLite store: how the newest RELEVANCE_WINDOW matches are ranked.
//
// The score of a message is, over the query's words and phrases that it must or may contain
// (not those it must not):
//
//   score = sum of idf(term) x (1 + SUBJECT_WEIGHT if the term is in its subject)   [terms it holds]
//   idf(term) = ln((N - n + 0.5) / (n + 0.5)), at least 1e-6 (as FTS5's bm25 clamps it)
//
// with N the messages in the archive and n those holding the term. So a rarer word weighs more,
// a word in the subject weighs three times what it weighs in the body, and messages of equal
// score come newest first. Matches older than the window follow it, newest first.
//
// Why not FTS5's bm25 (until 2026-11-24): bm25 counts, on every query, the documents holding
// each word, for its idf, by reading the word's whole doclist: 58 ms for a word in every
// message, however few rows it then ranks, and it was the slowest kind of search in the varied
// stream (docs/performance.md, "The varied stream"). Here n is a lookup of the in-memory index
// (a popcount of the word's set) and the window's membership bit tests; without the index, SQL
// gives the same numbers at FTS5's cost.
// What is given up is term frequency and length normalisation within a message (FTS5 exposes
// them only to ranking functions written in C). ADR 18 in docs/decisions.md.
import type { Node } from '../../shared/query-language.js';

/** A word in the subject counts 1 + SUBJECT_WEIGHT times what it counts elsewhere. */
export const SUBJECT_WEIGHT = 2;

type TextLeaf = Extract<Node, { type: 'text' }>;

/** One scored term: how many messages hold it, and which of the window's messages do. */
export interface RelevanceTerm {
  /** Messages of the whole archive holding the term (the idf's n). */
  docs: number;
  /** Whether the window's message `key` holds the term (anywhere the term looks). */
  inText(key: number): boolean;
  /** Whether it holds it in the subject. */
  inSubject(key: number): boolean;
}

/** bm25's idf, clamped as FTS5 clamps it. */
export function idf(docs: number, total: number): number {
  const value = Math.log((total - docs + 0.5) / (docs + 0.5));
  return value > 0 ? value : 1e-6;
}

/** The text leaves a message is ranked by: every word or phrase not under a NOT. */
export function rankedLeaves(root: Node | null): TextLeaf[] {
  const out: TextLeaf[] = [];
  const walk = (node: Node) => {
    if (node.type === 'text') out.push(node);
    else if (node.type === 'and' || node.type === 'or') node.children.forEach(walk);
  };
  if (root) walk(root);
  // The same term twice counts once (`budget OR budget`).
  const seen = new Set<string>();
  return out.filter((leaf) => {
    const key = JSON.stringify([leaf.field, leaf.words, leaf.prefix]);
    return seen.has(key) ? false : (seen.add(key), true);
  });
}

/** The subject-only form of a leaf, or null when the leaf looks elsewhere (from:, to:, ...). */
export function subjectLeaf(leaf: TextLeaf): TextLeaf | null {
  if (leaf.field === 'subject') return leaf;
  return leaf.field === null ? { ...leaf, field: 'subject' } : null;
}

/**
 * The window's keys (newest first) by descending score, newest first among equals; `desc`
 * false gives the reverse. `total` is N.
 */
export function rankWindow(
  window: readonly number[],
  terms: readonly RelevanceTerm[],
  total: number,
  desc: boolean,
): number[] {
  const weights = terms.map((t) => idf(t.docs, total));
  const scored = window.map((key, position) => {
    let score = 0;
    for (let i = 0; i < terms.length; i++) {
      const term = terms[i]!;
      if (term.inText(key)) score += weights[i]! * (term.inSubject(key) ? 1 + SUBJECT_WEIGHT : 1);
    }
    return { key, score, position };
  });
  scored.sort((a, b) => b.score - a.score || a.position - b.position);
  const keys = scored.map((s) => s.key);
  return desc ? keys : keys.reverse();
}
