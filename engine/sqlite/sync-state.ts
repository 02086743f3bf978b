// IMAP accounts on a SQLite archive: their settings (password encrypted, engine/rules/secrets.ts), what
// a sync remembers per folder, the last outcome, and the lease (engine/rules/sync-state.ts SyncState).
// Tables: imap_settings, account_sync, sync_folders (engine/sqlite/migrations.ts, version 2).
import type { Db } from './open.js';
import { prepared } from './statements.js';
import type { SecretBox } from '../rules/secrets.js';
import {
  changedImap,
  checkPassword,
  resolveImap,
  type AccountChanges,
  type AccountStatus,
  type ImapPublicSettings,
  type NewImapAccount,
} from '../rules/account-settings.js';
import type { FolderState, ImapSecurity, SyncAccount, SyncOutcome, SyncState } from '../rules/sync-state.js';
import { addAccount, getAccount, listAllAccounts, requireAccount } from './accounts.js';
import { EMAIL_ADDRESS } from '../rules/users.js';
import { StoreError } from '../../shared/errors.js';
import type { MailAccountDto } from '../../shared/dto.js';

interface RawImap {
  account_id: number;
  host: string;
  port: number;
  security: ImapSecurity;
  username: string;
  password_enc: string;
  folders: string | null;
  exclude: string;
}

interface RawSync {
  account_id: number;
  outcome_at: number | null;
  outcome_error: string | null;
  failures: number;
}

const toPublic = (r: RawImap): ImapPublicSettings => ({
  host: r.host,
  port: r.port,
  security: r.security,
  user: r.username,
  folders: r.folders === null ? null : (JSON.parse(r.folders) as string[]),
  exclude: JSON.parse(r.exclude) as string[],
});

const toOutcome = (r: RawSync | undefined): SyncOutcome | null =>
  !r || r.outcome_at === null
    ? null
    : r.outcome_error === null
      ? { ok: true, at: r.outcome_at }
      : { ok: false, at: r.outcome_at, error: r.outcome_error };

const isImapProvider = (account: MailAccountDto) => account.provider.trim().toUpperCase() === 'IMAP';

function imapRows(db: Db): Map<number, RawImap> {
  const rows = prepared(db, 'SELECT * FROM imap_settings').all() as RawImap[];
  return new Map(rows.map((r) => [r.account_id, r]));
}

function syncRows(db: Db): Map<number, RawSync> {
  const rows = prepared(
    db,
    'SELECT account_id, outcome_at, outcome_error, failures FROM account_sync',
  ).all() as RawSync[];
  return new Map(rows.map((r) => [r.account_id, r]));
}

function writeImap(db: Db, accountId: number, s: ImapPublicSettings, passwordEnc: string): void {
  prepared(
    db,
    `INSERT INTO imap_settings (account_id, host, port, security, username, password_enc, folders, exclude)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (account_id) DO UPDATE SET host = excluded.host, port = excluded.port, security = excluded.security,
       username = excluded.username, password_enc = excluded.password_enc, folders = excluded.folders,
       exclude = excluded.exclude`,
  ).run(
    accountId,
    s.host,
    s.port,
    s.security,
    s.user,
    passwordEnc,
    s.folders === null ? null : JSON.stringify(s.folders),
    JSON.stringify(s.exclude),
  );
}

/** Registers an IMAP account with its settings; the password is stored encrypted. */
export function addImapAccount(db: Db, box: () => SecretBox, input: NewImapAccount): MailAccountDto {
  const settings = resolveImap(input.imap, input.emailAddress);
  const passwordEnc = box().encrypt(settings.password);
  return db.transaction(() => {
    const account = addAccount(db, {
      name: input.name,
      emailAddress: input.emailAddress,
      provider: 'IMAP',
      isEnabled: input.isEnabled ?? true,
    });
    writeImap(db, account.id, settings, passwordEnc);
    return account;
  })();
}

/** Changes what is given; IMAP settings merge with the stored ones (a first set needs host and password). */
export function setAccount(db: Db, box: () => SecretBox, id: number, changes: AccountChanges): MailAccountDto {
  const account = requireAccount(db, id);
  return db.transaction(() => {
    const name = changes.name !== undefined ? changes.name.trim() : account.name;
    if (!name) throw new StoreError('An account needs a name.');
    const email = changes.emailAddress !== undefined ? changes.emailAddress.trim() : account.emailAddress;
    if (!EMAIL_ADDRESS.test(email)) throw new StoreError(`"${changes.emailAddress}" is not an e-mail address.`);
    const provider = changes.provider !== undefined ? changes.provider.trim() || 'IMAP' : account.provider;
    const enabled = changes.isEnabled ?? account.isEnabled;
    prepared(db, 'UPDATE mail_accounts SET name = ?, email_address = ?, provider = ?, is_enabled = ? WHERE id = ?').run(
      name,
      email,
      provider,
      enabled ? 1 : 0,
      id,
    );
    const c = changes.imap;
    if (c && Object.values(c).some((v) => v !== undefined)) {
      const stored = prepared(db, 'SELECT * FROM imap_settings WHERE account_id = ?').get(id) as RawImap | undefined;
      if (!stored) {
        if (c.host === undefined || c.password === undefined) {
          throw new StoreError(`Account ${id} has no IMAP settings yet: give the host and the password.`);
        }
        const settings = resolveImap({ ...c, host: c.host, password: c.password }, email);
        writeImap(db, id, settings, box().encrypt(settings.password));
      } else {
        const old = toPublic(stored);
        const settings = changedImap(old, c, email);
        const passwordEnc = c.password !== undefined ? box().encrypt(checkPassword(c.password)) : stored.password_enc;
        writeImap(db, id, settings, passwordEnc);
      }
    }
    return getAccount(db, id)!;
  })();
}

/** Every account with its IMAP settings (no password), its last outcome and its message count. */
export function listAccountStatus(db: Db): AccountStatus[] {
  const imap = imapRows(db);
  const sync = syncRows(db);
  const counts = new Map(
    (
      prepared(db, 'SELECT account_id, count(*) AS n FROM emails GROUP BY account_id').all() as Array<{
        account_id: number;
        n: number;
      }>
    ).map((r) => [r.account_id, r.n]),
  );
  return listAllAccounts(db).map((a) => {
    const i = imap.get(a.id);
    const s = sync.get(a.id);
    return {
      ...a,
      imap: i ? toPublic(i) : null,
      lastOutcome: toOutcome(s),
      failures: s?.failures ?? 0,
      messages: counts.get(a.id) ?? 0,
    };
  });
}

/**
 * Re-encrypts every stored IMAP password with `next`, in one transaction: all or nothing. A
 * password the current key cannot decrypt stops it with that account's sentence.
 */
export function rotateSecret(db: Db, current: () => SecretBox, next: SecretBox): number {
  return db.transaction(() => {
    const rows = prepared(db, 'SELECT account_id, password_enc FROM imap_settings ORDER BY account_id').all() as Array<{
      account_id: number;
      password_enc: string;
    }>;
    const update = prepared(db, 'UPDATE imap_settings SET password_enc = ? WHERE account_id = ?');
    for (const r of rows) {
      const plain = current().decrypt(r.password_enc, `the IMAP password of account ${r.account_id}`);
      update.run(next.encrypt(plain), r.account_id);
    }
    return rows.length;
  })();
}

export class SqliteSyncState implements SyncState {
  constructor(
    private readonly db: Db,
    private readonly box: () => SecretBox,
    /** The clock leases are measured against (tests move it). */
    private readonly now: () => number = Date.now,
  ) {}

  async accounts(ids?: readonly number[]): Promise<SyncAccount[]> {
    const imap = imapRows(this.db);
    const sync = syncRows(this.db);
    const wanted = ids ? new Set(ids) : null;
    return listAllAccounts(this.db)
      .filter((a) => !wanted || wanted.has(a.id))
      .map((account) => {
        const s = sync.get(account.id);
        const base = { account, lastOutcome: toOutcome(s), failures: s?.failures ?? 0 };
        const i = imap.get(account.id);
        if (!i || !isImapProvider(account)) return { ...base, imap: null };
        try {
          const password = this.box().decrypt(i.password_enc, `the IMAP password of account ${account.id}`);
          return { ...base, imap: { ...toPublic(i), password } };
        } catch (err) {
          if (!(err instanceof StoreError)) throw err;
          return { ...base, imap: null, imapError: err.message };
        }
      });
  }

  async folderState(accountId: number, folder: string): Promise<FolderState | null> {
    const row = prepared(
      this.db,
      'SELECT uid_validity, last_uid FROM sync_folders WHERE account_id = ? AND folder = ?',
    ).get(accountId, folder) as { uid_validity: string; last_uid: number } | undefined;
    return row ? { uidValidity: row.uid_validity, lastUid: row.last_uid } : null;
  }

  async saveFolderState(accountId: number, folder: string, state: FolderState): Promise<void> {
    prepared(
      this.db,
      `INSERT INTO sync_folders (account_id, folder, uid_validity, last_uid) VALUES (?, ?, ?, ?)
       ON CONFLICT (account_id, folder) DO UPDATE SET uid_validity = excluded.uid_validity, last_uid = excluded.last_uid`,
    ).run(accountId, folder, String(state.uidValidity), state.lastUid);
  }

  async recordOutcome(accountId: number, outcome: SyncOutcome): Promise<void> {
    requireAccount(this.db, accountId);
    this.db.transaction(() => {
      prepared(
        this.db,
        `INSERT INTO account_sync (account_id, outcome_at, outcome_error, failures) VALUES (?, ?, ?, ?)
         ON CONFLICT (account_id) DO UPDATE SET outcome_at = excluded.outcome_at,
           outcome_error = excluded.outcome_error,
           failures = CASE WHEN excluded.outcome_error IS NULL THEN 0 ELSE account_sync.failures + 1 END`,
      ).run(accountId, outcome.at, outcome.ok ? null : outcome.error, outcome.ok ? 0 : 1);
      if (outcome.ok)
        prepared(this.db, 'UPDATE mail_accounts SET last_sync = ? WHERE id = ?').run(outcome.at, accountId);
    })();
  }

  async acquireLease(accountId: number, holder: string, ttlMs: number): Promise<boolean> {
    requireAccount(this.db, accountId);
    const now = this.now();
    const info = prepared(
      this.db,
      `INSERT INTO account_sync (account_id, lease_holder, lease_until) VALUES (?, ?, ?)
       ON CONFLICT (account_id) DO UPDATE SET lease_holder = excluded.lease_holder, lease_until = excluded.lease_until
       WHERE account_sync.lease_holder IS NULL OR account_sync.lease_holder = excluded.lease_holder
          OR account_sync.lease_until IS NULL OR account_sync.lease_until <= ?`,
    ).run(accountId, holder, now + ttlMs, now);
    return info.changes === 1;
  }

  async releaseLease(accountId: number, holder: string): Promise<void> {
    prepared(
      this.db,
      'UPDATE account_sync SET lease_holder = NULL, lease_until = NULL WHERE account_id = ? AND lease_holder = ?',
    ).run(accountId, holder);
  }
}
