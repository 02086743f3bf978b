// Turns the user's `q` into an FTS5 MATCH expression that can never be a syntax error.
//
// Supported here: free words (ANDed), "quoted phrases", and field terms subject:, from:, to:
// taking a word or a quoted phrase. Every term is re-emitted as an FTS5 string made only of
// letters and digits, so quotes, operators and column names in the input are searched as text.

const FIELDS: Record<string, string> = {
  subject: 'subject',
  from: 'from_text',
  to: 'to_text',
};

const TERM = /(?<field>[A-Za-z]+):"(?<fq>[^"]*)"?|(?<field2>[A-Za-z]+):(?<fw>\S+)|"(?<phrase>[^"]*)"?|(?<word>\S+)/gu;
const WORD = /[\p{L}\p{N}]+/gu;

function phrase(text: string): string | null {
  const words = text.match(WORD);
  return words ? `"${words.join(' ')}"` : null;
}

export type CompiledQuery =
  | { kind: 'all' } // no q: no text filter
  | { kind: 'none' } // q had nothing searchable: matches nothing
  | { kind: 'match'; expression: string };

export function compileQuery(q: string | undefined): CompiledQuery {
  if (q === undefined || q.trim() === '') return { kind: 'all' };
  const parts: string[] = [];
  for (const m of q.matchAll(TERM)) {
    const g = m.groups ?? {};
    const field = (g.field ?? g.field2)?.toLowerCase();
    const value = g.fq ?? g.fw;
    if (field !== undefined && value !== undefined && FIELDS[field]) {
      const p = phrase(value);
      if (p) parts.push(`${FIELDS[field]} : ${p}`);
      continue;
    }
    const p = phrase(m[0]);
    if (p) parts.push(p);
  }
  return parts.length ? { kind: 'match', expression: parts.join(' AND ') } : { kind: 'none' };
}
