// The server's own first search (gateway/warm-up.ts): sent once the query threads have warmed
// up, answered like any search, recorded nowhere, and its token good for that one request.
import test from 'ava';
import { WarmUpTokens } from '../gateway/warm-up.js';
import { openArchive } from '../engine/sqlite/open.js';
import { createFixture } from './helpers/fixture.js';
import { startApi } from './helpers/api.js';
import { addMessages } from './helpers/index-archive.js';
import { waitFor } from './helpers/redis.js';
import { startServerProcess } from './helpers/server-process.js';

const WARM_UP_LINE = /^gateway warm-up: GET \/api\/v1\/emails\?q=\S+ \((gzip|br)\) answered (\d+) in [\d.]+ ms$/;

test('once its query thread has warmed up, the server searches itself once per encoding, and no access log records it', async (t) => {
  const f = createFixture();
  t.teardown(f.cleanup);
  // Enough mail for the index to keep words: the engine warms up with the commonest.
  const db = openArchive(f.dbPath);
  t.teardown(() => db.close());
  addMessages(db, Object.values(f.accounts), 600, 1);
  const server = await startServerProcess(f);
  t.teardown(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
  });
  const messages = () => server.lines.map((l) => String(l.msg));
  await waitFor('the two warm-up requests', () => messages().filter((l) => WARM_UP_LINE.test(l)).length === 2, 60_000);
  const lines = messages();
  t.deepEqual(
    lines.flatMap((l) => WARM_UP_LINE.exec(l)?.slice(1) ?? []),
    ['gzip', '200', 'br', '200'],
    lines.join('\n'),
  );
  // After the engine's own warm-up, which it waits for.
  const engine = lines.findIndex((l) => l.startsWith('search index: warm-up search of'));
  t.true(engine >= 0 && engine < lines.findIndex((l) => WARM_UP_LINE.test(l)), lines.join('\n'));
  // Its token is never written down.
  t.false(
    server.lines.some((l) => /warm-up\.[A-Za-z0-9_-]{20}/.test(JSON.stringify(l))),
    'no log line holds a token',
  );

  // A user's search is recorded; the two before it are not.
  const res = await fetch(`${server.url}/api/v1/emails?q=budget`, {
    headers: { Authorization: `Bearer ${f.keys.admin}` },
  });
  t.is(res.status, 200);
  const rows = () => db.prepare('SELECT user_id AS userId, type FROM access_log').all();
  await waitFor("the user's search in the access log", () => rows().length > 0, 30_000);
  t.deepEqual(rows(), [{ userId: f.users.admin, type: 'Search' }]);
});

test('a warm-up token is taken once; another made up the same way is not one', (t) => {
  const tokens = new WarmUpTokens();
  const token = tokens.mint();
  t.regex(token, /^warm-up\.[A-Za-z0-9_-]{43}$/);
  t.false(tokens.take(`warm-up.${'A'.repeat(43)}`));
  t.false(tokens.take(token.slice(0, -1)));
  t.true(tokens.take(token));
  t.false(tokens.take(token), 'a second use is refused');
  const unused = tokens.mint();
  tokens.closeAll();
  t.false(tokens.take(unused), 'closed when the warm-up ends, taken or not');
});

test('a request that presents a warm-up-shaped token of its own is refused as a malformed key', async (t) => {
  const { request, close } = await startApi();
  t.teardown(close);
  const res = await request.get('/api/v1/emails?q=budget').set('Authorization', `Bearer warm-up.${'A'.repeat(43)}`);
  t.is(res.status, 401);
  t.regex(res.type, /^application\/problem\+json/);
  t.regex((res.body as { detail: string }).detail, /malformed/);
});
