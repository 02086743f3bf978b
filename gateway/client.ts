// Who is calling, as both front ends describe it to the archive service.
import type { Context } from 'koa';
import { keyOf, type AuthState } from './auth.js';
import type { Caller } from './archive-service.js';

/**
 * The request's key (the 401 when it brought none) and address. ctx.ip honours X-Forwarded-For
 * only when Server:TrustProxy set app.proxy.
 */
export function callerOf(ctx: Context & { state: AuthState }, source: Caller['source']): Caller {
  return { key: keyOf(ctx), clientIp: ctx.ip, source };
}
