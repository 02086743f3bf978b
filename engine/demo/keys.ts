// API keys for trying the service: one for an administrator, one for a restricted user.
import type { Db } from '../db/open.js';
import { StoreError } from '../store/errors.js';
import { createKey, listKeys, revokeKey } from '../store/keys.js';
import { listUsers, type UserRow } from '../store/users.js';

export interface IssuedKey {
  id: number;
  username: string;
  /** Shown once, at creation; only its hash is stored. */
  key: string;
  prefix: string;
  /** null: every account (administrator). */
  accountIds: number[] | null;
}

export interface DemoKeys {
  admin: IssuedKey;
  /** null when the archive has no active non-admin user with an account. */
  restricted: IssuedKey | null;
}

/** The demo users when present, else the first suitable ones (an archive not built by `demo`). */
function chooseUsers(db: Db): { admin: UserRow; restricted: UserRow | null } {
  const users = listUsers(db).filter((u) => u.isActive);
  const admin = users.find((u) => u.isAdmin && u.username === 'admin') ?? users.find((u) => u.isAdmin);
  if (!admin) throw new StoreError('The archive has no active administrator to issue a key for.');
  const restricted =
    users.find((u) => !u.isAdmin && u.username === 'alice' && u.accountIds.length > 0) ??
    users.find((u) => !u.isAdmin && u.accountIds.length > 0) ??
    null;
  return { admin, restricted };
}

/** Creates the two keys under `name`, revoking any earlier active keys of that name first. */
export function issueDemoKeys(db: Db, name: string, now = Date.now()): DemoKeys {
  return db.transaction(() => {
    for (const k of listKeys(db, { now })) if (k.name === name && k.status === 'active') revokeKey(db, k.id, now);
    const { admin, restricted } = chooseUsers(db);
    const issue = (u: UserRow, accountIds: number[] | null): IssuedKey => {
      const created = createKey(db, { username: u.username, name, now });
      return { id: created.id, username: u.username, key: created.key, prefix: created.prefix, accountIds };
    };
    return { admin: issue(admin, null), restricted: restricted ? issue(restricted, restricted.accountIds) : null };
  })();
}
