// HTML mail made safe to show a person (docs/web.md, "HTML mail"). Mail is written by strangers,
// so its HTML is the largest script-injection surface the product has. This is the first of three
// layers (the others: the frame it is shown in is sandboxed without scripts, and its document's
// CSP has no script source and no remote load), so it is an allow-list, done by sanitize-html (a
// maintained sanitizer on htmlparser2), never by hand:
//
// - kept: text formatting, tables, lists, images, links, and a list of presentational inline
//   styles whose values can never hold url(), expression() or an escape;
// - gone with their content: script, style, svg, math, template, frames, plugins, form controls'
//   text (textarea, select), the document head; gone, content kept: form, every other unknown tag;
// - no event handler, no id or name, no srcset, no background attribute, no ping;
// - links: absolute http(s), mailto and tel only, each opening a new tab without a referrer;
// - images: `cid:` parts of the message (served by the archive), data: raster images, and remote
//   http(s) images only when the reader asked for them (else removed and counted).
//
// <style> elements are dropped rather than filtered: a stylesheet can select and restyle anything
// in the document and load from url(); no maintained filter makes a whole stylesheet safe, and
// inline styles carry most of what mail needs to read well.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import type sanitizeHtml from 'sanitize-html';
import type { SafeMailHtml } from '../../shared/jobs.js';

/**
 * sanitize-html is CommonJS and require()s htmlparser2, which is an ES module only (since its
 * version 10; sanitize-html's fixes for htmlparser2 11+ behaviour are why we keep both current).
 * Our worker threads turn require(esm) off (engine/pool/worker-argv.ts), so that require() would
 * throw there. htmlparser2 is imported here instead and put in the CommonJS cache under the path
 * sanitize-html resolves it to, so its require() finds it loaded.
 */
async function loadSanitizer(): Promise<typeof sanitizeHtml> {
  const fromHere = createRequire(import.meta.url);
  const fromSanitizer = createRequire(fromHere.resolve('sanitize-html'));
  const parserPath = fromSanitizer.resolve('htmlparser2');
  if (!fromSanitizer.cache[parserPath]) {
    const parser = (await import(pathToFileURL(parserPath).href)) as object;
    fromSanitizer.cache[parserPath] = {
      id: parserPath,
      filename: parserPath,
      loaded: true,
      exports: parser,
    } as NodeJS.Module;
  }
  return fromHere('sanitize-html') as typeof sanitizeHtml;
}
const sanitize = await loadSanitizer();

export interface MailHtmlOptions {
  /** Keep remote (http/https) image addresses; otherwise remove them and count them in remoteBlocked. */
  remoteImages: boolean;
  /** The URL that serves the part a `cid:` reference names (Content-ID without <>), or null when no part has it. */
  cidUrl: (cid: string) => string | null;
  /** At most this many characters of the body are sanitized (default MAIL_HTML_MAX_CHARS); the rest is cut. */
  maxChars?: number;
}

/**
 * The characters of an HTML body that are sanitized and shown: 2 million, beyond any real
 * message's text (a newsletter is tens of kilobytes) and a bound on what one view costs a thread
 * (about 100 ms) and a browser. A longer body is cut, and the page says so.
 */
export const MAIL_HTML_MAX_CHARS = 2_000_000;

/** Elements deeper than this are dropped (their text kept): a bound on the browser's work too. */
const NESTING_LIMIT = 256;

const TAGS = [
  'a', 'abbr', 'address', 'b', 'bdi', 'bdo', 'big', 'blockquote', 'br', 'caption', 'center', 'cite',
  'code', 'col', 'colgroup', 'dd', 'del', 'details', 'dfn', 'div', 'dl', 'dt', 'em', 'figcaption',
  'figure', 'font', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'i', 'img', 'ins', 'kbd', 'li', 'mark',
  'ol', 'p', 'pre', 'q', 's', 'samp', 'small', 'span', 'strike', 'strong', 'sub', 'summary', 'sup',
  'table', 'tbody', 'td', 'tfoot', 'th', 'thead', 'time', 'tr', 'tt', 'u', 'ul', 'var', 'wbr',
]; // prettier-ignore

/** Dropped with everything inside them: code, styles, vector graphics, the document head, widgets. */
const DROPPED_WITH_CONTENT = [
  'script', 'style', 'svg', 'math', 'template', 'iframe', 'frame', 'frameset', 'object', 'embed',
  'applet', 'noscript', 'noembed', 'noframes', 'xmp', 'title', 'head', 'textarea', 'select', 'option',
  'audio', 'video', 'canvas', 'plaintext',
]; // prettier-ignore

const CELL = ['width', 'height', 'colspan', 'rowspan', 'bgcolor', 'nowrap', 'scope', 'headers'];
const ATTRIBUTES: Record<string, string[]> = {
  '*': ['style', 'title', 'dir', 'lang', 'align', 'valign', 'class'],
  a: ['href', 'target', 'rel'],
  img: ['src', 'alt', 'width', 'height', 'border', 'hspace', 'vspace'],
  font: ['color', 'face', 'size'],
  table: ['width', 'height', 'border', 'cellpadding', 'cellspacing', 'bgcolor', 'summary'],
  td: CELL,
  th: CELL,
  tr: ['bgcolor', 'height'],
  col: ['span', 'width'],
  colgroup: ['span', 'width'],
  ol: ['start', 'type', 'reversed'],
  ul: ['type'],
  li: ['value', 'type'],
  time: ['datetime'],
  hr: ['width', 'size', 'noshade', 'color'],
};

// Values of inline styles: colours, lengths, keywords, font names. None can hold "url(", "(" other
// than rgb()/hsl(), a backslash escape, a semicolon or angle brackets.
const COLOR = [/^#[0-9a-f]{3,8}$/i, /^[a-z]{3,30}$/i, /^(?:rgb|hsl)a?\(\s*[\d.\s,%/deg]+\)$/i];
const LENGTH_PART = String.raw`(?:-?(?:\d+|\d*\.\d+)(?:px|pt|em|rem|ex|ch|%|vw|vh|cm|mm|in)?|auto|normal|inherit|initial)`;
const LENGTHS = [new RegExp(`^${LENGTH_PART}(?:\\s+${LENGTH_PART}){0,3}$`, 'i')];
const KEYWORD = [/^[a-z][a-z-]{0,40}$/i];
const BORDER_PART = String.raw`(?:[-\w.#%]+|(?:rgb|hsl)a?\(\s*[\d.\s,%/deg]+\))`;
const BORDER = [new RegExp(`^${BORDER_PART}(?:\\s+${BORDER_PART}){0,4}$`, 'i')];
const STYLE_VALUES: Record<string, RegExp[]> = {
  color: COLOR,
  'background-color': COLOR,
  background: COLOR,
  'border-color': COLOR,
  'font-family': [/^[\w\s,'"-]{1,200}$/],
  'font-size': [...LENGTHS, /^(?:xx-small|x-small|small|medium|large|x-large|xx-large|smaller|larger)$/i],
  'font-weight': [/^(?:normal|bold|bolder|lighter|[1-9]00)$/i],
  'font-style': [/^(?:normal|italic|oblique)$/i],
  'font-variant': KEYWORD,
  'line-height': LENGTHS,
  'letter-spacing': LENGTHS,
  'text-align': [/^(?:left|right|center|justify|start|end)$/i],
  'text-decoration': [/^[a-z\s-]{1,60}$/i],
  'text-transform': KEYWORD,
  'text-indent': LENGTHS,
  'vertical-align': [...KEYWORD, ...LENGTHS],
  'white-space': KEYWORD,
  'word-break': KEYWORD,
  'overflow-wrap': KEYWORD,
  'word-wrap': KEYWORD,
  'list-style-type': KEYWORD,
  'border-collapse': KEYWORD,
  'border-spacing': LENGTHS,
  'table-layout': KEYWORD,
  display: [/^(?:block|inline|inline-block|table|table-row|table-cell|list-item|none)$/i],
  float: [/^(?:left|right|none)$/i],
  clear: [/^(?:left|right|both|none)$/i],
  width: LENGTHS,
  height: LENGTHS,
  'max-width': LENGTHS,
  'min-width': LENGTHS,
  'max-height': LENGTHS,
  'min-height': LENGTHS,
  margin: LENGTHS,
  'margin-top': LENGTHS,
  'margin-right': LENGTHS,
  'margin-bottom': LENGTHS,
  'margin-left': LENGTHS,
  padding: LENGTHS,
  'padding-top': LENGTHS,
  'padding-right': LENGTHS,
  'padding-bottom': LENGTHS,
  'padding-left': LENGTHS,
  border: BORDER,
  'border-top': BORDER,
  'border-right': BORDER,
  'border-bottom': BORDER,
  'border-left': BORDER,
  'border-width': LENGTHS,
  'border-style': KEYWORD,
  'border-radius': LENGTHS,
};

/** Raster images a data: URL may carry: never SVG (a document that can hold script) or HTML. */
const DATA_IMAGE = /^data:image\/(?:png|gif|jpe?g|webp);base64,[a-z0-9+/=\s]+$/i;
const REMOTE = /^(?:https?:)?\/\//i;
const LINK = /^(?:https?:\/\/|mailto:|tel:)/i;

export function sanitizeMailHtml(html: string, options: MailHtmlOptions): SafeMailHtml {
  const max = options.maxChars ?? MAIL_HTML_MAX_CHARS;
  const truncated = html.length > max;
  const input = truncated ? html.slice(0, max) : html;
  let remoteBlocked = 0;

  /** The src an image keeps, or undefined: a cid: part, a data: raster image, or a remote one asked for. */
  const imageSource = (src: string | undefined): string | undefined => {
    const value = src?.trim() ?? '';
    if (/^cid:/i.test(value)) {
      let cid = value.slice(4);
      try {
        cid = decodeURIComponent(cid);
      } catch {
        // Not percent-encoded as URLs are: the name as written.
      }
      return options.cidUrl(cid.replace(/^<|>$/g, '')) ?? undefined;
    }
    if (DATA_IMAGE.test(value)) return value;
    if (REMOTE.test(value)) {
      if (options.remoteImages && /^https?:\/\//i.test(value)) return value;
      remoteBlocked++;
    }
    return undefined;
  };

  const out = sanitize(input, {
    allowedTags: TAGS,
    allowedAttributes: ATTRIBUTES,
    allowedStyles: { '*': STYLE_VALUES },
    allowedSchemes: ['http', 'https', 'mailto', 'tel'],
    allowedSchemesByTag: { img: options.remoteImages ? ['data', 'http', 'https'] : ['data'] },
    allowedSchemesAppliedToAttributes: ['href', 'src', 'cite'],
    allowProtocolRelative: false,
    disallowedTagsMode: 'discard',
    nonTextTags: DROPPED_WITH_CONTENT,
    nestingLimit: NESTING_LIMIT,
    enforceHtmlBoundary: false,
    transformTags: {
      a: (tagName, attribs) => {
        const href = attribs.href?.trim();
        const kept: sanitizeHtml.Attributes = { ...attribs };
        delete kept.href;
        if (href && LINK.test(href)) kept.href = href;
        return { tagName, attribs: { ...kept, target: '_blank', rel: 'noopener noreferrer nofollow' } };
      },
      img: (tagName, attribs) => {
        const src = imageSource(attribs.src);
        const kept: sanitizeHtml.Attributes = { ...attribs };
        delete kept.src;
        return { tagName, attribs: src ? { ...kept, src } : kept };
      },
      // A remote background is a remote image the reader did not ask for: counted, never kept.
      '*': (tagName, attribs) => {
        if (attribs.background !== undefined && REMOTE.test(attribs.background.trim()) && !options.remoteImages)
          remoteBlocked++;
        return { tagName, attribs };
      },
    },
  });
  return { html: out, remoteBlocked, truncated };
}
