// The HTML mail sanitizer (engine/rules/mail-html.ts) on the hostile corpus
// (test/fixtures/hostile-html/) and on what mail needs to keep. The browser test
// (browser-reading.test.ts) shows the same corpus in Chromium; this one checks the markup itself.
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  MAIL_HTML_MAX_CHARS,
  mailSanitizerReady,
  sanitizeMailHtml,
  type MailHtmlOptions,
} from '../engine/rules/mail-html.js';

// The sanitizer loads sanitize-html asynchronously (mail-html.ts mailSanitizerReady).
test.before(() => mailSanitizerReady);

const CORPUS = fileURLToPath(new URL('../../test/fixtures/hostile-html/', import.meta.url));
const samples = readdirSync(CORPUS)
  .filter((n) => n.endsWith('.html'))
  .map((name) => ({ name, html: readFileSync(join(CORPUS, name), 'utf8') }));
const sample = (name: string): string => samples.find((s) => s.name === name)!.html;
const blocked: MailHtmlOptions = { remoteImages: false, cidUrl: () => null };
const shown: MailHtmlOptions = { remoteImages: true, cidUrl: () => null };

/** Elements that must never come out, whatever went in. */
const FORBIDDEN_ELEMENTS =
  /<(?:script|style|iframe|frame|frameset|object|embed|applet|form|input|button|textarea|select|option|meta|base|link|svg|math|template|noscript|video|audio|source|track|picture|area)\b/i;

/**
 * The remote images each sample has that a reader who did not ask for them is told about: img
 * src, background attributes, inline-style url()s. What no reader gets back (a srcset, a poster,
 * a stylesheet's url()) is removed without being counted.
 */
const REMOTE_IMAGES: Record<string, number> = {
  'background-attr.html': 3,
  'css-escapes.html': 1,
  'css-expression.html': 2,
  'css-url.html': 4,
  'newsletter.html': 1,
  'tracking-pixel.html': 3,
};

test('the corpus has a sample of every attack the docs list, each described in its README', (t) => {
  t.true(samples.length >= 25, `${samples.length} samples`);
  const names = samples.map((s) => s.name);
  for (const kind of [
    'script-tag',
    'event-handlers',
    'javascript-href',
    'data-html-link',
    'vbscript',
    'svg-script',
    'svg-use',
    'mathml-mxss',
    'noscript-mxss',
    'css-expression',
    'css-import',
    'css-url',
    'meta-refresh',
    'form-phishing',
    'base-href',
    'tracking-pixel',
    'srcset',
    'background-attr',
    'nested-iframes',
    'plugins',
    'link-elements',
    'cid-image',
    'newsletter',
    'template-slot',
    'ping-attribute',
    'media',
    'conditional-comments',
    'unclosed-quotes',
  ])
    t.true(names.includes(`${kind}.html`), kind);
  const readme = readFileSync(join(CORPUS, 'README.md'), 'utf8');
  const listed = [...readme.matchAll(/^\| `([\w-]+\.html)` \| \S/gm)].map((m) => m[1]);
  t.deepEqual(listed.sort(), [...names].sort());
  for (const name of Object.keys(REMOTE_IMAGES)) t.true(names.includes(name), name);
});

for (const { name, html } of samples) {
  test(`${name}: no script, handler, dangerous URL, forbidden element or remote address`, (t) => {
    for (const [options, label] of [
      [blocked, 'remote images blocked'],
      [shown, 'remote images shown'],
    ] as const) {
      const result = sanitizeMailHtml(html, options);
      const out = result.html;
      t.notRegex(out, FORBIDDEN_ELEMENTS, label);
      // Attribute values come out double-quoted with their quotes escaped, so an attribute name
      // follows the tag's name or a closing quote; ` onerror=` inside a value is only text.
      t.notRegex(out, /(?:<\w+|")\s+on[a-z]+\s*=/i, `${label}: an event handler`);
      t.notRegex(out, /(?:javascript|vbscript|livescript)\s*:/i, `${label}: a script URL`);
      t.notRegex(
        out,
        /data:(?!image\/(?:png|gif|jpe?g|webp);base64,)/i,
        `${label}: a data: URL other than a raster image`,
      );
      t.notRegex(
        out,
        /url\s*\(|expression\s*\(|@import|behavior|-moz-binding|\\[0-9a-f]/i,
        `${label}: CSS that loads or runs`,
      );
      t.notRegex(out, /\s(?:srcset|background|ping|formaction|xlink:href|poster|action|class|id|name)\s*=/i, label);
      t.false(result.truncated, label);
      if (options.remoteImages) {
        // Only the remote images asked for may name another host: no link, frame or style.
        const named = [...out.matchAll(/([\w:-]+)="[^"]*evil\.test/gi)].map((m) => m[1]!.toLowerCase());
        t.deepEqual(named, Array<string>(named.length).fill('src'), label);
        t.is(result.remoteBlocked, 0, label);
      } else {
        t.notRegex(out, /evil\.test/i, label);
        t.is(result.remoteBlocked, REMOTE_IMAGES[name] ?? 0, `${label}: remote images counted`);
      }
      // Sanitizing the output again changes nothing, and finds nothing remote left to block.
      const again = sanitizeMailHtml(out, options);
      t.is(again.html, out, `${label}: the same when sanitized again`);
      t.is(again.remoteBlocked, 0, label);
    }
  });
}

test('remote images are removed and counted unless asked for; data: raster images stay, SVG does not', (t) => {
  const html =
    '<img src="http://evil.test/a.gif"><img src="https://evil.test/b.gif"><img src="//evil.test/c.gif">' +
    '<table background="http://evil.test/bg.png"><tr><td style="color:red;background-image:url(&quot;https://evil.test/d.png&quot;)">x</td></tr></table>' +
    '<img src="data:image/png;base64,iVBORw0KGgo=" alt="png"><img src="data:image/svg+xml;base64,PHN2Zz4=" alt="svg">' +
    '<img src="ftp://evil.test/e.gif" alt="ftp">';
  const off = sanitizeMailHtml(html, blocked);
  t.is(off.remoteBlocked, 5, 'three images, a background, a style url()');
  t.notRegex(off.html, /evil\.test/);
  t.regex(off.html, /<td style="color:red">x<\/td>/);
  t.regex(off.html, /<img alt="png" src="data:image\/png;base64,iVBORw0KGgo=" \/>/);
  t.regex(off.html, /<img alt="svg" \/>/);
  t.regex(off.html, /<img alt="ftp" \/>/);
  const on = sanitizeMailHtml(html, shown);
  t.is(on.remoteBlocked, 0);
  t.regex(on.html, /<img src="http:\/\/evil\.test\/a\.gif" \/>/);
  t.regex(on.html, /<img src="https:\/\/evil\.test\/b\.gif" \/>/);
  t.regex(on.html, /<img src="https:\/\/evil\.test\/c\.gif" \/>/, 'protocol-relative: https');
  t.notRegex(on.html, /background|url\(|ftp:/, 'backgrounds, style url()s and other schemes are never kept');
  t.regex(on.html, /<img alt="svg" \/>/);
});

test('the tracking pixel: removed and counted when blocked; shown as it is when asked for, and nothing else', (t) => {
  const html = sample('tracking-pixel.html');
  const off = sanitizeMailHtml(html, blocked);
  t.is(off.html, '<p>Newsletter</p><img width="1" height="1" /><img style="display:none" /><img />\n');
  t.is(off.remoteBlocked, 3);
  const on = sanitizeMailHtml(html, shown);
  t.is(
    on.html,
    '<p>Newsletter</p><img width="1" height="1" src="http://evil.test/pixel.gif?u=1" />' +
      '<img style="display:none" src="https://evil.test/open.gif" /><img src="https://evil.test/protocol-relative.gif" />\n',
  );
});

test('cid: images point where the message part is served; an unknown Content-ID keeps only the alt text', (t) => {
  const asked: string[] = [];
  const out = sanitizeMailHtml(
    '<img src="cid:logo@example.test" alt="logo"><img src="CID:%3Cother@example.test%3E" alt="other"><img src="cid:missing" alt="gone">',
    {
      remoteImages: false,
      cidUrl: (cid) => {
        asked.push(cid);
        return cid === 'missing' ? null : `/emails/7/attachments/${cid.length}/inline`;
      },
    },
  );
  t.deepEqual(asked, ['logo@example.test', 'other@example.test', 'missing']);
  t.regex(out.html, /<img alt="logo" src="\/emails\/7\/attachments\/17\/inline" \/>/);
  t.regex(out.html, /<img alt="other" src="\/emails\/7\/attachments\/18\/inline" \/>/);
  t.regex(out.html, /<img alt="gone" \/>/);
  t.is(out.remoteBlocked, 0);
});

test('links: absolute web, mail and phone links only, each opening a new tab without a referrer', (t) => {
  const out = sanitizeMailHtml(
    '<a href="https://ok.test/a">web</a><a href="mailto:x@ok.test">mail</a><a href="tel:+123">tel</a>' +
      '<a href="/relative">rel</a><a href="ftp://ok.test/">ftp</a><a href="#top" target="_self" rel="opener">anchor</a>' +
      '<a href="data:text/html;base64,PHNjcmlwdD4=">data</a><a href="http:evil.test/">noslash</a>',
    blocked,
  ).html;
  const links = [...out.matchAll(/<a([^>]*)>(\w+)<\/a>/g)].map((m) => [m[2], m[1]]);
  t.is(links.length, 8);
  for (const [text, attrs] of links) t.regex(attrs!, /target="_blank" rel="noopener noreferrer nofollow"$/, text);
  t.deepEqual(
    links.filter(([, a]) => a!.includes('href=')).map(([text]) => text),
    ['web', 'mail', 'tel'],
  );
});

test('what mail needs to read well is kept: tables, fonts, inline presentational styles', (t) => {
  const out = sanitizeMailHtml(sample('newsletter.html'), blocked).html;
  t.regex(
    out,
    /<table width="600" cellpadding="0" cellspacing="0" border="0" align="center" style="border-collapse:collapse;background-color:#ffffff">/,
  );
  t.regex(out, /<td style="padding:20px;font-family:Arial, sans-serif;font-size:16px;color:#333333" align="left">/);
  t.regex(out, /<font color="#b3261e">Ends Sunday.<\/font>/);
  t.regex(out, /<h1 style="font-size:24px;color:#2456c7;margin:0 0 12px">Spring sale<\/h1>/);
  t.regex(out, /<img width="560" alt="Hero" \/>/);
  t.regex(
    out,
    /style="display:inline-block;padding:10px 16px;background-color:#2456c7;color:#fff;text-decoration:none;border-radius:4px" href="https:\/\/ok\.test\/sale"/,
  );
  t.regex(
    sanitizeMailHtml(sample('newsletter.html'), shown).html,
    /<img width="560" alt="Hero" src="https:\/\/evil\.test\/hero\.jpg" \/>/,
  );
  // Only the values that cannot load or run: a colour, not a url(); a length, not an expression.
  const styled = sanitizeMailHtml(
    '<td rowspan="2" colspan="3" valign="top" bgcolor="#eee" style="color:#123;position:fixed;width:expression(1);background:rgb(1,2,3);z-index:9">c</td>',
    blocked,
  ).html;
  t.is(
    styled,
    '<td rowspan="2" colspan="3" valign="top" bgcolor="#eee" style="color:#123;background:rgb(1,2,3)">c</td>',
  );
});

test('bounds: a body past the limit is cut before it is parsed, and says so', (t) => {
  t.is(MAIL_HTML_MAX_CHARS, 2_000_000);
  const long = `<p>${'a'.repeat(1000)}</p>`.repeat(5);
  const cut = sanitizeMailHtml(long, { ...blocked, maxChars: 2500 });
  t.true(cut.truncated);
  t.is(cut.html, `<p>${'a'.repeat(1000)}</p><p>${'a'.repeat(1000)}</p><p>${'a'.repeat(483)}</p>`);
  t.false(sanitizeMailHtml(long, blocked).truncated);
  t.false(sanitizeMailHtml(long, { ...blocked, maxChars: long.length }).truncated);
  // A cut inside a tag leaves no part of it.
  const partial = '<p>ok</p><img src="http://evil.test/x.gif" alt="a">';
  const inTag = sanitizeMailHtml(partial, { ...blocked, maxChars: partial.length - 4 });
  t.deepEqual(inTag, { html: '<p>ok</p>', remoteBlocked: 0, truncated: true });
  // Nor half a character: 😀 is two UTF-16 code units.
  t.is(sanitizeMailHtml('<p>a😀</p>', { ...blocked, maxChars: 5 }).html, '<p>a</p>');
});

test('bounds: 100,000 nested elements neither throw nor hang; the body is cut where it passes 1,000', (t) => {
  const deep = `<p>start</p>${'<div>'.repeat(100_000)}deep${'</div>'.repeat(100_000)}<p>after</p>`;
  const out = sanitizeMailHtml(deep, blocked);
  t.true(out.truncated);
  t.true(out.html.startsWith('<p>start</p><div><div>'));
  t.notRegex(out.html, /deep|after/);
  t.is((out.html.match(/<div>/g) ?? []).length, 256, 'the output keeps 256 levels');
  t.is((out.html.match(/<\/div>/g) ?? []).length, 256, 'and closes each');
  // Unclosed elements count too.
  const unclosed = sanitizeMailHtml(`${'<b>'.repeat(100_000)}x`, blocked);
  t.true(unclosed.truncated);
  t.is((unclosed.html.match(/<b>/g) ?? []).length, 256);
  // Deeper than the output keeps but within the parser's bound: flattened, nothing cut.
  const within = sanitizeMailHtml(`${'<div>'.repeat(900)}deep${'</div>'.repeat(900)}<p>after</p>`, blocked);
  t.false(within.truncated);
  t.regex(within.html, /<div>deep<\/div>.*<p>after<\/p>$/);
  t.is((within.html.match(/<div>/g) ?? []).length, 256);
});

test('the sanitizer module has no top-level await, so worker threads load it without it (Node 24 crashed on one)', (t) => {
  // A module with a top-level await cannot be require()d (ERR_REQUIRE_ASYNC_MODULE); one without can.
  const required = createRequire(import.meta.url)('../engine/rules/mail-html.js') as { sanitizeMailHtml?: unknown };
  t.is(typeof required.sanitizeMailHtml, 'function');
});
