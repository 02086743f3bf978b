// search_emails: one page of summaries of a search, a smaller page of it when it does not fit.
import type { CallToolResult } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { PagedResultDtoOfEmailSummaryDto, type EmailSummaryDto, type PagedResult } from '../../../shared/dto.js';
import { SORT_KEYS } from '../../../shared/jobs.js';
import { TEXT_FIELDS } from '../../../shared/query-language.js';
import { INCLUDE_FIELDS, parseSearchInput, RELEVANCE_WINDOW, SNIPPET_CHARS } from '../../../shared/search-input.js';
import { describeCuts, fittingItems, jsonLength, NOTE_RESERVE, SUMMARY_FIELDS } from '../bounds.js';
import { boolParam, enumParam, intParam, stringParam } from '../params.js';
import { objectResult, withNote } from '../results.js';
import type { ToolConfig } from './config.js';
import { defineTool, type McpTool } from './define.js';
import { filterParams } from './filters.js';

// SPEC.md, “Tool search_emails”, spells sort keys in lower case (`sentdate`); REST spells them in camelCase. Both work.
const SORT_VALUES = [...new Set([...SORT_KEYS.map((k) => k.toLowerCase()), ...SORT_KEYS])] as [string, ...string[]];
const RELEVANCE_NOTE = (SORT_KEYS as readonly string[]).includes('relevance')
  ? ` With relevance, the best matches for q come first (among its newest ${RELEVANCE_WINDOW.toLocaleString('en')} matches; older ones follow, newest first).`
  : '';

export function searchEmailsTool({ mcp, limits, bound }: ToolConfig): McpTool {
  return defineTool({
    name: 'search_emails',
    title: 'Search emails',
    description:
      'Searches the archived emails this API key may read and returns one page of summaries (id, accountId, subject, from, to, ' +
      'sentDate, isOutgoing, hasAttachments, folderName) with page, pageSize, totalItems and totalPages. All arguments are optional ' +
      'and combine with AND. For more results call again with page + 1 while page < totalPages; open a message with get_email.',
    heavyJob: 'search',
    input: z.object({
      q: stringParam(
        'q',
        'Full-text query over subject, body and addresses; all words must match (case- and accent-insensitive). Also: "exact phrase", ' +
          `a OR b, -word, prefix*, (groups), has:attachment, is:read and is:unread (only where the archive has Mail Archiver's read flag; elsewhere an invalid-argument error), thread:<id> (the conversation of email id, as get_thread), and field:word with ${TEXT_FIELDS.join(', ')} (e.g. from:alice@example.com matches that exact address; filename: searches attachment names), ` +
          'and attachment:word or attachment:"phrase" for the text inside attachments (PDF, DOCX, text, HTML, attached messages; plain words do not search it).',
      ).optional(),
      ...filterParams(),
      page: intParam('page', '1-based page number, default 1. A page past the last one returns no items.').optional(),
      pageSize: intParam(
        'pageSize',
        `Results per page, clamped to 1..${mcp.MaxResults}; omitted or 0 means ${mcp.DefaultPageSize}.`,
      ).optional(),
      sortBy: enumParam(
        'sortBy',
        SORT_VALUES,
        `Sort key, default sentdate. One of ${SORT_VALUES.join(', ')}.${RELEVANCE_NOTE}`,
      ).optional(),
      sortOrder: enumParam(
        'sortOrder',
        ['asc', 'desc'],
        'Sort direction: asc or desc, default desc (newest first for dates).',
      ).optional(),
      snippets: boolParam(
        'snippets',
        `true adds to each item a snippet: about ${SNIPPET_CHARS} characters of the body (or subject) around the words of q, ` +
          'each matched word wrapped in <mark>…</mark>, the rest HTML-escaped; shows why a message matched without opening it. ' +
          'When the words were found inside an attachment (attachment: terms), the snippet is from its text and snippetAttachment names it. ' +
          'Default false; needs words in q.',
      ).optional(),
      include: z
        .union([z.enum(INCLUDE_FIELDS), z.array(z.enum(INCLUDE_FIELDS))])
        .meta({
          description:
            'Extra fields for each item: "threadId" (or ["threadId"]) adds the conversation id of each message, for thread:<id> or get_thread.',
        })
        .optional(),
    }),
    output: z.object(PagedResultDtoOfEmailSummaryDto.shape),
    async run(args, { service, caller }) {
      const query = parseSearchInput(args, limits);
      return searchResult(await service.search(caller, query, args), bound);
    },
  });
}

/**
 * search_emails within the bound. The page as asked when it fits; else the first items of it as
 * a smaller page that is still a page of the same search: its size divides the one asked for, so
 * its page number is exact, and the next call asks for the next page at that size. The text block
 * stays SPEC.md's object; a second one says what to call next when there is more.
 */
function searchResult(result: PagedResult<EmailSummaryDto>, bound: number): CallToolResult {
  const budget = bound - NOTE_RESERVE;
  let page = result;
  let cut: Record<string, number> = {};
  if (jsonLength(result) > budget) {
    const envelope = jsonLength({ ...result, items: [] });
    const { items: fit } = fittingItems(result.items, budget - envelope, SUMMARY_FIELDS);
    // The largest divisor of the page size that fits: items [0, d) of page p at size s are page
    // (p - 1) * s / d + 1 at size d.
    let size = 1;
    for (let d = Math.min(fit.length, result.pageSize); d >= 1; d--) {
      if (result.pageSize % d === 0) {
        size = d;
        break;
      }
    }
    let items = result.items.slice(0, size);
    if (jsonLength(items) > budget - envelope) {
      ({ items, cut } = fittingItems(items, budget - envelope, SUMMARY_FIELDS));
    }
    const pageNumber = ((result.page - 1) * result.pageSize) / size + 1;
    page = {
      items,
      page: pageNumber,
      pageSize: size,
      totalItems: result.totalItems,
      totalPages: Math.ceil(result.totalItems / size),
    };
  }
  const notes: string[] = [];
  if (page !== result)
    notes.push(
      `The ${result.pageSize} results asked for do not fit one answer, so this is page ${page.page} at pageSize ${page.pageSize} (the first ${page.items.length} of them).`,
    );
  if (page.page < page.totalPages)
    notes.push(
      `Page ${page.page} of ${page.totalPages} (${page.totalItems} results); call search_emails again with the same arguments and page ${page.page + 1}${page === result ? '' : ` and pageSize ${page.pageSize}`} for the next.`,
    );
  if (Object.keys(cut).length > 0)
    notes.push(`Fields too long for one answer were cut, marked "…": ${describeCuts(cut)}.`);
  const answer = objectResult(page);
  return notes.length ? withNote(answer, notes.join(' ')) : answer;
}
