// The callers of a benchmark: a key created for each (through the engine, as an operator
// would), the principal it resolves to, and the accounts it sees.
import type { Db } from '../../engine/sqlite/open.js';
import { listVisibleAccounts } from '../../engine/sqlite/accounts.js';
import { authenticate, createKey } from '../../engine/sqlite/keys.js';
import { hashKey } from '../../engine/rules/keys.js';
import type { Principal } from '../../shared/jobs.js';

export interface Caller {
  username: string;
  principal: Principal;
  /** The Authorization header of its key (never printed). */
  headers: Record<string, string>;
  /** Ids of the accounts it sees, ascending. */
  accounts: number[];
}

export function createCaller(db: Db, username: string): Caller {
  const { key } = createKey(db, { username, name: 'bench' });
  const auth = authenticate(db, hashKey(key), Date.now());
  if (!auth.ok) throw new Error(`bench key of ${username} refused: ${auth.reason}`);
  return {
    username,
    principal: auth.principal,
    headers: { Authorization: `Bearer ${key}` },
    accounts: listVisibleAccounts(db, auth.principal).map((a) => a.id),
  };
}
