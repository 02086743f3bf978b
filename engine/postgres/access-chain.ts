// The access log's hash chain on PostgreSQL (engine/rules/access-chain.ts; docs/evidence.md, "An
// access log nobody can quietly edit"). Mail Archiver's AccessLogs is never altered, so the chain
// lives in our access_log_details (migration 12): each of our entries' hash covers its AccessLogs
// row and its details row as the server stores them, made text by the server itself (one
// expression for writing and verifying, so a timestamp's microseconds or a jsonb's key order read
// the same both times). Mail Archiver's own entries (sign-ins, restores) are not ours to chain.
import { CHAIN_GENESIS, chainHash, ChainVerifier, type ChainReport } from '../rules/access-chain.js';
import type { Query } from './context.js';
import { sql, type Sql } from './sql.js';

/** One advisory lock for every writer of the chain, whatever process it runs in. */
const CHAIN_LOCK = sql`SELECT pg_advisory_xact_lock(hashtext('mail_archive_gateway.access_log_chain'))`;

/** Every stored field of an entry, as one JSON text the server writes. */
const fieldsOf = (table: Sql) => sql`SELECT d.access_log_id AS id, d.hash,
         json_build_array(l."Id", l."Username", l."Type", to_char(l."Timestamp", 'YYYY-MM-DD"T"HH24:MI:SS.US'),
                          l."EmailId", l."EmailSubject", l."EmailFrom", l."SearchParameters", l."MailAccountId",
                          d.user_id, d.account_id, d.key_prefix, d.client_ip, d.source, d.search_params)::text AS fields
    FROM mail_archive_gateway.access_log_details d LEFT JOIN ${table} l ON l."Id" = d.access_log_id`;

/**
 * Takes the chain's lock; the entries' ids must be drawn after it, so that ids and the chain's
 * order agree whichever of several writers commits first.
 */
export async function lockChain(query: Query): Promise<void> {
  await query(CHAIN_LOCK);
}

/** Hashes the entries just written (their ids, ascending) after the chain's head, in the same transaction. */
export async function chainEntries(query: Query, table: Sql, ids: readonly number[]): Promise<void> {
  const [head] = await query<{ hash: string }>(
    sql`SELECT hash FROM mail_archive_gateway.access_log_details
         WHERE hash IS NOT NULL AND access_log_id < ${Math.min(...ids)}::int ORDER BY access_log_id DESC LIMIT 1`,
  );
  const rows = await query<{ id: number; fields: string }>(
    sql`${fieldsOf(table)} WHERE d.access_log_id = ANY(${ids}::int[]) ORDER BY d.access_log_id`,
  );
  let previous = head?.hash ?? CHAIN_GENESIS;
  const hashes = rows.map((r) => (previous = chainHash(previous, r.fields)));
  await query(
    sql`UPDATE mail_archive_gateway.access_log_details d SET hash = v.hash
          FROM unnest(${rows.map((r) => r.id)}::int[], ${hashes}::text[]) AS v(id, hash)
         WHERE d.access_log_id = v.id`,
  );
}

/** Reads the chain in pages by id: any length in bounded memory. */
export async function verifyChain(query: Query, table: Sql, head?: string, pageSize = 10_000): Promise<ChainReport> {
  const verifier = new ChainVerifier(head);
  for (let after = -1; ;) {
    const rows = await query<{ id: number; hash: string | null; fields: string }>(
      sql`${fieldsOf(table)} WHERE d.access_log_id > ${after}::int ORDER BY d.access_log_id LIMIT ${pageSize}::int`,
    );
    for (const r of rows) if (!verifier.feed(r)) return verifier.report();
    if (rows.length < pageSize) return verifier.report();
    after = rows.at(-1)!.id;
  }
}
