// The HTML mail sanitizer (engine/rules/mail-html.ts) on the hostile corpus
// (test/fixtures/hostile-html/) and on what mail needs to keep. The browser test
// (browser-reading.test.ts) shows the same corpus in Chromium; this one checks the markup itself.
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MAIL_HTML_MAX_CHARS, sanitizeMailHtml, type MailHtmlOptions } from '../engine/rules/mail-html.js';

const CORPUS = fileURLToPath(new URL('../../test/fixtures/hostile-html/', import.meta.url));
const samples = readdirSync(CORPUS)
  .filter((n) => n.endsWith('.html'))
  .map((name) => ({ name, html: readFileSync(join(CORPUS, name), 'utf8') }));
const blocked: MailHtmlOptions = { remoteImages: false, cidUrl: () => null };
const shown: MailHtmlOptions = { remoteImages: true, cidUrl: () => null };

/** Elements that must never come out, whatever went in. */
const FORBIDDEN_ELEMENTS =
  /<(?:script|style|iframe|frame|frameset|object|embed|applet|form|input|button|textarea|select|option|meta|base|link|svg|math|template|noscript|video|audio|source|track|picture|area)\b/i;

test('the corpus has a sample of every attack the docs list', (t) => {
  t.true(samples.length >= 25, `${samples.length} samples`);
  const all = samples.map((s) => s.name).join(' ');
  for (const kind of [
    'script',
    'event-handlers',
    'javascript',
    'svg',
    'css-expression',
    'css-import',
    'css-url',
    'meta-refresh',
    'form',
    'base-href',
    'tracking-pixel',
    'nested-iframes',
    'mathml',
    'noscript',
  ])
    t.true(all.includes(kind), kind);
});

for (const { name, html } of samples) {
  test(`${name}: no script, handler, dangerous URL, forbidden element or remote address`, (t) => {
    for (const [options, label] of [
      [blocked, 'remote images blocked'],
      [shown, 'remote images shown'],
    ] as const) {
      const out = sanitizeMailHtml(html, options).html;
      t.notRegex(out, FORBIDDEN_ELEMENTS, label);
      // Attribute values come out double-quoted with their quotes escaped, so an attribute name
      // follows the tag's name or a closing quote; text inside a value is only text.
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
      t.notRegex(out, /\s(?:srcset|background|ping|formaction|xlink:href|poster|action)\s*=/i, label);
      // Only the remote images asked for may name another host; no link or frame ever loads it.
      const remote = [...out.matchAll(/(\w+)="(?:https?:)?\/\/evil\.test[^"]*"/gi)].map((m) => m[1]!.toLowerCase());
      t.deepEqual(remote, options.remoteImages ? remote.filter((a) => a === 'src') : [], label);
      if (options.remoteImages) t.true(remote.every((a) => a === 'src'));
      // Sanitizing the output again removes nothing more (attributes may come out reordered).
      t.is(sanitizeMailHtml(out, options).html.length, out.length, `${label}: stable`);
    }
  });
}

test('remote images are removed and counted unless asked for; data: raster images stay, SVG does not', (t) => {
  const html =
    '<img src="http://evil.test/a.gif"><img src="https://evil.test/b.gif"><img src="//evil.test/c.gif">' +
    '<table background="http://evil.test/bg.png"><tr><td>x</td></tr></table>' +
    '<img src="data:image/png;base64,iVBORw0KGgo=" alt="png"><img src="data:image/svg+xml;base64,PHN2Zz4=" alt="svg">';
  const off = sanitizeMailHtml(html, blocked);
  t.is(off.remoteBlocked, 4);
  t.notRegex(off.html, /evil\.test/);
  t.regex(off.html, /<img alt="png" src="data:image\/png;base64,iVBORw0KGgo=" \/>/);
  t.regex(off.html, /<img alt="svg" \/>/);
  const on = sanitizeMailHtml(html, shown);
  t.is(on.remoteBlocked, 1, 'the protocol-relative one is still refused');
  t.regex(on.html, /src="http:\/\/evil\.test\/a\.gif"/);
  t.regex(on.html, /src="https:\/\/evil\.test\/b\.gif"/);
  t.notRegex(on.html, /\/\/evil\.test\/c\.gif/, 'protocol-relative addresses are never kept');
  t.notRegex(on.html, /background=/, 'backgrounds are never kept');
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
      '<a href="/relative">rel</a><a href="ftp://ok.test/">ftp</a><a href="#top" target="_self">anchor</a>',
    blocked,
  ).html;
  const links = [...out.matchAll(/<a([^>]*)>(\w+)<\/a>/g)].map((m) => [m[2], m[1]]);
  t.is(links.length, 6);
  for (const [, attrs] of links) t.regex(attrs!, /target="_blank" rel="noopener noreferrer nofollow"/);
  t.deepEqual(
    links.filter(([, a]) => a!.includes('href=')).map(([text]) => text),
    ['web', 'mail', 'tel'],
  );
});

test('what mail needs to read well is kept: tables, fonts, inline presentational styles', (t) => {
  const { html } = samples.find((s) => s.name === 'newsletter.html')!;
  const out = sanitizeMailHtml(html, blocked).html;
  t.regex(
    out,
    /<table width="600" cellpadding="0" cellspacing="0" border="0" align="center" style="border-collapse:collapse;background-color:#ffffff">/,
  );
  t.regex(out, /<td style="padding:20px;font-family:Arial, sans-serif;font-size:16px;color:#333333" align="left">/);
  t.regex(out, /<font color="#b3261e">Ends Sunday.<\/font>/);
  t.regex(out, /<h1 style="font-size:24px;color:#2456c7;margin:0 0 12px">Spring sale<\/h1>/);
  t.regex(
    out,
    /style="display:inline-block;padding:10px 16px;background-color:#2456c7;color:#fff;text-decoration:none;border-radius:4px"/,
  );
});

test('bounds: a body past the limit is cut and says so; 100,000 nested elements neither throw nor hang', (t) => {
  const long = `<p>${'a'.repeat(1000)}</p>`.repeat(5);
  const cut = sanitizeMailHtml(long, { ...blocked, maxChars: 2500 });
  t.true(cut.truncated);
  t.true(cut.html.length <= 2600, `${cut.html.length} characters`);
  t.false(sanitizeMailHtml(long, blocked).truncated);
  t.is(MAIL_HTML_MAX_CHARS, 2_000_000);
  const deep = `${'<div>'.repeat(100_000)}deep${'</div>'.repeat(100_000)}`;
  const out = sanitizeMailHtml(deep, blocked);
  t.regex(out.html, /deep/);
  t.true((out.html.match(/<div>/g) ?? []).length <= 256, 'nesting past 256 is flattened');
});
