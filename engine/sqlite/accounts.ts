// Mail accounts and who may see them.
import type { MailAccountDto } from '../../shared/dto.js';
import type { Viewer } from '../../shared/jobs.js';
import type { Db } from './open.js';
import { prepared } from './statements.js';
import { narrowedToGrant } from '../rules/oauth.js';
import { iso } from '../rules/time.js';
import { StoreError } from '../../shared/errors.js';
import { EMAIL_ADDRESS } from '../rules/users.js';

interface RawAccount {
  id: number;
  name: string;
  email_address: string;
  provider: string;
  is_enabled: number;
  last_sync: number | null;
}

const toDto = (r: RawAccount): MailAccountDto => ({
  id: r.id,
  name: r.name,
  emailAddress: r.email_address,
  provider: r.provider,
  isEnabled: r.is_enabled === 1,
  lastSync: iso(r.last_sync),
});

const COLUMNS = 'a.id, a.name, a.email_address, a.provider, a.is_enabled, a.last_sync';

/**
 * SQL that limits `column` (an account id) to what the principal may see. Admins see all;
 * everyone else sees only assigned accounts. Returned with its parameters so callers can
 * splice it into larger queries without building strings from user input.
 */
export function visibleAccountsClause(
  principal: Viewer,
  column: string,
): { sql: string; params: Array<number | string> } {
  const parts: string[] = [];
  const params: Array<number | string> = [];
  if (!principal.isAdmin) {
    parts.push(`${column} IN (SELECT account_id FROM user_accounts WHERE user_id = ?)`);
    params.push(principal.userId);
  }
  // An OAuth grant narrowed to some accounts (shared/jobs.ts Principal.oauth).
  const only = principal.oauth?.accountIds;
  if (only) {
    parts.push(`${column} IN (SELECT value FROM json_each(?))`);
    params.push(JSON.stringify(only));
  }
  return parts.length ? { sql: parts.join(' AND '), params } : { sql: '1', params };
}

/** The ids of the accounts a viewer may read; null when that is every account. */
export function visibleAccountIds(db: Db, viewer: Viewer): number[] | null {
  const assigned = viewer.isAdmin
    ? null
    : (prepared(db, 'SELECT account_id FROM user_accounts WHERE user_id = ?').pluck().all(viewer.userId) as number[]);
  return narrowedToGrant(assigned, viewer.oauth?.accountIds);
}

export function canSeeAccount(db: Db, principal: Viewer, accountId: number): boolean {
  const v = visibleAccountsClause(principal, 'a.id');
  return (
    prepared(db, `SELECT 1 FROM mail_accounts a WHERE a.id = ? AND ${v.sql}`).get(accountId, ...v.params) !== undefined
  );
}

export function listVisibleAccounts(db: Db, principal: Viewer): MailAccountDto[] {
  const v = visibleAccountsClause(principal, 'a.id');
  return (
    prepared(db, `SELECT ${COLUMNS} FROM mail_accounts a WHERE ${v.sql} ORDER BY a.id`).all(...v.params) as RawAccount[]
  ).map(toDto);
}

export function listAllAccounts(db: Db): MailAccountDto[] {
  return (prepared(db, `SELECT ${COLUMNS} FROM mail_accounts a ORDER BY a.id`).all() as RawAccount[]).map(toDto);
}

export function getAccount(db: Db, id: number): MailAccountDto | null {
  const row = prepared(db, `SELECT ${COLUMNS} FROM mail_accounts a WHERE a.id = ?`).get(id) as RawAccount | undefined;
  return row ? toDto(row) : null;
}

export function requireAccount(db: Db, id: number): MailAccountDto {
  const account = getAccount(db, id);
  if (!account) throw new StoreError(`No mail account with id ${id}.`);
  return account;
}

export function addAccount(
  db: Db,
  input: { name: string; emailAddress: string; provider?: string; isEnabled?: boolean; lastSync?: number | null },
): MailAccountDto {
  const name = input.name.trim();
  const email = input.emailAddress.trim();
  if (!name) throw new StoreError('An account needs a name.');
  if (!EMAIL_ADDRESS.test(email)) throw new StoreError(`"${input.emailAddress}" is not an e-mail address.`);
  const provider = (input.provider ?? 'IMAP').trim() || 'IMAP';
  const info = prepared(
    db,
    'INSERT INTO mail_accounts (name, email_address, provider, is_enabled, last_sync) VALUES (?, ?, ?, ?, ?)',
  ).run(name, email, provider, input.isEnabled === false ? 0 : 1, input.lastSync ?? null);
  return getAccount(db, Number(info.lastInsertRowid))!;
}

export function touchLastSync(db: Db, accountId: number, at: number): void {
  prepared(db, 'UPDATE mail_accounts SET last_sync = ? WHERE id = ?').run(at, accountId);
}
