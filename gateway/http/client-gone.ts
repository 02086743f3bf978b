// Stops engine work for a client that has gone away: every job a request submits carries the
// request's AbortSignal (engine/pool/job-budget.ts), which fires when the connection closes before the
// answer was complete. A waiting job leaves its lane's queue, a running one is stopped; a search
// abandoned by its client no longer holds a thread that others are waiting for.
import type { Middleware } from 'koa';
import { withRequestSignal } from '../../engine/index.js';

export const cancelWhenClientLeaves: Middleware = (ctx, next) => {
  const controller = new AbortController();
  // 'close' also follows a complete answer; only an unfinished one means the client left.
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) controller.abort();
  });
  return withRequestSignal(controller.signal, next);
};
