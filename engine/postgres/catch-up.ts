// The step both side tables of a PostgreSQL archive (the search index, search-index.ts, and the
// conversations, threads.ts) take to catch up with ArchivedEmails, which Mail Archiver writes
// without telling us: the next messages after a watermark, and which of them the side table lacks.
import { T } from './columns.js';
import { sql, type Sql } from './sql.js';
import type { Query } from './context.js';

/**
 * Up to `limit` message ids after `after` in id order, and those of them without a row in
 * `table` (keyed by email_id). Three index-driven steps rather than one anti-join, which the
 * planner may turn into a scan of the whole side table per batch.
 */
export async function nextBatch(
  query: Query,
  table: Sql,
  after: number,
  limit: number,
): Promise<{ ids: number[]; missing: number[] }> {
  const ids = (
    await query<{ id: number }>(
      sql`SELECT "Id" AS id FROM ${T.emails} WHERE "Id" > ${after} ORDER BY "Id" LIMIT ${limit}`,
    )
  ).map((r) => r.id);
  const present = new Set(
    (await query<{ id: number }>(sql`SELECT email_id AS id FROM ${table} WHERE email_id = ANY(${ids}::int[])`)).map(
      (r) => r.id,
    ),
  );
  return { ids, missing: ids.filter((id) => !present.has(id)) };
}
