// mail-archive search: GET /api/v1/emails from a shell (docs/search.md, "From the command line").
// The query language and every filter of the REST route, its exact count, snippets and paging,
// through the same search job, recorded in the access log as a Search with source `cli`.
import type { Command } from 'commander';
import { loadSettings } from '../../../shared/config.js';
import { InvalidInput } from '../../../shared/errors.js';
import { SORT_KEYS } from '../../../shared/jobs.js';
import { loggedParams, parseSearchInput } from '../../../shared/search-input.js';
import type { EmailSummaryDto, PagedResult } from '../../../shared/dto.js';
import { printJson, UsageError } from '../context.js';
import { withReader } from '../reader.js';
import { terminalLine } from '../terminal-text.js';

interface SearchOptions {
  account?: string;
  folder?: string;
  from?: string;
  to?: string;
  direction?: string;
  sortBy?: string;
  sortOrder?: string;
  page?: string;
  pageSize?: string;
  snippets: boolean;
  include?: string;
  user?: string;
  json?: boolean;
}

/** Each CLI option's REST parameter: a bad value is reported under the option's own name. */
const OPTION_OF: Record<string, string> = {
  q: 'QUERY',
  accountId: '--account',
  folder: '--folder',
  from: '--from',
  to: '--to',
  direction: '--direction',
  sortBy: '--sort-by',
  sortOrder: '--sort-order',
  page: '--page',
  pageSize: '--page-size',
  include: '--include',
};

/**
 * A snippet for people: the marks of the hits (docs/search.md, "Snippets") as bold at a terminal
 * and as nothing in a pipe, the HTML escapes undone, and then whatever the mail put there made
 * harmless (an escaped ESC is an ESC again once unescaped).
 */
function readableSnippet(snippet: string, bold: boolean): string {
  const marked = snippet
    .replace(/<mark>/g, bold ? '\u0001' : '')
    .replace(/<\/mark>/g, bold ? '\u0002' : '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
  // \u0001 and \u0002 cannot survive in mail text (terminalLine removes them), so they mark ours.
  const parts = marked.split(/([\u0001\u0002])/);
  return parts.map((p) => (p === '\u0001' ? '\u001b[1m' : p === '\u0002' ? '\u001b[22m' : terminalLine(p))).join('');
}

function printPage(result: PagedResult<EmailSummaryDto>): void {
  const out: string[] = [];
  const { totalItems, page, pageSize, totalPages } = result;
  const noun = totalItems === 1 ? 'message matches' : 'messages match';
  if (totalItems === 0) out.push('No messages match.');
  else if (result.items.length === 0)
    out.push(`${totalItems} ${noun}; page ${page} is past the last page (${totalPages}).`);
  else {
    const first = (page - 1) * pageSize + 1;
    out.push(
      `${totalItems} ${noun}; ${first} to ${first + result.items.length - 1} shown (page ${page} of ${totalPages}).`,
    );
  }
  // Bold hits only at a terminal that has not asked for no colour (https://no-color.org).
  const bold = process.stdout.isTTY === true && !process.env.NO_COLOR;
  for (const item of result.items) {
    const flags = [item.folderName, item.isOutgoing ? 'sent' : null, item.hasAttachments ? 'attachments' : null]
      .filter((f): f is string => f !== null && f !== '')
      .map(terminalLine);
    out.push('');
    out.push(`${item.id}  ${item.sentDate}  ${terminalLine(item.from) || '(no sender)'}`);
    out.push(`    ${terminalLine(item.subject) || '(no subject)'}  [${flags.join(', ')}]`);
    if (item.threadId !== undefined) out.push(`    thread ${item.threadId}`);
    if (item.snippet !== undefined) {
      const from = item.snippetAttachment ? `in attachment ${terminalLine(item.snippetAttachment.fileName)}: ` : '';
      out.push(`    ${from}${readableSnippet(item.snippet, bold)}`);
    }
  }
  process.stdout.write(`${out.join('\n')}\n`);
}

export function registerSearch(program: Command): void {
  program
    .command('search')
    .description('search the archive as GET /api/v1/emails does: the exact count, a page of messages, snippets')
    .argument('[query...]', 'the query language of docs/search.md (words are joined with spaces)')
    .option('--account <id>', 'only this account')
    .option('--folder <path>', 'only this folder (and its subfolders)')
    .option('--from <date>', 'sent on or after this date (YYYY-MM-DD or ISO 8601)')
    .option('--to <date>', 'sent on or before this date (a date covers the whole day)')
    .option('--direction <direction>', 'incoming or outgoing')
    .option('--sort-by <key>', `${SORT_KEYS.join(', ')} (default sentDate)`)
    .option('--sort-order <order>', 'asc or desc (default desc)')
    .option('--page <n>', 'the page, 1-based (default 1)')
    .option('--page-size <n>', 'messages per page (default and largest: Api:DefaultPageSize, Api:MaxPageSize)')
    .option('--no-snippets', 'leave out the text around the hits')
    .option('--include <fields>', 'extra fields of each message: threadId')
    .option('--user <username>', 'read as this user (the accounts they see); default: the operator, every account')
    .option('--json', 'print the page exactly as GET /api/v1/emails answers it')
    .action(async (words: string[], opts: SearchOptions, cmd: Command) => {
      const settings = loadSettings();
      // The parameters by their REST names, as given: what is parsed and what the access log keeps.
      const params: Record<string, string> = {};
      const q = words.join(' ');
      if (q.trim() !== '') params.q = q;
      const given: Array<[string, string | undefined]> = [
        ['accountId', opts.account],
        ['folder', opts.folder],
        ['from', opts.from],
        ['to', opts.to],
        ['direction', opts.direction],
        ['sortBy', opts.sortBy],
        ['sortOrder', opts.sortOrder],
        ['page', opts.page],
        ['pageSize', opts.pageSize],
        ['include', opts.include],
      ];
      for (const [name, value] of given) if (value !== undefined) params[name] = value;
      // Snippets are the CLI's default (why a message matched is what a person at a shell reads).
      if (opts.snippets) params.snippets = 'true';
      let query;
      try {
        query = parseSearchInput(params, {
          defaultPageSize: settings.Api.DefaultPageSize,
          maxPageSize: settings.Api.MaxPageSize,
        });
      } catch (err) {
        if (err instanceof InvalidInput) throw new UsageError(`${OPTION_OF[err.param] ?? err.param}: ${err.message}`);
        throw err;
      }
      const result = await withReader(cmd, opts.user, async (reader) => {
        const page = await reader.run({ kind: 'search', query });
        await reader.record({
          type: 'Search',
          searchParams: loggedParams(params),
          ...(query.accountId !== undefined ? { accountId: query.accountId } : {}),
        });
        return page;
      });
      if (opts.json) printJson(result);
      else printPage(result);
    });
}
