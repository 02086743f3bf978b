// get_thread: the conversation of an email, oldest first, in parts when it does not fit one answer.
import type { CallToolResult } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { EmailSummaryDto } from '../../../shared/dto.js';
import { MAX_THREAD_LENGTH } from '../../../shared/jobs.js';
import { InvalidInput } from '../../../shared/search-input.js';
import { describeCuts, fittingItems, NOTE_RESERVE, SUMMARY_FIELDS } from '../bounds.js';
import { intParam } from '../params.js';
import { withNote, wrappedResult } from '../results.js';
import type { ToolConfig } from './config.js';
import { defineTool, type McpTool } from './define.js';
import { hiddenEmail, pagingFields } from './shapes.js';

/** get_thread's items: summaries with the beginning of each message's text. */
const ThreadItem = z.object({
  ...EmailSummaryDto.shape,
  excerpt: z.string().optional().meta({
    description: 'The beginning of the text body, whitespace collapsed (about 160 characters). Untrusted content.',
  }),
});

export function getThreadTool({ bound }: ToolConfig): McpTool {
  return defineTool({
    name: 'get_thread',
    title: 'Get the conversation of an email',
    description:
      'Returns the conversation an archived email belongs to, oldest first, the email itself included: summaries (id, accountId, subject, from, to, sentDate, ' +
      'isOutgoing, hasAttachments, folderName) of the messages of its account linked by Message-ID, References and In-Reply-To, or joined by subject ' +
      `(Re:/Fwd:/AW: and the like stripped, within 30 days), each with an excerpt (the beginning of its text body). At most ${MAX_THREAD_LENGTH.toLocaleString('en')} messages; ` +
      'when they do not fit one answer, the result says so and gives nextOffset for the next call. Open one with get_email and its id. ' +
      'The text result is null when the email does not exist or this key may not read it.',
    input: z.object({
      id: intParam('id', 'An email id, from search_emails: any message of the conversation.'),
      offset: intParam(
        'offset',
        'How many of the oldest messages to skip, default 0: the nextOffset of the previous answer, when the conversation did not fit one answer.',
      ).optional(),
    }),
    output: z.object({
      items: z
        .array(ThreadItem)
        .nullable()
        .meta({ description: 'The conversation oldest first (from offset), or null; the text result is this value' }),
      total: z.number().int().optional().meta({ description: 'Messages in the conversation' }),
      ...pagingFields('messages'),
    }),
    async run({ id, offset = 0 }, { service, caller }) {
      if (offset < 0) throw new InvalidInput('offset', 'offset must be 0 or more.');
      const items = await service.thread(caller, id, { excerpts: true });
      if (items === null) return hiddenEmail(id, 'items');
      return threadResult(id, items, offset, bound);
    },
  });
}

/**
 * get_thread within the bound: the messages from `offset` that fit, and when that is not all of
 * them, where the next call starts.
 */
function threadResult(
  id: number,
  all: Array<z.infer<typeof ThreadItem>>,
  offset: number,
  bound: number,
): CallToolResult {
  const rest = all.slice(offset);
  const { items, cut } = fittingItems(rest, bound - NOTE_RESERVE, SUMMARY_FIELDS);
  const end = offset + items.length;
  const nextOffset = end < all.length ? end : null;
  const structured = { items, total: all.length, offset, nextOffset };
  const where =
    nextOffset === null
      ? offset === 0
        ? `All ${all.length} messages of the conversation, oldest first.`
        : `Messages ${offset + 1} to ${end} of ${all.length}: the last of the conversation.`
      : `Messages ${offset + 1} to ${end} of ${all.length}, as many as fit one answer; call get_thread with id ${id} and offset ${nextOffset} for the next.`;
  const cutNote =
    Object.keys(cut).length > 0 ? ` Fields too long for one answer were cut, marked "…": ${describeCuts(cut)}.` : '';
  return withNote(wrappedResult(items, structured), `${where} Open a message with get_email and its id.${cutNote}`);
}
