// Who is calling, as both front ends describe it to the archive service.
import type { Context } from 'koa';
import type { Principal } from '../shared/jobs.js';
import type { Caller } from './archive-service.js';

/** ctx.ip honours X-Forwarded-For only when Server:TrustProxy set app.proxy. */
export function callerOf(ctx: Context, principal: Principal, source: Caller['source']): Caller {
  return { principal, clientIp: ctx.ip, source };
}
