// The typed contract between the gateway (event loop) and the engine (worker threads).
//
// A job is a plain, structured-cloneable object `{ kind, ...args }`; JobMap names its result.
// Both front ends (REST and MCP) build the same jobs, so permission checks and query logic
// exist once, inside the engine.
import type {
  AccessType,
  EmailDetailDto,
  EmailSummaryDto,
  FolderNodeDto,
  MailAccountDto,
  PagedResult,
  StatsDto,
} from './dto.js';

/** Who is asking: resolved from an API key on every request, never cached across requests. */
export interface Principal {
  userId: number;
  username: string;
  isAdmin: boolean;
  keyId: number;
  keyPrefix: string;
}

export const SORT_KEYS = ['sentDate', 'receivedDate', 'subject', 'from', 'to'] as const;
export type SortKey = (typeof SORT_KEYS)[number];
export type SortOrder = 'asc' | 'desc';
export type Direction = 'incoming' | 'outgoing';

/** A search after validation: dates are epoch milliseconds, both bounds inclusive. */
export interface SearchQuery {
  q?: string;
  from?: number;
  to?: number;
  accountId?: number;
  folder?: string;
  direction?: Direction;
  page: number;
  pageSize: number;
  sortBy: SortKey;
  sortOrder: SortOrder;
}

export type AuthFailure = 'unknown' | 'expired' | 'revoked' | 'inactive';
export type AuthResult = { ok: true; principal: Principal } | { ok: false; reason: AuthFailure };

/** Enough to stream an attachment: its metadata and where its content chunks live. */
export interface AttachmentHandle {
  id: number;
  emailId: number;
  accountId: number;
  fileName: string;
  contentType: string;
  size: number;
  contentId: number;
  chunkCount: number;
}

export interface AccessLogEntry {
  userId: number;
  type: AccessType;
  /** Epoch milliseconds. */
  at: number;
  keyPrefix: string;
  clientIp: string;
  emailId?: number;
  accountId?: number;
  /** The search parameters as given, for Search entries. */
  searchParams?: Record<string, unknown>;
  source: 'api' | 'mcp' | 'web';
}

export interface JobMap {
  authenticate: { args: { keyHash: string; now: number }; result: AuthResult };
  accounts: { args: { principal: Principal }; result: MailAccountDto[] };
  /** null when the account does not exist or is not visible. */
  folders: { args: { principal: Principal; accountId: number }; result: FolderNodeDto[] | null };
  search: { args: { principal: Principal; query: SearchQuery }; result: PagedResult<EmailSummaryDto> };
  /** null when the message does not exist or is not visible. */
  detail: { args: { principal: Principal; id: number }; result: EmailDetailDto | null };
  /** null when the message or attachment does not exist or is not visible. */
  attachment: {
    args: { principal: Principal; emailId: number; attachmentId: number };
    result: AttachmentHandle | null;
  };
  /** One stored chunk of attachment content, in order; null past the end. */
  attachmentChunk: { args: { contentId: number; seq: number }; result: Uint8Array | null };
  stats: { args: { principal: Principal }; result: StatsDto };
  accessLog: { args: { entries: AccessLogEntry[] }; result: { written: number } };
  /**
   * Fault injection for tests of failure handling: a worker throws or exits while serving it.
   * Refused unless the pool was created with `faultInjection: true`.
   */
  fault: { args: { mode: 'throw' | 'exit' }; result: never };
}

export type JobKind = keyof JobMap;
export type Job<K extends JobKind = JobKind> = { [P in K]: { kind: P } & JobMap[P]['args'] }[K];
export type JobResult<K extends JobKind> = JobMap[K]['result'];
