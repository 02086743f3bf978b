// Settings: one typed object, read once at start-up.
//
// Sources, later wins: built-in defaults, an optional JSON file (`appsettings.json` in the
// working directory, or the path in MAIL_ARCHIVE_SETTINGS), then environment variables of the
// ASP.NET form `Section__Key=value` (section and key names case-insensitive). Anything that does
// not fit the schema stops start-up with a ConfigError whose message is one line naming the
// setting, so the entry points can print it without a stack trace.
import { ConfigError } from './errors.js';
import { readFileSync, existsSync } from 'node:fs';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { z } from 'zod';

const MAX_THREADS = 64;
const MAX_QUEUE = 100_000;
const int = (min: number, max = Number.MAX_SAFE_INTEGER) => z.number().int().min(min).max(max);
/**
 * Schemes a browser or the operating system hands to something other than the app that
 * registered (Mcp:OAuth:RedirectSchemes refuses them): what an attacker's redirect URI used.
 */
const BROWSER_SCHEMES = new Set([
  'http',
  'https',
  'javascript',
  'data',
  'blob',
  'file',
  'ftp',
  'about',
  'view-source',
  'jar',
  'mailto',
  'tel',
  'sms',
  'ms-msdt',
  'search-ms',
  'ms-settings',
  'ms-officecmd',
  'intent',
  'chrome',
]);

/** An IPv4 or IPv6 address, or a CIDR block (`10.0.0.0/8`, `fd00::/8`). */
/** `Database:Path` names a PostgreSQL database when it is a postgres:// or postgresql:// URL. */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value.trim());
}

export function isIanaZone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

export function parseAddressBlock(value: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | null {
  const [address = '', prefixText, ...rest] = value.trim().split('/');
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return null;
  const bits = version === 4 ? 32 : 128;
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) return null;
  const prefix = prefixText === undefined ? bits : Number(prefixText);
  if (prefix > bits) return null;
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

const schema = z.strictObject({
  Api: z
    .strictObject({
      Enabled: z.boolean().default(false),
      AllowAttachmentDownloads: z.boolean().default(true),
      EnableSwaggerUi: z.boolean().default(true),
      DefaultPageSize: int(1).default(20),
      MaxPageSize: int(1).default(100),
      RateLimitPerMinute: int(1).default(120),
      // The most messages one GET /api/v1/emails/export may hold; more is a 422 saying how many
      // matched (docs/export.md, "The bound"). At most 1,000,000: the ids travel in one job's answer.
      MaxExportMessages: int(1, 1_000_000).default(100_000),
      // Browser origins whose pages may read /api/v1 answers (CORS); empty: none (gateway/http/cors.ts).
      AllowedOrigins: z.array(z.string().min(1)).default([]),
    })
    .prefault({}),
  Mcp: z
    .strictObject({
      Enabled: z.boolean().default(false),
      AllowAttachmentDownloads: z.boolean().default(true),
      DefaultPageSize: int(1).default(20),
      MaxResults: int(1).default(100),
      // Largest attachment get_attachment returns whole, inline, as base64. SPEC.md's default is
      // 10,000,000; this one keeps the answer within MaxResultChars (docs/mcp.md, "Answers that fit").
      MaxAttachmentBytes: int(0).default(10_000_000),
      // Largest attachment get_attachment returns in pages (offset, maxBytes): SPEC.md's old inline limit.
      MaxPagedAttachmentBytes: int(0).default(10_000_000),
      // The size bound of every tool result's text, in characters (about 4 to a token: 80,000 is
      // about 20,000 tokens, under the 25,000 a client such as Claude Code keeps). Larger results
      // are paged, never cut without a word (gateway/mcp/bounds.ts).
      MaxResultChars: int(4_000, 100_000_000).default(80_000),
      // Attachment bytes get_attachment may hold at once over all calls (each is encoded whole as
      // base64); a call past it waits up to AttachmentWaitSeconds for its turn, then gets a tool
      // error saying to retry. Bounds the process's memory under many concurrent downloads.
      MaxConcurrentAttachmentBytes: int(1).default(64_000_000),
      AttachmentWaitSeconds: int(0, 600).default(10),
      RateLimitPerMinute: int(1).default(120),
      // Messages that carry no work (initialize, notifications, ping, and answers of 405), per key
      // or client IP per minute: connecting never spends RateLimitPerMinute, but is still capped.
      FreeRequestsPerMinute: int(1).default(600),
      AllowedOrigins: z.array(z.string().min(1)).default([]),
      // The service as its own OAuth 2.1 authorization server for /mcp (docs/mcp.md, "OAuth").
      OAuth: z
        .strictObject({
          Enabled: z.boolean().default(false),
          // An access token (a key of the keys table) lives this long; the client refreshes it.
          AccessTokenMinutes: int(1, 24 * 60).default(60),
          // Longest grant a person may give on the consent page (and its default choice).
          MaxGrantDays: int(1, 3650).default(90),
          // An authorization code must be exchanged this soon after consent.
          CodeLifetimeSeconds: int(10, 600).default(60),
          // RFC 7591 registration for clients without a Client ID Metadata Document.
          AllowDynamicRegistration: z.boolean().default(true),
          // Registrations per client address (an IPv6 one by its /64) per minute.
          RegistrationsPerIpPerMinute: int(1).default(10),
          // A registered client that has not completed an authorization (no code was issued to it)
          // is deleted this long after it registered.
          UnusedClientMinutes: int(1, 7 * 24 * 60).default(60),
          // Token revocations (RFC 7009) per client address per minute.
          RevocationsPerIpPerMinute: int(1).default(30),
          // Registered clients that have not completed an authorization, at most, over all
          // addresses; past it registration answers 429 until some are used or pruned.
          MaxUnusedClients: int(1, 1_000_000).default(1000),
          // Client ID Metadata Documents fetched per client address (an IPv6 one by its /64) per
          // minute, and at most at once over all addresses; a document is then kept as its HTTP
          // caching headers allow (at most an hour), so a client is seldom fetched twice.
          // Private-use redirect schemes accepted though not in reverse-domain form (RFC 8252
          // section 7.1 asks for a dot): MCP clients that register one. Never http(s) or a
          // scheme a browser or the system hands elsewhere; [] for the RFC's rule alone.
          RedirectSchemes: z
            .array(
              z
                .string()
                .regex(/^[a-z][a-z0-9+-]*$/, 'expected a scheme name such as cursor')
                .refine((v) => !BROWSER_SCHEMES.has(v), 'names a scheme that is not an app of its own'),
            )
            .default(['cursor']),
          ClientMetadataFetchesPerIpPerMinute: int(1).default(10),
          ClientMetadataMaxConcurrentFetches: int(1, 10_000).default(16),
          // Client ID Metadata Documents: fetched from https URLs on public addresses only, with
          // these bounds; no redirect is followed. Origins listed here (http://127.0.0.1:8123, or
          // without a port for any port) may also be used, over http and on private addresses.
          ClientMetadataMaxBytes: int(256, 1_000_000).default(5120),
          ClientMetadataTimeoutMs: int(100, 60_000).default(5000),
          ClientMetadataAllowedOrigins: z
            .array(
              z
                .string()
                .refine((v) => /^https?:\/\/[^/?#\s]+$/.test(v), 'expected origins such as http://127.0.0.1:8123'),
            )
            .default([]),
        })
        .prefault({}),
    })
    .prefault({}),
  Database: z
    .strictObject({
      // A file path (SQLite, the embedded default) or a postgres:// URL (a Mail Archiver database).
      Path: z.string().min(1).default('./data/archive.db'),
      // PostgreSQL only: the IANA zone Mail Archiver shows dates in (its TimeZone:DisplayTimeZoneId);
      // its SentDate column holds wall-clock time in that zone (docs/compat.md, "Timestamps").
      TimeZone: z
        .string()
        .min(1)
        .refine(isIanaZone, 'expected an IANA time zone name such as UTC or Europe/Berlin')
        .default('UTC'),
      // PostgreSQL only: streaming replicas that serve reads (docs/postgres.md).
      ReadReplicas: z
        .array(z.string().refine(isPostgresUrl, 'expected a postgres:// or postgresql:// URL'))
        .default([]),
    })
    .prefault({}),
  Server: z
    .strictObject({
      Host: z.string().min(1).default('127.0.0.1'),
      Port: int(0, 65535).default(5000),
      TrustProxy: z.boolean().default(false),
      // With TrustProxy: how many proxies in front of the gateway append to X-Forwarded-For. The
      // client is the entry that many from the right; entries further left are the client's own
      // words and never trusted (docs/security.md, item 2).
      TrustedProxyHops: int(1, 16).default(1),
      // A connection must send a complete request head within this time (then 408, closed).
      HeadersTimeoutSeconds: int(1, 3600).default(20),
      // And the whole request (head and body) within this time.
      RequestTimeoutSeconds: int(1, 3600).default(120),
      // An idle keep-alive connection is closed after this long (above a proxy's own, 60 s in nginx).
      KeepAliveTimeoutSeconds: int(1, 3600).default(65),
      // Connections open at once per process; past it new ones are refused (docs/operations.md).
      MaxConnections: int(1, 1_000_000).default(10_000),
      // Requests with a key that fails authentication, per client IP per minute, on /api and
      // /mcp together; past it they get 429 before any key lookup (gateway/admission.ts).
      AuthFailuresPerIpPerMinute: int(1).default(30),
      // The URL clients reach this service at (https://archive.example.com), for the OAuth issuer
      // and resource URLs; unset, the request's own protocol and Host header.
      PublicUrl: z
        .string()
        .refine((v) => /^https?:\/\/[^/?#\s]+\/?$/.test(v), 'expected an origin such as https://archive.example.com')
        .transform((v) => v.replace(/\/$/, ''))
        .optional(),
      // Access-log entries kept in memory while they cannot be written; once that many wait,
      // reads are refused (503) until writes succeed: every read is recorded (docs/security.md).
      AccessLogMaxBacklog: int(1, 10_000_000).default(10_000),
    })
    .prefault({}),
  Redis: z
    .strictObject({
      Url: z.string().min(1).optional(),
    })
    .prefault({}),
  Engine: z
    .strictObject({
      // A default is not validated, so it is clamped here to the range an explicit value must meet.
      Threads: int(1, MAX_THREADS).default(Math.min(MAX_THREADS, availableParallelism())),
      // Jobs that may wait for a thread before more are refused (503); unset: see engineQueues().
      MaxQueue: int(0, MAX_QUEUE).optional(),
      InteractiveMaxQueue: int(0, MAX_QUEUE).optional(),
      // A job that would wait is refused while the longest-waiting one has waited this long.
      MaxQueueWaitMs: int(1, 60_000).default(500),
      // Memory for the shared search index of a SQLite archive (engine/search/bitsets), in MiB;
      // 0 turns it off (searches are then counted by SQL alone).
      SearchMemoryMB: int(0, 64 * 1024).default(768),
      // A phrase inside attachment text is matched within this many first words of a message's
      // attachment text (engine/sqlite/attachment-phrase.ts): what one message may cost a search.
      PhraseScanWords: int(2, 10_000_000).default(16_384),
      // Where that index is saved so that a restart loads it instead of rebuilding (ADR 23).
      // Unset: beside a SQLite archive (`<archive>.index`); for PostgreSQL
      // `data/postgres-<database>-<hash>.index` under the working directory (engine/pool/pool.ts
      // defaultPostgresIndexFile). '': never saved.
      SearchIndexFile: z.string().optional(),
      // Every engine job not finished this long after it was submitted is cancelled and answered
      // 503 with Retry-After (engine/pool/job-budget.ts): no request can hold a thread for minutes.
      // The slowest legitimate searches take a few seconds at a million messages.
      JobTimeoutSeconds: int(1, 3600).default(30),
    })
    .prefault({}),
  Metrics: z
    .strictObject({
      // GET /metrics (Prometheus text format); when false the path is a 404 like any unknown one.
      Enabled: z.boolean().default(false),
      // Peer addresses (never X-Forwarded-For) that may scrape; anything else gets a 404.
      AllowFrom: z
        .array(z.string().refine((v) => parseAddressBlock(v) !== null, 'expected IP addresses or CIDR blocks'))
        .default(['127.0.0.0/8', '::1']),
    })
    .prefault({}),
  Web: z
    .strictObject({
      // Signs the session cookie. Unset: generated once and kept next to the database (0600).
      SessionSecret: z.string().min(16).optional(),
      // Absolute: a session ends this long after sign-in, however active it was.
      SessionLifetimeMinutes: int(1, 30 * 24 * 60).default(480),
      // Sign-in attempts per fixed minute, per username and per client IP.
      LoginAttemptsPerUserPerMinute: int(1).default(5),
      LoginAttemptsPerIpPerMinute: int(1).default(30),
      // One username from all addresses together: stops a spray spread over many addresses, while
      // LoginAttemptsPerUserPerMinute (per username and address) keeps one address from locking
      // the user out for everyone (docs/web.md, "Sign-in throttling").
      LoginAttemptsPerUserAllAddressesPerMinute: int(1).default(100),
      // Active keys (neither revoked nor expired) one user may hold; creating more is refused
      // (web page and CLI), so one account cannot make key listings and checks slow for all.
      MaxActiveKeysPerUser: int(1, 100_000).default(100),
      // The pages where people search and read their mail (/search, /emails/...; docs/web.md,
      // "Reading mail"). They show what the REST API shows, so they are on only with Api:Enabled;
      // false turns them off on their own. Off, their paths answer 404.
      EnableReading: z.boolean().default(true),
      // Requests to those pages per signed-in user per minute: every page, message body, inline
      // image, preview and download counts one; past it 429 with Retry-After (Redis-shared).
      ReadingRequestsPerMinute: int(1).default(600),
    })
    .prefault({}),
  Import: z
    .strictObject({
      // Mail from outside is hostile: every bound below holds for `import`, the demo builder and
      // the IMAP sync alike (docs/security.md, "Mail shaped by an attacker"). A "pass" is one import run, or one
      // account's sync pass.
      // Characters of attachment text kept per message over all its attachments; later ones are
      // cut (truncated) or recorded as 'over budget'. One attachment keeps at most 1,000,000.
      AttachmentTextPerMessage: int(0).default(2_000_000),
      // And at most this many characters per byte of the raw message (but always 100,000): a
      // small message cannot keep what a large one may. 0: no such bound.
      AttachmentTextPerMessageByte: int(0, 1_000_000).default(10),
      // Characters of attachment text read per pass; past it the rest is left for
      // `reindex --attachments`.
      AttachmentTextPerPass: int(0).default(50_000_000),
      // Wall time spent reading one message's attachments, and one pass's.
      AttachmentTextSecondsPerMessage: int(1, 86_400).default(30),
      AttachmentTextSecondsPerPass: int(1, 7 * 86_400).default(600),
      // Files taken out of one winmail.dat (TNEF); the rest stay inside the original, kept as it is.
      MaxTnefFiles: int(0, 100_000).default(100),
      // A message larger than this (raw bytes) is not archived: recorded as skipped with its size.
      MaxMessageBytes: int(1024).default(100 * 1024 * 1024),
    })
    .prefault({}),
  Sync: z
    .strictObject({
      // The IMAP sync of accounts (`mail-archive sync`, docs/sync.md). Unset: on for a SQLite
      // archive; off for a PostgreSQL one, whose accounts Mail Archiver syncs itself (syncEnabled()).
      Enabled: z.boolean().optional(),
      IntervalMinutes: int(1).default(15),
      // Message bytes one IMAP FETCH brings at once (sizes are asked first); a larger message is
      // fetched alone. With Import:MaxMessageBytes this bounds the sync's memory (docs/sync.md).
      WindowBytes: int(1024).default(64 * 1024 * 1024),
      // Folders one account's pass syncs at most (the first in name order; a warning names how
      // many were left), and the wall time of one account's pass: past it the pass stops after
      // the message in hand, and a server that keeps a command going (an endless folder list)
      // is disconnected.
      MaxFolders: int(1, 1_000_000).default(1000),
      PassMinutes: int(1, 7 * 24 * 60).default(60),
      // Encrypts the stored IMAP passwords (AES-256-GCM). Unset on SQLite: generated once next to
      // the database (mode 0600). Required for IMAP accounts on a PostgreSQL archive.
      SecretKey: z
        .string()
        .refine(
          (v) => parseSecretKey(v) !== null,
          'expected 32 bytes as base64 (44 characters) or as 64 hexadecimal digits',
        )
        .optional(),
    })
    .prefault({}),
});

/** Sync:SecretKey as its 32 bytes: 64 hex digits or base64/base64url of 32 bytes; null when neither. */
export function parseSecretKey(value: string): Buffer | null {
  const v = value.trim();
  if (/^[0-9a-fA-F]{64}$/.test(v)) return Buffer.from(v, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(v)) {
    const key = Buffer.from(v.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    return key.length === 32 ? key : null;
  }
  return null;
}

/** Whether this service syncs IMAP accounts: Sync:Enabled, else on for SQLite, off for PostgreSQL. */
export function syncEnabled(settings: Settings): boolean {
  return settings.Sync.Enabled ?? !isPostgresUrl(settings.Database.Path);
}

export type Settings = z.infer<typeof schema>;

/**
 * How many jobs may wait per engine lane, defaults filled in. The wait (Engine:MaxQueueWaitMs) is
 * what sheds a flood of costly searches; the count is the backstop for a burst that arrives
 * faster than any wait can be observed, and bounds memory. Query lane: 64 per thread, room for
 * a burst of cheap searches from many clients at once. The interactive lane has one thread doing
 * sub-millisecond point reads; 256 waiting is tens of milliseconds.
 */
export function engineQueues(engine: Settings['Engine']): { query: number; interactive: number } {
  return { query: engine.MaxQueue ?? 64 * engine.Threads, interactive: engine.InteractiveMaxQueue ?? 256 };
}
type Raw = Record<string, Record<string, unknown>>;

/** Settings whose values must not be echoed into an error message (and so into logs). */
const SECRET_SETTINGS = new Set(['Web:SessionSecret', 'Redis:Url', 'Sync:SecretKey']);

/** The section and key names exactly as the schema spells them, for case-insensitive lookup. */
function canonicalNames(): Map<string, { name: string; keys: Map<string, string> }> {
  const out = new Map<string, { name: string; keys: Map<string, string> }>();
  for (const [section, sectionSchema] of Object.entries(schema.shape)) {
    const inner = (sectionSchema as unknown as { unwrap(): z.ZodObject }).unwrap();
    const keys = new Map(Object.keys(inner.shape).map((k) => [k.toLowerCase(), k]));
    out.set(section.toLowerCase(), { name: section, keys });
  }
  return out;
}

/** The object schema under its default/prefault wrappers. */
function objectOf(wrapped: unknown): z.ZodObject | undefined {
  let field = wrapped as z.ZodType | undefined;
  while (field && !(field instanceof z.ZodObject) && 'unwrap' in field && !(field instanceof z.ZodArray))
    field = (field as unknown as { unwrap(): z.ZodType }).unwrap();
  return field instanceof z.ZodObject ? field : undefined;
}

function fieldKind(section: string, key: string, nested?: string): string {
  const sectionSchema = schema.shape[section as keyof typeof schema.shape];
  const inner = (sectionSchema as unknown as { unwrap(): z.ZodObject }).unwrap();
  let field = inner.shape[key] as z.ZodType | undefined;
  const object = objectOf(field);
  if (object && nested === undefined) return 'object';
  if (object) field = object.shape[nested!] as z.ZodType | undefined;
  // Peel default/optional wrappers to reach the base type. ZodArray also has unwrap() (it
  // returns the element type), so stop at an array or a list would look like a string.
  while (
    field &&
    !(field instanceof z.ZodArray) &&
    'unwrap' in field &&
    typeof (field as { unwrap?: unknown }).unwrap === 'function'
  ) {
    field = (field as unknown as { unwrap(): z.ZodType }).unwrap();
  }
  if (field instanceof z.ZodBoolean) return 'boolean';
  if (field instanceof z.ZodNumber) return 'number';
  if (field instanceof z.ZodArray) return 'array';
  return 'string';
}

/** Environment strings become JSON values the way ASP.NET binds them. */
function coerce(kind: string, value: string): unknown {
  const v = value.trim();
  if (kind === 'boolean') {
    if (/^true$/i.test(v)) return true;
    if (/^false$/i.test(v)) return false;
    return value;
  }
  if (kind === 'number') return /^-?\d+$/.test(v) ? Number(v) : value;
  if (kind === 'array')
    return v === ''
      ? []
      : v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
  return value;
}

function readSettingsFile(env: NodeJS.ProcessEnv, cwd: string): Raw {
  const explicit = env.MAIL_ARCHIVE_SETTINGS;
  const path = explicit ? resolve(cwd, explicit) : resolve(cwd, 'appsettings.json');
  if (!existsSync(path)) {
    if (explicit) throw new ConfigError(`Settings file ${path} (from MAIL_ARCHIVE_SETTINGS) does not exist.`);
    return {};
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`Settings file ${path} cannot be read: ${(err as Error).message}`);
  }
  // Editors on Windows (and `dotnet new`) write a UTF-8 byte order mark; JSON.parse rejects it.
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`Settings file ${path} is not valid JSON: ${jsonErrorSummary(text, err as Error)}.`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError(`Settings file ${path} must hold a JSON object.`);
  }
  // Normalise section and key case so the file and the environment agree.
  const names = canonicalNames();
  const out: Raw = {};
  for (const [section, body] of Object.entries(parsed as Record<string, unknown>)) {
    const known = names.get(section.toLowerCase());
    if (!known) continue; // Other sections (Logging, …) belong to other programs.
    if (!body || typeof body !== 'object' || Array.isArray(body)) {
      throw new ConfigError(`Invalid setting ${known.name}: expected an object in ${path}.`);
    }
    const target = (out[known.name] ??= {});
    for (const [key, value] of Object.entries(body as Record<string, unknown>)) {
      target[known.keys.get(key.toLowerCase()) ?? key] = value;
    }
  }
  return out;
}

/**
 * V8's JSON.parse messages may quote the file's text (`Unexpected token 'x', "{ ... }" is not
 * valid JSON`), which can span lines and carry secrets. Keep the reason, drop the quote, and
 * turn a character position into line and column.
 */
function jsonErrorSummary(text: string, err: Error): string {
  let reason = err.message.replace(/,\s*"[\s\S]*" is not valid JSON$/, '').replace(/ is not valid JSON$/, '');
  const at = /\s*in JSON at position (\d+)(?: \(line \d+ column \d+\))?/.exec(reason);
  if (at) {
    const before = text.slice(0, Number(at[1]));
    const line = before.split('\n').length;
    const column = before.length - before.lastIndexOf('\n');
    reason = `${reason.slice(0, at.index)} at line ${line} column ${column}`;
  } else if (/^Unexpected end of JSON input$/.test(reason)) {
    reason = 'the file ends too early';
  }
  return reason;
}

function applyEnvironment(raw: Raw, env: NodeJS.ProcessEnv): void {
  const names = canonicalNames();
  const arrays = new Map<string, string[]>();
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || !name.includes('__')) continue;
    const [sectionPart, keyPart, indexPart, ...rest] = name.split('__');
    const known = names.get((sectionPart ?? '').toLowerCase());
    if (!known || !keyPart || rest.length > 0) continue;
    const key = known.keys.get(keyPart.toLowerCase());
    if (!key) throw new ConfigError(`Unknown setting ${known.name}:${keyPart} (from environment variable ${name}).`);
    const kind = fieldKind(known.name, key);
    const target = (raw[known.name] ??= {});
    if (kind === 'object') {
      // A section inside a section: Mcp__OAuth__Enabled=true (lists there take commas).
      const inner = objectOf(
        (schema.shape[known.name as keyof typeof schema.shape] as unknown as { unwrap(): z.ZodObject }).unwrap().shape[
          key
        ],
      )!;
      const nested = Object.keys(inner.shape).find((k) => k.toLowerCase() === (indexPart ?? '').toLowerCase());
      if (!nested)
        throw new ConfigError(
          `Unknown setting ${known.name}:${key}:${indexPart ?? ''} (from environment variable ${name}).`,
        );
      const section = ((target[key] as Record<string, unknown> | undefined) ??= {});
      section[nested] = coerce(fieldKind(known.name, key, nested), value);
      continue;
    }
    if (indexPart !== undefined) {
      // ASP.NET array binding: Mcp__AllowedOrigins__0=https://a, __1=…
      if (kind !== 'array' || !/^\d+$/.test(indexPart)) {
        throw new ConfigError(
          `Invalid setting ${known.name}:${key}: environment variable ${name} has an index but the setting is not a list.`,
        );
      }
      const list = arrays.get(`${known.name}:${key}`) ?? [];
      list[Number(indexPart)] = value;
      arrays.set(`${known.name}:${key}`, list);
      target[key] = list;
      continue;
    }
    target[key] = coerce(kind, value);
  }
  for (const [path, list] of arrays) {
    const [section, key] = path.split(':') as [string, string];
    raw[section]![key] = list.filter((v) => v !== undefined);
  }
}

function describe(issue: z.core.$ZodIssue, raw: Raw): string {
  const path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    const where = path.length ? `${path.join(':')}:` : '';
    return `Unknown setting ${issue.keys.map((k) => where + k).join(', ')}.`;
  }
  const name = path.join(':');
  let got: unknown = raw;
  for (const p of path) got = (got as Record<string, unknown> | undefined)?.[p];
  const shown = SECRET_SETTINGS.has(path.slice(0, 2).join(':'))
    ? typeof got === 'string'
      ? `a string of ${got.length} characters`
      : typeof got
    : JSON.stringify(got);
  return `Invalid setting ${name}: ${issue.message.replace(/^Invalid input: /, '')} (got ${shown}).`;
}

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Values that win over file and environment (tests, CLI flags). */
  overrides?: { [S in keyof Settings]?: Partial<Settings[S]> };
}

export function loadSettings(options: LoadOptions = {}): Settings {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const raw = readSettingsFile(env, cwd);
  applyEnvironment(raw, env);
  for (const [section, values] of Object.entries(options.overrides ?? {})) {
    raw[section] = { ...(raw[section] ?? {}), ...(values as Record<string, unknown>) };
  }
  const result = schema.safeParse(raw);
  if (!result.success) throw new ConfigError(describe(result.error.issues[0]!, raw));
  return result.data;
}

/** Defaults only: what a test or tool starts from before overriding a few values. */
export function defaultSettings(overrides: LoadOptions['overrides'] = {}): Settings {
  return loadSettings({ env: {}, cwd: '/nonexistent', overrides });
}

// Defined in the error catalogue; exported here too, where settings' callers have always found it.
export { ConfigError };
