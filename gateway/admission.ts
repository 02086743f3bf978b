// Admission: the rate limit and the key check as one step, so that only a genuine key can spend
// a key's budget.
//
// SPEC.md section 8 partitions each front end's budget by key prefix, else by client IP. The
// prefix is not a secret (the web page and the logs show it), so charging a request to the
// prefix its token merely claims would let anyone who has seen a prefix spend that user's
// budget with made-up keys and lock them out. Hence:
//
//   no bearer token   → the policy's budget of the client IP (the spec's fallback); a route
//                       that needs a key then answers 401
//   a bearer token    → the client IP's failed-authentication budget is checked first (429 once
//                       spent, before any key lookup, so a flood of guesses costs no engine work);
//                       then the key is checked:
//       it fails      → one point of that IP budget, then 401
//       it is genuine → one point of the policy's budget of the key's prefix (429 once spent)
//
// The failed-authentication budget (Server:AuthFailuresPerIpPerMinute) is one per client IP for
// both front ends. Junk tokens therefore add no partitions to the policies' stores either.
import type { Middleware } from 'koa';
import type { EnginePool } from '../engine/pool.js';
import { bearerToken, verifyKey, type AuthState } from './auth.js';
import { Problem } from './problem.js';
import type { RateLimiter } from './rate-limit.js';

export function admission(policy: RateLimiter, authFailures: RateLimiter, engine: EnginePool): Middleware<AuthState> {
  return async (ctx, next) => {
    const token = bearerToken(ctx.get('Authorization') || undefined);
    if (!token) {
      ctx.set(policy.headers(await policy.consume(`ip:${ctx.ip}`)));
      return next();
    }
    const ip = `ip:${ctx.ip}`;
    await authFailures.check(ip);
    try {
      ctx.state.principal = await verifyKey(engine, token);
    } catch (err) {
      if (err instanceof Problem && err.status === 401) ctx.set(authFailures.headers(await authFailures.consume(ip)));
      throw err;
    }
    ctx.set(policy.headers(await policy.consume(`key:${token.slice(0, 11)}`)));
    return next();
  };
}
