// A search answered by the in-memory index on PostgreSQL imports the snapshot its index was built
// in (engine/postgres/snapshot-session.ts). When that import is refused, because the exporting
// transaction has ended or is ending, the search is answered by SQL instead: the session answers
// undefined, never an error a client would see as a 500. The server's two refusals are given
// here as PostgreSQL words them (snapmgr.c), on a connection that answers nothing else.
import test from 'ava';
import type pg from 'pg';
import { snapshotSession } from '../engine/postgres/snapshot-session.js';
import { reused, sql } from '../engine/postgres/sql.js';

const TOKEN = '00000003-0000001B-1';

/** A pool of one connection whose first message fails with `error`; it records what it was sent. */
function refusingPool(error: Error & { code: string }) {
  const sent: string[] = [];
  const released: unknown[] = [];
  const client = {
    query: async (text: string) => {
      sent.push(text);
      if (sent.length === 1) throw error;
      return { rows: [] }; // the ROLLBACK after it
    },
    release: (broken?: unknown) => released.push(broken),
  };
  return { pool: { connect: async () => client } as unknown as pg.Pool, sent, released };
}

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

for (const [code, message] of [
  ['22023', `invalid snapshot identifier: "${TOKEN}"`],
  ['55000', 'could not import the requested snapshot'],
] as const) {
  test(`an import refused with ${code} (${message.split(':')[0]}) answers undefined: the search goes to SQL`, async (t) => {
    const { pool, sent, released } = refusingPool(pgError(code, message));
    const answer = await snapshotSession(pool, TOKEN, async (send) => {
      await send({ inSnapshot: [sql`SELECT 1`], end: true });
      return 'answered';
    });
    t.is(answer, undefined);
    t.true(sent[0]!.includes(`SET TRANSACTION SNAPSHOT '${TOKEN}'`), sent[0]);
    t.is(released.length, 1, 'the connection goes back to the pool');
  });
}

test('any other error of the same statements still reaches the caller', async (t) => {
  const { pool } = refusingPool(pgError('42P01', 'relation "x" does not exist'));
  await t.throwsAsync(
    snapshotSession(pool, TOKEN, async (send) => {
      await send({ inSnapshot: [sql`SELECT 1`], end: true });
    }),
    { message: /relation "x" does not exist/ },
  );
});

/** A pool of one connection that answers each statement of a message with one empty result. */
function recordingPool() {
  const sent: string[] = [];
  const client = {
    query: async (text: string) => {
      sent.push(text);
      return text.split(';\n').map(() => ({ rows: [] }));
    },
    release: () => {},
  };
  return { pool: { connect: async () => client } as unknown as pg.Pool, sent };
}

test.serial('a reused statement is prepared at the end of its first message, then only executed', async (t) => {
  const { pool, sent } = recordingPool();
  const page = (ids: number[]) => reused(sql`SELECT ${ids}::int[] AS ids`);
  const present = (user: number) => reused(sql`SELECT ${user}::int AS user_id`);
  for (const [ids, user] of [
    [[1, 2], 7],
    [[3], 8],
  ] as const) {
    await snapshotSession(pool, TOKEN, async (send) => {
      // A round trip that leaves the snapshot's transaction open prepares nothing.
      await send({ inSnapshot: [page([...ids])], end: false });
      await send({ inSnapshot: [page([...ids])], end: true, present: [present(user)] });
    });
  }
  const statements = sent.map((m) => m.split(';\n'));
  t.false(sent[0]!.includes('PREPARE'), sent[0]);
  // First closing message: the statements as text, COMMIT, the present, then both PREPAREs.
  t.is(statements[1]![0], "SELECT ('{1,2}')::int[] AS ids");
  t.is(statements[1]![1], 'COMMIT');
  t.regex(statements[1]![3]!, /^PREPARE mag_[0-9a-f]{20} AS SELECT \$1::int\[\] AS ids$/);
  t.regex(statements[1]![4]!, /^PREPARE mag_[0-9a-f]{20} AS SELECT \$1::int AS user_id$/);
  // The next search on the same connection executes them by name, inside and after the snapshot.
  const name = (s: string) => /PREPARE (mag_\w+)/.exec(s)![1]!;
  t.true(sent[2]!.includes(`SET TRANSACTION SNAPSHOT '${TOKEN}'`));
  t.true(sent[2]!.includes(`EXECUTE ${name(statements[1]![3]!)}('{3}')`), sent[2]);
  t.true(sent[3]!.includes(`EXECUTE ${name(statements[1]![4]!)}(8)`), sent[3]);
  t.false(sent.slice(2).some((m) => m.includes('PREPARE')));
});

test.serial(
  'a prepared name the server does not know (a pooler in transaction mode) sends the statements as text from then on',
  async (t) => {
    const sent: string[] = [];
    const client = {
      query: async (text: string) => {
        sent.push(text);
        if (text.includes('EXECUTE '))
          throw Object.assign(new Error('prepared statement "x" does not exist'), { code: '26000' });
        return text.split(';\n').map((s) => ({ rows: s.startsWith('SELECT') ? [{ n: 1 }] : [] }));
      },
      release: () => {},
    };
    const pool = { connect: async () => client } as unknown as pg.Pool;
    const page = reused(sql`SELECT ${[5]}::int[] AS page_ids`);
    const search = () =>
      snapshotSession(pool, TOKEN, async (send) => {
        await send({ inSnapshot: [page], end: false });
        return send({ inSnapshot: [page], end: true });
      });
    t.deepEqual((await search())?.inSnapshot, [[{ n: 1 }]]); // prepares at its end
    t.true(sent.some((m) => m.includes('PREPARE')));
    sent.length = 0;
    // The next search's EXECUTE is refused: rolled back, sent again as text with the snapshot
    // imported anew, and nothing is prepared or executed after that.
    t.deepEqual((await search())?.inSnapshot, [[{ n: 1 }]]);
    t.true(sent[0]!.includes('EXECUTE '));
    t.is(sent[1], 'ROLLBACK');
    t.true(
      sent[2]!.includes(`SET TRANSACTION SNAPSHOT '${TOKEN}'`) && sent[2]!.includes("SELECT ('{5}')::int[]"),
      sent[2],
    );
    t.false(sent.slice(2).some((m) => m.includes('EXECUTE') || m.includes('PREPARE')));
  },
);
