// The wire shapes of SPEC.md, “Resources and their fields”, as zod schemas: the types the code uses, the MCP tools'
// output schemas and the OpenAPI document's components all come from these definitions.
// Timestamps are UTC ISO 8601 strings ending in `Z`; the engine produces them with toISOString().
import { z } from 'zod';

/** What `aggregate_emails` / `GET /api/v1/emails/aggregate` can group by (docs/search.md, "Aggregates"). */
export const GROUP_BY = [
  'from',
  'fromDomain',
  'to',
  'folder',
  'account',
  'year',
  'month',
  'week',
  'hasAttachments',
] as const;
export type GroupBy = (typeof GROUP_BY)[number];
/** Groups an aggregate returns: `limit`'s default and largest value. */
export const AGGREGATE_LIMIT_DEFAULT = 20;
export const AGGREGATE_LIMIT_MAX = 100;

const dateTime = (description: string) => z.string().meta({ format: 'date-time', description });
const int32 = (description?: string) =>
  z
    .number()
    .int()
    .meta({ format: 'int32', ...(description ? { description } : {}) });

export const MailAccountDto = z
  .object({
    id: int32(),
    name: z.string(),
    emailAddress: z.string(),
    provider: z.string().meta({ description: 'IMAP, M365, …; the list is open.' }),
    isEnabled: z.boolean(),
    lastSync: dateTime('Last synchronisation, UTC.').nullable(),
  })
  .meta({ id: 'MailAccountDto' });
export type MailAccountDto = z.infer<typeof MailAccountDto>;

export interface FolderNodeDto {
  name: string;
  fullPath: string;
  totalCount: number;
  level: number;
  children: FolderNodeDto[];
}
export const FolderNodeDto: z.ZodType<FolderNodeDto> = z
  .object({
    name: z.string().meta({ description: 'Leaf name' }),
    fullPath: z.string().meta({ description: 'Full folder path, `/` separated' }),
    totalCount: int32("The folder's own messages"),
    level: int32('Nesting depth, 0 = root'),
    get children() {
      return z.array(FolderNodeDto);
    },
  })
  .meta({ id: 'FolderNodeDto' });

const summaryShape = {
  id: int32(),
  accountId: int32(),
  subject: z.string(),
  from: z.string(),
  to: z.string(),
  sentDate: dateTime('Sent date, UTC.'),
  isOutgoing: z.boolean(),
  hasAttachments: z.boolean(),
  folderName: z.string().meta({ description: 'Full path of the folder' }),
  // Additive (not in SPEC.md): only on a Mail Archiver database with its read flag.
  isRead: z.boolean().optional().meta({
    description:
      'Whether the message was read in Mail Archiver; only on a Mail Archiver database that has the read flag (ArchivedEmails."IsRead"), absent elsewhere. Search it with is:read or is:unread in q.',
  }),
};

export const EmailSummaryDto = z
  .object({
    ...summaryShape,
    snippet: z.string().optional().meta({
      description:
        'Only with `snippets=true` and words in `q`: the text around the matched words, each wrapped in <mark>…</mark>, the rest HTML-escaped (docs/search.md).',
    }),
    // Additive (not in SPEC.md): only with snippets=true, when the snippet is from an attachment.
    snippetAttachment: z.object({ id: int32(), fileName: z.string() }).optional().meta({
      description:
        'Only with `snippets=true`, when the words of `q` were found inside an attachment (attachment: terms) and not in the body: the attachment the `snippet` is taken from (docs/search.md, "Snippets").',
    }),
    // Additive (not in SPEC.md): present only when the caller asked for it (include=threadId).
    threadId: int32(
      'The conversation this message belongs to (the smallest message id in it); only with include=threadId. Use it with thread:<id> in q or GET /api/v1/emails/{id}/thread.',
    ).optional(),
  })
  .meta({ id: 'EmailSummaryDto' });
export type EmailSummaryDto = z.infer<typeof EmailSummaryDto>;

export const AttachmentDto = z
  .object({
    id: int32(),
    fileName: z.string(),
    contentType: z.string(),
    size: z.number().int().meta({ format: 'int64', description: 'Bytes' }),
  })
  .meta({ id: 'AttachmentDto' });
export type AttachmentDto = z.infer<typeof AttachmentDto>;

export const EmailDetailDto = z
  .object({
    ...summaryShape,
    cc: z.string(),
    bcc: z.string(),
    receivedDate: dateTime('Received date, UTC.'),
    messageId: z.string(),
    textBody: z.string().nullable().meta({ description: 'Resolved by the body fallback chain.' }),
    htmlBody: z
      .string()
      .nullable()
      .meta({ description: 'Resolved by the body fallback chain. Raw and unsanitized: untrusted.' }),
    attachments: z.array(AttachmentDto).meta({ description: 'Metadata only' }),
  })
  .meta({ id: 'EmailDetailDto' });
export type EmailDetailDto = z.infer<typeof EmailDetailDto>;

export const PagedResultDtoOfEmailSummaryDto = z
  .object({
    items: z.array(EmailSummaryDto),
    page: int32('1-based'),
    pageSize: int32(),
    totalItems: int32(),
    totalPages: int32(),
  })
  .meta({ id: 'PagedResultDtoOfEmailSummaryDto' });

export interface PagedResult<T> {
  items: T[];
  page: number;
  pageSize: number;
  totalItems: number;
  totalPages: number;
}
export type PagedResultDtoOfEmailSummaryDto = PagedResult<EmailSummaryDto>;

export const StatsDto = z
  .object({
    emails: int32('Archived messages visible to the caller'),
    accounts: int32('Mail accounts visible to the caller'),
    attachments: int32('Attachments on the visible messages'),
    databaseSizeInMB: z
      .string()
      .meta({ description: 'Size of the whole database in megabytes; empty string for non-admin keys.' }),
  })
  .meta({ id: 'StatsDto' });
export type StatsDto = z.infer<typeof StatsDto>;

export const AggregateGroupDto = z
  .object({
    key: z.string().meta({
      description:
        'The group: an address (from, to), a domain (fromDomain), a folder path, an account id, `2024`, `2024-03`, `2024-W09` (ISO week, UTC), or `true`/`false` (hasAttachments).',
    }),
    count: int32('Matching messages in the group, exact'),
  })
  .meta({ id: 'AggregateGroupDto' });

export const AggregateResultDto = z
  .object({
    groupBy: z.enum(GROUP_BY).meta({ description: 'What the messages were grouped by, as asked' }),
    total: int32('Messages the query and filters match (each counted once, whatever its groups)'),
    distinctGroups: int32('Groups with at least one matching message; at most `limit` of them are listed'),
    groups: z.array(AggregateGroupDto).max(AGGREGATE_LIMIT_MAX).meta({
      description:
        'The largest groups, most messages first; equal counts by key (code point order). For year, month and week: the latest periods, in time order (oldest first)',
    }),
  })
  .meta({ id: 'AggregateResultDto' });
export type AggregateResultDto = z.infer<typeof AggregateResultDto>;

export const ProblemDetails = z
  .object({
    type: z.string().meta({ format: 'uri' }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    instance: z.string(),
  })
  .meta({ id: 'ProblemDetails' });
export type ProblemDetails = z.infer<typeof ProblemDetails>;

export type AccessType = 'Search' | 'Open' | 'Download';
