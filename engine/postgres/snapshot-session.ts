// A search answered by the in-memory index (ADR 22) reads the database in the exported snapshot
// the index was built from, and checks the present (new mail? whom may the viewer see now?).
// Sent one statement at a time that was three to four round trips to the server per search;
// here each step of the search is one message of the simple query protocol, which carries
// several statements: the snapshot's transaction is opened in front of the first statement
// that needs it, committed behind the last, and the present is read after that COMMIT (before
// it, PostgreSQL would fold the statement into the snapshot's transaction, where
// SET TRANSACTION SNAPSHOT must come first).
//
// The statements a search sends on nearly every round trip (reused() in sql.ts: the page, the
// present, the side index's leaves) are prepared on each connection, by a PREPARE at the end of
// the first message that sends them once its transaction is over, and executed by name after
// that: parsing and planning them was half or more of what they cost the server (measured at 100,000
// messages, one connection: 0.13 ms of server CPU for the present as text, 0.025 ms prepared;
// 0.23 ms and 0.12 ms for a page of 20). A PREPARE cannot come before the snapshot's BEGIN in
// the same message (PostgreSQL then refuses SET TRANSACTION ISOLATION LEVEL), hence at the end.
import type pg from 'pg';
import { ArchiveUnavailable } from '../../shared/errors.js';
import { checkout, isUnavailable } from './connect.js';
import type { Row, SnapshotSend } from './context.js';
import type { Sql } from './sql.js';
import { inline, literal } from './sql-inline.js';
import { missingPrepared, preparedName, preparing, stopPreparing } from './prepared.js';

/** Statements prepared on one connection: text with $n → name. Bounded: texts come from code. */
const MAX_PREPARED = 64;
const preparedOn = new WeakMap<pg.PoolClient, Map<string, string>>();

/** What one statement is sent as on `client`, and the PREPARE that would let it be executed next time. */
function render(client: pg.PoolClient, q: Sql): { text: string; prepare?: { text: string; name: string } } {
  if (!q.reuse || !preparing()) return { text: inline(q) };
  const { text } = q.toQuery();
  const prepared = preparedOn.get(client);
  const name = prepared?.get(text);
  if (name !== undefined)
    return { text: q.values.length ? `EXECUTE ${name}(${q.values.map(literal).join(', ')})` : `EXECUTE ${name}` };
  if ((prepared?.size ?? 0) >= MAX_PREPARED) return { text: inline(q) };
  return { text: inline(q), prepare: { text, name: preparedName(text) } };
}

/** An exported snapshot's identifier, as pg_export_snapshot() writes it. */
export const SNAPSHOT_TOKEN = /^[0-9A-F]+-[0-9A-F]+(-[0-9A-F]+)?$/i;

/**
 * The snapshot cannot be imported: the search goes to SQL. Its exporting transaction has ended
 * (22023, "invalid snapshot identifier": its file is gone), or is ending as the import runs
 * (55000, "could not import the requested snapshot": the file is still there but its process or
 * transaction is not), as when the builder moves to a newer snapshot or the server it exported
 * on shuts down.
 */
const refusedImport = (err: unknown) => {
  const code = (err as { code?: unknown } | null)?.code;
  return (code === '22023' || code === '55000') && /snapshot/i.test(String((err as Error).message));
};

class Refused extends Error {}

/**
 * Runs `work` on one primary connection with `send` for its round trips; undefined when the
 * snapshot `token` can no longer be imported. Every statement in the snapshot reads by id or
 * through the GIN index, so a sequential scan of the side index is never the better plan
 * (search.ts says why for the count).
 */
export async function snapshotSession<T>(
  pool: pg.Pool,
  token: string,
  work: (send: SnapshotSend) => Promise<T>,
): Promise<T | undefined> {
  if (!SNAPSHOT_TOKEN.test(token)) return undefined;
  const client = await checkout(pool);
  let open = false;
  let broken = false;
  const once: SnapshotSend = async ({ inSnapshot, end, present = [] }) => {
    if (present.length > 0 && !end) throw new Error('the present is read only after the snapshot ends');
    const opening = !open && inSnapshot.length > 0;
    const head = opening
      ? [
          'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
          `SET TRANSACTION SNAPSHOT '${token}'`,
          'SET LOCAL enable_seqscan = off',
        ]
      : [];
    const closing = (open || opening) && end;
    const rendered = [...inSnapshot, ...present].map((q) => render(client, q));
    // PREPAREs go last, and only when no transaction stays open after this message.
    const toPrepare = (open || opening) && !closing ? [] : rendered.filter((r) => r.prepare !== undefined);
    const texts = rendered.map((r) => r.text);
    const statements = [
      ...head,
      ...texts.slice(0, inSnapshot.length),
      ...(closing ? ['COMMIT'] : []),
      ...texts.slice(inSnapshot.length),
      ...new Set(toPrepare.map(({ prepare }) => `PREPARE ${prepare!.name} AS ${prepare!.text}`)),
    ];
    if (statements.length === 0) return { inSnapshot: [], present: [] };
    let results: pg.QueryResult[];
    // Open from here until a COMMIT is known to have run: an error leaves it to be rolled back.
    if (opening) open = true;
    try {
      const out = (await client.query(statements.join(';\n'))) as pg.QueryResult | pg.QueryResult[];
      results = Array.isArray(out) ? out : [out];
    } catch (err) {
      if (opening && refusedImport(err)) throw new Refused();
      throw err;
    }
    if (closing) open = false;
    if (toPrepare.length > 0) {
      let prepared = preparedOn.get(client);
      if (!prepared) preparedOn.set(client, (prepared = new Map()));
      for (const { prepare } of toPrepare) prepared.set(prepare!.text, prepare!.name);
    }
    const rows = results.map((r) => r.rows as Row[]);
    const from = head.length;
    const after = from + inSnapshot.length + (closing ? 1 : 0);
    return {
      inSnapshot: rows.slice(from, from + inSnapshot.length),
      present: rows.slice(after, after + present.length),
    };
  };
  const send: SnapshotSend = async (step) => {
    try {
      return await once(step);
    } catch (err) {
      if (!missingPrepared(err)) throw err;
      // Sent again as text, in a transaction of its own that imports the same snapshot: what
      // earlier round trips of this search read is still what this one reads.
      stopPreparing();
      preparedOn.delete(client);
      if (open) await client.query('ROLLBACK');
      open = false;
      return once(step);
    }
  };
  try {
    const result = await work(send);
    if (open) await client.query('COMMIT');
    return result;
  } catch (err) {
    broken = isUnavailable(err);
    if (!broken && open) await client.query('ROLLBACK').catch(() => (broken = true));
    if (err instanceof Refused) return undefined;
    if (broken) throw new ArchiveUnavailable();
    throw err;
  } finally {
    client.release(broken);
  }
}
