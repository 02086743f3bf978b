// The search language of `q` (docs/search.md), parsed into a small tree. It lives in shared/
// because both front ends validate `q` with it before any job is sent (a syntax error is a
// 400 or a tool error naming `q`), and the engine compiles the same tree to SQL.
//
//   query   := or
//   or      := and ('OR' and)*
//   and     := unary (['AND'] unary)*          adjacent terms are ANDed
//   unary   := ('-' | 'NOT') unary | primary
//   primary := '(' or ')' | term
//   term    := [field ':'] ('"' phrase '"' | word['*'])
//
// `is:read` and `is:unread` filter on Mail Archiver's read flag (ArchivedEmails."IsRead", open
// upstream PR 501); only a PostgreSQL archive with that column answers them, any other store
// refuses them as invalid input (docs/search.md).
//
// `attachment:` searches the text found inside attachments (docs/search.md); it is its own node
// type because the engine answers it from its own index, never from the message's.
//
// The parser is forgiving where the meaning is plain (an operator with nothing to operate on is
// searched as a word) and refuses what has no sure reading, with a QuerySyntaxError that says
// what to fix: a quote or a parenthesis left open (guessing where it ends answered an empty page
// that looked like "no such mail"), a field name followed by a parenthesis (docs/search.md,
// "What is an error").
import { QuerySyntaxError } from './errors.js';

export const TEXT_FIELDS = ['subject', 'from', 'to', 'cc', 'bcc', 'body', 'filename'] as const;
export type TextField = (typeof TEXT_FIELDS)[number];

export type Node =
  /** `text` is the term as written (unquoted), `words` what the index sees of it. */
  | { type: 'text'; field: TextField | null; text: string; words: string[]; prefix: boolean }
  | { type: 'has'; what: 'attachment' }
  /** `thread:<id>`: the conversation the message `id` belongs to (any member's id works). */
  | { type: 'thread'; id: number }
  /** `is:read` (read true), `is:unread` (read false). */
  | { type: 'read'; read: boolean }
  /** attachment:word, attachment:"a phrase", attachment:prefix* over attachment text. */
  | { type: 'attachment'; text: string; words: string[]; prefix: boolean }
  | { type: 'and'; children: Node[] }
  | { type: 'or'; children: Node[] }
  | { type: 'not'; child: Node };

// Defined in the error catalogue; exported here too, beside the parser that throws it.
export { QuerySyntaxError };

/** What the index treats as a word: letters, marks and digits (SQLite's unicode61). */
const WORD = /[\p{L}\p{M}\p{N}\p{Co}]+/gu;
export const MAX_TERMS = 64;
/** Parentheses and negations (NOT, -) together nest at most this deep. */
export const MAX_DEPTH = 16;
/**
 * Words in one quoted phrase. A phrase's cost grows with its words times the rows its rarest
 * word matches: one of 5,000 words took 4 to 8 s at 20,000 messages. 32 words is any sentence
 * worth searching for.
 */
export const MAX_PHRASE_WORDS = 32;
/** Words over all terms of a query: 64 terms of long phrases would be that cost 64 times. */
export const MAX_QUERY_WORDS = 256;

export function words(text: string): string[] {
  return (text.match(WORD) ?? []).map((w) => w.toLowerCase());
}

type Token =
  | { kind: 'lparen' | 'rparen' | 'or' | 'and' | 'not' | 'minus' }
  | { kind: 'term'; field: string | null; text: string; quoted: boolean; prefix: boolean; raw: string };

function tokenize(q: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const n = q.length;
  const isSpace = (c: string | undefined) => c !== undefined && /\s/u.test(c);
  while (i < n) {
    const c = q[i]!;
    if (isSpace(c) || c < ' ') {
      i++;
      continue;
    }
    if (c === '(' || c === ')') {
      tokens.push({ kind: c === '(' ? 'lparen' : 'rparen' });
      i++;
      continue;
    }
    // A leading '-' negates the next term when something follows it directly.
    if (c === '-' && i + 1 < n && !isSpace(q[i + 1]) && q[i + 1] !== '-') {
      tokens.push({ kind: 'minus' });
      i++;
      continue;
    }
    let field: string | null = null;
    const fieldMatch = /^([A-Za-z]+):(?=\S)/.exec(q.slice(i, i + 20));
    if (
      fieldMatch &&
      (TEXT_FIELDS as readonly string[])
        .concat('has', 'thread', 'attachment', 'is')
        .includes(fieldMatch[1]!.toLowerCase())
    ) {
      field = fieldMatch[1]!.toLowerCase();
      i += fieldMatch[0].length;
    }
    if (field !== null && (q[i] === '(' || q[i] === ')'))
      throw new QuerySyntaxError(
        `${field}: must be followed by a word or a quoted phrase, not "${q[i]}"; to search one field for several words, write (${field}:alice OR ${field}:bob).`,
      );
    if (q[i] === '"') {
      const end = q.indexOf('"', i + 1);
      if (end === -1)
        throw new QuerySyntaxError(
          `The query has a '"' without its closing '"' (at ${JSON.stringify(q.slice(i, i + 30))}); close the phrase or remove the quote.`,
        );
      const text = q.slice(i + 1, end);
      i = end + 1;
      const prefix = q[i] === '*';
      if (prefix) i++;
      tokens.push({ kind: 'term', field, text, quoted: true, prefix, raw: text });
      continue;
    }
    let j = i;
    while (j < n && !isSpace(q[j]) && q[j] !== '(' && q[j] !== ')' && q[j] !== '"') j++;
    const raw = q.slice(i, j);
    i = j;
    if (field === null && (raw === 'OR' || raw === 'AND' || raw === 'NOT')) {
      tokens.push({ kind: raw.toLowerCase() as 'or' | 'and' | 'not' });
      continue;
    }
    const prefix = raw.endsWith('*') && raw.replace(/\*+$/, '').length > 0;
    tokens.push({ kind: 'term', field, text: raw.replace(/\*+$/, ''), quoted: false, prefix, raw });
  }
  return tokens;
}

class Parser {
  #pos = 0;
  #terms = 0;
  #words = 0;
  constructor(private readonly tokens: Token[]) {}

  parse(): Node | null {
    const node = this.#or(0);
    const extra = this.tokens[this.#pos];
    if (extra?.kind === 'rparen') {
      throw new QuerySyntaxError('The query has a ")" without a matching "("; remove it or add the "(".');
    }
    return node;
  }

  #peek(): Token | undefined {
    return this.tokens[this.#pos];
  }

  #or(depth: number): Node | null {
    const children: Node[] = [];
    const first = this.#and(depth);
    if (first) children.push(first);
    while (this.#peek()?.kind === 'or') {
      this.#pos++;
      const next = this.#and(depth);
      // "a OR" or "OR b": the lone OR is searched as the word "or".
      if (!next || children.length === 0) {
        children.push(this.#word('or'));
        if (next) children.push(next);
        continue;
      }
      children.push(next);
    }
    return children.length === 0 ? null : children.length === 1 ? children[0]! : { type: 'or', children };
  }

  #and(depth: number): Node | null {
    const children: Node[] = [];
    for (;;) {
      const t = this.#peek();
      if (!t || t.kind === 'or' || t.kind === 'rparen') break;
      if (t.kind === 'and') {
        this.#pos++;
        if (children.length === 0 || !this.#startsOperand()) children.push(this.#word('and'));
        continue;
      }
      const node = this.#unary(depth);
      if (node) children.push(node);
    }
    return children.length === 0 ? null : children.length === 1 ? children[0]! : { type: 'and', children };
  }

  #startsOperand(): boolean {
    const t = this.#peek();
    return t !== undefined && (t.kind === 'term' || t.kind === 'lparen' || t.kind === 'not' || t.kind === 'minus');
  }

  #unary(depth: number): Node | null {
    const t = this.#peek()!;
    if (t.kind === 'not' || t.kind === 'minus') {
      this.#pos++;
      if (!this.#startsOperand()) return t.kind === 'not' ? this.#word('not') : null;
      // ~1,000 chained NOTs once nested the SQL beyond what the database parses (a 500).
      if (depth >= MAX_DEPTH)
        throw new QuerySyntaxError(
          `NOT, - and parentheses nest deeper than ${MAX_DEPTH} levels; two negations cancel out, so remove the repeated ones.`,
        );
      const child = this.#unary(depth + 1);
      return child ? { type: 'not', child } : null;
    }
    if (t.kind === 'lparen') {
      if (depth >= MAX_DEPTH)
        throw new QuerySyntaxError(`Parentheses nest deeper than ${MAX_DEPTH} levels; simplify the query.`);
      this.#pos++;
      const inner = this.#or(depth + 1);
      if (this.#peek()?.kind !== 'rparen')
        throw new QuerySyntaxError('The query has a "(" without its closing ")"; add the ")" or remove the "(".');
      this.#pos++;
      return inner;
    }
    this.#pos++;
    return this.#term(t as Extract<Token, { kind: 'term' }>);
  }

  #word(text: string): Node {
    this.#count();
    return { type: 'text', field: null, text, words: [text], prefix: false };
  }

  #count(): void {
    if (++this.#terms > MAX_TERMS)
      throw new QuerySyntaxError(`The query has more than ${MAX_TERMS} terms; use fewer words.`);
  }

  #term(t: Extract<Token, { kind: 'term' }>): Node | null {
    if (t.field === 'has') {
      if (/^attachments?$/i.test(t.text)) return { type: 'has', what: 'attachment' };
      throw new QuerySyntaxError(`has:${t.raw} is not supported; the one has: term is has:attachment.`);
    }
    if (t.field === 'is') {
      const what = t.text.toLowerCase();
      if (what !== 'read' && what !== 'unread')
        throw new QuerySyntaxError(`is:${t.raw} is not supported; the is: terms are is:read and is:unread.`);
      this.#count();
      return { type: 'read', read: what === 'read' };
    }
    if (t.field === 'thread') {
      const id = /^\d{1,10}$/.test(t.text) ? Number(t.text) : Number.NaN;
      if (!Number.isInteger(id) || id < 1 || id > 2_147_483_647)
        throw new QuerySyntaxError(
          `thread:${t.raw} is not a message id; write thread: followed by the id of any message of the conversation, such as thread:42.`,
        );
      this.#count();
      return { type: 'thread', id };
    }
    const w = words(t.text);
    if (w.length === 0) return null; // punctuation only: nothing to search for
    this.#count();
    if (w.length > MAX_PHRASE_WORDS)
      throw new QuerySyntaxError(
        `A phrase (quoted, or words joined by punctuation) has ${w.length} words; the limit is ${MAX_PHRASE_WORDS}. Shorten it to its most distinctive words.`,
      );
    this.#words += w.length;
    if (this.#words > MAX_QUERY_WORDS)
      throw new QuerySyntaxError(
        `The query has more than ${MAX_QUERY_WORDS} words in its terms and phrases; shorten the phrases or use fewer terms.`,
      );
    if (t.field === 'attachment') return { type: 'attachment', text: t.text, words: w, prefix: t.prefix };
    return { type: 'text', field: t.field as TextField | null, text: t.text, words: w, prefix: t.prefix };
  }
}

/** Whether the tree holds an is:read or is:unread term (answered only where IsRead exists). */
export const hasReadTerm = (node: Node | null): boolean =>
  node !== null &&
  (node.type === 'read' ||
    ((node.type === 'and' || node.type === 'or') && node.children.some(hasReadTerm)) ||
    (node.type === 'not' && hasReadTerm(node.child)));

/** null when the query holds nothing searchable (empty, or punctuation only). */
export function parseQuery(q: string): Node | null {
  return new Parser(tokenize(q)).parse();
}
