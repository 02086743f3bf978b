// get_attachment with format "text": the text found inside an attachment, one page at a time.
import type { CallToolResult } from '@modelcontextprotocol/server';
import { TEXT_PAGE_DEFAULT, TEXT_PAGE_MAX } from '../../../shared/jobs.js';
import { InvalidInput } from '../../../shared/search-input.js';
import { hasText, noTextReason, type ArchiveService, type Caller } from '../../archive-service.js';
import { toolError } from '../results.js';
import { attachmentMetadata } from './shapes.js';

/** get_attachment with format "text": one page of the extracted text, and how to get the next. */
export async function attachmentTextResult(
  service: ArchiveService,
  caller: Caller,
  id: number,
  attachmentId: number,
  offset = 0,
  maxChars = TEXT_PAGE_DEFAULT,
  bound = TEXT_PAGE_MAX,
): Promise<CallToolResult> {
  if (offset < 0) throw new InvalidInput('offset', 'offset must be 0 or more.');
  if (maxChars < 1 || maxChars > TEXT_PAGE_MAX)
    throw new InvalidInput('maxChars', `maxChars must be between 1 and ${TEXT_PAGE_MAX}.`);
  // The page is the answer's text: never more than the bound (nextOffset says where to go on).
  const page = await service.attachmentText(caller, id, attachmentId, { offset, maxChars: Math.min(maxChars, bound) });
  if (!page)
    return toolError(`Attachment ${attachmentId} of email ${id} was not found; check both ids with get_email.`);
  if (!hasText(page))
    return toolError(
      `Attachment ${attachmentId} of email ${id} has no text: ${noTextReason(page.status)}. format "base64" still returns its bytes.`,
    );
  const end = page.offset + page.text.length;
  const nextOffset = end < page.totalChars ? end : null;
  const structured = {
    ...attachmentMetadata(page.attachment),
    text: page.text,
    offset: page.offset,
    totalChars: page.totalChars,
    nextOffset,
    truncated: page.truncated,
  };
  const where =
    nextOffset === null
      ? `Characters ${page.offset} to ${end} of ${page.totalChars}: the end of the text.`
      : `Characters ${page.offset} to ${end} of ${page.totalChars}; call get_attachment again with format "text" and offset ${nextOffset} for the next page.`;
  return {
    // The page itself first, as plain text (not JSON-escaped), then where it sits.
    content: [
      { type: 'text', text: page.text },
      {
        type: 'text',
        text: `${where}${page.truncated ? ' Extraction stopped at its bounds, so the document goes on beyond this text.' : ''}`,
      },
    ],
    structuredContent: structured,
  };
}
