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
// - no event handler, no id, name or class (the mail's stylesheet is gone, so a class could only
//   reach the frame document's own rules), no srcset, no background attribute, no ping;
// - links: absolute http(s), mailto and tel only, each opening a new tab without a referrer;
// - images: `cid:` parts of the message (served by the archive), data: raster images, and remote
//   http(s) images only when the reader asked for them. Otherwise they are removed and counted in
//   remoteBlocked, with the remote background attributes and inline-style url()s removed with
//   them, so that the page's "N remote images were blocked" covers every remote load it stopped.
//   Backgrounds and url()s are never kept, even when asked for: the allow-list of style values
//   has no url(), and a background is decoration whose cell keeps its bgcolor.
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
 * Our worker threads turn require(esm) off (engine/threads/worker-argv.ts), so that require() would
 * throw there. htmlparser2 is imported here instead and put in the CommonJS cache under the path
 * sanitize-html resolves it to, so its require() finds it loaded.
 */
async function loadSanitizer(): Promise<{ sanitize: typeof sanitizeHtml; Parser: DepthParserClass }> {
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
  const { Parser } = fromSanitizer.cache[parserPath].exports as { Parser: DepthParserClass };
  return { sanitize: fromHere('sanitize-html') as typeof sanitizeHtml, Parser };
}

/** What findDepthCut uses of htmlparser2's Parser (the one sanitize-html parses with). */
type DepthParserClass = new (
  handler: { onopentag(): void; onclosetag(): void },
  options: { decodeEntities: boolean },
) => { startIndex: number; write(html: string): void; end(): void };

let loaded: { sanitize: typeof sanitizeHtml; Parser: DepthParserClass } | undefined;

/**
 * Resolves once sanitizeMailHtml may be called (loadSanitizer above). Not a top-level await: on
 * Node 24 a worker thread whose modules hold one crashed now and then (a V8 check, SIGTRAP), so
 * the engine's worker awaits this before its first job (engine/pool/worker.ts).
 */
export const mailSanitizerReady: Promise<void> = loadSanitizer().then((found) => {
  loaded = found;
});

function sanitizer(): { sanitize: typeof sanitizeHtml; Parser: DepthParserClass } {
  if (!loaded) throw new Error('sanitizeMailHtml was called before mailSanitizerReady resolved');
  return loaded;
}

export interface MailHtmlOptions {
  /** Keep remote (http/https) image addresses; otherwise remove them and count them in remoteBlocked. */
  remoteImages: boolean;
  /** The URL that serves the part a `cid:` reference names (Content-ID without <>), or null when no part has it. */
  cidUrl: (cid: string) => string | null;
  /** At most this many characters of the body are sanitized (default MAIL_HTML_MAX_CHARS); the rest is cut and `truncated` set. */
  maxChars?: number;
}

/**
 * The characters of an HTML body that are sanitized and shown: 2 million, beyond any real
 * message's text (a newsletter is tens of kilobytes) and a bound on what one view costs an engine
 * thread and then a browser. A 2 MB body of newsletter tables, inline styles, images and links
 * took 0.3 to 0.9 s (about 0.5 s typically) on one thread of a busy 2-vCPU EPYC VM, Node 20. A
 * longer body is cut, and the page says so.
 */
export const MAIL_HTML_MAX_CHARS = 2_000_000;

/** Elements deeper than this are dropped (their text kept): a bound on the browser's work too. */
const NESTING_LIMIT = 256;

/**
 * Elements open at once in the parser, past which the body is cut (and `truncated` set).
 * htmlparser2 keeps its open elements in an array it shifts at the front, so each tag costs time
 * in proportion to the depth: 100,000 nested elements took 7 to 10 s, and 2 MB of them would take
 * minutes. Under this limit the worst bodies measured (999 open elements, then 2 MB of stray end
 * tags or paragraphs) cost about what the 2 MB newsletter does. Real mail is far shallower, and
 * the output keeps NESTING_LIMIT levels anyway.
 */
const PARSER_DEPTH_LIMIT = 1_000;

/** Thrown out of sanitize-html's parse when the body passes PARSER_DEPTH_LIMIT. */
const TOO_DEEP = new Error('HTML nested too deep');

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
  '*': ['style', 'title', 'dir', 'lang', 'align', 'valign'],
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

/** `attribs` without `names`, the others in their order (so a second pass orders them alike). */
function without(attribs: sanitizeHtml.Attributes, ...names: string[]): sanitizeHtml.Attributes {
  return Object.fromEntries(Object.entries(attribs).filter(([name]) => !names.includes(name)));
}

/** How many remote url()s an inline style names (escaped ones are not counted, only removed). */
const remoteUrls = (style: string): number => style.match(/url\(\s*['"]?\s*(?:https?:)?\/\//gi)?.length ?? 0;

/**
 * Where the open elements first pass PARSER_DEPTH_LIMIT: the start of that tag, found by the same
 * parser with the same options as sanitize-html's (so it counts the elements that parse opens).
 */
function findDepthCut(html: string): number {
  const { Parser } = sanitizer();
  let open = 0;
  let cut = html.length;
  const parser = new Parser(
    {
      onopentag() {
        if (++open <= PARSER_DEPTH_LIMIT) return;
        cut = parser.startIndex;
        throw TOO_DEEP;
      },
      onclosetag() {
        open--;
      },
    },
    { decodeEntities: true },
  );
  try {
    parser.write(html);
    parser.end();
  } catch (e) {
    if (e !== TOO_DEEP) throw e;
  }
  return cut;
}

export function sanitizeMailHtml(html: string, options: MailHtmlOptions): SafeMailHtml {
  const { sanitize } = sanitizer();
  const max = options.maxChars ?? MAIL_HTML_MAX_CHARS;
  let truncated = html.length > max;
  // Never between the two halves of a surrogate pair: half a character is not text.
  const end = truncated && /[\uD800-\uDBFF]/.test(html.charAt(max - 1)) ? max - 1 : max;
  const input = truncated ? html.slice(0, end) : html;
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
      // A protocol-relative address would take the scheme of the frame's document: https, always.
      if (options.remoteImages) return value.startsWith('//') ? `https:${value}` : value;
      remoteBlocked++;
    }
    return undefined;
  };

  /** The body sanitized, or null when its parse passed PARSER_DEPTH_LIMIT (counts start over). */
  const attempt = (body: string): string | null => {
    remoteBlocked = 0;
    let open = 0;
    try {
      return sanitize(body, {
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
        onOpenTag: () => {
          if (++open > PARSER_DEPTH_LIMIT) throw TOO_DEEP;
        },
        onCloseTag: () => {
          open--;
        },
        // The attributes a transform sets come last, so the output sanitized again is the same.
        transformTags: {
          a: (tagName, attribs) => {
            const href = attribs.href?.trim();
            return {
              tagName,
              attribs: {
                ...without(attribs, 'href', 'target', 'rel'),
                ...(href && LINK.test(href) ? { href } : {}),
                target: '_blank',
                rel: 'noopener noreferrer nofollow',
              },
            };
          },
          img: (tagName, attribs) => {
            const src = imageSource(attribs.src);
            return { tagName, attribs: { ...without(attribs, 'src'), ...(src ? { src } : {}) } };
          },
          // Remote backgrounds and inline-style url()s are remote images the reader did not ask
          // for: counted here, removed by the allow-lists (background is no allowed attribute,
          // url() no allowed style value).
          '*': (tagName, attribs) => {
            if (!options.remoteImages) {
              if (attribs.background !== undefined && REMOTE.test(attribs.background.trim())) remoteBlocked++;
              if (attribs.style !== undefined) remoteBlocked += remoteUrls(attribs.style);
            }
            return { tagName, attribs };
          },
        },
      });
    } catch (e) {
      if (e !== TOO_DEEP) throw e;
      return null;
    }
  };

  let out = attempt(input);
  if (out === null) {
    // Cut where the depth passes the limit; the shorter body cannot pass it again.
    truncated = true;
    out = attempt(input.slice(0, findDepthCut(input))) ?? '';
  }
  return { html: out, remoteBlocked, truncated };
}
