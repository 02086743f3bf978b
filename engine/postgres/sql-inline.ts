// An Sql statement as plain text, its values written as literals, for the simple query
// protocol: only that protocol carries several statements in one message, which is how a search
// answered by the in-memory index reaches the server once (search-round-trip.ts). The values
// come from code (ids, numbers, the viewer's id) or are escaped by pg's own escapeLiteral, so
// input still never becomes SQL text.
import pg from 'pg';
import type { Sql } from './sql.js';

/** An array literal's element: numbers as they are, strings double-quoted (array syntax). */
function element(value: unknown): string {
  if (value === null) return 'NULL';
  if (typeof value === 'number') return number(value);
  if (typeof value === 'boolean') return value ? 't' : 'f';
  if (typeof value === 'string') return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  throw new TypeError(`no array literal for ${typeof value}`);
}

function number(value: number): string {
  if (!Number.isFinite(value)) throw new TypeError(`no literal for ${value}`);
  return String(value);
}

export function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number') return number(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'string') return pg.escapeLiteral(value);
  if (Array.isArray(value)) return pg.escapeLiteral(`{${value.map(element).join(',')}}`);
  throw new TypeError(`no literal for ${typeof value}`);
}

/** The statement's text with every value in place ($n never appears: nothing is bound). */
export function inline(q: Sql): string {
  let text = q.parts[0]!;
  // A literal that follows a cast-less position is parenthesised so that e.g. `- ${n}` with a
  // negative n stays one expression.
  for (let i = 0; i < q.values.length; i++) text += `(${literal(q.values[i])})${q.parts[i + 1]!}`;
  return text;
}
