// SQLite FTS5's `unicode61 remove_diacritics 2` tokenizer in JavaScript, from a table read out
// of SQLite itself (unicode61-table.ts, checked against SQLite by test/unicode61.test.ts).
// The PostgreSQL store builds its search index with it, so that both stores see the same
// words: `Café` is `cafe`, `e-mail` is `e` and `mail`, `alice@x.com` is `alice`, `x`, `com`.
import { FOLD, SEPARATORS } from './unicode61-table.js';

const separators = new Set<number>();
for (const range of SEPARATORS.split(',')) {
  const [a, b] = range.split('-').map((x) => parseInt(x, 36)) as [number, number?];
  for (let c = a; c <= (b ?? a); c++) separators.add(c);
}
const folds = new Map<number, string>();
for (const entry of FOLD.split(',')) {
  const [c, to] = entry.split(':') as [string, string];
  folds.set(parseInt(c, 36), to === '' ? '' : String.fromCodePoint(...to.split('.').map((x) => parseInt(x, 36))));
}

/**
 * The tokens FTS5 stores for `text`, in order (a token's position is its index): scanTokens'
 * tokens, which take runs of ASCII letters and digits at once (twice as fast as a code point at a
 * time over typical mail; this runs over every message the PostgreSQL search index stores).
 */
export function tokenize(text: string): string[] {
  const tokens: string[] = [];
  scanTokens(text, text.length, (token) => {
    tokens.push(token);
  });
  return tokens;
}

// ASCII letters and digits are token characters and every other ASCII character separates
// (unicode61's defaults), so a run of ASCII letters and digits is one token, lower-cased; only runs
// holding other characters go through the table. Over typical mail this reads text several times
// faster than a code point at a time, which is what snippets (engine/search/snippet.ts) pay for
// each result.
const RUN = '[A-Za-z0-9\\u0080-\\uffff]+';
const NON_ASCII = /[^\x00-\x7f]/;

/** Called with each token and its UTF-16 offsets; returning true stops the scan. */
export type TokenVisitor = (token: string, start: number, end: number) => boolean | void;

/**
 * tokenize()'s tokens with their offsets, in order, reading at most the first `limit`
 * characters. A lone surrogate or NUL ends a token, as SQLite sees neither as a character.
 */
export function scanTokens(text: string, limit: number, visit: TokenVisitor): void {
  const end = Math.min(limit, text.length);
  const runs = new RegExp(RUN, 'g');
  for (let m = runs.exec(text); m !== null && m.index < end; m = runs.exec(text)) {
    const to = Math.min(m.index + m[0].length, end);
    if (!NON_ASCII.test(m[0])) {
      if (visit((to === m.index + m[0].length ? m[0] : text.slice(m.index, to)).toLowerCase(), m.index, to)) return;
    } else if (scanTable(text, m.index, to, visit)) return;
  }
}

/** scanTokens() over `text[from, to)` through the table, a code point at a time; true if stopped. */
function scanTable(text: string, from: number, to: number, visit: TokenVisitor): boolean {
  let current = '';
  let start = -1;
  let i = from;
  while (i < to) {
    const c = text.codePointAt(i)!;
    const width = c > 0xffff ? 2 : 1;
    if (c === 0 || (c >= 0xd800 && c < 0xe000) || separators.has(c)) {
      if (start >= 0 && current !== '' && visit(current, start, i)) return true;
      current = '';
      start = -1;
    } else {
      if (start < 0) start = i;
      current += folds.get(c) ?? String.fromCodePoint(c);
    }
    i += width;
  }
  return start >= 0 && current !== '' && visit(current, start, i) === true;
}
