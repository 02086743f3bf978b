// The API documentation pages: /apidocs (Swagger UI), /apidocs/spec/v1.json and Swagger UI's
// files, for signed-in users only (SPEC.md, “Interactive documentation (browser only)”).
import type Router from '@koa/router';
import { sendProblem } from '../problem.js';
import { type ApiDocs, DOCS_ASSETS_PATH, DOCS_PATH, SPEC_PATH } from './apidocs.js';
import { sendAsset, type SwaggerAssets } from './assets.js';
import { WebError } from './errors.js';
import { setPageHeaders } from './headers.js';
import type { PageKit } from './page-kit.js';
import type { WebState } from './session.js';

export function docsRoutes(router: Router<WebState>, kit: PageKit, docs: ApiDocs, swagger: SwaggerAssets): void {
  const { session, page, requireUser } = kit;

  router.get(DOCS_PATH, session, (ctx) => {
    if (!requireUser(ctx, DOCS_PATH)) return;
    setPageHeaders(ctx, docs.csp);
    page(ctx, 200, docs.html);
  });

  router.get(SPEC_PATH, session, (ctx) => {
    if (!ctx.state.user) {
      // A JSON client gets a status, not a redirect; API keys are never accepted here.
      sendProblem(ctx, 401, 'Sign in at /login to read the API documentation; API keys are not accepted here.');
      return;
    }
    ctx.type = 'application/json; charset=utf-8';
    ctx.body = docs.spec;
  });

  router.get(`${DOCS_ASSETS_PATH}/:version/:name`, (ctx) => {
    const asset = ctx.params.version === swagger.version ? swagger.get(ctx.params.name!) : undefined;
    if (!asset) throw new WebError(404, 'Not found', 'There is no such file.');
    sendAsset(ctx, asset);
  });
}
