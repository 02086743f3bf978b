// The reading pages (docs/web.md, "Reading mail"): the search page, the message page, an
// attachment's preview, and the document the message's HTML body is shown in. Every value goes
// through `html`, which escapes it; the only markup taken from elsewhere is a snippet's <mark>
// (checked again by markedSnippet) and the sanitized HTML body, which is never part of these
// pages: it is its own document, in a sandboxed frame (mailBodyDocument).
import type { EmailDetailDto, EmailSummaryDto, FolderNodeDto, MailAccountDto } from '../../shared/dto.js';
import { html, SafeHtml } from './html.js';
import { layout, type Chrome } from './views.js';

/** The search page's state: exactly what its URL holds (bookmarks and the back button work). */
export interface SearchState {
  q: string;
  accountId: string;
  folder: string;
  from: string;
  to: string;
  direction: '' | 'incoming' | 'outgoing';
  hasAttachment: boolean;
  sort: 'newest' | 'oldest' | 'relevance';
  page: number;
}

export const SORTS: Record<SearchState['sort'], string> = {
  newest: 'Newest first',
  oldest: 'Oldest first',
  relevance: 'Most relevant',
};

/** The URL of the search page in `state`, with `change` applied; defaults are left out. */
export function searchUrl(state: SearchState, change: Partial<SearchState> = {}, path = '/search'): string {
  const s = { ...state, ...change };
  const params = new URLSearchParams();
  if (s.q) params.set('q', s.q);
  if (s.accountId) params.set('accountId', s.accountId);
  if (s.folder) params.set('folder', s.folder);
  if (s.from) params.set('from', s.from);
  if (s.to) params.set('to', s.to);
  if (s.direction) params.set('direction', s.direction);
  if (s.hasAttachment) params.set('has', 'attachment');
  if (s.sort !== 'newest') params.set('sort', s.sort);
  if (s.page > 1) params.set('page', String(s.page));
  const query = params.toString();
  return query ? `${path}?${query}` : path;
}

/** The export of the search in `state` (docs/export.md), as /search/export serves it. */
export function exportUrl(state: SearchState, format: 'eml-zip' | 'mbox'): string {
  const url = searchUrl(state, { page: 1 }, '/search/export');
  return `${url}${url.includes('?') ? '&' : '?'}format=${format}`;
}

export interface SearchResults {
  items: Array<EmailSummaryDto & { snippetAttachment?: { id: number; fileName: string } }>;
  page: number;
  pageSize: number;
  totalItems: number;
  totalPages: number;
}

export interface SearchModel {
  state: SearchState;
  accounts: MailAccountDto[];
  /** The chosen account's folder tree; null when no account is chosen. */
  folders: FolderNodeDto[] | null;
  results: SearchResults | null;
  /** Why the search could not run (a bad query or date): shown above the form. */
  error?: string;
  exportAllowed: boolean;
}

const number = new Intl.NumberFormat('en');

/** A paper clip, drawn inline: no emoji font is needed, and the CSP allows markup, not remote images. */
const CLIP = html`<svg class="icon" viewBox="0 0 16 16" width="14" height="14" aria-hidden="true" focusable="false">
  <path
    d="M11 4.5v6.25a3 3 0 0 1-6 0V3.75a2 2 0 0 1 4 0v6.5a1 1 0 0 1-2 0V4.5"
    fill="none"
    stroke="currentColor"
    stroke-width="1.3"
    stroke-linecap="round"
  />
</svg>`;

/** A date as the pages show it: UTC, to the minute; the script adds the reader's own time. */
function when(iso: string, precise = false): SafeHtml {
  const text = precise ? `${iso.slice(0, 19).replace('T', ' ')} UTC` : `${iso.slice(0, 16).replace('T', ' ')}`;
  return html`<time datetime="${iso}" ${precise ? html`data-local="long"` : ''}>${text}</time>`;
}

export function byteSize(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(n < 10 * 1024 ? 1 : 0)} KB`;
  return `${(n / 1024 / 1024).toFixed(n < 10 * 1024 * 1024 ? 1 : 0)} MB`;
}

/**
 * A search snippet as markup. The engine escapes everything but its own <mark> tags
 * (docs/search.md, "Snippets"); any other `<` is escaped again here, so a snippet can never
 * carry markup of its own even if that promise broke.
 */
export function markedSnippet(snippet: string): SafeHtml {
  return new SafeHtml(snippet.replace(/<(?!\/?mark>)/g, '&lt;'));
}

function folderTree(model: SearchModel, nodes: FolderNodeDto[]): SafeHtml {
  const { state } = model;
  return html`<ul>
    ${nodes.map(
      (node) =>
        html`<li>
          <a
            href="${searchUrl(state, { folder: node.fullPath, page: 1 })}"
            ${state.folder === node.fullPath ? html`aria-current="true"` : ''}
            >${node.name}</a
          >
          <span class="count">${number.format(node.totalCount)}</span>
          ${node.children.length ? folderTree(model, node.children) : ''}
        </li>`,
    )}
  </ul>`;
}

function filters(model: SearchModel): SafeHtml {
  const { state, accounts } = model;
  const account = accounts.find((a) => String(a.id) === state.accountId);
  return html`<aside class="filters" aria-label="Accounts and folders">
    <h2>Accounts</h2>
    <ul class="accounts">
      <li>
        <a
          href="${searchUrl(state, { accountId: '', folder: '', page: 1 })}"
          ${!state.accountId ? html`aria-current="true"` : ''}
          >All accounts</a
        >
      </li>
      ${accounts.map(
        (a) =>
          html`<li>
            <a
              href="${searchUrl(state, { accountId: String(a.id), folder: '', page: 1 })}"
              ${String(a.id) === state.accountId ? html`aria-current="true"` : ''}
              >${a.name || a.emailAddress}</a
            >
          </li>`,
      )}
    </ul>
    ${
      account && model.folders
        ? html`<h2>Folders of ${account.name || account.emailAddress}</h2>
            <nav class="folders" aria-label="Folders">
              <a href="${searchUrl(state, { folder: '', page: 1 })}" ${!state.folder ? html`aria-current="true"` : ''}
                >All folders</a
              >
              ${folderTree(model, model.folders)}
            </nav>`
        : ''
    }
  </aside>`;
}

function searchForm(model: SearchModel): SafeHtml {
  const { state, accounts } = model;
  return html`<form class="search" method="get" action="/search" role="search">
    <div class="search-box">
      <label for="q" class="sr-only">Search the archive</label>
      <input
        id="q"
        name="q"
        type="search"
        value="${state.q}"
        maxlength="10000"
        placeholder="Search mail: from:alice budget, attachment:invoice…"
        autocomplete="off"
        spellcheck="false"
        aria-describedby="q-help"
      />
      <button type="submit" class="primary">Search</button>
    </div>
    <details id="q-help" class="help">
      <summary>Search help <kbd>/</kbd></summary>
      <ul>
        <li><code>budget review</code> both words, in subject, body or addresses</li>
        <li><code>"quarterly budget"</code> the phrase; <code>report*</code> words starting with report</li>
        <li><code>invoice OR receipt</code>, <code>budget -draft</code>, <code>(a OR b) c</code></li>
        <li>
          <code>from:alice</code>, <code>to:bob@example.com</code>, <code>subject:budget</code>,
          <code>body:password</code>
        </li>
        <li><code>attachment:invoice</code> words inside attachments; <code>filename:report</code> attachment names</li>
        <li><code>has:attachment</code>, <code>thread:42</code> (the conversation of message 42)</li>
        <li>
          Keys: <kbd>/</kbd> search box, <kbd>j</kbd>/<kbd>k</kbd> next and previous result, <kbd>Enter</kbd> open
        </li>
      </ul>
    </details>
    <fieldset class="refine">
      <legend class="sr-only">Filters</legend>
      <label
        >Account
        <select name="accountId">
          <option value="">All accounts</option>
          ${accounts.map(
            (a) =>
              html`<option value="${a.id}" ${String(a.id) === state.accountId ? html`selected` : ''}>
                ${a.name || a.emailAddress}
              </option>`,
          )}
        </select>
      </label>
      ${state.folder ? html`<input type="hidden" name="folder" value="${state.folder}" />` : ''}
      <label>From <input type="date" name="from" value="${state.from}" /></label>
      <label>To <input type="date" name="to" value="${state.to}" /></label>
      <label
        >Direction
        <select name="direction">
          <option value="">Any</option>
          <option value="incoming" ${state.direction === 'incoming' ? html`selected` : ''}>Received</option>
          <option value="outgoing" ${state.direction === 'outgoing' ? html`selected` : ''}>Sent</option>
        </select>
      </label>
      <label class="check"
        ><input type="checkbox" name="has" value="attachment" ${state.hasAttachment ? html`checked` : ''} /> Has
        attachment</label
      >
      <label
        >Sort
        <select name="sort">
          ${Object.entries(SORTS).map(
            ([value, text]) =>
              html`<option value="${value}" ${state.sort === value ? html`selected` : ''}>${text}</option>`,
          )}
        </select>
      </label>
    </fieldset>
  </form>`;
}

function resultItem(item: SearchResults['items'][number], accountName: (id: number) => string): SafeHtml {
  return html`<li class="result">
    <a class="result-link" href="/emails/${item.id}">
      <span class="from">${item.from || '(no sender)'}</span>
      <span class="subject">${item.subject || '(no subject)'}</span>
    </a>
    <div class="meta">
      ${when(item.sentDate)} · <span>${accountName(item.accountId)}</span> /
      <span class="folder">${item.folderName}</span>
      ${item.hasAttachments ? html` · <span class="clip" title="Has attachments">${CLIP}<span class="sr-only">Has attachments</span></span>` : ''}
      ${item.isOutgoing ? html` · <span class="badge">sent</span>` : ''}
    </div>
    ${
      item.snippet
        ? html`<p class="snippet">
            ${
              item.snippetAttachment
                ? html`<span class="where">In attachment: <strong>${item.snippetAttachment.fileName}</strong> — </span>`
                : ''
            }${markedSnippet(item.snippet)}
          </p>`
        : ''
    }
  </li>`;
}

function pager(state: SearchState, results: SearchResults): SafeHtml {
  if (results.totalPages <= 1) return html``;
  const pages = new Set<number>([1, results.totalPages]);
  for (let p = results.page - 2; p <= results.page + 2; p++) if (p >= 1 && p <= results.totalPages) pages.add(p);
  const sorted = [...pages].sort((a, b) => a - b);
  const links: SafeHtml[] = [];
  sorted.forEach((p, i) => {
    if (i > 0 && p - sorted[i - 1]! > 1) links.push(html`<span class="gap">…</span>`);
    links.push(
      p === results.page
        ? html`<span aria-current="page">${p}</span>`
        : html`<a href="${searchUrl(state, { page: p })}">${p}</a>`,
    );
  });
  return html`<nav class="pager" aria-label="Pages">
    ${results.page > 1 ? html`<a rel="prev" href="${searchUrl(state, { page: results.page - 1 })}">Previous</a>` : ''}
    ${links}
    ${
      results.page < results.totalPages
        ? html`<a rel="next" href="${searchUrl(state, { page: results.page + 1 })}">Next</a>`
        : ''
    }
  </nav>`;
}

export function searchPage(chrome: Chrome, model: SearchModel): string {
  const { state, results } = model;
  const names = new Map(model.accounts.map((a) => [a.id, a.name || a.emailAddress]));
  const accountName = (id: number) => names.get(id) ?? `Account ${id}`;
  const first = results ? (results.page - 1) * results.pageSize + 1 : 0;
  const last = results ? first + results.items.length - 1 : 0;
  const body = html`<div class="reader">
    ${filters(model)}
    <section class="results-pane" aria-labelledby="results-heading">
      ${searchForm(model)}
      ${model.error ? html`<p class="error" role="alert" id="search-error">${model.error}</p>` : ''}
      ${
        results
          ? html`<div class="results-head">
                <h1 id="results-heading" aria-live="polite">
                  ${
                    results.totalItems === 0
                      ? 'No messages found'
                      : html`Messages ${number.format(first)}–${number.format(last)} of
                          <span class="total">${number.format(results.totalItems)}</span>`
                  }
                </h1>
                ${
                  model.exportAllowed && results.totalItems > 0
                    ? html`<p class="export">
                        Export this search:
                        <a href="${exportUrl(state, 'eml-zip')}">EML (ZIP)</a>
                        ·
                        <a href="${exportUrl(state, 'mbox')}">mbox (ZIP)</a>
                      </p>`
                    : ''
                }
              </div>
              <ol class="results" start="${first}">
                ${results.items.map((item) => resultItem(item, accountName))}
              </ol>
              ${pager(state, results)}`
          : html`<h1 id="results-heading">Search</h1>`
      }
    </section>
  </div>`;
  return layout(chrome, state.q ? `${state.q} · Search` : 'Search', body, { wide: true });
}

export interface MessageModel {
  email: EmailDetailDto;
  accountName: string;
  view: 'html' | 'text';
  remoteImages: boolean;
  remoteBlocked: number;
  hasHtml: boolean;
  htmlTruncated: boolean;
  thread: Array<EmailSummaryDto & { excerpt?: string }>;
  downloadsAllowed: boolean;
}

function messageUrl(id: number, view: 'html' | 'text', remote: boolean): string {
  const params = new URLSearchParams();
  if (view === 'text') params.set('view', 'text');
  if (remote) params.set('remote', '1');
  const q = params.toString();
  return q ? `/emails/${id}?${q}` : `/emails/${id}`;
}

function addressRow(label: string, value: string): SafeHtml {
  return value
    ? html`<dt>${label}</dt>
        <dd>${value}</dd>`
    : html``;
}

function attachmentsSection(model: MessageModel): SafeHtml {
  const { email } = model;
  if (email.attachments.length === 0) return html``;
  return html`<section class="attachments card" aria-labelledby="attachments-heading">
    <h2 id="attachments-heading">Attachments (${email.attachments.length})</h2>
    <ul>
      ${email.attachments.map(
        (a) =>
          html`<li>
            <span class="name">${a.fileName || '(no name)'}</span>
            <span class="muted">${a.contentType} · ${byteSize(a.size)}</span>
            ${
              model.downloadsAllowed
                ? html`<span class="actions">
                    <a href="/emails/${email.id}/attachments/${a.id}/preview">Preview</a>
                    <a href="/emails/${email.id}/attachments/${a.id}" download>Download</a>
                  </span>`
                : ''
            }
          </li>`,
      )}
    </ul>
  </section>`;
}

function threadSection(model: MessageModel): SafeHtml {
  const { email, thread } = model;
  if (thread.length <= 1) return html``;
  return html`<section class="thread card" aria-labelledby="thread-heading">
    <h2 id="thread-heading">Conversation (${thread.length} messages)</h2>
    <ol class="timeline">
      ${thread.map(
        (m) =>
          html`<li ${m.id === email.id ? html`class="current" aria-current="true"` : ''}>
            ${when(m.sentDate)}
            ${
              m.id === email.id
                ? html`<span class="from">${m.from}</span> <span class="subject">${m.subject || '(no subject)'}</span>
                    <span class="badge">this message</span>`
                : html`<a href="/emails/${m.id}"
                    ><span class="from">${m.from}</span> <span class="subject">${m.subject || '(no subject)'}</span></a
                  >`
            }
            ${m.excerpt ? html`<p class="excerpt">${m.excerpt}</p>` : ''}
          </li>`,
      )}
    </ol>
  </section>`;
}

export function messagePage(chrome: Chrome, model: MessageModel): string {
  const { email, view } = model;
  const bodyHtml =
    view === 'html' && model.hasHtml
      ? html`${
            model.remoteBlocked > 0 && !model.remoteImages
              ? html`<p class="notice remote" role="status">
                  ${model.remoteBlocked === 1 ? '1 remote image was' : `${model.remoteBlocked} remote images were`}
                  blocked to protect your privacy.
                  <a href="${messageUrl(email.id, 'html', true)}">Show remote images</a>
                </p>`
              : ''
          }
          ${model.htmlTruncated ? html`<p class="notice">This message is long; only its beginning is shown.</p>` : ''}
          <iframe
            class="mail-body"
            title="Message body"
            src="/emails/${email.id}/body${model.remoteImages ? '?remote=1' : ''}"
            sandbox="allow-same-origin allow-popups allow-popups-to-escape-sandbox"
            referrerpolicy="no-referrer"
          ></iframe>`
      : email.textBody
        ? html`<pre class="text-body">${email.textBody}</pre>`
        : html`<p class="muted">This message has no ${view === 'text' ? 'text' : ''} body.</p>`;
  const body = html`<article class="message">
    <p class="back"><a href="/search">← Search</a></p>
    <header class="card message-head">
      <h1>${email.subject || '(no subject)'}</h1>
      <dl class="headers">
        ${addressRow('From', email.from)} ${addressRow('To', email.to)} ${addressRow('Cc', email.cc)}
        ${addressRow('Bcc', email.bcc)}
        <dt>Date</dt>
        <dd>${when(email.sentDate, true)}</dd>
        <dt>Account</dt>
        <dd>${model.accountName} / ${email.folderName}</dd>
      </dl>
      <nav class="message-actions" aria-label="Message">
        ${
          model.hasHtml
            ? html`<span class="switch" role="group" aria-label="Show as">
                <a
                  href="${messageUrl(email.id, 'html', model.remoteImages)}"
                  ${view === 'html' ? html`aria-current="true"` : ''}
                  >HTML</a
                >
                <a
                  href="${messageUrl(email.id, 'text', model.remoteImages)}"
                  ${view === 'text' ? html`aria-current="true"` : ''}
                  >Text</a
                >
              </span>`
            : ''
        }
        ${model.downloadsAllowed ? html`<a href="/emails/${email.id}/raw" download>Download original (.eml)</a>` : ''}
        <a href="${searchUrl(emptySearch(), { q: `thread:${email.id}` })}">Conversation as a search</a>
      </nav>
    </header>
    <section class="body card" aria-label="Message body">${bodyHtml}</section>
    ${attachmentsSection(model)} ${threadSection(model)}
  </article>`;
  return layout(chrome, email.subject || '(no subject)', body, { wide: true });
}

export function emptySearch(): SearchState {
  return {
    q: '',
    accountId: '',
    folder: '',
    from: '',
    to: '',
    direction: '',
    hasAttachment: false,
    sort: 'newest',
    page: 1,
  };
}

export type PreviewKind = 'image' | 'pdf' | 'text' | 'none';

export interface PreviewModel {
  emailId: number;
  attachmentId: number;
  fileName: string;
  contentType: string;
  size: number;
  kind: PreviewKind;
  text?: { text: string; truncated: boolean } | { none: string };
}

export function previewPage(chrome: Chrome, model: PreviewModel): string {
  const inline = `/emails/${model.emailId}/attachments/${model.attachmentId}/inline`;
  const shown =
    model.kind === 'image'
      ? html`<img class="preview-image" src="${inline}" alt="${model.fileName}" />`
      : model.kind === 'pdf'
        ? html`<iframe class="preview-pdf" title="${model.fileName}" src="${inline}"></iframe>`
        : model.text && 'text' in model.text
          ? html`${model.text.truncated ? html`<p class="notice">Only the beginning of the text is shown.</p>` : ''}
              <pre class="text-body">${model.text.text}</pre>`
          : html`<p class="muted">
              No preview:
              ${model.text && 'none' in model.text ? model.text.none : 'this type is not shown in the browser'}.
            </p>`;
  const body = html`<article class="preview">
    <p class="back"><a href="/emails/${model.emailId}">← Back to the message</a></p>
    <header class="card">
      <h1>${model.fileName || '(no name)'}</h1>
      <p class="muted">
        ${model.contentType} · ${byteSize(model.size)} ·
        <a href="/emails/${model.emailId}/attachments/${model.attachmentId}" download>Download</a>
      </p>
    </header>
    <section class="card preview-body">${shown}</section>
  </article>`;
  return layout(chrome, model.fileName || 'Attachment', body, { wide: true });
}

/** The base style of a message body's document: readable text, nothing wider than the frame. */
export const MAIL_BODY_STYLE =
  'body{margin:0;padding:12px 16px;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;color:#1d2430;background:#fff;overflow-wrap:anywhere}' +
  'img{max-width:100%;height:auto}table{max-width:100%}pre{white-space:pre-wrap}blockquote{margin:0 0 0 .8em;padding-left:.8em;border-left:3px solid #dde1e7}';

/**
 * The sanitized HTML body as a document of its own, shown in a sandboxed frame under a CSP that
 * allows no script and no remote load (mail-routes.ts sets it). `safeHtml` is the sanitizer's
 * output (engine/rules/mail-html.ts): the one place markup from a message reaches a browser.
 */
export function mailBodyDocument(safeHtml: string): string {
  return `<!doctype html>\n<html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer"><meta name="viewport" content="width=device-width, initial-scale=1"><style>${MAIL_BODY_STYLE}</style></head><body>${safeHtml}</body></html>`;
}
