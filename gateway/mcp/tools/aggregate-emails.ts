// aggregate_emails: exact counts of a search's messages by group (docs/search.md, "Aggregates").
import { z } from 'zod';
import { AggregateResultDto } from '../../../shared/dto.js';
import { AGGREGATE_LIMIT_DEFAULT, AGGREGATE_LIMIT_MAX, GROUP_BY } from '../../../shared/jobs.js';
import { parseAggregateInput } from '../../../shared/search-input.js';
import { enumParam, intParam, stringParam } from '../params.js';
import { objectResult, withNote } from '../results.js';
import { defineTool, type McpTool } from './define.js';
import { filterParams } from './filters.js';

export function aggregateEmailsTool(): McpTool {
  return defineTool({
    name: 'aggregate_emails',
    title: 'Count emails by group',
    description:
      'Counts the archived emails this API key may read that match a search (the same q, from, to, accountId, folder and direction as ' +
      'search_emails) by group, and returns the largest groups with exact counts: {groupBy, total, distinctGroups, groups: [{key, count}]}, ' +
      'most messages first; for year, month and week the latest periods, oldest first (time order). One call answers "who writes most about X", "how many invoices a month", "which folders hold mail from this domain". ' +
      'groupBy: from (sender address), fromDomain, to (each recipient address; a message counts once per recipient), folder, account (account id), ' +
      'year, month (2024-03), week (ISO week in UTC, 2024-W09) or hasAttachments. total counts matching messages once each. ' +
      'To see the messages of a group, call search_emails with the same arguments narrowed to it (e.g. q from:<address>, folder, or from/to dates).',
    heavyJob: 'aggregate',
    input: z.object({
      groupBy: enumParam('groupBy', GROUP_BY, `What to group by: ${GROUP_BY.join(', ')}.`),
      q: stringParam('q', 'Full-text query, as search_emails q (the same language).').optional(),
      ...filterParams(),
      limit: intParam(
        'limit',
        `How many of the largest groups (for year, month, week: the latest periods) to return, clamped to 1..${AGGREGATE_LIMIT_MAX}; omitted or 0 means ${AGGREGATE_LIMIT_DEFAULT}.`,
      ).optional(),
    }),
    output: z.object(AggregateResultDto.shape),
    async run(args, { service, caller }) {
      const result = await service.aggregate(caller, parseAggregateInput(args), args);
      const answer = objectResult(result);
      return result.distinctGroups > result.groups.length
        ? withNote(
            answer,
            `The ${result.groups.length} ${['year', 'month', 'week'].includes(result.groupBy) ? 'latest' : 'largest'} of ${result.distinctGroups} groups; call aggregate_emails again with a larger limit (at most ${AGGREGATE_LIMIT_MAX}) or narrower arguments for the others.`,
          )
        : answer;
    },
  });
}
