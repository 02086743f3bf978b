// The contract between the IMAP sync (engine/sync/) and the archive's stores: what an account's
// IMAP settings are, what a sync remembers per folder, and how two sync runners keep out of each
// other's way. Each store implements SyncState (ArchiveAdmin.sync(), engine/store-contract.ts).
import type { MailAccountDto } from '../../shared/dto.js';

export type ImapSecurity = 'tls' | 'starttls' | 'none';

/** How to reach one account's mailbox. `password` is decrypted only in the process that syncs. */
export interface ImapSettings {
  host: string;
  /** Default 993 (tls) or 143 (starttls, none). */
  port: number;
  security: ImapSecurity;
  /** Default: the account's e-mail address. */
  user: string;
  password: string;
  /** Only these folders (server paths with `/`), or every folder when null. */
  folders: string[] | null;
  /** Folders never synced (server paths with `/`), matched case-insensitively, with their subfolders. */
  exclude: string[];
}

/** What a pass remembers per archived folder: the server's UIDVALIDITY and the highest UID archived. */
export interface FolderState {
  uidValidity: string;
  lastUid: number;
}

export type SyncOutcome = { ok: true; at: number } | { ok: false; at: number; error: string };

/** An account as `sync` sees it: the DTO, its IMAP settings (null: not an IMAP account), its last outcome. */
export interface SyncAccount {
  account: MailAccountDto;
  imap: ImapSettings | null;
  lastOutcome: SyncOutcome | null;
  /** Consecutive failed passes, for back-off. */
  failures: number;
  /**
   * Set when the account has IMAP settings that cannot be used (imap is then null): one sentence,
   * e.g. the stored password cannot be decrypted with this key. The sync reports it as that
   * account's failure and goes on with the others.
   */
  imapError?: string;
}

export interface SyncState {
  /** Every account, or those with these ids, in id order. */
  accounts(ids?: readonly number[]): Promise<SyncAccount[]>;
  folderState(accountId: number, folder: string): Promise<FolderState | null>;
  saveFolderState(accountId: number, folder: string, state: FolderState): Promise<void>;
  /** Sets lastSync (on success) and the outcome; counts consecutive failures. */
  recordOutcome(accountId: number, outcome: SyncOutcome): Promise<void>;
  /**
   * Takes or renews the lease on an account for `holder` until now + ttlMs; false while another
   * holder's lease is still running. Two runners on one archive never sync one account at once.
   */
  acquireLease(accountId: number, holder: string, ttlMs: number): Promise<boolean>;
  releaseLease(accountId: number, holder: string): Promise<void>;
}
