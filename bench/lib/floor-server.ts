// The HTTP floors: a server answering one fixed JSON body, started as its own process like the
// real server. Whatever the real server costs above the bare floor is ours.
//
// FLOOR_MODE picks how much of the gateway's shape the floor already pays for, so that a
// benchmark can say which part of a gap the design itself sets:
//   bare      node:http alone (the default; the floor every ratio is taken against)
//   koa       Koa answering the body: the framework, no middleware
//   crossing  Koa plus one Piscina round trip per request to a worker thread that does nothing:
//             the least any request that reads the archive pays in this design
import { createServer, type RequestListener } from 'node:http';
import Koa from 'koa';
import { Piscina } from 'piscina';

const body = Buffer.from(process.env.FLOOR_BODY ?? '{"items":[]}');
const mode = process.env.FLOOR_MODE ?? 'bare';
if (!['bare', 'koa', 'crossing'].includes(mode))
  throw new Error(`FLOOR_MODE must be bare, koa or crossing, not ${mode}`);

function koaListener(crossing: Piscina | undefined): RequestListener {
  const app = new Koa();
  app.use(async (ctx) => {
    if (crossing) await crossing.run(null);
    ctx.type = 'application/json';
    ctx.body = body;
  });
  return app.callback();
}

const pool =
  mode === 'crossing'
    ? new Piscina({
        filename: new URL('./floor-worker.js', import.meta.url).href,
        minThreads: 1,
        maxThreads: 1,
        idleTimeout: Number.POSITIVE_INFINITY,
      })
    : undefined;
const listener: RequestListener =
  mode === 'bare'
    ? (_req, res) => {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length });
        res.end(body);
      }
    : koaListener(pool);

const server = createServer(listener);
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(
    `${JSON.stringify({ msg: 'listening', port: typeof address === 'object' && address ? address.port : 0 })}\n`,
  );
});
process.on('SIGTERM', () => server.close(() => void Promise.resolve(pool?.destroy()).then(() => process.exit(0))));
