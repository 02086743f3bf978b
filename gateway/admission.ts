// Admission: the rate limit and the key check as one step, so that only a genuine key can spend
// a key's budget.
//
// SPEC.md, “Limits” partitions each front end's budget by key prefix, else by client IP. The
// prefix is not a secret (the web page and the logs show it), so charging a request to the
// prefix its token merely claims would let anyone who has seen a prefix spend that user's
// budget with made-up keys and lock them out. Hence:
//
//   no bearer token   → the policy's budget of the client IP (the spec's fallback); a route
//                       that needs a key then answers 401
//   a bearer token    → the key is checked:
//       it fails      → one point of the client IP's failed-authentication budget, then 401
//       it is genuine → one point of the policy's budget of the key's prefix (429 once spent)
//   Once the IP's failed-authentication budget is spent (docs/security.md, "Mail shaped by an attacker", item 6: everyone behind one
//   NAT or proxy shares it), a token that cannot be a key is refused at once with 429 (no engine
//   work), and a well-formed one is looked up on its own, before the route, with nothing else:
//   a genuine key passes as above, anything else is the 429. A flood of junk thus costs at most
//   one point read per request, and one broken client cannot lock out its neighbours' keys.
//
// The failed-authentication budget (Server:AuthFailuresPerIpPerMinute) is one per client IP for
// both front ends. Junk tokens therefore add no partitions to the policies' stores either.
//
// When the key is looked up (docs/decisions.md, ADR 7): with the request's first job, in the same
// crossing to a worker thread (KeyCheck, auth.ts), and the job's result is used only once the
// outcome above is settled. Two cases check the key on its own instead, before the answer:
//   - the prefix's budget is already spent: checked before the route runs, so the 429 goes to
//     the genuine key only and a made-up key with that prefix still gets its 401;
//   - no job carried the check (the route answered 400 or 404 first, or the engine refused the
//     job unstarted with a 503): checked after the route, and a failing key's 401 replaces the
//     route's answer, as if the key had been checked first.
// Between the look at the budget and the charge, the requests of one prefix already in flight
// may each run their job: a budget can be overrun by at most that many jobs, whose answers are
// still the 429.
import type { Middleware } from 'koa';
import type { EnginePool } from '../engine/index.js';
import {
  bearerToken,
  KeyCheck,
  keyHashOf,
  malformedKey,
  refusedKey,
  wrongResource,
  type AuthState,
  type Unauthorized,
} from './auth.js';
import type { AuthFailureLog } from './auth-failure-log.js';
import { addressPartition } from './address.js';
import type { RateLimiter } from './rate-limit.js';
import type { WarmUpTokens } from './warm-up.js';

export function admission(
  policy: RateLimiter,
  authFailures: RateLimiter,
  engine: EnginePool,
  failureLog?: AuthFailureLog,
  warmUps?: WarmUpTokens,
): Middleware<AuthState> {
  const front = policy.policy === 'Api' ? 'api' : 'mcp';
  return async (ctx, next) => {
    const token = bearerToken(ctx.get('Authorization') || undefined);
    const ip = addressPartition(ctx.ip);
    if (!token) {
      ctx.set(policy.headers(await policy.consume(ip)));
      return next();
    }
    // The gateway's own warm-up request (warm-up.ts): its one-time token is not a key.
    if (warmUps?.take(token)) {
      ctx.state.key = KeyCheck.warmUp(engine);
      return next();
    }
    const keyHash = keyHashOf(token);
    const failuresSpent = await authFailures.spent(ip);
    if (failuresSpent && !keyHash) await authFailures.check(ip); // the 429, without a lookup
    const refuse = async (problem: Unauthorized): Promise<never> => {
      if (failuresSpent) await authFailures.check(ip); // still spent: the 429
      failureLog?.record(ctx.ip, problem.reason, token, front);
      ctx.set(authFailures.headers(await authFailures.consume(ip)));
      throw problem;
    };
    if (!keyHash) return refuse(malformedKey());
    const partition = `key:${token.slice(0, 11)}`;
    const key = new KeyCheck(engine, keyHash, async (auth) => {
      if (!auth.ok) return refuse(refusedKey(auth.reason, auth.oauth));
      // An OAuth access token is good for the resource it was issued for, /mcp, and nothing else.
      if (auth.principal.oauth && front !== 'mcp') return refuse(wrongResource());
      ctx.set(policy.headers(await policy.consume(partition)));
      return auth.principal;
    });
    ctx.state.key = key;
    if (failuresSpent || (await policy.spent(partition))) await key.check();
    try {
      await next();
    } finally {
      // Throws only for a key that fails (401) or a spent budget (429): that answer then
      // replaces the route's, whatever it was.
      if (key.unchecked) await key.check();
    }
  };
}
