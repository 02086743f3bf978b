// OAuth for /mcp in tests (docs/mcp.md, "OAuth"): a gateway with Mcp:OAuth:Enabled over the
// standard fixture (passwords set, on the store this run tests), the person's side of the flow
// driven through the real web pages with supertest, and an OAuthClientProvider for the SDK.
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { createHash, randomBytes } from 'node:crypto';
import request from 'supertest';
import type { Settings } from '../../shared/config.js';
import { createFixture } from './fixture.js';
import { startMcpGateway, type McpHarness } from './mcp.js';
import { csrfOf, PASSWORDS, setPasswords, signIn, type Agent } from './web.js';

type Overrides = { [S in keyof Settings]?: Partial<Settings[S]> };

export const CALLBACK = 'http://127.0.0.1:9/callback';

export async function startOAuthGateway(
  oauth: Partial<Settings['Mcp']['OAuth']> = {},
  overrides: Overrides = {},
): Promise<McpHarness> {
  const fixture = createFixture();
  await setPasswords(fixture.dbPath);
  const h = await startMcpGateway(
    { ...overrides, Mcp: { ...overrides.Mcp, OAuth: { Enabled: true, ...oauth } as Settings['Mcp']['OAuth'] } },
    { useFixture: fixture },
  );
  return {
    ...h,
    close: async () => {
      await h.close();
      fixture.cleanup();
    },
  };
}

/** A PKCE pair (RFC 7636): the verifier and its S256 challenge. */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** Registers a public client (RFC 7591) and returns its client_id. */
export async function registerClient(base: string, redirectUris = [CALLBACK], name = 'Test Agent'): Promise<string> {
  const res = await request(base).post('/oauth/register').send({ client_name: name, redirect_uris: redirectUris });
  if (res.status !== 201) throw new Error(`registration failed: ${res.status} ${res.text}`);
  return res.body.client_id as string;
}

export interface AuthorizeParams {
  client_id: string;
  redirect_uri?: string;
  code_challenge?: string;
  code_challenge_method?: string;
  response_type?: string;
  resource?: string;
  state?: string;
}

export const authorizeUrl = (params: AuthorizeParams): string =>
  `/oauth/authorize?${new URLSearchParams(params as unknown as Record<string, string>).toString()}`;

/** The path of a valid authorization request of a registered client (redirect URI CALLBACK). */
export const codeRequest = (clientId: string): string =>
  authorizeUrl({
    client_id: clientId,
    redirect_uri: CALLBACK,
    response_type: 'code',
    code_challenge: pkce().challenge,
    code_challenge_method: 'S256',
  });

/** A signed-in person (alice unless said otherwise). */
export async function person(base: string, username: keyof typeof PASSWORDS = 'alice'): Promise<Agent> {
  const { agent, res } = await signIn(base, username, PASSWORDS[username]);
  // The page's title says which failure it was (a 503 is busy, timed out or unavailable: web/errors.ts).
  if (res.status !== 303)
    throw new Error(`sign-in failed: ${res.status} ${/<title>([^<]*)<\/title>/.exec(res.text ?? '')?.[1] ?? ''}`);
  return agent;
}

/** The hidden fields of the consent form, as the page carries them. */
export function consentFields(html: string): Record<string, string> {
  const form = /<form method="post" action="\/oauth\/authorize"[\s\S]*?<\/form>/.exec(html)?.[0] ?? '';
  const fields: Record<string, string> = {};
  for (const m of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g))
    fields[m[1]!] = m[2]!
      .replace(/&amp;/g, '&')
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>');
  return fields;
}

/**
 * The person opens the authorization URL (path and query on this server), and answers the
 * consent page: allow (with the accounts and days given) or deny. Resolves to the redirect.
 */
export async function consent(
  agent: Agent,
  path: string,
  answer: { decision?: 'allow' | 'deny'; accounts?: number[]; days?: number } = {},
): Promise<URL> {
  const page = await agent.get(path);
  if (page.status !== 200) throw new Error(`consent page: ${page.status} ${page.text.slice(0, 300)}`);
  const fields = consentFields(page.text);
  const form = new URLSearchParams({
    ...fields,
    _csrf: csrfOf(page.text),
    decision: answer.decision ?? 'allow',
    days: String(answer.days ?? 30),
  });
  if (answer.accounts) {
    form.set('scope_accounts', 'chosen');
    for (const id of answer.accounts) form.append('accounts', String(id));
  } else form.set('scope_accounts', 'all');
  const res = await agent.post('/oauth/authorize').type('form').send(form.toString());
  if (res.status !== 303) throw new Error(`consent answer: ${res.status} ${res.text.slice(0, 300)}`);
  return new URL(res.headers.location!);
}

/** Exchanges at the token endpoint; resolves to the raw answer. */
export const tokenRequest = (base: string, form: Record<string, string>) =>
  request(base).post('/oauth/token').type('form').send(new URLSearchParams(form).toString());

/** The whole flow by hand for a registered client: resolves to the token answer's body. */
export async function grant(
  h: McpHarness,
  options: { username?: keyof typeof PASSWORDS; accounts?: number[]; days?: number; clientId?: string } = {},
): Promise<{ clientId: string; access_token: string; refresh_token: string; expires_in: number }> {
  const clientId = options.clientId ?? (await registerClient(h.base));
  const { verifier, challenge } = pkce();
  const agent = await person(h.base, options.username);
  const back = await consent(
    agent,
    authorizeUrl({
      client_id: clientId,
      redirect_uri: CALLBACK,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      response_type: 'code',
      resource: h.url,
      state: 'st',
    }),
    { ...(options.accounts ? { accounts: options.accounts } : {}), ...(options.days ? { days: options.days } : {}) },
  );
  const res = await tokenRequest(h.base, {
    grant_type: 'authorization_code',
    code: back.searchParams.get('code')!,
    code_verifier: verifier,
    client_id: clientId,
    redirect_uri: CALLBACK,
    resource: h.url,
  });
  if (res.status !== 200) throw new Error(`token: ${res.status} ${res.text}`);
  return { clientId, ...res.body };
}

/** The SDK's OAuthClientProvider, kept in memory; the authorization URL it is sent to is recorded. */
export class MemoryProvider implements OAuthClientProvider {
  #client: OAuthClientInformationMixed | undefined;
  #tokens: OAuthTokens | undefined;
  #verifier = '';
  authorizationUrl: URL | undefined;

  constructor(readonly name = 'SDK test client') {}

  get redirectUrl(): string {
    return CALLBACK;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [CALLBACK],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.#client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.#client = info;
  }
  tokens() {
    return this.#tokens;
  }
  saveTokens(tokens: OAuthTokens) {
    this.#tokens = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  #discovery: unknown;
  /** What the v2 client keeps between its two legs, to bind the callback's iss to the issuer (SEP-2352). */
  saveDiscoveryState(state: unknown) {
    this.#discovery = state;
  }
  discoveryState() {
    return this.#discovery as undefined;
  }
  saveCodeVerifier(verifier: string) {
    this.#verifier = verifier;
  }
  codeVerifier() {
    return this.#verifier;
  }
}
