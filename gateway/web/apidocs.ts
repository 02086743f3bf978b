// /apidocs: Swagger UI (koa2-swagger-ui's page) over /apidocs/spec/v1.json, for signed-in
// users only. koa2-swagger-ui's template loads its files from a CDN and Google Fonts and
// starts Swagger UI from an inline script; here its files come from swagger-ui-dist on this
// port, the font link is dropped, and the inline script and style are allowed by their hashes
// in the page's CSP, not by 'unsafe-inline'. The page is rendered once, at start-up.
import { koaSwagger } from 'koa2-swagger-ui';
import type { Settings } from '../../shared/config.js';
import { buildOpenApiDocument } from '../api/openapi.js';
import type { SwaggerAssets, WebAssets } from './assets.js';
import { cspHash, PAGE_CSP } from './headers.js';

export const DOCS_PATH = '/apidocs';
export const SPEC_PATH = '/apidocs/spec/v1.json';
export const DOCS_ASSETS_PATH = '/apidocs/assets';

// The way back to the other pages. Static, as the page is rendered once: signing out is a
// form with a per-session CSRF token, so the link goes to /logout, which shows that form.
const NAV_BAR = `<header class="mag-top">
  <a class="mag-brand" href="/keys">Mail Archive</a>
  <nav aria-label="Main"><a href="/keys">API Keys</a><a href="/apidocs" aria-current="page">API docs</a></nav>
  <a class="mag-signout" href="/logout">Sign out</a>
</header>`;

export interface ApiDocs {
  html: string;
  csp: string;
  /** The OpenAPI v1 document, serialised once. */
  spec: string;
}

export function buildApiDocs(settings: Settings, swagger: SwaggerAssets, assets: WebAssets): ApiDocs {
  const middleware = koaSwagger({
    title: 'Mail Archive API v1',
    routePrefix: DOCS_PATH,
    swaggerCdnUrl: DOCS_ASSETS_PATH,
    swaggerVersion: swagger.version,
    hideTopbar: true,
    favicon: assets.urls.icon,
    // The template's hidden SVG sprite is positioned by a style attribute, which the CSP
    // blocks; this rule (inside the hashed <style>) does the same job.
    customCSS: 'body > svg:first-of-type { position: absolute; width: 0; height: 0; }',
    swaggerOptions: {
      url: SPEC_PATH,
      // The default validator badge calls an outside host with the spec URL.
      validatorUrl: null,
      docExpansion: 'list',
      persistAuthorization: false,
    },
  });
  const fake = { path: DOCS_PATH, type: '', body: '' as unknown };
  void middleware(fake as never, async () => undefined);
  if (typeof fake.body !== 'string') throw new Error('koa2-swagger-ui rendered no page');
  const html = fake.body
    // Drop every link to another host (Google Fonts); Swagger UI's CSS falls back to system fonts.
    .replace(/<link\b[^>]*href="https?:\/\/[^"]*"[^>]*>\s*/gi, '')
    // Style attributes cannot be allowed by hash; customCSS above replaces the template's one.
    .replace(/\sstyle="[^"]*"/g, '')
    // The template has no viewport meta, so a phone drew it 980 px wide and scaled it down.
    .replace(
      '</head>',
      `  <meta name="viewport" content="width=device-width, initial-scale=1">\n  <link rel="stylesheet" href="${assets.urls.docsCss}">\n</head>`,
    )
    .replace(/<body>/, `<body>\n${NAV_BAR}`);
  if (/\b(?:src|href)="https?:/i.test(html)) throw new Error('the API docs page still refers to another host');
  const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => cspHash(m[1]!));
  const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => cspHash(m[1]!));
  const csp = PAGE_CSP.replace("script-src 'self'", `script-src 'self' ${scripts.join(' ')}`).replace(
    "style-src 'self'",
    `style-src 'self' ${styles.join(' ')}`,
  );
  return { html, csp, spec: JSON.stringify(buildOpenApiDocument(settings)) };
}
