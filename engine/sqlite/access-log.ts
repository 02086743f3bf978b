// The access log (SPEC.md, “Access log entry”): who searched, opened or downloaded what, and when.
import type { AccessType } from '../../shared/dto.js';
import type { AccessLogEntry } from '../../shared/jobs.js';
import type { Db } from './open.js';
import type { AccessLogRow } from '../store-contract.js';
import { prepared } from './statements.js';
import { iso } from '../rules/time.js';
import { CHAIN_GENESIS, chainHash, ChainVerifier, type ChainField, type ChainReport } from '../rules/access-chain.js';

/** An entry's fields as stored, in the order the chain hashes them. */
const CHAINED = 'id, user_id, type, at, key_prefix, client_ip, email_id, account_id, search_params, source';

export function writeAccessLog(db: Db, entries: readonly AccessLogEntry[]): number {
  if (entries.length === 0) return 0;
  const insert = prepared(db, `INSERT INTO access_log (${CHAINED}, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const lastId = prepared(db, 'SELECT max(id) FROM access_log').pluck();
  // The newest chained entry: an entry without a hash after it (added behind the service's back)
  // is verification's to report, not a reason to start the chain again.
  const lastHash = prepared(db, 'SELECT hash FROM access_log WHERE hash IS NOT NULL ORDER BY id DESC LIMIT 1').pluck();
  // IMMEDIATE: the write lock before the head is read, so two threads (or processes) appending at
  // once chain one after the other instead of both after the same head.
  db.transaction(() => {
    let id = (lastId.get() as number | null) ?? 0;
    let previous = (lastHash.get() as string | undefined) ?? CHAIN_GENESIS;
    for (const e of entries) {
      const fields = [
        ++id,
        e.userId,
        e.type,
        e.at,
        e.keyPrefix,
        e.clientIp,
        e.emailId ?? null,
        e.accountId ?? null,
        e.searchParams ? JSON.stringify(e.searchParams) : null,
        e.source,
      ];
      previous = chainHash(previous, fields);
      insert.run(...fields, previous);
    }
  }).immediate();
  return entries.length;
}

/** Walks the whole log in id order (docs/evidence.md, "Verifying the access log"). */
export function verifyAccessLog(db: Db, head?: string): ChainReport {
  const verifier = new ChainVerifier(head);
  const rows = db.prepare(`SELECT ${CHAINED}, hash FROM access_log ORDER BY id`).raw().iterate() as IterableIterator<
    ChainField[]
  >;
  for (const row of rows) {
    const hash = row.pop() as string | null;
    if (!verifier.feed({ id: row[0] as number, hash, fields: row })) break;
  }
  return verifier.report();
}

interface RawLog {
  id: number;
  at: number;
  user_id: number;
  username: string | null;
  type: AccessType;
  key_prefix: string | null;
  client_ip: string | null;
  email_id: number | null;
  account_id: number | null;
  search_params: string | null;
  source: string | null;
}

/** Newest first. */
export function listAccessLog(
  db: Db,
  filter: { userId?: number; type?: AccessType; limit?: number } = {},
): AccessLogRow[] {
  const where: string[] = [];
  const params: unknown[] = [];
  if (filter.userId !== undefined) {
    where.push('l.user_id = ?');
    params.push(filter.userId);
  }
  if (filter.type !== undefined) {
    where.push('l.type = ?');
    params.push(filter.type);
  }
  const sql = `SELECT l.*, u.username FROM access_log l LEFT JOIN users u ON u.id = l.user_id
               ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY l.id DESC LIMIT ?`;
  const rows = prepared(db, sql).all(...params, filter.limit ?? 100) as RawLog[];
  return rows.map((r) => ({
    id: r.id,
    at: iso(r.at),
    username: r.username,
    userId: r.user_id,
    type: r.type,
    keyPrefix: r.key_prefix,
    clientIp: r.client_ip,
    emailId: r.email_id,
    accountId: r.account_id,
    searchParams: r.search_params ? (JSON.parse(r.search_params) as Record<string, unknown>) : null,
    source: r.source,
  }));
}
