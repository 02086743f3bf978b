// Output shapes and answers more than one tool uses.
import type { CallToolResult } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { AttachmentHandle } from '../../../shared/jobs.js';
import { wrappedResult } from '../results.js';

/** The paging fields of a result that may go on: where it starts, and where the next call starts. */
export const pagingFields = (unit: string) => ({
  offset: z
    .number()
    .int()
    .optional()
    .meta({ description: `Where these ${unit} start` }),
  nextOffset: z
    .number()
    .int()
    .nullable()
    .optional()
    .meta({ description: `The offset of the next ${unit}, or null after the last` }),
});

export const ListOf = <T extends z.ZodType>(item: T, description: string) =>
  z.object({ items: z.array(item).meta({ description }) });

/**
 * The answer for an email that is missing or hidden: the result stays null (SPEC.md), and a
 * second text block says what null means, for a model that reads only text.
 */
export function hiddenEmail(id: number, field: 'email' | 'items'): CallToolResult {
  const result = wrappedResult(null, { [field]: null });
  result.content.push({
    type: 'text',
    text: `There is no email ${id} that this key may read: it does not exist, or its account is not visible to this key.`,
  });
  return result;
}

/** What every get_attachment answer says of the file, in this order; a missing type is octet-stream. */
export function attachmentMetadata(a: Pick<AttachmentHandle, 'id' | 'emailId' | 'fileName' | 'contentType' | 'size'>) {
  return {
    id: a.id,
    emailId: a.emailId,
    fileName: a.fileName,
    contentType: a.contentType || 'application/octet-stream',
    size: a.size,
  };
}
