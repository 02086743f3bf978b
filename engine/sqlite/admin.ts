// The operator's side of a SQLite archive: what the CLI, the importer and the demo builder do to it
// (users, accounts, keys, the access log, writing mail), as ArchiveAdmin (engine/store-contract.ts)
// over the synchronous functions of engine/sqlite/, unchanged. The PostgreSQL one is
// engine/postgres/admin.ts; engine/archive.ts (openAdmin) chooses between them from Database:Path.
import type { AccountChanges, ArchiveAdmin, ArchiveContents, MailWriter, NewImapAccount } from '../store-contract.js';
import type { Db } from './open.js';
import { listAccessLog, verifyAccessLog } from './access-log.js';
import { addAccount, listAllAccounts, requireAccount, touchLastSync } from './accounts.js';
import { addImapAccount, listAccountStatus, rotateSecret, setAccount, SqliteSyncState } from './sync-state.js';
import { loadSecretKey, SecretBox } from '../rules/secrets.js';
import type { SyncState } from '../rules/sync-state.js';
import { createKey, findKey, listKeys, revokeKey } from './keys.js';
import {
  addUser,
  assignAccount,
  listUsers,
  requireUser,
  setPasswordHash,
  setUserActive,
  unassignAccount,
} from './users.js';
import { hashPassword } from '../rules/password-hash.js';
import { ArchiveWriter } from './writer.js';
import { SqliteAttachmentTexts } from './attachment-text.js';
import { SqliteReparse } from './reparse.js';
import { saveCurrentIndex } from './index-save.js';

/** The writer's per-message work on the importer's parse threads (MailWriter.prepare): packing the bodies. */
const PREPARE = new URL('./prepare.js', import.meta.url).href;

export function archiveContents(db: Db): ArchiveContents {
  return db
    .prepare(
      `SELECT (SELECT count(*) FROM emails) AS messages, (SELECT count(*) FROM mail_accounts) AS accounts,
                     (SELECT count(*) FROM users) AS users`,
    )
    .get() as ArchiveContents;
}

/** The SQLite archive: engine/sqlite/'s functions as they are, one connection. */
export class SqliteAdmin implements ArchiveAdmin {
  readonly kind = 'sqlite' as const;
  readonly where: string;

  #box: SecretBox | undefined;

  constructor(
    readonly db: Db,
    private readonly closeDb = true,
    private readonly options: { secretKey?: string | undefined } = {},
  ) {
    this.where = db.name;
  }

  /** The key is read (or generated, next to the file) only when a password is written or read. */
  readonly secretBox = (): SecretBox =>
    (this.#box ??= new SecretBox(loadSecretKey({ secretKey: this.options.secretKey, databasePath: this.db.name })));

  hashPassword = (password: string) => hashPassword(password);
  addUser = async (input: Parameters<ArchiveAdmin['addUser']>[0]) => addUser(this.db, input);
  listUsers = async () => listUsers(this.db);
  requireUser = async (username: string) => requireUser(this.db, username);
  setUserActive = async (username: string, active: boolean) => setUserActive(this.db, username, active);
  setUserPassword = async (username: string, passwordHash: string) => {
    setPasswordHash(this.db, username, passwordHash);
    return requireUser(this.db, username);
  };
  assignAccount = async (username: string, accountId: number) => assignAccount(this.db, username, accountId);
  unassignAccount = async (username: string, accountId: number) => unassignAccount(this.db, username, accountId);
  addAccount = async (input: Parameters<ArchiveAdmin['addAccount']>[0]) => addAccount(this.db, input);
  listAccounts = async () => listAllAccounts(this.db);
  requireAccount = async (id: number) => requireAccount(this.db, id);
  touchLastSync = async (accountId: number, at: number) => touchLastSync(this.db, accountId, at);
  addImapAccount = async (input: NewImapAccount) => addImapAccount(this.db, this.secretBox, input);
  setAccount = async (id: number, changes: AccountChanges) => setAccount(this.db, this.secretBox, id, changes);
  listAccountStatus = async () => listAccountStatus(this.db);
  sync = (): SyncState => new SqliteSyncState(this.db, this.secretBox);
  rotateSecret = async (next: SecretBox) => rotateSecret(this.db, this.secretBox, next);
  createKey = async (input: Parameters<ArchiveAdmin['createKey']>[0]) => createKey(this.db, input);
  listKeys = async (options: { username?: string; now?: number } = {}) => listKeys(this.db, options);
  findKey = async (idOrPrefix: string, now?: number) => findKey(this.db, idOrPrefix, now);
  revokeKey = async (id: number, now?: number) => revokeKey(this.db, id, now);
  listAccessLog = async (filter: Parameters<ArchiveAdmin['listAccessLog']>[0] = {}) => listAccessLog(this.db, filter);
  verifyAccessLog = async (options: { head?: string } = {}) => verifyAccessLog(this.db, options.head);
  contents = async () => archiveContents(this.db);
  refreshSearchIndex = async () => ({ indexed: 0, pruned: 0 });
  attachmentTexts = () => new SqliteAttachmentTexts(this.db);
  reparse = () => new SqliteReparse(this.db);

  saveSearchIndex = async (o: Parameters<NonNullable<ArchiveAdmin['saveSearchIndex']>>[0]) =>
    saveCurrentIndex(this.db, o);

  openWriter(): MailWriter {
    const writer = new ArchiveWriter(this.db);
    return {
      // Synchronous inside: one better-sqlite3 transaction per batch, exactly as before.
      writeBatch: async (emails) => writer.batch(() => emails.map((e) => writer.add(e))),
      settle: async () => {}, // the full-text index is kept in the batch's own transaction
      prepare: PREPARE,
      get sameIdDifferentContent() {
        return writer.sameIdDifferentContent;
      },
      get originalsAttached() {
        return writer.originalsAttached;
      },
    };
  }

  async transaction<T>(work: (admin: ArchiveAdmin) => Promise<T>): Promise<T> {
    // better-sqlite3's transaction() takes no async work; BEGIN … COMMIT by hand does, and the
    // store functions called inside (which may use transaction() themselves) nest as savepoints.
    if (this.db.inTransaction) return work(this);
    this.db.exec('BEGIN');
    try {
      const result = await work(this);
      this.db.exec('COMMIT');
      return result;
    } catch (err) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      throw err;
    }
  }

  async close(): Promise<void> {
    if (this.closeDb && this.db.open) this.db.close();
  }
}

/** Code that takes either an open SQLite handle (tests, benchmarks, demo-start) or an admin. */
export function asAdmin(target: Db | ArchiveAdmin): ArchiveAdmin {
  return 'kind' in target && typeof (target as ArchiveAdmin).openWriter === 'function'
    ? (target as ArchiveAdmin)
    : new SqliteAdmin(target as Db, false);
}
