// Turns a parsed query into what the planner runs: one FTS5 MATCH expression that every hit
// must satisfy (the fast path: the index yields hits in sent-date order) plus SQL conditions
// for what FTS5 cannot say: a negation with nothing positive beside it (`-spam` alone).
//
// Every word reaching FTS5 is a quoted string of letters and digits, so no input can inject
// FTS5 syntax: operators, column names and quotes in `q` are structure or plain text.
import { parseQuery, type Node, type TextField } from '../../shared/query-language.js';
import { ATTACHMENT_TAG, exactAddressTag } from './tags.js';

const COLUMNS: Record<TextField, string> = {
  subject: 'subject',
  from: 'from_text',
  to: 'to_text',
  cc: 'cc_text',
  bcc: 'bcc_text',
  body: 'body',
  filename: 'filenames',
};
/** Free words search what SPEC.md names: subject, body, from, to, cc, bcc. */
export const DEFAULT_COLUMNS = '{subject body from_text to_text cc_text bcc_text}';

export interface SqlCondition {
  sql: string;
  params: unknown[];
  /** What stands for the condition in a cache key, when not itself. */
  toJSON?: () => unknown;
}

export type CompiledSearch =
  /** No q: no text condition at all. */
  | { kind: 'all' }
  /** q holds nothing searchable (only punctuation): nothing can match. */
  | { kind: 'none' }
  | { kind: 'query'; match: string | null; conditions: SqlCondition[] };

function phrase(node: Extract<Node, { type: 'text' }>): string {
  const columns = node.field ? `{${COLUMNS[node.field]}}` : DEFAULT_COLUMNS;
  const text = `${columns} : "${node.words.join(' ')}"${node.prefix ? ' *' : ''}`;
  // An exact address is its tag. (Tags are 64-bit hashes; a collision would add a hit, never lose one.)
  const tag = exactAddressTag(node);
  return tag ? `{tags} : "${tag}"` : text;
}

/** A term as its FTS5 expression. */
export const ftsExpression = (node: Extract<Node, { type: 'text' }>): string => phrase(node);

/** The node as one FTS5 expression, or null when FTS5 cannot express it. */
function fts(node: Node): string | null {
  switch (node.type) {
    case 'text':
      return phrase(node);
    case 'has':
      return `{tags} : "${ATTACHMENT_TAG}"`;
    case 'thread':
      return null; // not in the full-text index: thread ids change when conversations merge
    case 'read':
      return null; // refused before a SQLite search (engine/sqlite/emails.ts searchPage)
    case 'attachment':
      return null; // another table: a SQL condition (IN_ATTACHMENTS)
    case 'not':
      return null; // FTS5's NOT is binary: it needs a positive operand, handled under 'and'.
    case 'or': {
      const parts = node.children.map(fts);
      return parts.every((p) => p !== null) ? `(${parts.join(' OR ')})` : null;
    }
    case 'and': {
      const positive = node.children.filter((c) => c.type !== 'not').map(fts);
      const negative = node.children.flatMap((c) => (c.type === 'not' ? [fts(c.child)] : []));
      if (positive.length === 0 || [...positive, ...negative].some((p) => p === null)) return null;
      const pos = `(${positive.join(' AND ')})`;
      return negative.length ? `(${pos} NOT (${negative.join(' OR ')}))` : pos;
    }
  }
}

const IN_FTS = 'e.fts_key IN (SELECT rowid FROM email_fts WHERE email_fts MATCH ?)';
/**
 * `thread:<id>`: the conversation of message id. IN, not `=`: for a message that does not exist
 * the subquery is empty and the condition false, so `-thread:<id>` is true (with `=` both are NULL).
 */
export const THREAD_CONDITION = 'e.thread_id IN (SELECT thread_id FROM emails WHERE id = ?)';
/** attachment_fts rowids are the messages' fts_keys too (migration 5). */
const IN_ATTACHMENTS = 'e.fts_key IN (SELECT rowid FROM attachment_fts WHERE attachment_fts MATCH ?)';

/** An attachment: term as an attachment_fts expression: one quoted phrase, as phrase() writes. */
export const attachmentExpression = (node: Extract<Node, { type: 'attachment' }>): string =>
  `"${node.words.join(' ')}"${node.prefix ? ' *' : ''}`;

/**
 * The fts_keys of the messages an attachment: term finds, when the caller matches it itself
 * (engine/sqlite/attachment-phrase.ts bounds what one message's phrase may cost).
 */
export type AttachmentKeys = (node: Extract<Node, { type: 'attachment' }>) => number[];

/** A compound condition keeps its parts' cache-key forms, when one of them has its own. */
function withKey(condition: SqlCondition, op: string, parts: SqlCondition[]): SqlCondition {
  if (!parts.some((p) => p.toJSON)) return condition;
  return { ...condition, toJSON: () => ({ [op]: parts.map((p) => (p.toJSON ? p.toJSON() : p)) }) };
}

/** Any node as a SQL condition on `emails e`; slower than the fast path but always possible. */
function sql(node: Node, attachmentKeys?: AttachmentKeys): SqlCondition {
  const expr = fts(node);
  if (expr !== null) return { sql: IN_FTS, params: [expr] };
  const sub = (child: Node) => sql(child, attachmentKeys);
  switch (node.type) {
    case 'attachment':
      if (!attachmentKeys) return { sql: IN_ATTACHMENTS, params: [attachmentExpression(node)] };
      return {
        sql: 'e.fts_key IN (SELECT value FROM json_each(?))',
        params: [JSON.stringify(attachmentKeys(node))],
        // Cached counts are keyed by their conditions as JSON (engine/sqlite/search.ts): the term,
        // not its possibly long list of matches, names the condition there (the archive's
        // generation, part of that key, changes whenever attachment text does).
        toJSON: () => ({ sql: IN_ATTACHMENTS, params: [attachmentExpression(node)] }),
      };
    case 'not': {
      const inner = sub(node.child);
      return withKey({ sql: `NOT (${inner.sql})`, params: inner.params }, 'not', [inner]);
    }
    case 'and':
    case 'or': {
      const parts = node.children.map(sub);
      return withKey(
        {
          sql: parts.map((p) => `(${p.sql})`).join(node.type === 'and' ? ' AND ' : ' OR '),
          params: parts.flatMap((p) => p.params),
        },
        node.type,
        parts,
      );
    }
    case 'thread':
      return { sql: THREAD_CONDITION, params: [node.id] };
    case 'read':
      throw new Error('unreachable: is:read is refused before a SQLite search');
    case 'text':
    case 'has':
      throw new Error('unreachable: terms always compile to FTS');
  }
}

export function compileSearch(q: string | undefined, attachmentKeys?: AttachmentKeys): CompiledSearch {
  if (q === undefined || q.trim() === '') return { kind: 'all' };
  const root = parseQuery(q);
  if (!root) return { kind: 'none' };
  const conjuncts = root.type === 'and' ? root.children : [root];
  // The largest part FTS5 can run alone becomes the MATCH; the rest are SQL conditions.
  const ftsable = conjuncts.filter((c) => (c.type === 'not' ? fts(c.child) : fts(c)) !== null);
  const match = ftsable.some((c) => c.type !== 'not') ? fts({ type: 'and', children: ftsable }) : null;
  const rest = match === null ? conjuncts : conjuncts.filter((c) => !ftsable.includes(c));
  return { kind: 'query', match, conditions: rest.map((c) => sql(c, attachmentKeys)) };
}
