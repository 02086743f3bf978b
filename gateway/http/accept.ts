// Accept negotiation for /api/v1: every answer is JSON (problem+json for errors), except an
// attachment's bytes (its own stored type: any Accept is served) and its text (text/plain). A
// request that accepts none of what a route can send gets 406 problem+json: a problem is the one
// thing every client is sent when something goes wrong, whatever it asked for (RFC 9110 allows
// disregarding Accept for an error), and this one says what the route answers with.
import type { Middleware } from 'koa';
import { Problem } from '../problem.js';

const JSON_TYPES = ['application/json', 'application/problem+json'];

/** What each kind of route may answer with; null: anything (the stored bytes). */
function producedBy(path: string): string[] | null {
  if (/^\/api\/v1\/emails\/[^/]+\/attachments\/[^/]+$/.test(path)) return null;
  if (path === '/api/v1/emails/export') return ['application/zip', ...JSON_TYPES];
  if (/^\/api\/v1\/emails\/[^/]+\/raw$/.test(path)) return ['message/rfc822', ...JSON_TYPES];
  if (/^\/api\/v1\/emails\/[^/]+\/attachments\/[^/]+\/text$/.test(path)) return ['text/plain', ...JSON_TYPES];
  return JSON_TYPES;
}

export const acceptable: Middleware = async (ctx, next) => {
  const types = ctx.get('Accept') ? producedBy(ctx.path) : null;
  if (types && ctx.accepts(types) === false) {
    throw new Problem(406, `This resource is sent as ${types.join(' or ')}; the Accept header allows none of them.`);
  }
  await next();
};
