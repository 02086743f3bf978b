// Answers that fit the model that asked (docs/mcp.md, "Answers that fit the model"; ADR 20). A client holds a tool result only up
// to a size (Claude Code: 25,000 tokens; past about 50,000 characters it spills the result to a
// file), so every result's text stays within Mcp:MaxResultChars (default 80,000 characters, about
// 20,000 tokens). What would be larger is paged and says so: a long body is cut at a character
// offset the next call starts from; a list keeps the items that fit and says where to go on.
// Nothing here reads the archive: these functions shape what the engine already returned.

/** Room kept for the sentence that says how to read on, which is a text block of its own. */
export const NOTE_RESERVE = 600;

/** JSON length of a value: what the text block of a result costs. */
export const jsonLength = (value: unknown): number => JSON.stringify(value).length;

const isHigh = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLow = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/**
 * `text` from `start` for at most `count` UTF-16 units, never splitting a surrogate pair: a page
 * whose end falls inside a pair takes the whole pair, and a page starting on the second half of a
 * pair (the previous page took it) skips it. Consecutive pages thus give every character once.
 */
export function sliceText(text: string, start: number, count: number): string {
  let from = Math.min(start, text.length);
  if (from > 0 && isLow(text.charCodeAt(from)) && isHigh(text.charCodeAt(from - 1))) from += 1;
  let end = Math.min(text.length, start + count);
  if (end > from && end < text.length && isHigh(text.charCodeAt(end - 1)) && isLow(text.charCodeAt(end))) end += 1;
  return text.slice(from, Math.max(from, end));
}

/** The largest n in [0, high] for which fits(n) holds, fits being monotonic (fits(0) assumed). */
export function largestFitting(high: number, fits: (n: number) => boolean): number {
  if (fits(high)) return high;
  let lo = 0;
  let hi = high;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * Cuts the longest of `fields` (strings of `value`) until its JSON is at most `bound` characters,
 * ending each cut with "…". Mail headers are hostile input: a To of thousands of addresses would
 * otherwise make one summary larger than any answer may be. Returns the cut copy and, for each
 * field cut, its original length; nothing is cut when the value fits.
 */
export function cutLongFields<T extends object>(
  value: T,
  fields: readonly string[],
  bound: number,
): { value: T; cut: Record<string, number> } {
  const out = { ...value } as Record<string, unknown>;
  const cut: Record<string, number> = {};
  for (let guard = 0; guard < 64 && jsonLength(out) > bound; guard++) {
    const longest = fields
      .filter((f) => typeof out[f] === 'string')
      .sort((a, b) => (out[b] as string).length - (out[a] as string).length)[0];
    if (!longest) break;
    const text = out[longest] as string;
    if (text.length <= 1) break;
    cut[longest] ??= ((value as Record<string, unknown>)[longest] as string).length;
    const excess = jsonLength(out) - bound;
    out[longest] =
      `${sliceText(text, 0, Math.max(0, Math.min(text.length - excess - 1, Math.floor(text.length / 2))))}…`;
  }
  return { value: out as T, cut };
}

/** "to (12,345 characters)": which fields were cut, for the sentence that says so. */
export function describeCuts(cut: Record<string, number>): string {
  return Object.entries(cut)
    .map(([field, length]) => `${field} (${length.toLocaleString('en')} characters)`)
    .join(', ');
}

/** The email fields a model may page through (`get_email` offset/maxChars), and the headers cut only as a last resort. */
export const BODY_FIELDS = ['textBody', 'htmlBody'] as const;
export const HEADER_FIELDS = ['subject', 'from', 'to', 'cc', 'bcc', 'messageId', 'folderName'] as const;
export const SUMMARY_FIELDS = ['subject', 'from', 'to', 'folderName', 'snippet', 'excerpt'] as const;

/**
 * The first items of a list whose JSON fits `bound`, at most all of them. When not even one
 * fits, the first is cut (cutLongFields over `fields`) so that a list never comes back empty
 * while there is something to show.
 */
export function fittingItems<T extends object>(
  items: readonly T[],
  bound: number,
  fields: readonly string[],
): { items: T[]; cut: Record<string, number> } {
  let used = 2; // "[]"
  const kept: T[] = [];
  for (const item of items) {
    const size = jsonLength(item) + (kept.length ? 1 : 0);
    if (used + size > bound) break;
    kept.push(item);
    used += size;
  }
  if (kept.length === 0 && items.length > 0) {
    const { value, cut } = cutLongFields(items[0]!, fields, bound - 2);
    return { items: [value], cut };
  }
  return { items: kept, cut: {} };
}
