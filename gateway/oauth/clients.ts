// Who an OAuth client is (docs/mcp.md, "OAuth"): a client registered here (RFC 7591), or a
// Client ID Metadata Document, whose client_id is the https URL of a JSON document the client
// publishes (draft-ietf-oauth-client-id-metadata-document, preferred by MCP 2026-07-28).
//
// Fetching a URL a stranger chose is server-side request forgery waiting to happen, so the fetch
// has bounds (docs/security.md): https only; the host must resolve to public addresses only, and
// the connection goes to the address that was checked (no second lookup to rebind); no redirect
// is followed; the body is cut at Mcp:OAuth:ClientMetadataMaxBytes and the whole exchange at
// Mcp:OAuth:ClientMetadataTimeoutMs. Origins in Mcp:OAuth:ClientMetadataAllowedOrigins are let
// through over http and on private addresses (tests, a client on the operator's own network).
// Fetching at all is bounded too (ClientMetadataDocuments below): only for a signed-in person
// (gateway/oauth/authorize.ts), cached as the document's headers allow, per address and in flight.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { LRUCache } from 'lru-cache';
import type { EnginePool } from '../../engine/index.js';
import { clientDisplayName } from '../../engine/index.js';
import type { Settings } from '../../shared/config.js';
import { isPublicAddress } from '../address.js';
import { Problem } from '../problem.js';

/** A client as the authorization endpoint needs it. */
export interface ResolvedClient {
  clientId: string;
  name: string;
  redirectUris: string[];
  /** Where it came from, for the consent page. */
  kind: 'registered' | 'metadata document';
}

/** A client that cannot be used, with the sentence the person (or the developer) reads. */
export class ClientProblem extends Error {}

export const MAX_REDIRECT_URIS = 10;
const MAX_URI_LENGTH = 2000;

/**
 * A redirect URI a client may register (RFC 8252 section 7, and the MCP authorization spec's
 * "Redirect URIs"): absolute, without a fragment or credentials, and one of
 *   - https;
 *   - http to a loopback address (section 7.3: mcp-remote and other native apps listen there);
 *   - a private-use scheme in reverse-domain form, which contains a dot (section 7.1:
 *     com.example.app:/callback).
 * Anything else is refused: an allow-list, because a deny-list let through every scheme a
 * browser or an operating system hands to something else (view-source:, ms-msdt:, search-ms:,
 * jar:, mailto:).
 */
export function redirectUriProblem(uri: unknown, extraSchemes: readonly string[] = []): string | null {
  if (typeof uri !== 'string' || uri.length === 0 || uri.length > MAX_URI_LENGTH)
    return 'Each redirect URI must be a string of 1 to 2000 characters.';
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `The redirect URI ${JSON.stringify(uri)} is not an absolute URL.`;
  }
  if (url.hash || uri.includes('#')) return `The redirect URI ${uri} has a fragment, which RFC 6749 forbids.`;
  if (url.username || url.password) return `The redirect URI ${uri} carries credentials.`;
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:')
    return LOOPBACK_HOSTS.includes(url.hostname)
      ? null
      : `The redirect URI ${uri} uses http to another host; use https (http only for loopback).`;
  if (/^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/.test(url.protocol)) return null;
  // Schemes the operator names (Mcp:OAuth:RedirectSchemes): MCP clients in use that register an
  // app scheme without a dot (Cursor's cursor://anysphere.cursor-mcp/…).
  if (extraSchemes.includes(url.protocol.slice(0, -1))) return null;
  return (
    `The redirect URI ${uri} has a scheme that cannot be a redirect target: use https, http to a loopback ` +
    'address, or a private-use scheme in reverse-domain form such as com.example.app: (RFC 8252 section 7.1).'
  );
}

/** The hosts http redirect URIs may name: this machine's loopback, as RFC 8252 section 7.3 and MCP clients write it. */
const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]'];

/** Whether a client_id is a URL naming a metadata document rather than a registered id. */
export const isMetadataUrl = (clientId: string): boolean => /^https?:\/\//i.test(clientId);

export async function resolveClient(
  clientId: unknown,
  engine: EnginePool,
  documents: ClientMetadataDocuments,
  partition: string,
): Promise<ResolvedClient> {
  if (typeof clientId !== 'string' || clientId === '' || clientId.length > MAX_URI_LENGTH)
    throw new ClientProblem('The request does not name a client (client_id).');
  if (isMetadataUrl(clientId)) return documents.resolve(clientId, partition);
  const client = await engine.run({ kind: 'oauthClient', clientId });
  if (!client) throw new ClientProblem(`No client with the id ${clientId} is registered here.`);
  return { clientId, name: client.name, redirectUris: client.redirectUris, kind: 'registered' };
}

/** Documents kept at most, and their bytes at most, whatever their caching headers say. */
export const DOCUMENT_CACHE_ENTRIES = 1000;
export const DOCUMENT_CACHE_BYTES = 8_000_000;
/** How long a document is kept without caching headers, and at most with them. */
const DEFAULT_FRESH_MS = 60_000;
const MAX_FRESH_MS = 3_600_000;

/**
 * How long a response may be reused (RFC 9111 section 4.2.1): `no-store` or `no-cache`: not at
 * all; else `max-age`, else `Expires` against `Date`; without either a minute. Capped at an hour,
 * so a client's changed document is read within that time.
 */
export function freshnessMs(headers: IncomingMessage['headers']): number {
  const control = (headers['cache-control'] ?? '').toLowerCase();
  if (/(?:^|,)\s*(?:no-store|no-cache)\b/.test(control)) return 0;
  const maxAge = /(?:^|,)\s*max-age\s*=\s*"?(\d+)/.exec(control);
  if (maxAge) return Math.min(MAX_FRESH_MS, Number(maxAge[1]) * 1000);
  if (headers.expires !== undefined) {
    const expires = Date.parse(headers.expires);
    const date = headers.date ? Date.parse(headers.date) : Date.now();
    return Number.isNaN(expires) || Number.isNaN(date) ? 0 : Math.min(MAX_FRESH_MS, Math.max(0, expires - date));
  }
  return DEFAULT_FRESH_MS;
}

/** A limiter of fetches per address: spends one point or throws the 429 (gateway/rate-limit.ts). */
export interface FetchBudget {
  consume(partition: string): Promise<unknown>;
}

/**
 * Client ID Metadata Documents, fetched with bounds (docs/mcp.md, "OAuth"): a document is kept
 * as long as its caching headers allow (bounded in count and bytes, lru-cache); one fetch per
 * URL at a time, which every request for that URL waits on; each fetch costs the asking address
 * a point of Mcp:OAuth:ClientMetadataFetchesPerIpPerMinute; at most
 * Mcp:OAuth:ClientMetadataMaxConcurrentFetches are open at once over all addresses. A client
 * asking again and again, or many at once, so costs the server no more than those bounds.
 */
export class ClientMetadataDocuments {
  readonly #cache = new LRUCache<string, ResolvedClient & { bytes: number }>({
    max: DOCUMENT_CACHE_ENTRIES,
    maxSize: DOCUMENT_CACHE_BYTES,
    sizeCalculation: (doc) => Math.max(1, doc.bytes),
  });
  readonly #pending = new Map<string, Promise<ResolvedClient>>();
  #open = 0;

  constructor(
    private readonly settings: OAuthSettings,
    private readonly budget: FetchBudget,
  ) {}

  async resolve(clientId: string, partition: string): Promise<ResolvedClient> {
    const known = this.#known(clientId);
    if (known) return known;
    // What needs no fetch is checked before the address is charged for one.
    const { url, allowed } = metadataUrl(clientId, this.settings);
    await this.budget.consume(partition);
    // The budget answers asynchronously: a request for this URL that came meanwhile may have
    // started (or even ended) its fetch. Join it rather than fetch the same document twice.
    const meanwhile = this.#known(clientId);
    if (meanwhile) return meanwhile;
    if (this.#open >= this.settings.ClientMetadataMaxConcurrentFetches)
      throw new Problem(
        503,
        "Too many clients' metadata documents are being fetched at once; try again in a few seconds.",
        { 'Retry-After': '5' },
      );
    this.#open++;
    const fetching = fetchClientMetadata(clientId, url, allowed, this.settings).then(({ client, freshMs, bytes }) => {
      if (freshMs > 0) this.#cache.set(clientId, { ...client, bytes }, { ttl: freshMs });
      return client;
    });
    this.#pending.set(clientId, fetching);
    try {
      return await fetching;
    } finally {
      this.#open--;
      this.#pending.delete(clientId);
    }
  }

  /** The document kept, or the fetch of it in flight; undefined when it must be fetched. */
  #known(clientId: string): Promise<ResolvedClient> | undefined {
    const cached = this.#cache.get(clientId);
    if (cached)
      return Promise.resolve({ clientId, name: cached.name, redirectUris: cached.redirectUris, kind: cached.kind });
    return this.#pending.get(clientId);
  }
}

/** Whether an address may be fetched from on a client's word: public unicast only (gateway/address.ts). */
export const isPrivateAddress = (address: string): boolean => !isPublicAddress(address);

type OAuthSettings = Settings['Mcp']['OAuth'];

/** Whether an origin is one the operator let through (an entry without a port allows any port). */
function allowedOrigin(url: URL, settings: OAuthSettings): boolean {
  return settings.ClientMetadataAllowedOrigins.some((entry) => {
    const allowed = new URL(entry);
    return (
      allowed.protocol === url.protocol &&
      allowed.hostname === url.hostname &&
      (!allowed.port || allowed.port === url.port)
    );
  });
}

/** A lookup that answers only public addresses (or any, for an allowed origin), so the socket connects to what was checked. */
function checkedLookup(anyAddress: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 4);
      const usable = addresses.filter((a) => anyAddress || !isPrivateAddress(a.address));
      if (usable.length === 0 || usable.length !== addresses.length) {
        const refused = new Error(`${hostname} resolves to a private or reserved address`) as NodeJS.ErrnoException;
        refused.code = 'EPRIVATE';
        return callback(refused, '', 4);
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, usable);
      return callback(null, usable[0]!.address, usable[0]!.family);
    });
  };
}

/** GETs the document with every bound; resolves to its text and freshness, or throws ClientProblem. */
function fetchBounded(
  url: URL,
  settings: OAuthSettings,
  anyAddress: boolean,
): Promise<{ text: string; freshMs: number }> {
  const max = settings.ClientMetadataMaxBytes;
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const fail = (why: string) => reject(new ClientProblem(`The client's metadata document at ${url.href} ${why}`));
    const req = request(url, {
      method: 'GET',
      headers: { Accept: 'application/json' },
      lookup: checkedLookup(anyAddress),
      signal: AbortSignal.timeout(settings.ClientMetadataTimeoutMs),
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.name === 'AbortError' || err.name === 'TimeoutError' || err.code === 'ABORT_ERR')
        return fail(`did not arrive within ${settings.ClientMetadataTimeoutMs} ms.`);
      if (err.code === 'EPRIVATE') return fail('is on a private or reserved network address, which is not allowed.');
      fail(`could not be fetched (${err.code ?? 'network error'}).`);
    });
    req.on('response', (res: IncomingMessage) => {
      if (res.statusCode !== undefined && res.statusCode >= 300 && res.statusCode < 400) {
        res.destroy();
        return fail(`answered with a redirect (HTTP ${res.statusCode}); redirects are not followed.`);
      }
      if (res.statusCode !== 200) {
        res.destroy();
        return fail(`answered HTTP ${res.statusCode ?? '?'}, not 200.`);
      }
      if (Number(res.headers['content-length'] ?? 0) > max) {
        res.destroy();
        return fail(`is larger than ${max} bytes.`);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > max) {
          res.destroy();
          req.destroy();
          return fail(`is larger than ${max} bytes.`);
        }
        chunks.push(chunk);
      });
      res.on('end', () => resolve({ text: Buffer.concat(chunks).toString('utf8'), freshMs: freshnessMs(res.headers) }));
      res.on('error', () => fail('could not be read to its end.'));
    });
    req.end();
  });
}

/** The URL of a metadata document once it passes the checks that need no fetch; with whether its origin is allowed. */
function metadataUrl(clientId: string, settings: OAuthSettings): { url: URL; allowed: boolean } {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    throw new ClientProblem(`The client_id ${clientId} is not a URL.`);
  }
  const allowed = allowedOrigin(url, settings);
  if (url.protocol !== 'https:' && !allowed)
    throw new ClientProblem(`The client_id ${clientId} must be an https URL to be a metadata document.`);
  if (url.pathname === '/' || url.hash || url.username || url.password || /\/\.\.?(\/|$)/.test(url.pathname))
    throw new ClientProblem(
      `The client_id ${clientId} must be an https URL with a path, without a fragment, credentials or dot segments.`,
    );
  // An address written out is connected to without a lookup, so it is checked here.
  const literal = url.hostname.replace(/^\[|\]$/g, '');
  if (!allowed && isIP(literal) && isPrivateAddress(literal))
    throw new ClientProblem(
      `The client's metadata document at ${clientId} is on a private or reserved network address, which is not allowed.`,
    );
  return { url, allowed };
}

/** Fetches and checks a Client ID Metadata Document; with how long it may be kept, and its size. */
async function fetchClientMetadata(
  clientId: string,
  url: URL,
  allowed: boolean,
  settings: OAuthSettings,
): Promise<{ client: ResolvedClient; freshMs: number; bytes: number }> {
  const { text, freshMs } = await fetchBounded(url, settings, allowed);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new ClientProblem(`The client's metadata document at ${clientId} is not JSON.`);
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc))
    throw new ClientProblem(`The client's metadata document at ${clientId} is not a JSON object.`);
  const meta = doc as Record<string, unknown>;
  if (meta.client_id !== clientId)
    throw new ClientProblem(
      `The client's metadata document at ${clientId} names another client_id (${JSON.stringify(meta.client_id)}); it must be its own URL.`,
    );
  const auth = meta.token_endpoint_auth_method;
  if (auth !== undefined && auth !== 'none')
    throw new ClientProblem(
      `The client's metadata document asks for token_endpoint_auth_method ${JSON.stringify(auth)}; this server takes public clients only ("none").`,
    );
  const redirectUris = checkRedirectUris(meta.redirect_uris, settings.RedirectSchemes);
  return {
    client: {
      clientId,
      name: clientDisplayName(meta.client_name, url.hostname),
      redirectUris,
      kind: 'metadata document',
    },
    freshMs,
    bytes: text.length,
  };
}

/** A client's redirect_uris, or ClientProblem saying what is wrong with them. */
export function checkRedirectUris(value: unknown, extraSchemes: readonly string[] = []): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_REDIRECT_URIS)
    throw new ClientProblem(`redirect_uris must be a list of 1 to ${MAX_REDIRECT_URIS} URIs.`);
  for (const uri of value) {
    const problem = redirectUriProblem(uri, extraSchemes);
    if (problem) throw new ClientProblem(problem);
  }
  return value as string[];
}
