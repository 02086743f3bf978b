// The query parameters of GET /api/v1/emails (shared/search-input.ts parses them), also the
// filters of the aggregate route.
import type { Settings } from '../../../shared/config.js';
import { SORT_KEYS, type SortKey } from '../../../shared/jobs.js';
import {
  INCLUDE_FIELDS,
  MAX_DATE_PARAM_LENGTH,
  MAX_FOLDER_LENGTH,
  MAX_QUERY_LENGTH,
  RELEVANCE_WINDOW,
  SNIPPET_CHARS,
} from '../../../shared/search-input.js';
import type { OpenApiParameter } from './model.js';
import { int32 } from './responses.js';

/** What each accepted sort key orders by; typed so a new key cannot go undocumented. */
const SORT_KEY_MEANING: Record<SortKey, string> = {
  sentDate: 'sent date',
  receivedDate: 'received date',
  subject: 'subject, case-insensitive',
  from: 'sender, case-insensitive',
  to: 'recipient address, case-insensitive',
  relevance: `full-text rank of \`q\` among its newest ${RELEVANCE_WINDOW.toLocaleString('en')} matches (best first with \`desc\`, newest first among equals), then older matches newest first; without \`q\`, sent date`,
};

export function searchParameters(settings: Settings): OpenApiParameter[] {
  const { DefaultPageSize, MaxPageSize } = settings.Api;
  const dateForms =
    'Accepted forms: a date `YYYY-MM-DD` or an ISO 8601 date-time such as `2024-03-05T09:30:00Z` (UTC when it names no offset). Published as a date-time string; an unparseable value is a 400.';
  return [
    {
      name: 'q',
      in: 'query',
      description: `Full-text query over subject, body, from, to, cc and bcc; all words must match, case- and accent-insensitively. Also: \`"exact phrase"\`, \`a OR b\`, \`-word\` or \`NOT word\`, \`(groups)\`, \`prefix*\`, field terms \`subject:\`, \`from:\`, \`to:\`, \`cc:\`, \`bcc:\`, \`body:\` (a word, prefix or quoted phrase; \`from:alice@example.com\` matches that exact address), \`has:attachment\`, \`filename:<word>\` \`thread:<id>\` (the conversation of message \`id\`; any message id of it works) and \`attachment:<word or "phrase" or prefix*>\` (the text inside attachments: PDF, DOCX, text, HTML, attached messages; plain words do not search it). A query with no sensible reading (such as an unmatched \`)\`) is a 400 naming q. At most ${MAX_QUERY_LENGTH} characters. See docs/search.md.`,
      schema: { type: 'string', maxLength: MAX_QUERY_LENGTH },
    },
    {
      name: 'from',
      in: 'query',
      description: `Earliest sent date, inclusive. A date means the start of that UTC day. ${dateForms}`,
      schema: { type: 'string', format: 'date-time', maxLength: MAX_DATE_PARAM_LENGTH },
    },
    {
      name: 'to',
      in: 'query',
      description: `Latest sent date, inclusive. A date means the whole of that UTC day. ${dateForms}`,
      schema: { type: 'string', format: 'date-time', maxLength: MAX_DATE_PARAM_LENGTH },
    },
    {
      name: 'accountId',
      in: 'query',
      description:
        "Restrict to one account, which must be visible to the caller (an account outside the caller's permitted accounts yields no results).",
      schema: { ...int32 },
    },
    {
      name: 'folder',
      in: 'query',
      description: `Restrict to one folder by its full path, e.g. \`INBOX/Invoices\`. At most ${MAX_FOLDER_LENGTH} characters.`,
      schema: { type: 'string', maxLength: MAX_FOLDER_LENGTH },
    },
    {
      name: 'direction',
      in: 'query',
      description: '`incoming` or `outgoing` (case-insensitive).',
      schema: { type: 'string', enum: ['incoming', 'outgoing'] },
    },
    {
      name: 'page',
      in: 'query',
      description: '1-based page number. A page past the last one is a 200 with an empty `items` array.',
      schema: { ...int32, minimum: 1, default: 1 },
    },
    {
      name: 'pageSize',
      in: 'query',
      description: `Results per page. 0 (the default) means \`Api:DefaultPageSize\`, ${DefaultPageSize} on this server. Other values are clamped to [1, \`Api:MaxPageSize\`], [1, ${MaxPageSize}] on this server.`,
      schema: { ...int32, default: 0 },
    },
    {
      name: 'sortBy',
      in: 'query',
      description: `Sort key (case-insensitive). Any other value is a 400. ${SORT_KEYS.map((k) => `\`${k}\`: ${SORT_KEY_MEANING[k]}`).join('; ')}.`,
      schema: { type: 'string', enum: [...SORT_KEYS], default: 'sentDate' },
    },
    {
      name: 'sortOrder',
      in: 'query',
      description: '`asc` or `desc` (case-insensitive).',
      schema: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
    },
    {
      name: 'snippets',
      in: 'query',
      description: `\`true\` adds a \`snippet\` to each item: up to about ${SNIPPET_CHARS} characters of the stored text body (or the subject) around the words of \`q\`, each matched word wrapped in \`<mark>\`…\`</mark>\`, everything else HTML-escaped (\`&\`, \`<\`, \`>\`), whitespace collapsed, \`…\` where the text was cut. Items get no snippet when \`q\` has no words for the subject or body (no \`q\`, or only negations, address or file-name terms, \`has:attachment\`); where the words matched only in an address, the snippet is the start of the body, unmarked. An addition to SPEC.md: without it items are exactly as SPEC.md describes. See docs/search.md.`,
      schema: { type: 'boolean', default: false },
    },
    {
      name: 'include',
      in: 'query',
      description:
        'Extra fields for each item, comma-separated or repeated (case-insensitive). `threadId`: the conversation each message belongs to (`EmailSummaryDto.threadId`). Without it items carry exactly the fields above. Any other name is a 400.',
      schema: { type: 'string', enum: [...INCLUDE_FIELDS] },
    },
  ];
}
