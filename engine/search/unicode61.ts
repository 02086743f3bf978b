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

/** The tokens FTS5 stores for `text`, in order (a token's position is its index). */
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
