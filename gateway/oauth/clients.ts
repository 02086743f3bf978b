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
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import type { EnginePool } from '../../engine/index.js';
import { clientDisplayName } from '../../engine/index.js';
import type { Settings } from '../../shared/config.js';

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
 * A redirect URI a client may register: absolute, without a fragment; https, or http to this
 * machine's loopback (RFC 8252 native apps: mcp-remote, desktop clients), or a private-use scheme
 * such as cursor:// or vscode://. Never javascript:, data:, file: or http to another host.
 */
export function redirectUriProblem(uri: unknown): string | null {
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
    return ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)
      ? null
      : `The redirect URI ${uri} uses http to another host; use https (http only for loopback).`;
  if (['javascript:', 'data:', 'file:', 'blob:', 'about:', 'vbscript:', 'ftp:', 'ws:', 'wss:'].includes(url.protocol))
    return `The redirect URI ${uri} has a scheme that cannot be a redirect target.`;
  // A private-use scheme (RFC 8252 section 7.1): reverse domain names and app schemes alike.
  return /^[a-z][a-z0-9+.-]*:$/.test(url.protocol) ? null : `The redirect URI ${uri} has an unusable scheme.`;
}

/** Whether a client_id is a URL naming a metadata document rather than a registered id. */
export const isMetadataUrl = (clientId: string): boolean => /^https?:\/\//i.test(clientId);

export async function resolveClient(
  clientId: unknown,
  engine: EnginePool,
  settings: Settings,
): Promise<ResolvedClient> {
  if (typeof clientId !== 'string' || clientId === '' || clientId.length > MAX_URI_LENGTH)
    throw new ClientProblem('The request does not name a client (client_id).');
  if (isMetadataUrl(clientId)) return fetchClientMetadata(clientId, settings.Mcp.OAuth);
  const client = await engine.run({ kind: 'oauthClient', clientId });
  if (!client) throw new ClientProblem(`No client with the id ${clientId} is registered here.`);
  return { clientId, name: client.name, redirectUris: client.redirectUris, kind: 'registered' };
}

// Addresses a metadata document may not be fetched from: this host, private networks, link-local
// (cloud metadata services), carrier-grade NAT, multicast, reserved, and IPv4 in IPv6 forms.
const PRIVATE = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const)
  PRIVATE.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 127],
  ['::ffff:0:0', 96],
  ['64:ff9b::', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  PRIVATE.addSubnet(net, bits, 'ipv6');

export const isPrivateAddress = (address: string): boolean =>
  PRIVATE.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');

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

/** GETs the document with every bound; resolves to its text or throws ClientProblem. */
function fetchBounded(url: URL, settings: OAuthSettings, anyAddress: boolean): Promise<string> {
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
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      res.on('error', () => fail('could not be read to its end.'));
    });
    req.end();
  });
}

/** Fetches and checks a Client ID Metadata Document. */
export async function fetchClientMetadata(clientId: string, settings: OAuthSettings): Promise<ResolvedClient> {
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
  const text = await fetchBounded(url, settings, allowed);
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
  const redirectUris = checkRedirectUris(meta.redirect_uris);
  return {
    clientId,
    name: clientDisplayName(meta.client_name, url.hostname),
    redirectUris,
    kind: 'metadata document',
  };
}

/** A client's redirect_uris, or ClientProblem saying what is wrong with them. */
export function checkRedirectUris(value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_REDIRECT_URIS)
    throw new ClientProblem(`redirect_uris must be a list of 1 to ${MAX_REDIRECT_URIS} URIs.`);
  for (const uri of value) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new ClientProblem(problem);
  }
  return value as string[];
}
