// The web pages. Every value goes through `html`, which escapes it: key names, usernames and
// form input are user input. No inline script or style anywhere (the CSP forbids both).
import type { MailAccountDto } from '../../shared/dto.js';
import type { KeyListPage, KeyRow, WebUser } from '../../shared/jobs.js';
import { html, type SafeHtml } from './html.js';

/** What every page's frame needs. */
export interface Chrome {
  user: WebUser | null;
  /** The session's CSRF token, for the forms on the page. */
  csrf: string;
  docsEnabled: boolean;
  /** Whether the reading pages (/search, /emails/...) are on (docs/web.md, "Reading mail"). */
  readingEnabled?: boolean;
  assets: { css: string; js: string; icon: string };
  current?: 'keys' | 'login' | 'search';
}

function csrfField(chrome: Chrome): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${chrome.csrf}" />`;
}

export function layout(chrome: Chrome, title: string, body: SafeHtml, options: { wide?: boolean } = {}): string {
  const user = chrome.user;
  const nav = user
    ? html`<nav aria-label="Main">
          ${
            chrome.readingEnabled
              ? html`<a href="/search" ${chrome.current === 'search' ? html` aria-current="page"` : ''}>Search</a>`
              : ''
          }
          <a href="/keys" ${chrome.current === 'keys' ? html` aria-current="page"` : ''}>API Keys</a>
          ${chrome.docsEnabled ? html`<a href="/apidocs">API docs</a>` : ''}
        </nav>
        <form class="signout" method="post" action="/logout">
          ${csrfField(chrome)}
          <span class="who">${user.username}${user.isAdmin ? html` <span class="badge">admin</span>` : ''}</span>
          <button type="submit" class="link">Sign out</button>
        </form>`
    : '';
  return `<!doctype html>\n${html`<html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>${title} · Mail Archive</title>
      <link rel="icon" href="${chrome.assets.icon}" type="image/svg+xml" />
      <link rel="stylesheet" href="${chrome.assets.css}" />
      <script src="${chrome.assets.js}" defer></script>
    </head>
    <body>
      <header class="top">
        <a class="brand" href="${chrome.readingEnabled ? '/search' : '/keys'}">Mail Archive</a>
        ${nav}
      </header>
      <main ${options.wide ? html`class="wide"` : ''}>${body}</main>
    </body>
  </html> `}`;
}

export interface LoginModel {
  username?: string;
  next?: string;
  error?: string;
  notice?: string;
}

export function loginPage(chrome: Chrome, model: LoginModel): string {
  return layout(
    chrome,
    'Sign in',
    html` <section class="card narrow">
      <h1>Sign in</h1>
      ${model.notice ? html`<p class="notice" role="status">${model.notice}</p>` : ''}
      ${model.error ? html`<p class="error" role="alert">${model.error}</p>` : ''}
      <form method="post" action="/login" class="stack">
        ${csrfField(chrome)} ${model.next ? html`<input type="hidden" name="next" value="${model.next}" />` : ''}
        <label
          >Username
          <input
            name="username"
            autocomplete="username"
            autocapitalize="none"
            spellcheck="false"
            required
            maxlength="64"
            value="${model.username ?? ''}"
            ${model.username ? '' : html` autofocus`}
          />
        </label>
        <label
          >Password
          <input
            type="password"
            name="password"
            autocomplete="current-password"
            required
            maxlength="1024"
            ${model.username ? html` autofocus` : ''}
          />
        </label>
        <button type="submit" class="primary">Sign in</button>
      </form>
    </section>`,
  );
}

export function signOutPage(chrome: Chrome): string {
  return layout(
    chrome,
    'Sign out',
    html` <section class="card narrow">
      <h1>Sign out</h1>
      <form method="post" action="/logout">
        ${csrfField(chrome)}<button type="submit" class="primary">Sign out</button>
      </form>
    </section>`,
  );
}

function when(iso: string | null, none: string): SafeHtml {
  if (!iso) return html`<span class="muted">${none}</span>`;
  return html`<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`;
}

function statusBadge(key: KeyRow): SafeHtml {
  const badge = html`<span class="status status-${key.status.replace(' ', '-')}">${key.status}</span>`;
  return html`<span
    >${badge}${key.revokedAt ? html` <span class="since">${when(key.revokedAt, '')}</span>` : ''}</span
  >`;
}

function revokeForm(chrome: Chrome, key: KeyRow): SafeHtml {
  if (key.status === 'revoked') return html``;
  const question = `Revoke the key “${key.name}” (${key.prefix}…)${key.userId !== chrome.user?.id ? ` of ${key.username}` : ''}? Programs using it are refused from the next request on. This cannot be undone.`;
  // Without JavaScript the server asks for confirmation on a page of its own (confirmed is empty).
  return html`<form method="post" action="/keys/revoke" class="revoke" data-confirm="${question}">
    ${csrfField(chrome)}<input type="hidden" name="id" value="${key.id}" /><input
      type="hidden"
      name="confirmed"
      value=""
    />
    <button type="submit" class="danger" aria-label="Revoke ${key.name}">Revoke</button>
  </form>`;
}

function keyTable(chrome: Chrome, keys: KeyRow[], withOwner: boolean, label: string): SafeHtml {
  if (keys.length === 0) return html`<p class="muted">No keys yet.</p>`;
  return html`<div class="table-wrap">
    <table class="keys" aria-label="${label}">
      <thead>
        <tr>
          ${withOwner ? html`<th scope="col">Owner</th>` : ''}
          <th scope="col">Name</th>
          <th scope="col">Prefix</th>
          <th scope="col">Created</th>
          <th scope="col">Last used</th>
          <th scope="col">Expires</th>
          <th scope="col">Status</th>
          <th scope="col"><span class="sr-only">Actions</span></th>
        </tr>
      </thead>
      <tbody>
        ${keys.map(
          (k) =>
            html`<tr data-key-id="${k.id}" data-prefix="${k.prefix}">
              ${withOwner ? html`<td data-label="Owner" class="owner">${k.username}</td>` : ''}
              <td data-label="Name" class="name">
                <span class="value"
                  >${k.name}${k.oauth ? html` <span class="badge oauth" title="${k.oauth.clientId}">OAuth grant</span><br /><span class="muted grant">${k.oauth.accountIds === null ? 'all accounts' : `${k.oauth.accountIds.length} account${k.oauth.accountIds.length === 1 ? '' : 's'}`}; signing out does not end it</span>` : ''}</span
                >
              </td>
              <td data-label="Prefix"><code>${k.prefix}…</code></td>
              <td data-label="Created">${when(k.createdAt, '')}</td>
              <td data-label="Last used">${when(k.lastUsedAt, 'never')}</td>
              <td data-label="Expires">${when(k.expiresAt, 'never')}</td>
              <td data-label="Status">${statusBadge(k)}</td>
              <td class="actions">${revokeForm(chrome, k)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

/**
 * "Keys 51–100 of 240" and links to the pages before and after. Each list pages on its own
 * parameter (`page`, `othersPage`); a link keeps the other list where it is.
 */
function pager(list: KeyListPage, param: 'page' | 'othersPage', pages: KeysPages, label: string): SafeHtml {
  if (list.total <= list.pageSize) return html``;
  const first = (list.page - 1) * list.pageSize + 1;
  const last = first + list.rows.length - 1;
  const lastPage = Math.ceil(list.total / list.pageSize);
  const href = (page: number) => {
    const query = new URLSearchParams();
    const at = { ...pages, [param]: page };
    if (at.page > 1) query.set('page', String(at.page));
    if (at.othersPage > 1) query.set('othersPage', String(at.othersPage));
    const text = query.toString();
    return text ? `/keys?${text}` : '/keys';
  };
  return html`<nav class="pager" aria-label="${label} pages">
    <span>Keys ${first}–${last} of ${list.total}</span>
    ${list.page > 1 ? html`<a href="${href(list.page - 1)}" rel="prev">Previous</a>` : ''}
    ${list.page < lastPage ? html`<a href="${href(list.page + 1)}" rel="next">Next</a>` : ''}
  </nav>`;
}

/** The page each list shows. */
interface KeysPages {
  page: number;
  othersPage: number;
}

export interface KeysModel {
  own: KeyListPage;
  /** A page of everyone else's keys; only for administrators. */
  others: KeyListPage | null;
  /** Right after creation: the plaintext key, shown this once. */
  created?: { key: string; row: KeyRow };
  revoked?: KeyRow;
  form?: { name: string; expires: string; error?: string };
  /** Earliest date the expiry field accepts (YYYY-MM-DD). */
  minExpiry: string;
}

export function keysPage(chrome: Chrome, model: KeysModel): string {
  const form = model.form ?? { name: '', expires: '' };
  const pages = { page: model.own.page, othersPage: model.others?.page ?? 1 };
  return layout(
    chrome,
    'API Keys',
    html` <h1>API Keys</h1>
      <p class="lead">
        A key lets a program read the archive through the REST API or the MCP server with your permissions. Send it as
        <code>Authorization: Bearer &lt;key&gt;</code>.
      </p>
      ${
        model.created
          ? html`<section class="created" role="status" aria-labelledby="created-title">
              <h2 id="created-title">Key “${model.created.row.name}” created</h2>
              <p class="warn">
                <strong>Copy this key now. It cannot be shown again.</strong> Only its prefix is kept; if you lose it,
                revoke it and create a new one.
              </p>
              <div class="secret">
                <code id="new-key">${model.created.key}</code>
                <button type="button" class="primary" data-copy="new-key">Copy</button>
              </div>
              <p class="copy-status" id="copy-status" aria-live="polite"></p>
            </section>`
          : ''
      }
      ${model.revoked ? html`<p class="notice" role="status">Key “${model.revoked.name}” (<code>${model.revoked.prefix}…</code>)${model.revoked.userId !== chrome.user?.id ? ` of ${model.revoked.username}` : ''} is revoked.</p>` : ''}
      <section class="card">
        <h2>Create a key</h2>
        ${form.error ? html`<p class="error" role="alert">${form.error}</p>` : ''}
        <form method="post" action="/keys" class="create">
          ${csrfField(chrome)}
          <label
            >Name
            <input name="name" required maxlength="100" placeholder="e.g. Laptop Claude Desktop" value="${form.name}" />
          </label>
          <label
            ><span>Expires <span class="muted">(optional)</span></span>
            <input type="date" name="expires" min="${model.minExpiry}" value="${form.expires}" />
          </label>
          <button type="submit" class="primary">Create key</button>
        </form>
        <p class="hint">A key with an expiry date stops working at 00:00 UTC on that date.</p>
      </section>
      <section>
        <h2>Your keys</h2>
        ${keyTable(chrome, model.own.rows, false, 'Your keys')} ${pager(model.own, 'page', pages, 'Your keys')}
      </section>
      ${
        model.others
          ? html`<section>
              <h2>Other users’ keys</h2>
              <p class="muted">As an administrator you see and can revoke every user’s keys.</p>
              ${keyTable(chrome, model.others.rows, true, 'Other users’ keys')}
              ${pager(model.others, 'othersPage', pages, 'Other users’ keys')}
            </section>`
          : ''
      }`,
  );
}

export function confirmRevokePage(chrome: Chrome, key: KeyRow): string {
  return layout(
    chrome,
    'Revoke key',
    html` <section class="card narrow">
      <h1>Revoke this key?</h1>
      <p>
        “${key.name}” (<code>${key.prefix}…</code>)${key.userId !== chrome.user?.id ? ` of ${key.username}` : ''}.
        Programs using it are refused from the next request on. This cannot be undone.
      </p>
      <form method="post" action="/keys/revoke" class="row">
        ${csrfField(chrome)}<input type="hidden" name="id" value="${key.id}" /><input
          type="hidden"
          name="confirmed"
          value="yes"
        />
        <button type="submit" class="danger">Revoke</button>
        <a href="/keys" class="button">Cancel</a>
      </form>
    </section>`,
  );
}

export function errorPage(
  chrome: Chrome,
  title: string,
  message: string,
  link: { href: string; text: string },
): string {
  return layout(
    chrome,
    title,
    html` <section class="card narrow">
      <h1>${title}</h1>
      <p>${message}</p>
      <p><a href="${link.href}">${link.text}</a></p>
    </section>`,
  );
}

export interface ConsentModel {
  client: { clientId: string; name: string; kind: 'registered' | 'metadata document' };
  redirectUri: string;
  resource: string;
  accounts: MailAccountDto[];
  durations: number[];
  defaultDays: number;
  /** The authorization request, carried through the form unchanged and checked again on POST. */
  fields: Record<string, string>;
}

const days = (n: number) => (n === 1 ? '1 day' : `${n} days`);

/** The OAuth consent page (gateway/oauth/authorize.ts): who asks, for what, narrowed how. */
export function consentPage(chrome: Chrome, model: ConsentModel): string {
  const target = new URL(model.redirectUri);
  const where = target.protocol === 'http:' || target.protocol === 'https:' ? target.host : target.protocol;
  return layout(
    chrome,
    'Allow access',
    html` <section class="card narrow consent">
      <h1>Allow <span class="client-name">${model.client.name}</span> to read your mail archive?</h1>
      <p>
        <strong>${model.client.name}</strong> asks to search and read your archived mail and attachments through the MCP
        server (<code>${model.resource}</code>). It cannot change or delete anything.
      </p>
      <dl class="client-facts">
        <dt>Client</dt>
        <dd>
          <code class="client-id">${model.client.clientId}</code>
          (${model.client.kind === 'registered' ? 'registered with this server' : 'metadata document'})
        </dd>
        <dt>Answer goes to</dt>
        <dd><code class="redirect-host">${where}</code></dd>
      </dl>
      <p class="hint">The name is the client's own; check the address it came from before you allow it.</p>
      <form method="post" action="/oauth/authorize" class="stack">
        ${csrfField(chrome)}
        ${Object.entries(model.fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`)}
        <fieldset>
          <legend>Accounts it may read</legend>
          <label
            ><input type="radio" name="scope_accounts" value="all" checked /> All accounts you can read, now and
            later</label
          >
          <label><input type="radio" name="scope_accounts" value="chosen" /> Only these:</label>
          ${
            model.accounts.length
              ? model.accounts.map(
                  (a) =>
                    html`<label class="indent"
                      ><input type="checkbox" name="accounts" value="${a.id}" /> ${a.name}
                      <span class="muted">${a.emailAddress}</span></label
                    >`,
                )
              : html`<p class="muted indent">You have no accounts assigned.</p>`
          }
        </fieldset>
        <label
          >For how long
          <select name="days">
            ${model.durations.map((d) => html`<option value="${d}" ${d === model.defaultDays ? html`selected` : ''}>${days(d)}</option>`)}
          </select>
        </label>
        <p class="hint">
          The grant shows on the API Keys page as “OAuth: ${model.client.name}”; revoke it there to end it at once.
          Signing out does not end it.
        </p>
        <div class="row">
          <button type="submit" name="decision" value="allow" class="primary">Allow</button>
          <button type="submit" name="decision" value="deny">Deny</button>
        </div>
      </form>
    </section>`,
  );
}
