// Snippets: why a search result matched (docs/search.md, "Snippets"). Store-independent: each
// store hands over the subject and stored text body of a page's messages, and this picks the
// part of about SNIPPET_CHARS characters that holds the most of the query's words, marked with
// <mark>…</mark>. The rest of the snippet is HTML-escaped (&, <, >), so a <mark> in a snippet is
// always ours and the snippet can be shown as HTML as it is.
import { parseQuery, type Node } from '../../shared/query-language.js';
import { SNIPPET_CHARS } from '../../shared/search-input.js';
import { scanTokens, tokenize } from './unicode61.js';

/** How far into a body matches are looked for: a 1 MB body costs milliseconds, not tens. */
const SCAN_CHARS = 200_000;
/** Matches considered when choosing the window; the first ones of a long body are enough. */
const MAX_MATCHES = 256;
/** Context kept before the first match of the window, when the window has room for it. */
const LEAD_CHARS = 40;

/** The words a snippet marks: those of the query's positive terms over subject and body. */
export interface SnippetTerms {
  words: Set<string>;
  prefixes: string[];
}

/**
 * The tokens worth marking, or null when the query has none (no `q`, or only negations,
 * address, file-name and filter terms): such a search gets no snippets.
 */
export function snippetTerms(root: Node | null): SnippetTerms | null {
  const words = new Set<string>();
  const prefixes: string[] = [];
  const visit = (node: Node): void => {
    switch (node.type) {
      case 'text': {
        if (node.field !== null && node.field !== 'subject' && node.field !== 'body') return;
        const tokens = node.words.flatMap((w) => tokenize(w));
        tokens.forEach((t, i) => (node.prefix && i === tokens.length - 1 ? prefixes.push(t) : words.add(t)));
        return;
      }
      case 'and':
      case 'or':
        node.children.forEach(visit);
        return;
      case 'not': // what must not be there is not why a message matched
      default:
        return;
    }
  };
  if (root) visit(root);
  return words.size || prefixes.length ? { words, prefixes } : null;
}

/** snippetTerms() of a query as given (validated already: it parsed before the job was sent). */
export function snippetTermsOf(q: string | undefined): SnippetTerms | null {
  return q?.trim() ? snippetTerms(parseQuery(q)) : null;
}

/** The words a snippet marks inside attachment text: the query's positive `attachment:` terms. */
export function attachmentSnippetTerms(root: Node | null): SnippetTerms | null {
  const words = new Set<string>();
  const prefixes: string[] = [];
  const visit = (node: Node): void => {
    if (node.type === 'and' || node.type === 'or') node.children.forEach(visit);
    else if (node.type === 'attachment') {
      const tokens = node.words.flatMap((w) => tokenize(w));
      tokens.forEach((t, i) => (node.prefix && i === tokens.length - 1 ? prefixes.push(t) : words.add(t)));
    }
  };
  if (root) visit(root);
  return words.size || prefixes.length ? { words, prefixes } : null;
}

/** Both kinds of snippet terms of a query as given; null when it has neither. */
export function allSnippetTermsOf(
  q: string | undefined,
): { body: SnippetTerms | null; attachments: SnippetTerms | null } | null {
  if (!q?.trim()) return null;
  const root = parseQuery(q);
  const body = snippetTerms(root);
  const attachments = attachmentSnippetTerms(root);
  return body || attachments ? { body, attachments } : null;
}

interface Hit {
  start: number;
  end: number;
  /** The query word or prefix it matched: windows are compared by how many different ones they hold. */
  term: string;
}

/**
 * The matches in `text`, in order. Reading stops at the first window of `size` characters that
 * holds every query word: no later window can hold more different ones, and most queries are
 * one word, whose first match ends the read.
 */
function hitsIn(text: string, terms: SnippetTerms, limit: number, size: number): Hit[] {
  const hits: Hit[] = [];
  const all = terms.words.size + terms.prefixes.length;
  scanTokens(text, limit, (token, start, end) => {
    const term = terms.words.has(token) ? token : terms.prefixes.find((p) => token.startsWith(p));
    if (term === undefined) return false;
    hits.push({ term, start, end });
    if (hits.length >= MAX_MATCHES) return true;
    const inWindow = new Set<string>();
    for (let i = hits.length - 1; i >= 0 && end - hits[i]!.start <= size; i--) inWindow.add(hits[i]!.term);
    return inWindow.size === all;
  });
  return hits;
}

/** Every match in `text[from, to)`, with offsets in `text`. */
function windowHits(text: string, from: number, to: number, terms: SnippetTerms): Hit[] {
  const hits: Hit[] = [];
  scanTokens(text.slice(from, to), to - from, (token, start, end) => {
    if (terms.words.has(token) || terms.prefixes.some((p) => token.startsWith(p)))
      hits.push({ term: token, start: from + start, end: from + end });
  });
  return hits;
}

const escapeHtml = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
const collapse = (s: string) => s.replace(/\s+/gu, ' ');

/** `text[from, to)` with its hits marked, escaped, whitespace collapsed, "…" where it was cut. */
function render(text: string, from: number, to: number, hits: Hit[]): string {
  let out = '';
  let at = from;
  for (const hit of hits) {
    if (hit.start < from || hit.end > to) continue;
    out += escapeHtml(text.slice(at, hit.start)) + '<mark>' + escapeHtml(text.slice(hit.start, hit.end)) + '</mark>';
    at = hit.end;
  }
  out += escapeHtml(text.slice(at, to));
  out = collapse(out);
  if (from > 0) out = '…' + out.trimStart();
  if (to < text.length) out = out.trimEnd() + '…';
  return out.trim();
}

const isWord = (c: string | undefined) => c !== undefined && /[\p{L}\p{M}\p{N}]/u.test(c);
const isLowSurrogate = (text: string, i: number) => /[\udc00-\udfff]/u.test(text[i] ?? '');

/** Moves a window's start forward out of a word it would cut, never past `limit`. */
function cutStart(text: string, i: number, limit: number): number {
  if (i <= 0) return 0;
  while (i < limit && ((isWord(text[i - 1]) && isWord(text[i])) || isLowSurrogate(text, i))) i++;
  return i;
}

/** Moves a window's end back out of a word it would cut, never before `floor`. */
function cutEnd(text: string, i: number, floor: number): number {
  if (i >= text.length) return text.length;
  while (i > floor && ((isWord(text[i - 1]) && isWord(text[i])) || isLowSurrogate(text, i))) i--;
  return i;
}

/**
 * The window of at most `size` characters holding the most distinct terms (then the most hits),
 * starting a little before its first hit.
 */
function bestWindow(
  text: string,
  hits: Hit[],
  size: number,
): { from: number; to: number; distinct: number; count: number } {
  let best = { distinct: -1, count: -1, first: 0 };
  for (let i = 0; i < hits.length; i++) {
    const seen = new Set<string>();
    let j = i;
    while (j < hits.length && hits[j]!.end - hits[i]!.start <= size) seen.add(hits[j++]!.term);
    if (seen.size > best.distinct || (seen.size === best.distinct && j - i > best.count))
      best = { distinct: seen.size, count: Math.max(1, j - i), first: i };
  }
  const first = hits[best.first]!;
  const last = hits[best.first + best.count - 1]!;
  const slack = Math.max(0, size - (last.end - first.start));
  let from = Math.max(0, first.start - Math.min(LEAD_CHARS, slack >> 1));
  let to = Math.min(text.length, from + size);
  if (to === text.length) from = Math.max(0, Math.min(from, to - size)); // use the room before
  return {
    from: cutStart(text, from, first.start),
    to: Math.max(cutEnd(text, to, last.end), last.end),
    distinct: best.distinct,
    count: best.count,
  };
}

/**
 * The snippet of one message: its body around the matched words, else its subject when only the
 * subject holds them, else (the match was in an address or a file name) the body's beginning,
 * unmarked.
 */
export function makeSnippet(subject: string, body: string | null, terms: SnippetTerms, size = SNIPPET_CHARS): string {
  for (const text of [body ?? '', subject]) {
    const hits = hitsIn(text, terms, text === subject ? size * 4 : SCAN_CHARS, size);
    if (hits.length === 0) continue;
    const { from, to } = bestWindow(text, hits, size);
    // The read may have stopped at the window's last match: mark every match inside it.
    return render(text, from, to, windowHits(text, from, to, terms));
  }
  const text = body ?? '';
  const source = text.trim() ? text : subject;
  const start = source.search(/\S/u);
  if (start < 0) return '';
  return render(source, start, cutEnd(source, Math.min(source.length, start + size), start + 1), []);
}

/** One attachment's extracted text, as a snippet reads it (its beginning: the store cuts it). */
export interface AttachmentText {
  id: number;
  fileName: string;
  text: string;
}

/**
 * How much of one message's attachment text is looked through for a snippet, over all its
 * attachments (the first ATTACHMENT_SCAN_FILES of them, in order): as SCAN_CHARS bounds a body.
 */
export const ATTACHMENT_SCAN_CHARS = 200_000;
export const ATTACHMENT_SCAN_FILES = 20;

/**
 * The longest file name a snippet names (longer ones are cut, with "…"): a name is the mail's to
 * choose, and a search item must stay small (an MCP answer's bound counts it); `id` names the
 * attachment exactly.
 */
export const SNIPPET_FILE_NAME_CHARS = 1_000;

/** Whether an item still needs a snippet from its attachments: its own shows none of the words. */
export const lacksMarks = (item: { snippet?: string }) => !item.snippet?.includes('<mark>');

/**
 * Gives each item whose snippet shows none of the query's words (the words matched inside an
 * attachment: `attachment:` terms) the window of its attachments' text around them instead, and
 * names that attachment (`snippetAttachment`). The window is chosen as a body's is, over all the
 * files looked through: the most different words, then the most matches, the earlier file on a
 * tie; a window holding every word ends the search. Items without such a hit are left as they are.
 */
export function withAttachmentSnippets<T extends { id: number; snippet?: string }>(
  items: T[],
  terms: SnippetTerms,
  texts: Map<number, AttachmentText[]>,
  size = SNIPPET_CHARS,
): Array<T & { snippetAttachment?: { id: number; fileName: string } }> {
  const all = terms.words.size + terms.prefixes.length;
  return items.map((item) => {
    if (!lacksMarks(item)) return item;
    let budget = ATTACHMENT_SCAN_CHARS;
    let best: { file: AttachmentText; text: string; from: number; to: number; distinct: number; count: number } | null =
      null;
    for (const file of (texts.get(item.id) ?? []).slice(0, ATTACHMENT_SCAN_FILES)) {
      if (budget <= 0) break;
      const text = file.text.length > budget ? file.text.slice(0, budget) : file.text;
      budget -= text.length;
      const hits = hitsIn(text, terms, text.length, size);
      if (hits.length === 0) continue;
      const window = bestWindow(text, hits, size);
      if (!best || window.distinct > best.distinct || (window.distinct === best.distinct && window.count > best.count))
        best = { file, text, ...window };
      if (best.distinct === all) break;
    }
    if (!best) return item;
    const snippet = render(best.text, best.from, best.to, windowHits(best.text, best.from, best.to, terms));
    const name = best.file.fileName;
    const fileName = name.length > SNIPPET_FILE_NAME_CHARS ? `${name.slice(0, SNIPPET_FILE_NAME_CHARS - 1)}…` : name;
    return { ...item, snippet, snippetAttachment: { id: best.file.id, fileName } };
  });
}

/** Adds a snippet to each item that has a body or subject in `texts`; keeps the order. */
export function withSnippets<T extends { id: number; subject: string }>(
  items: T[],
  terms: SnippetTerms,
  bodies: Map<number, string | null>,
): Array<T & { snippet: string }> {
  return items.map((item) => ({ ...item, snippet: makeSnippet(item.subject, bodies.get(item.id) ?? null, terms) }));
}

/** About how many characters get_thread's `excerpt` of each message holds (shared/jobs.ts). */
export const EXCERPT_CHARS = 160;
/** How much of a body an excerpt is read from (the stores cut it in SQL). */
export const EXCERPT_SOURCE_CHARS = 2_000;

/**
 * The beginning of a message's text body as plain text: whitespace collapsed, cut at a word
 * boundary near `size` characters, "…" when the body goes on. Not escaped, unlike a snippet: it
 * goes out as a JSON string, never as HTML. Empty when the message has no text body.
 */
export function excerptOf(body: string | null, size = EXCERPT_CHARS): string {
  const text = collapse(body ?? '').trim();
  if (text.length <= size) return text;
  return `${text.slice(0, cutEnd(text, size, Math.floor(size / 2))).trimEnd()}…`;
}

/** Adds each item's excerpt (excerptOf its body in `bodies`); keeps the order. */
export function withExcerpts<T extends { id: number }>(
  items: T[],
  bodies: Map<number, string | null>,
): Array<T & { excerpt: string }> {
  return items.map((item) => ({ ...item, excerpt: excerptOf(bodies.get(item.id) ?? null) }));
}
