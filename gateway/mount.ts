// Runs a middleware only for one path prefix (the prefix itself or anything below it).
import type { Middleware } from 'koa';
import compose from 'koa-compose';

export function mount(prefix: string, ...middleware: Middleware[]): Middleware {
  const run = compose(middleware);
  return (ctx, next) => (ctx.path === prefix || ctx.path.startsWith(`${prefix}/`) ? run(ctx, next) : next());
}
