// IMAP accounts on a PostgreSQL archive (a Mail Archiver database): the settings both
// applications share live in Mail Archiver's MailAccounts columns; the exact security mode, the
// folder list, the encrypted password, the outcome, the lease and the per-folder state live in
// this service's schema (engine/postgres/migrations.ts, version 5). Mail Archiver's plaintext Password
// column is never written; an account whose password was entered in Mail Archiver is synced with
// that one while this service has none of its own (docs/sync.md), unless Mail Archiver encrypted
// it (`enc:v1:…`): then the account's outcome asks for our own.
import type { MailAccountDto } from '../../shared/dto.js';
import type { SecretBox } from '../rules/secrets.js';
import { EMAIL_ADDRESS } from '../rules/users.js';
import { StoreError } from '../../shared/errors.js';
import {
  changedImap,
  checkPassword,
  defaultPort,
  encryptedByMailArchiver,
  encryptedPasswordError,
  resolveImap,
  type AccountChanges,
  type AccountStatus,
  type ImapPublicSettings,
  type NewImapAccount,
} from '../rules/account-settings.js';
import type { FolderState, ImapSecurity, SyncAccount, SyncOutcome, SyncState } from '../rules/sync-state.js';
import { T, utcTimestamp } from './columns.js';
import { ACCOUNT_COLUMNS, toAccountDto } from './handlers.js';
import { sql, type Sql } from './sql.js';
import type { PgContext, Query } from './context.js';

type RawAccount = Parameters<typeof toAccountDto>[0];

interface RawImapAccount extends RawAccount {
  imap_server: string | null;
  imap_port: number | null;
  username: string | null;
  ma_password: string | null;
  use_ssl: boolean;
  excluded: string;
  security: ImapSecurity | null;
  password_enc: string | null;
  folders: string[] | null;
  outcome_at: number | null;
  outcome_error: string | null;
  failures: number | null;
}

const SELECT_ACCOUNTS = (where: Sql) => sql`
  SELECT ${ACCOUNT_COLUMNS}, a."ImapServer" AS imap_server, a."ImapPort" AS imap_port, a."Username" AS username,
         a."Password" AS ma_password, a."UseSSL" AS use_ssl, a."ExcludedFolders" AS excluded,
         i.security, i.password_enc, i.folders, s.outcome_at::float8 AS outcome_at, s.outcome_error, s.failures
    FROM ${T.accounts} a
    LEFT JOIN mail_archive_gateway.imap_accounts i ON i.account_id = a."Id"
    LEFT JOIN mail_archive_gateway.account_sync s ON s.account_id = a."Id"
   WHERE ${where}
   ORDER BY a."Id"`;

const splitExcluded = (text: string) =>
  text
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean);

function toPublic(r: RawImapAccount): ImapPublicSettings | null {
  if (!r.imap_server || !r.imap_server.trim()) return null;
  const security = r.security ?? (r.use_ssl ? 'tls' : 'starttls');
  return {
    host: r.imap_server,
    port: r.imap_port ?? defaultPort(security),
    security,
    user: r.username?.trim() || r.email_address,
    folders: r.folders,
    exclude: splitExcluded(r.excluded ?? ''),
  };
}

const toOutcome = (r: RawImapAccount): SyncOutcome | null =>
  r.outcome_at === null
    ? null
    : r.outcome_error === null
      ? { ok: true, at: Number(r.outcome_at) }
      : { ok: false, at: Number(r.outcome_at), error: r.outcome_error };

async function writeImap(
  q: Query,
  id: number,
  s: ImapPublicSettings,
  passwordEnc: string | null,
  keepPassword: boolean,
): Promise<void> {
  await q(sql`UPDATE ${T.accounts} SET "ImapServer" = ${s.host}, "ImapPort" = ${s.port}, "Username" = ${s.user},
                 "UseSSL" = ${s.security === 'tls'}, "ExcludedFolders" = ${s.exclude.join(';')}
               WHERE "Id" = ${id}`);
  const folders = s.folders === null ? null : JSON.stringify(s.folders);
  await q(sql`INSERT INTO mail_archive_gateway.imap_accounts (account_id, security, password_enc, folders)
              VALUES (${id}, ${s.security}, ${passwordEnc}, ${folders}::jsonb)
              ON CONFLICT (account_id) DO UPDATE SET security = excluded.security, folders = excluded.folders,
                password_enc = ${keepPassword ? sql`imap_accounts.password_enc` : sql`excluded.password_enc`}`);
}

async function rows(q: Query, where: Sql): Promise<RawImapAccount[]> {
  return q<RawImapAccount>(SELECT_ACCOUNTS(where));
}

export async function pgAddImapAccount(ctx: PgContext, box: () => SecretBox, input: NewImapAccount): Promise<number> {
  const name = input.name.trim();
  const email = input.emailAddress.trim();
  if (!name) throw new StoreError('An account needs a name.');
  if (!EMAIL_ADDRESS.test(email)) throw new StoreError(`"${input.emailAddress}" is not an e-mail address.`);
  const settings = resolveImap(input.imap, email);
  const passwordEnc = box().encrypt(settings.password);
  return ctx.transaction(async (q) => {
    const [row] = await q<{ id: number }>(
      sql`INSERT INTO ${T.accounts} ("Name", "EmailAddress", "UseSSL", "LastSync", "IsEnabled", "Provider")
          VALUES (${name}, ${email}, true, '1970-01-01 00:00:00', ${input.isEnabled ?? true}, 'IMAP')
          RETURNING "Id" AS id`,
    );
    await writeImap(q, row!.id, settings, passwordEnc, false);
    return row!.id;
  });
}

export async function pgSetAccount(
  ctx: PgContext,
  box: () => SecretBox,
  id: number,
  changes: AccountChanges,
): Promise<void> {
  await ctx.transaction(async (q) => {
    const [current] = await rows(q, sql`a."Id" = ${id}`);
    if (!current) throw new StoreError(`No mail account with id ${id}.`);
    const account: MailAccountDto = toAccountDto(current);
    const name = changes.name !== undefined ? changes.name.trim() : account.name;
    if (!name) throw new StoreError('An account needs a name.');
    const email = changes.emailAddress !== undefined ? changes.emailAddress.trim() : account.emailAddress;
    if (!EMAIL_ADDRESS.test(email)) throw new StoreError(`"${changes.emailAddress}" is not an e-mail address.`);
    const provider = changes.provider !== undefined ? changes.provider.trim() || 'IMAP' : account.provider;
    await q(sql`UPDATE ${T.accounts} SET "Name" = ${name}, "EmailAddress" = ${email}, "Provider" = ${provider},
                   "IsEnabled" = ${changes.isEnabled ?? account.isEnabled} WHERE "Id" = ${id}`);
    const c = changes.imap;
    if (!c || !Object.values(c).some((v) => v !== undefined)) return;
    const old = toPublic(current);
    if (!old) {
      const theirs = current.ma_password && !encryptedByMailArchiver(current.ma_password);
      if (c.host === undefined || (c.password === undefined && !theirs)) {
        throw new StoreError(`Account ${id} has no IMAP settings yet: give the host and the password.`);
      }
      const settings = resolveImap({ ...c, host: c.host, password: c.password ?? 'unused' }, email);
      await writeImap(q, id, settings, c.password !== undefined ? box().encrypt(settings.password) : null, false);
      return;
    }
    const settings = changedImap(old, c, email);
    const passwordEnc = c.password !== undefined ? box().encrypt(checkPassword(c.password)) : null;
    await writeImap(q, id, settings, passwordEnc, c.password === undefined);
  });
}

export async function pgListAccountStatus(ctx: PgContext): Promise<AccountStatus[]> {
  const list = await rows(ctx.primary, sql`true`);
  const counts = await ctx.primary<{ id: number; n: number }>(
    sql`SELECT "MailAccountId" AS id, count(*)::int AS n FROM ${T.emails} GROUP BY "MailAccountId"`,
  );
  const byId = new Map(counts.map((r) => [r.id, r.n]));
  return list.map((r) => ({
    ...toAccountDto(r),
    imap: toPublic(r),
    lastOutcome: toOutcome(r),
    failures: r.failures ?? 0,
    messages: byId.get(r.id) ?? 0,
  }));
}

/** Re-encrypts every stored IMAP password with `next` in one transaction (engine/sqlite/sync-state.ts rotateSecret). */
export async function pgRotateSecret(ctx: PgContext, current: () => SecretBox, next: SecretBox): Promise<number> {
  return ctx.transaction(async (q) => {
    const list = await q<{ account_id: number; password_enc: string }>(
      sql`SELECT account_id, password_enc FROM mail_archive_gateway.imap_accounts
           WHERE password_enc IS NOT NULL ORDER BY account_id FOR UPDATE`,
    );
    for (const r of list) {
      const plain = current().decrypt(r.password_enc, `the IMAP password of account ${r.account_id}`);
      await q(
        sql`UPDATE mail_archive_gateway.imap_accounts SET password_enc = ${next.encrypt(plain)} WHERE account_id = ${r.account_id}`,
      );
    }
    return list.length;
  });
}

async function requireAccount(q: Query, id: number): Promise<void> {
  const found = await q(sql`SELECT 1 AS ok FROM ${T.accounts} WHERE "Id" = ${id}`);
  if (found.length === 0) throw new StoreError(`No mail account with id ${id}.`);
}

/** The database's clock: runners on several hosts measure one lease against one clock. */
const DB_NOW = sql`(extract(epoch FROM clock_timestamp()) * 1000)::bigint`;

export class PgSyncState implements SyncState {
  constructor(
    private readonly ctx: PgContext,
    private readonly box: () => SecretBox,
    /** Tests move the clock; otherwise leases use the database's. */
    private readonly now?: () => number,
  ) {}

  async accounts(ids?: readonly number[]): Promise<SyncAccount[]> {
    const where = ids ? sql`a."Id" = ANY(${[...ids]}::int[])` : sql`true`;
    return (await rows(this.ctx.primary, where)).map((r) => {
      const account = toAccountDto(r);
      const base = { account, lastOutcome: toOutcome(r), failures: r.failures ?? 0 };
      const pub = toPublic(r);
      if (!pub || account.provider.trim().toUpperCase() !== 'IMAP') return { ...base, imap: null };
      try {
        const what = `the IMAP password of account ${account.id}`;
        const password = r.password_enc !== null ? this.box().decrypt(r.password_enc, what) : r.ma_password;
        if (r.password_enc === null && password && encryptedByMailArchiver(password)) {
          return { ...base, imap: null, imapError: encryptedPasswordError(account.id) };
        }
        if (!password) {
          return {
            ...base,
            imap: null,
            imapError: `Account ${account.id} has no IMAP password: set one with accounts set ${account.id} --password-stdin.`,
          };
        }
        return { ...base, imap: { ...pub, password } };
      } catch (err) {
        if (!(err instanceof StoreError)) throw err;
        return { ...base, imap: null, imapError: err.message };
      }
    });
  }

  async folderState(accountId: number, folder: string): Promise<FolderState | null> {
    const [row] = await this.ctx.primary<{ uid_validity: string; last_uid: string }>(
      sql`SELECT uid_validity, last_uid FROM mail_archive_gateway.sync_folders
           WHERE account_id = ${accountId} AND folder = ${folder}`,
    );
    return row ? { uidValidity: row.uid_validity, lastUid: Number(row.last_uid) } : null;
  }

  async saveFolderState(accountId: number, folder: string, state: FolderState): Promise<void> {
    await this.ctx.primary(
      sql`INSERT INTO mail_archive_gateway.sync_folders (account_id, folder, uid_validity, last_uid)
          VALUES (${accountId}, ${folder}, ${String(state.uidValidity)}, ${state.lastUid})
          ON CONFLICT (account_id, folder) DO UPDATE SET uid_validity = excluded.uid_validity, last_uid = excluded.last_uid`,
    );
  }

  async recordOutcome(accountId: number, outcome: SyncOutcome): Promise<void> {
    await this.ctx.transaction(async (q) => {
      await requireAccount(q, accountId);
      await q(
        sql`INSERT INTO mail_archive_gateway.account_sync (account_id, outcome_at, outcome_error, failures)
            VALUES (${accountId}, ${outcome.at}, ${outcome.ok ? null : outcome.error}, ${outcome.ok ? 0 : 1})
            ON CONFLICT (account_id) DO UPDATE SET outcome_at = excluded.outcome_at, outcome_error = excluded.outcome_error,
              failures = CASE WHEN excluded.outcome_error IS NULL THEN 0 ELSE account_sync.failures + 1 END`,
      );
      if (outcome.ok)
        await q(sql`UPDATE ${T.accounts} SET "LastSync" = ${utcTimestamp(outcome.at)} WHERE "Id" = ${accountId}`);
    });
  }

  async acquireLease(accountId: number, holder: string, ttlMs: number): Promise<boolean> {
    await requireAccount(this.ctx.primary, accountId);
    const now = this.now ? sql`${this.now()}::bigint` : DB_NOW;
    const got = await this.ctx.primary(
      sql`INSERT INTO mail_archive_gateway.account_sync AS s (account_id, lease_holder, lease_until)
          VALUES (${accountId}, ${holder}, ${now} + ${ttlMs}::bigint)
          ON CONFLICT (account_id) DO UPDATE SET lease_holder = excluded.lease_holder, lease_until = excluded.lease_until
          WHERE s.lease_holder IS NULL OR s.lease_holder = excluded.lease_holder
             OR s.lease_until IS NULL OR s.lease_until <= ${now}
          RETURNING 1 AS ok`,
    );
    return got.length === 1;
  }

  async releaseLease(accountId: number, holder: string): Promise<void> {
    await this.ctx.primary(
      sql`UPDATE mail_archive_gateway.account_sync SET lease_holder = NULL, lease_until = NULL
           WHERE account_id = ${accountId} AND lease_holder = ${holder}`,
    );
  }
}
