// The web pages' own CSS and JS, and the Swagger UI files from swagger-ui-dist: all served from
// this port, so no page needs another host. tsc does not copy gateway/web/assets/ into dist/,
// so the files are looked up next to this module first (running from source, or a build that
// copied them) and then in the source tree (dist/gateway/web/ → gateway/web/assets/).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Context } from 'koa';

export interface Asset {
  body: Buffer;
  type: string;
}

const TYPES: Record<string, string> = {
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

function typeOf(name: string): string {
  return TYPES[name.slice(name.lastIndexOf('.'))] ?? 'application/octet-stream';
}

export function webAssetDir(): string {
  const candidates = [
    fileURLToPath(new URL('./assets/', import.meta.url)),
    fileURLToPath(new URL('../../../gateway/web/assets/', import.meta.url)),
  ];
  const found = candidates.find((dir) => existsSync(join(dir, 'app.css')));
  if (!found) throw new Error(`Web assets not found; looked in ${candidates.join(' and ')}.`);
  return found;
}

/** The page assets, read once, each with a URL that changes when its content does. */
export class WebAssets {
  readonly #files = new Map<string, Asset>();
  readonly urls: { css: string; js: string; docsCss: string; icon: string };

  constructor(dir = webAssetDir()) {
    const url = (name: string) => {
      const body = readFileSync(join(dir, name));
      this.#files.set(name, { body, type: typeOf(name) });
      return `/assets/${name}?v=${createHash('sha256').update(body).digest('hex').slice(0, 12)}`;
    };
    this.urls = { css: url('app.css'), js: url('app.js'), docsCss: url('docs.css'), icon: url('favicon.svg') };
  }

  get(name: string): Asset | undefined {
    return this.#files.get(name);
  }
}

// URL name → file in swagger-ui-dist. koa2-swagger-ui's page asks for swagger-ui.min.css,
// which swagger-ui-dist ships (already minified) as swagger-ui.css.
const SWAGGER_FILES: Record<string, string> = {
  'swagger-ui.min.css': 'swagger-ui.css',
  'swagger-ui-bundle.js': 'swagger-ui-bundle.js',
  'swagger-ui-standalone-preset.js': 'swagger-ui-standalone-preset.js',
};

/** swagger-ui-dist's files, read on first use; its version is part of their URLs. */
export class SwaggerAssets {
  readonly dir: string;
  readonly version: string;
  readonly #files = new Map<string, Asset>();

  constructor() {
    const require = createRequire(import.meta.url);
    const pkgPath = require.resolve('swagger-ui-dist/package.json');
    this.dir = dirname(pkgPath);
    this.version = (JSON.parse(readFileSync(pkgPath, 'utf8')) as { version: string }).version;
  }

  get(name: string): Asset | undefined {
    const file = Object.hasOwn(SWAGGER_FILES, name) ? SWAGGER_FILES[name]! : undefined;
    if (!file) return undefined;
    let asset = this.#files.get(name);
    if (!asset) {
      asset = { body: readFileSync(join(this.dir, file)), type: typeOf(file) };
      this.#files.set(name, asset);
    }
    return asset;
  }
}

/** Answers with an asset whose URL is versioned, so browsers may keep it for long. */
export function sendAsset(ctx: Context, asset: Asset): void {
  ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
  ctx.type = asset.type;
  ctx.body = asset.body;
}
