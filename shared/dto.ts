// The wire shapes of SPEC.md section 2, shared by the REST routes, the MCP tools and the engine.
// Timestamps are UTC ISO 8601 strings ending in `Z`; the engine produces them with toISOString().

export interface MailAccountDto {
  id: number;
  name: string;
  emailAddress: string;
  provider: string;
  isEnabled: boolean;
  lastSync: string | null;
}

export interface FolderNodeDto {
  name: string;
  fullPath: string;
  totalCount: number;
  level: number;
  children: FolderNodeDto[];
}

export interface EmailSummaryDto {
  id: number;
  accountId: number;
  subject: string;
  from: string;
  to: string;
  sentDate: string;
  isOutgoing: boolean;
  hasAttachments: boolean;
  folderName: string;
}

export interface AttachmentDto {
  id: number;
  fileName: string;
  contentType: string;
  size: number;
}

export interface EmailDetailDto extends EmailSummaryDto {
  cc: string;
  bcc: string;
  receivedDate: string;
  messageId: string;
  textBody: string | null;
  htmlBody: string | null;
  attachments: AttachmentDto[];
}

export interface PagedResult<T> {
  items: T[];
  page: number;
  pageSize: number;
  totalItems: number;
  totalPages: number;
}

export type PagedResultDtoOfEmailSummaryDto = PagedResult<EmailSummaryDto>;

export interface StatsDto {
  emails: number;
  accounts: number;
  attachments: number;
  /** Whole database size in MB as a string; "" for non-admin keys. */
  databaseSizeInMB: string;
}

export type AccessType = 'Search' | 'Open' | 'Download';
