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
 * The tokens FTS5 stores for `text`, in order (a token's position is its index). Kept apart from
 * tokenSpans(), which yields the same tokens: this one runs over every message when the search
 * index is built, and without a generator and an object per token it is 1.5 times faster.
 */
export function tokenize(text: string): string[] {
  const tokens: string[] = [];
  let current = '';
  let open = false;
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    // A lone surrogate or NUL ends a token, as SQLite sees neither as a character.
    if (c === 0 || (c >= 0xd800 && c < 0xe000) || separators.has(c)) {
      if (open && current !== '') tokens.push(current);
      current = '';
      open = false;
      continue;
    }
    open = true;
    const f = folds.get(c);
    current += f ?? ch;
  }
  if (open && current !== '') tokens.push(current);
  return tokens;
}

/** A token as tokenize() yields it, with where it stands in the text (UTF-16 offsets). */
export interface TokenSpan {
  token: string;
  start: number;
  end: number;
}

/**
 * tokenize()'s tokens with their offsets, reading at most the first `limit` characters. A lone
 * surrogate or NUL ends a token, as SQLite sees neither as a character.
 */
export function* tokenSpans(text: string, limit = text.length): Generator<TokenSpan> {
  let current = '';
  let start = -1;
  const end = Math.min(limit, text.length);
  let i = 0;
  while (i < end) {
    const c = text.codePointAt(i)!;
    const width = c > 0xffff ? 2 : 1;
    if (c === 0 || (c >= 0xd800 && c < 0xe000) || separators.has(c)) {
      if (start >= 0 && current !== '') yield { token: current, start, end: i };
      current = '';
      start = -1;
    } else {
      if (start < 0) start = i;
      current += folds.get(c) ?? String.fromCodePoint(c);
    }
    i += width;
  }
  if (start >= 0 && current !== '') yield { token: current, start, end: i };
}
