// Validators for answers that never change: an archived message and an attachment's bytes are
// written once (docs/openapi.md, "Caching and conditional requests"). The ETag is strong, made
// from the content: the JSON of a message's detail, the stored content's identity of an
// attachment. A conditional request is answered only after the key and visibility checks of its
// route, so a 304 tells no more than a 200 would.
//
// A strong ETag names exact bytes, and a compressed answer is other bytes: it gets the tag with
// the coding appended ("…-gzip", "…-br", as Apache does), and If-None-Match accepts any coding of
// the same content.
import type { Context, Middleware } from 'koa';

export { etagOf } from '../../shared/etag.js';

const CODED = /-(?:gzip|br|deflate)"$/;

/** The tag as If-None-Match may name it: weak or strong, of any coding. */
const sameContent = (candidate: string, etag: string) => candidate.replace(/^W\//, '').replace(CODED, '"') === etag;

/**
 * Sets the ETag and, when the request's If-None-Match names it, answers 304 with no body. True
 * when the 304 was given. (RFC 9110 section 13.1.2: If-None-Match compares weakly.)
 */
export function answerNotModified(ctx: Context, etag: string): boolean {
  ctx.set('ETag', etag);
  const ifNoneMatch = ctx.get('If-None-Match').trim();
  if (!ifNoneMatch) return false;
  const matches = ifNoneMatch === '*' || ifNoneMatch.split(',').some((t) => sameContent(t.trim(), etag));
  if (!matches) return false;
  ctx.status = 304;
  ctx.body = null;
  return true;
}

/** Outside the compressor: an answer it encoded gets its coding in the ETag. */
export const etagPerCoding: Middleware = async (ctx, next) => {
  await next();
  const coding = ctx.response.get('Content-Encoding');
  const etag = ctx.response.get('ETag');
  if (coding && etag && !CODED.test(etag)) ctx.set('ETag', `${etag.slice(0, -1)}-${coding}"`);
};
