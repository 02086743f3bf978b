// The HTTP floor: a bare node:http server answering one fixed JSON body, started as its own
// process like the real server. Whatever the real server costs above this is ours.
import { createServer } from 'node:http';

const body = Buffer.from(process.env.FLOOR_BODY ?? '{"items":[]}');
const server = createServer((_req, res) => {
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length });
  res.end(body);
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(
    `${JSON.stringify({ msg: 'listening', port: typeof address === 'object' && address ? address.port : 0 })}\n`,
  );
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
