// Validation of search parameters, shared by REST (query strings) and MCP (typed JSON).
// Both front ends hand over what the caller sent; this turns it into a SearchQuery or throws
// InvalidInput naming the parameter and what was wrong, which each front end reports its way.
import { InvalidInput, isInvalidInput } from './errors.js';
import {
  AGGREGATE_LIMIT_DEFAULT,
  AGGREGATE_LIMIT_MAX,
  GROUP_BY,
  SORT_KEYS,
  type AggregateQuery,
  type Direction,
  type GroupBy,
  type SearchQuery,
  type SortKey,
  type SortOrder,
} from './jobs.js';
import { parseQuery, QuerySyntaxError } from './query-language.js';

// Defined in the error catalogue; exported here too, beside the parsing that throws them.
export { InvalidInput, isInvalidInput };

/**
 * What a store without Mail Archiver's IsRead column says to is:read / is:unread: the parameter
 * is valid, this archive cannot answer it.
 */
export const readTermsUnsupported = () =>
  new InvalidInput(
    'q',
    'is:read and is:unread need the read flag of Mail Archiver (ArchivedEmails."IsRead"), which this archive does not have; remove them from q.',
  );

export const MAX_QUERY_LENGTH = 10_000;

/**
 * How many of the newest matches `sortBy=relevance` ranks (engine/search/relevance.ts); older
 * matches follow, newest first (docs/search.md). Part of what clients are told (OpenAPI, MCP tool
 * description). It keeps a ranking's cost bounded however many messages match, and keeps
 * recent mail ahead of old mail that merely uses the words more.
 */
export const RELEVANCE_WINDOW = 1_000;
/** About how long a search item's `snippet` is, in characters (engine/search/snippet.ts). */
export const SNIPPET_CHARS = 200;
export const INT32_MAX = 2_147_483_647;
export const INT32_MIN = -2_147_483_648;
/** Every search parameter (REST query and MCP search_emails alike): the access log keeps these only. */
export const SEARCH_PARAMS = [
  'q',
  'from',
  'to',
  'accountId',
  'folder',
  'direction',
  'page',
  'pageSize',
  'sortBy',
  'sortOrder',
  'snippets',
  'include',
  // aggregate_emails / GET /api/v1/emails/aggregate
  'groupBy',
  'limit',
] as const;

const API_KEY_IN_TEXT = /ma_[A-Za-z0-9_-]{43}/g;
const LOGGED = new Set<string>(SEARCH_PARAMS);

/**
 * The search parameters the access log keeps, for every front end (REST, MCP, web, the CLI):
 * known names only, anything that looks like an API key redacted to its prefix (a key pasted into
 * a query must not land in the database).
 */
export function loggedParams(params: Record<string, unknown>): Record<string, unknown> {
  const redact = (v: unknown): unknown =>
    typeof v === 'string'
      ? v.replace(API_KEY_IN_TEXT, (key) => `${key.slice(0, 11)}…(redacted)`)
      : Array.isArray(v)
        ? v.map(redact)
        : v;
  return Object.fromEntries(
    Object.entries(params)
      .filter(([k]) => LOGGED.has(k))
      .map(([k, v]) => [k, redact(v)]),
  );
}

/** The longest `folder` accepted: far beyond any IMAP folder path, short of a pasted document. */
export const MAX_FOLDER_LENGTH = 1024;
/** The longest `from`/`to` accepted (the longest ISO 8601 form is 35 characters). */
export const MAX_DATE_PARAM_LENGTH = 64;

export interface PageLimits {
  defaultPageSize: number;
  maxPageSize: number;
}

/** What a caller may send: strings from a query string, or typed values from JSON. */
export type RawSearchInput = Record<string, unknown>;

function single(param: string, value: unknown): unknown {
  if (Array.isArray(value)) {
    if (value.length > 1) throw new InvalidInput(param, `${param} was given more than once; give it once.`);
    return value[0];
  }
  return value;
}

/** Absent, null or an empty string all mean "not given". */
function present(value: unknown): boolean {
  return value !== undefined && value !== null && !(typeof value === 'string' && value.trim() === '');
}

export function parseInt32(param: string, value: unknown): number {
  const v = single(param, value);
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*[-+]?\d+\s*$/.test(v) ? Number(v) : Number.NaN;
  if (!Number.isInteger(n) || n > INT32_MAX || n < INT32_MIN) {
    throw new InvalidInput(param, `${param} must be a 32-bit integer, not ${JSON.stringify(v)}.`);
  }
  return n;
}

/** A JSON boolean, or `true`/`false`/`1`/`0` in any case from a query string. */
export function parseBoolean(param: string, value: unknown): boolean {
  const v = single(param, value);
  if (typeof v === 'boolean') return v;
  const text = typeof v === 'string' ? v.trim().toLowerCase() : undefined;
  if (text === 'true' || text === '1') return true;
  if (text === 'false' || text === '0') return false;
  throw new InvalidInput(param, `${param} must be true or false, not ${JSON.stringify(v)}.`);
}

function parseString(param: string, value: unknown): string {
  const v = single(param, value);
  if (typeof v !== 'string') throw new InvalidInput(param, `${param} must be a string.`);
  return v;
}

/** A string of at most `max` characters (the OpenAPI document declares the same bound). */
function boundedString(param: string, value: unknown, max: number): string {
  const text = parseString(param, value);
  if (text.length > max)
    throw new InvalidInput(param, `${param} is ${text.length} characters long; the limit is ${max}.`);
  return text;
}

function oneOf<T extends string>(param: string, value: unknown, allowed: readonly T[]): T {
  const v = parseString(param, value).trim();
  const found = allowed.find((a) => a.toLowerCase() === v.toLowerCase());
  if (!found)
    throw new InvalidInput(
      param,
      `${param} must be one of ${allowed.join(', ')} (any case), not ${JSON.stringify(v)}.`,
    );
  return found;
}

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?([Zz]|[+-]\d{2}:?\d{2})?$/;
const DAY_MS = 86_400_000;

function validCalendarDate(y: string, m: string, d: string): boolean {
  const date = new Date(Date.UTC(Number(y), Number(m) - 1, Number(d)));
  return date.getUTCFullYear() === Number(y) && date.getUTCMonth() === Number(m) - 1 && date.getUTCDate() === Number(d);
}

/**
 * YYYY-MM-DD or an ISO 8601 date-time (UTC when it names no offset). A date-only upper bound
 * covers that whole day; a date-time is used as given.
 */
export function parseDateBound(param: string, value: unknown, bound: 'lower' | 'upper'): number {
  const text = boundedString(param, value, MAX_DATE_PARAM_LENGTH).trim();
  const problem = () =>
    new InvalidInput(
      param,
      `${param} must be a date (YYYY-MM-DD) or an ISO 8601 date-time such as 2024-03-05T09:30:00Z, not ${JSON.stringify(text)}.`,
    );
  const dateOnly = DATE_ONLY.exec(text);
  if (dateOnly) {
    const [, y, m, d] = dateOnly as unknown as [string, string, string, string];
    if (!validCalendarDate(y, m, d)) throw problem();
    const start = Date.UTC(Number(y), Number(m) - 1, Number(d));
    return bound === 'upper' ? start + DAY_MS - 1 : start;
  }
  const dt = DATE_TIME.exec(text);
  if (!dt) throw problem();
  const [, y, m, d, hh, mm, ss] = dt as unknown as [string, string, string, string, string, string, string | undefined];
  if (!validCalendarDate(y, m, d) || Number(hh) > 23 || Number(mm) > 59 || Number(ss ?? 0) > 59) throw problem();
  const offset = dt[8] ?? 'Z';
  const normalized = `${y}-${m}-${d}T${hh}:${mm}:${ss ?? '00'}${dt[7] ? `.${dt[7].slice(0, 3).padEnd(3, '0')}` : ''}${
    /^[zZ]$/.test(offset) ? 'Z' : offset.length === 5 ? `${offset.slice(0, 3)}:${offset.slice(3)}` : offset
  }`;
  const ms = Date.parse(normalized);
  if (Number.isNaN(ms)) throw problem();
  return ms;
}

/** What `include` may name: extra fields of each search item (additive to SPEC.md). */
export const INCLUDE_FIELDS = ['threadId'] as const;

/**
 * `include`: a field name, a comma-separated list, or an array of them (a query string given
 * twice, or MCP's typed array); any case. An unknown name is refused, so a typo is not silent.
 */
export function parseInclude(value: unknown): Set<(typeof INCLUDE_FIELDS)[number]> {
  const parts = (Array.isArray(value) ? value : [value]).flatMap((v) => {
    if (typeof v !== 'string') throw new InvalidInput('include', 'include must be a string or an array of strings.');
    return v.split(',');
  });
  const out = new Set<(typeof INCLUDE_FIELDS)[number]>();
  for (const part of parts.map((p) => p.trim()).filter(Boolean)) {
    const found = INCLUDE_FIELDS.find((f) => f.toLowerCase() === part.toLowerCase());
    if (!found)
      throw new InvalidInput('include', `include may name ${INCLUDE_FIELDS.join(', ')}, not ${JSON.stringify(part)}.`);
    out.add(found);
  }
  return out;
}

export function parseSearchInput(raw: RawSearchInput, limits: PageLimits): SearchQuery {
  const query: SearchQuery = { page: 1, pageSize: limits.defaultPageSize, sortBy: 'sentDate', sortOrder: 'desc' };
  if (present(raw.q)) {
    const q = parseString('q', raw.q);
    if (q.length > MAX_QUERY_LENGTH)
      throw new InvalidInput('q', `q is ${q.length} characters long; the limit is ${MAX_QUERY_LENGTH}.`);
    try {
      parseQuery(q);
    } catch (err) {
      if (err instanceof QuerySyntaxError) throw new InvalidInput('q', `q: ${err.message}`);
      throw err;
    }
    query.q = q;
  }
  if (present(raw.from)) query.from = parseDateBound('from', raw.from, 'lower');
  if (present(raw.to)) query.to = parseDateBound('to', raw.to, 'upper');
  if (query.from !== undefined && query.to !== undefined && query.from > query.to) {
    throw new InvalidInput('from', 'from is after to; give a range whose start is not after its end.');
  }
  if (present(raw.accountId)) query.accountId = parseInt32('accountId', raw.accountId);
  if (present(raw.folder)) query.folder = boundedString('folder', raw.folder, MAX_FOLDER_LENGTH);
  if (present(raw.direction)) query.direction = oneOf<Direction>('direction', raw.direction, ['incoming', 'outgoing']);
  if (present(raw.page)) {
    query.page = parseInt32('page', raw.page);
    if (query.page < 1) throw new InvalidInput('page', `page is 1-based; ${query.page} is not a page.`);
  }
  if (present(raw.pageSize)) {
    const size = parseInt32('pageSize', raw.pageSize);
    query.pageSize = size === 0 ? limits.defaultPageSize : Math.min(Math.max(size, 1), limits.maxPageSize);
  }
  query.pageSize = Math.min(query.pageSize, limits.maxPageSize);
  if (present(raw.sortBy)) query.sortBy = oneOf<SortKey>('sortBy', raw.sortBy, SORT_KEYS);
  if (present(raw.sortOrder)) query.sortOrder = oneOf<SortOrder>('sortOrder', raw.sortOrder, ['asc', 'desc']);
  if (present(raw.snippets) && parseBoolean('snippets', raw.snippets)) query.snippets = true;
  if (present(raw.include) && parseInclude(raw.include).has('threadId')) query.includeThreadId = true;
  return query;
}

/**
 * An aggregate's parameters: a search's query and filters (q, from, to, accountId, folder,
 * direction; validated as a search validates them, paging and sort ignored), `groupBy` (required,
 * any case) and `limit` (groups, default 20, clamped to [1, 100] as pageSize is clamped).
 */
export function parseAggregateInput(raw: RawSearchInput): AggregateQuery {
  const { q, from, to, accountId, folder, direction } = raw;
  const query = parseSearchInput({ q, from, to, accountId, folder, direction }, { defaultPageSize: 1, maxPageSize: 1 });
  if (!present(raw.groupBy)) throw new InvalidInput('groupBy', `groupBy is required: one of ${GROUP_BY.join(', ')}.`);
  const groupBy = oneOf<GroupBy>('groupBy', raw.groupBy, GROUP_BY);
  let limit = AGGREGATE_LIMIT_DEFAULT;
  if (present(raw.limit)) {
    const asked = parseInt32('limit', raw.limit);
    limit = asked === 0 ? AGGREGATE_LIMIT_DEFAULT : Math.min(Math.max(asked, 1), AGGREGATE_LIMIT_MAX);
  }
  return { query, groupBy, limit };
}
