// The typed contract between the gateway (event loop) and the engine (worker threads).
//
// A job is a plain, structured-cloneable object `{ kind, ...args }`; JobMap names its result.
// Both front ends (REST and MCP) build the same jobs, so permission checks and query logic
// exist once, inside the engine.
import type {
  AccessType,
  AggregateResultDto,
  EmailDetailDto,
  EmailSummaryDto,
  FolderNodeDto,
  GroupBy,
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
  /**
   * Present when the key is an OAuth access token (docs/mcp.md, "OAuth"): it is good for /mcp
   * only, and reads only `accountIds` of what its user sees (null: all of them).
   */
  oauth?: { grantId: number; accountIds: number[] | null };
}

/** What decides which accounts a request may read. */
export type Viewer = Pick<Principal, 'isAdmin' | 'userId' | 'oauth'>;

/** The spec's five keys, plus relevance (engine/search/relevance.ts; ties newest first). */
export const SORT_KEYS = ['sentDate', 'receivedDate', 'subject', 'from', 'to', 'relevance'] as const;
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
  /** Add a `snippet` to each item (docs/search.md, "Snippets"); only when `q` has words. */
  snippets?: boolean;
  /** `include=threadId`: each item also carries its conversation's threadId. */
  includeThreadId?: boolean;
}

export { AGGREGATE_LIMIT_DEFAULT, AGGREGATE_LIMIT_MAX, GROUP_BY, type GroupBy } from './dto.js';

/** An aggregate after validation: a search's query and filters (its paging and sort unused), grouped. */
export interface AggregateQuery {
  query: SearchQuery;
  groupBy: GroupBy;
  limit: number;
}

/** At most this many messages of one conversation are returned (the oldest); documented in the API. */
export const MAX_THREAD_LENGTH = 1000;

/** The engine's two worker lanes (engine/pool/pool.ts): point reads and key checks, and scans. */
export type Lane = 'interactive' | 'query';

export type AuthFailure = 'unknown' | 'expired' | 'revoked' | 'inactive';
export type AuthResult =
  | { ok: true; principal: Principal }
  /** `oauth`: the key is an OAuth grant's access token, so the 401 names the grant (docs/mcp.md, "OAuth"). */
  | { ok: false; reason: AuthFailure; oauth?: true };

/** Attachment content is stored in chunks of this many bytes; downloads stream chunk by chunk. */
export const ATTACHMENT_CHUNK_BYTES = 256 * 1024;

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
  /**
   * Names these exact bytes, for the download's strong ETag: the content's SHA-256 where the store
   * keeps one (SQLite; AttachmentContents on PostgreSQL), else the never-rewritten row's identity.
   */
  contentTag: string;
}

/**
 * One page of an attachment's extracted text (docs/import.md, "Attachment text"). `status` is
 * 'ok' when text was found, 'not extracted' before anything read it (reindex --attachments),
 * else why there is none: 'encrypted', 'too large', 'timeout', 'unsupported', 'failed: ...'.
 */
export interface AttachmentTextPage {
  attachment: Omit<AttachmentHandle, 'contentId' | 'chunkCount' | 'contentTag'>;
  status: string;
  /** The page: totalChars counts UTF-16 code units, as offset and maxChars do. */
  text: string;
  offset: number;
  totalChars: number;
  /** A bound of the extraction cut the text (pages, characters). */
  truncated: boolean;
}

/** Default and largest page of attachment text MCP get_attachment returns (format "text"). */
export const TEXT_PAGE_DEFAULT = 20_000;
export const TEXT_PAGE_MAX = 100_000;

/**
 * How a message's bytes were come by (docs/evidence.md): the bytes as they arrived, kept at import
 * or sync; a message rebuilt from the stored fields, as Mail Archiver's own "Export as EML" does,
 * which claims nothing about the original; or nothing, for mail archived before originals were
 * kept when no reconstruction was asked for.
 */
export type MessageCopyKind = 'original' | 'reconstructed' | 'none';

/** One message's bytes as the archive can give them, with what an export's manifest lists. */
export interface MessageCopy {
  id: number;
  accountId: number;
  folder: string;
  /** UTC ISO 8601. */
  sentDate: string;
  from: string;
  subject: string;
  copy: MessageCopyKind;
  /** The bytes; null when `copy` is 'none'. */
  bytes: Uint8Array | null;
  /** SHA-256 of `bytes`, lowercase hex; null when `copy` is 'none'. */
  sha256: string | null;
  /**
   * Why the copy is not the original, in one sentence (no original kept; or a stored original
   * failed its integrity check, so a reconstruction is served instead).
   */
  note?: string;
  /** Set when an original is kept but failed its integrity check (its bytes are not served as it). */
  damaged?: true;
}

/** A batch of message copies stops after this many bytes (at least one message): the caller asks again. */
export const MESSAGE_COPY_BATCH_BYTES = 16 * 1024 * 1024;

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
  /**
   * The front end that read. `cli`: `mail-archive search`/`show`, whose `clientIp` is the
   * operating-system account and host that ran it (docs/search.md, "From the command line").
   */
  source: 'api' | 'mcp' | 'web' | 'cli';
}

/** A signed-in web user. `stamp` fingerprints the password hash: a new password ends old sessions. */
export interface WebUser {
  id: number;
  username: string;
  isAdmin: boolean;
  stamp: string;
}

export type KeyStatus = 'active' | 'expired' | 'revoked' | 'owner inactive';

/** A client registered with RFC 7591 dynamic client registration (public: no secret). */
export interface OAuthClient {
  clientId: string;
  name: string;
  redirectUris: string[];
  /**
   * What the registration response said beyond the columns above (its grant types): each
   * registration is stored once, its redirect URIs only in `redirectUris`.
   */
  metadata: Record<string, unknown>;
  createdAt: number;
}

/** Bounds on registered clients that never completed an authorization (docs/mcp.md, "OAuth"). */
export interface OAuthRegisterLimits {
  /** Such a client is pruned this long after it registered. */
  unusedMs: number;
  /** At most this many at once; past it a registration is refused ('full'). */
  maxUnused: number;
}

export type OAuthRegisterResult = 'registered' | 'full';

/** What the person approved on the consent page, to be bound to a one-time code. */
export interface OAuthCodeInput {
  codeHash: string;
  clientId: string;
  clientName: string;
  redirectUri: string;
  /** PKCE S256 challenge. */
  codeChallenge: string;
  /** The RFC 8707 resource the token will be good for (this server's /mcp). */
  resource: string;
  /** The accounts chosen (null: every account the user sees, now and later). */
  accountIds: number[] | null;
  /** When the grant ends (the "how long" of the consent page). */
  grantExpiresAt: number;
  /** When the code stops being exchangeable. */
  expiresAt: number;
}

/** A token request after the gateway read it (RFC 6749 sections 4.1.3 and 6). */
export type OAuthTokenRequest =
  | {
      grant: 'authorization_code';
      codeHash: string;
      clientId: string;
      redirectUri: string | undefined;
      codeVerifier: string;
      resource: string | undefined;
    }
  | { grant: 'refresh_token'; refreshHash: string; clientId: string; resource: string | undefined };

export type OAuthTokenResult =
  | { ok: true; accessToken: string; refreshToken: string; expiresAt: number; grantId: number }
  | { ok: false; error: 'invalid_grant' | 'invalid_target'; description: string };

/** The OAuth grant behind a key (docs/mcp.md, "OAuth"), as the keys page shows it. */
export interface KeyGrant {
  clientId: string;
  clientName: string;
  /** The grant's accounts; null: all the user sees. */
  accountIds: number[] | null;
  /** When the grant ends; the key row's expiry is its current access token's. */
  expiresAt: string;
}

/** An API key as it is listed (CLI, web page): never the key itself or its hash. */
export interface KeyRow {
  id: number;
  userId: number;
  username: string;
  name: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
  status: KeyStatus;
  /** Present when the key is an OAuth grant's access token. */
  oauth?: KeyGrant;
}

/** Keys listed per page on the web page (docs/security.md, item 5: an administrator sees every user's). */
export const KEYS_PAGE_SIZE = 50;

/** One page of a key list, oldest first (by user name, then key, for everyone else's). */
export interface KeyListPage {
  rows: KeyRow[];
  total: number;
  /** The page these rows are, from 1: the one asked for, or the last when it asked past it. */
  page: number;
  pageSize: number;
}

/** The page to show of `total` rows: `requested`, kept within 1 and the last page. */
export function pageWithin(total: number, requested: number | undefined, pageSize = KEYS_PAGE_SIZE): number {
  const last = Math.max(1, Math.ceil(total / pageSize));
  return Math.min(Math.max(1, Math.trunc(requested ?? 1)), last);
}

/** Outcome of a web key operation; `not-found` also covers keys the actor may not touch. */
export type WebKeyResult<T> =
  { ok: true; value: T } | { ok: false; reason: 'not-found' | 'forbidden' | 'invalid'; message: string };

/** A message detail serialised on the worker (JobMap.detailJson). */
export interface EncodedDetail {
  id: number;
  accountId: number;
  /** EmailDetailDto as JSON, UTF-8; its own ArrayBuffer, moved to the gateway thread, not copied. */
  json: Uint8Array;
  /** shared/etag.ts of `json`. */
  etag: string;
}

/** An HTML body made safe to show (engine/rules/mail-html.ts sanitizeMailHtml). */
export interface SafeMailHtml {
  /** Sanitized markup: no script, no event handler, no form, no remote load unless asked. */
  html: string;
  /** Remote images (and other remote loads) removed because remote images were not asked for. */
  remoteBlocked: number;
  /** True when the body was longer than what is shown and was cut. */
  truncated: boolean;
}

/** What the web's message page shows (JobMap.messageView). */
export interface MessageView {
  email: EmailDetailDto;
  /** The HTML body made safe, or null when the message has none. */
  html: SafeMailHtml | null;
}

export interface JobMap {
  authenticate: { args: { keyHash: string; now: number }; result: AuthResult };
  accounts: { args: { principal: Principal }; result: MailAccountDto[] };
  /** null when the account does not exist or is not visible. */
  folders: { args: { principal: Principal; accountId: number }; result: FolderNodeDto[] | null };
  search: { args: { principal: Principal; query: SearchQuery }; result: PagedResult<EmailSummaryDto> };
  /**
   * What the web's search page shows, in one crossing to a thread: the search, the accounts the
   * caller sees, and with `folderTreeOf` that account's folder tree (null when it is not visible).
   */
  searchView: {
    args: { principal: Principal; query: SearchQuery; folderTreeOf?: number };
    result: { results: PagedResult<EmailSummaryDto>; accounts: MailAccountDto[]; folders: FolderNodeDto[] | null };
  };
  /** The top groups of a search's matches, with exact counts (engine/rules/aggregate.ts). */
  aggregate: { args: { principal: Principal; aggregate: AggregateQuery }; result: AggregateResultDto };
  /** null when the message does not exist or is not visible. */
  /**
   * With `interactiveMaxBytes` (the pool sets it on the interactive lane), a message whose stored
   * bodies are larger is not read: the job answers engine/rules/large-detail.ts's MovedToQueryLane
   * instead, and the pool runs it again on the query lane. Callers of the pool never see that.
   */
  detail: { args: { principal: Principal; id: number; interactiveMaxBytes?: number }; result: EmailDetailDto | null };
  /**
   * The same detail as the REST answer's bytes: JSON, UTF-8, with its ETag, made on the worker so
   * that a message of tens of megabytes costs the gateway thread a write, not a parse, a
   * serialisation and a hash (docs/security.md, item 4; engine/rules/encoded-detail.ts). Sized as `detail` is.
   */
  detailJson: {
    args: { principal: Principal; id: number; interactiveMaxBytes?: number };
    result: EncodedDetail | null;
  };
  /**
   * A message as the web page shows it to a person (docs/web.md, "Reading mail"): its detail and
   * its HTML body made safe to show (engine/rules/mail-html.ts), made on the worker. `partUrl` is
   * where a `cid:` image is served, with `{attachmentId}` in it; `remoteImages` keeps remote image
   * addresses (else they are removed and counted). Sized as `detail` is. null: missing or hidden.
   */
  messageView: {
    args: { principal: Principal; id: number; remoteImages: boolean; partUrl: string; interactiveMaxBytes?: number };
    result: MessageView | null;
  };
  /**
   * The conversation of a message, oldest first (at most MAX_THREAD_LENGTH members, engine/rules/threads.ts);
   * null when the message does not exist or is not visible.
   */
  /** `excerpts`: each item also carries an `excerpt`, the beginning of its text body (MCP get_thread). */
  thread: {
    args: { principal: Principal; id: number; excerpts?: boolean };
    result: Array<EmailSummaryDto & { excerpt?: string }> | null;
  };
  /** null when the message or attachment does not exist or is not visible. */
  attachment: {
    args: { principal: Principal; emailId: number; attachmentId: number };
    result: AttachmentHandle | null;
  };
  /** An attachment's extracted text, paged; null when the attachment does not exist or is not visible. */
  attachmentText: {
    args: { principal: Principal; emailId: number; attachmentId: number; offset?: number; maxChars?: number };
    result: AttachmentTextPage | null;
  };
  /** One stored chunk of attachment content, in order; null past the end. */
  attachmentChunk: {
    /** `first`: the first chunk a download reads (not chunk 0 for a range), which a busy pool may refuse. */
    args: { contentId: number; seq: number; first?: boolean };
    result: Uint8Array | null;
  };
  stats: { args: { principal: Principal }; result: StatsDto };
  /**
   * Messages' bytes (MessageCopy), in the order of `ids`: the original where the archive keeps one;
   * for mail archived before originals were kept, with `reconstruct` a message rebuilt from its
   * stored fields, else copy 'none'. A store that never keeps originals (Mail Archiver's) always
   * rebuilds. Ids that do
   * not exist or are not visible are left out. The batch stops once MESSAGE_COPY_BATCH_BYTES are
   * read; `next` is the index in `ids` to ask from again (ids.length when done).
   */
  messageCopies: {
    /** `first`: the first batch of a download or an export, which a busy pool may refuse; later ones never are. */
    args: { principal: Principal; ids: number[]; reconstruct: boolean; first?: boolean };
    result: { copies: MessageCopy[]; next: number };
  };
  /**
   * Every id a search matches (its q and filters; paging and sort ignored), oldest first by sent
   * date, then id; `ids` is null when more than `max` match (only `total` is counted then).
   */
  exportIds: {
    args: { principal: Principal; query: SearchQuery; max: number };
    result: { total: number; ids: number[] | null };
  };

  accessLog: { args: { entries: AccessLogEntry[] }; result: { written: number } };
  /** Web sign-in: the user when the password matches and the user is active, else null. */
  login: { args: { username: string; password: string }; result: WebUser | null };
  /** Re-checks a session's user on every web request: null once inactive or the password changed. */
  /** `issuedAt`: when the session began; one begun before the user last signed out is void. */
  sessionUser: { args: { userId: number; stamp: string; issuedAt: number }; result: WebUser | null };
  /** Signing out: every session of this user begun before `now` is void from now on. */
  endSessions: { args: { userId: number; now: number }; result: null };
  /**
   * One page of the actor's own keys and, for administrators, one page of everyone else's (else
   * null), KEYS_PAGE_SIZE to a page; a page past the last is the last. With `keyId`, also that
   * key when the actor may see it (`named`, else null), wherever it is in the lists.
   */
  listKeysFor: {
    args: { actorId: number; now: number; ownPage?: number; othersPage?: number; keyId?: number };
    result: WebKeyResult<{ own: KeyListPage; others: KeyListPage | null; named: KeyRow | null }>;
  };
  /** Creates a key for the actor; the plaintext `key` exists only in this result. */
  createKeyFor: {
    /** `maxActive`: Web:MaxActiveKeysPerUser, the actor's active keys allowed. */
    args: { actorId: number; name: string; expiresAt: number | null; now: number; maxActive: number };
    result: WebKeyResult<{ key: string; row: KeyRow }>;
  };
  /** Revokes a key the actor owns, or any key when the actor is an administrator. */
  revokeKeyAs: { args: { actorId: number; keyId: number; now: number }; result: WebKeyResult<KeyRow> };
  /** A dynamically registered OAuth client, or null. */
  oauthClient: { args: { clientId: string }; result: OAuthClient | null };
  oauthRegister: { args: { client: OAuthClient; limits: OAuthRegisterLimits }; result: OAuthRegisterResult };
  /**
   * Stores a one-time authorization code for what the actor approved; refused when the actor is
   * not active or chose an account they do not see, or already holds `maxGrants` live grants.
   */
  oauthIssueCode: {
    args: { actorId: number; code: OAuthCodeInput; now: number; maxGrants: number };
    result: 'issued' | 'refused' | 'too many grants';
  };
  /** The token endpoint's work: a code or a refresh token for a new access token (a key) and refresh token. */
  oauthToken: { args: { request: OAuthTokenRequest; now: number; accessMs: number }; result: OAuthTokenResult };
  /** RFC 7009: ends the grant of an access or refresh token of this client (nothing if unknown). */
  oauthRevoke: { args: { tokenHash: string; clientId: string; now: number }; result: null };
  /**
   * Fault injection for tests of failure handling: a worker throws or exits while serving it, or
   * `hold`s its thread (as a long scan would, or a wedged lane) until another thread sets
   * `release[0]` to 1 and notifies it, or for `ms` at most. Runs on `lane` (default query).
   * Refused unless the pool was created with `faultInjection: true`.
   */
  fault: {
    args: { mode: 'throw' | 'exit' | 'hold'; lane?: Lane; release?: Int32Array; ms?: number };
    result: null;
  };
  /**
   * Readiness: the thread answers and its connection reads the archive (the schema version). On
   * PostgreSQL it also reports the servers it reads from (never failing because one is down).
   */
  ping: {
    args: Record<string, never>;
    result: { schemaVersion: number; postgres?: PostgresHealth; searchIndex?: SearchIndexInfo };
  };
  /**
   * Once the first search index is posted, the pool sends one to each query thread (engine/pool/warm-up.ts):
   * a search of the index's commonest word by date, as an administrator, whose answer goes nowhere
   * (engine/search/warm-up.ts). `word` is null when the thread did not search: it had no current
   * index (no `thread` then: it is warmed later), its index keeps no word, or it had run its
   * warm-up already.
   */
  warmUp: {
    args: Record<string, never>;
    result: { word: string | null; totalItems?: number; ms?: number; thread?: number };
  };
}

/** One PostgreSQL server as readiness sees it: answering (`ms`: round trip) or not. */
export interface PostgresServerCheck {
  status: 'ok' | 'down';
  ms?: number;
}

/** The primary (Database:Path) and each read replica (Database:ReadReplicas), in their order. */
export interface PostgresHealth {
  primary: PostgresServerCheck;
  replicas: Array<
    PostgresServerCheck & {
      /** host:port/database, never the credentials. */
      server: string;
      /** False while reads skip it after a failure, until a probe finds it answering. */
      inRotation: boolean;
      /** WAL bytes it has yet to replay, when it and the primary both answered. */
      lagBytes?: number;
    }
  >;
}

export type JobKind = keyof JobMap;
export type Job<K extends JobKind = JobKind> = { [P in K]: { kind: P } & JobMap[P]['args'] }[K];
export type JobResult<K extends JobKind> = JobMap[K]['result'];

/**
 * The shared in-memory search index of a SQLite archive, as one query thread sees it (/readyz):
 * `building` before the first snapshot, `catching up` while the archive has changed since it,
 * `current` when searches count with it. SQL counts whenever it is not current.
 */
export interface SearchIndexInfo {
  status: 'building' | 'catching up' | 'current';
  /** Messages up to this id are in the snapshot. */
  maxId?: number;
  /** Size of the shared snapshot, shared by every thread of the process. */
  bytes?: number;
  /** Words and tags kept as sets. */
  terms?: number;
  builtAt?: string;
  buildMs?: number;
  /** How this process came by the snapshot: a full build, a saved file, or an earlier one caught up. */
  origin?: 'built' | 'loaded' | 'caught up';
  /** No full build since this process loaded the saved index file. */
  fromFile?: boolean;
}

/** The kinds of job that read as someone: their arguments carry the caller's principal. */
export type OwnedKind = { [K in JobKind]: JobMap[K]['args'] extends { principal: Principal } ? K : never }[JobKind];
/** Such a job without its principal, which the worker fills in from a key (AuthedJob). */
export type UnownedJob<K extends OwnedKind = OwnedKind> = {
  [P in K]: { kind: P } & Omit<JobMap[P]['args'], 'principal'>;
}[K];

/** A signed-in web session's claim (a signed cookie): checked as a `sessionUser` job checks it. */
export interface SessionClaim {
  userId: number;
  stamp: string;
  issuedAt: number;
}

/**
 * A key check (or a web session's check) and the job it admits, sent as one job so that a
 * request crosses to a worker thread once (docs/decisions.md, ADR 7). The worker authenticates
 * `keyHash` at `now` exactly as an `authenticate` job does (or the `session` as a `sessionUser`
 * job does) and, only when it is genuine, runs `job` as its principal. It runs on `job`'s lane
 * and is shed as `job` would be.
 */
export interface AuthedJob<K extends OwnedKind = OwnedKind> {
  kind: 'authed';
  now: number;
  job: UnownedJob<K>;
  /** The key's SHA-256; or else `session`: exactly one of the two. */
  keyHash?: string;
  session?: SessionClaim;
}

/**
 * The principal a signed-in web user's jobs run as: no key (keyId 0, no prefix), the user's own
 * scope, re-read on every request (gateway/web/session.ts).
 */
export function sessionPrincipal(user: Pick<WebUser, 'id' | 'username' | 'isAdmin'>): Principal {
  return { userId: user.id, username: user.username, isAdmin: user.isAdmin, keyId: 0, keyPrefix: '' };
}

/** A `sessionUser` job's answer as a check's outcome: a user gone, inactive or re-passworded is refused. */
export function sessionAuth(user: WebUser | null): AuthResult {
  return user ? { ok: true, principal: sessionPrincipal(user) } : { ok: false, reason: 'inactive' };
}

/**
 * What an AuthedJob found: the key's outcome always; for a genuine key, the job's result, or
 * the error the job failed with (so the gateway still knows whose request it was).
 */
export type AuthedResult<K extends OwnedKind = OwnedKind> =
  | { auth: Extract<AuthResult, { ok: false }> }
  | { auth: Extract<AuthResult, { ok: true }>; result: JobResult<K> }
  | { auth: Extract<AuthResult, { ok: true }>; error: Error };
