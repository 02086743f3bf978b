// API keys for trying the service: one for an administrator, one for a restricted user.
import { asAdmin } from '../sqlite/admin.js';
import { type ArchiveAdmin, type UserRow } from '../store-contract.js';
import type { Db } from '../sqlite/open.js';
import { StoreError } from '../../shared/errors.js';

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
async function chooseUsers(archive: ArchiveAdmin): Promise<{ admin: UserRow; restricted: UserRow | null }> {
  const users = (await archive.listUsers()).filter((u) => u.isActive);
  const admin = users.find((u) => u.isAdmin && u.username === 'admin') ?? users.find((u) => u.isAdmin);
  if (!admin) throw new StoreError('The archive has no active administrator to issue a key for.');
  const restricted =
    users.find((u) => !u.isAdmin && u.username === 'alice' && u.accountIds.length > 0) ??
    users.find((u) => !u.isAdmin && u.accountIds.length > 0) ??
    null;
  return { admin, restricted };
}

/** Creates the two keys under `name`, revoking any earlier active keys of that name first. */
export function issueDemoKeys(target: Db | ArchiveAdmin, name: string, now = Date.now()): Promise<DemoKeys> {
  return asAdmin(target).transaction(async (tx) => {
    for (const k of await tx.listKeys({ now }))
      if (k.name === name && k.status === 'active') await tx.revokeKey(k.id, now);
    const { admin, restricted } = await chooseUsers(tx);
    const issue = async (u: UserRow, accountIds: number[] | null): Promise<IssuedKey> => {
      const created = await tx.createKey({ username: u.username, name, now });
      return { id: created.id, username: u.username, key: created.key, prefix: created.prefix, accountIds };
    };
    return {
      admin: await issue(admin, null),
      restricted: restricted ? await issue(restricted, restricted.accountIds) : null,
    };
  });
}
