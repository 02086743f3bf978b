// A search answered by the in-memory index on PostgreSQL imports the snapshot its index was built
// in (engine/postgres/snapshot-session.ts). When that import is refused, because the exporting
// transaction has ended or is ending, the search is answered by SQL instead: the session answers
// undefined, never an error a client would see as a 500. The server's two refusals are given
// here as PostgreSQL words them (snapmgr.c), on a connection that answers nothing else.
import test from 'ava';
import type pg from 'pg';
import { snapshotSession } from '../engine/postgres/snapshot-session.js';
import { sql } from '../engine/postgres/sql.js';

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
