// The store contract: what both stores implement, apart from how each does it. ArchiveStore takes
// the engine's jobs (SQLite: engine/sqlite/handlers.ts, PostgreSQL: engine/postgres/store.ts);
// ArchiveAdmin is the operator's side (engine/sqlite/admin.ts, engine/postgres/admin.ts), with the
// writer (MailWriter) every importer writes through. The errors a store throws are in the one
// catalogue, shared/errors.ts. Types only, so either store imports it without importing the other,
// and engine/archive.ts picks one (docs/architecture.md, "Boundaries").
import type { AccessType, MailAccountDto } from '../shared/dto.js';
import type { Job, JobKind, JobResult, KeyRow } from '../shared/jobs.js';
import type { SecretBox } from './rules/secrets.js';
import type { AttachmentTextStore } from './rules/attachment-text.js';
import type { UserRow } from './rules/users.js';
import type { NewEmail } from './rules/new-email.js';
import type { ChainReport } from './rules/access-chain.js';
import type { FreshForm, ReparseCounts, ReparseField, StoredForm } from './rules/reparse.js';
import type { AccountChanges, AccountStatus, NewImapAccount } from './rules/account-settings.js';
import type { SyncState } from './rules/sync-state.js';

export type { AccountChanges, AccountStatus, NewImapAccount, UserRow };

/** Jobs in, typed results out: what a worker thread keeps open for its lifetime. */
export interface ArchiveStore {
  readonly kind: 'sqlite' | 'postgres';
  run<K extends JobKind>(job: Job<K>): JobResult<K> | Promise<JobResult<K>>;
  close(): Promise<void>;
}

export interface AccessLogRow {
  id: number;
  at: string;
  username: string | null;
  userId: number;
  type: AccessType;
  keyPrefix: string | null;
  clientIp: string | null;
  emailId: number | null;
  accountId: number | null;
  searchParams: Record<string, unknown> | null;
  source: string | null;
}

export interface CreatedKey {
  id: number;
  key: string;
  prefix: string;
  row: KeyRow;
}

export interface ArchiveContents {
  messages: number;
  accounts: number;
  users: number;
}

/** Writes mail in batches; each batch is one transaction. Null for a message already there. */
export interface MailWriter {
  writeBatch(emails: readonly NewEmail[]): Promise<Array<number | null>>;
  /** Waits for the work that follows the batches written so far (openWriter's `pipelined`); throws its failure. */
  settle(): Promise<void>;
  /**
   * A module (URL) whose default export the importer runs on each parsed message where it was
   * parsed (a parse thread, engine/import/parsers.ts), so that per-message work of this store's
   * write happens on every core: PostgreSQL builds the search document there, SQLite packs the
   * bodies (engine/sqlite/prepare.ts).
   */
  readonly prepare?: string;
  /**
   * Messages stored so far that share their Message-ID with another message in their folder: the
   * same Message-ID, different content (engine/import/fingerprint.ts).
   */
  readonly sameIdDifferentContent: number;
  /**
   * Messages found already stored without their original that were given it (a store that keeps
   * originals; docs/evidence.md, "Archives made before originals were kept"). 0 where none are kept.
   */
  readonly originalsAttached: number;
}

/** A stored message as reparse reads it (docs/reparse.md). */
export interface ReparseCandidate {
  id: number;
  accountId: number;
  folder: string;
  /** The stored received date (epoch ms): the parse's fallback date, as the file's date was the importer's. */
  receivedDate: number;
  /** The kept original, checked against its SHA-256; null when none is kept or it is damaged. */
  original: Buffer | null;
  /** Why the kept original cannot be used (it failed its integrity check). */
  damaged?: string;
  stored: StoredForm;
}

/** One message to rewrite: the fields that differ and the fresh form to write them from. */
export interface ReparseChange {
  id: number;
  fields: ReparseField[];
  fresh: FreshForm;
}

/** Where a reparse pass stands: the last message done and what was found up to it. */
export interface ReparseProgress {
  /** The pass's scope: one account, or every account (null). */
  accountId: number | null;
  /** The highest message id done. */
  after: number;
  counts: ReparseCounts;
  /** Epoch ms when the pass began. */
  startedAt: number;
}

/** What reparse needs of a store that keeps originals (docs/reparse.md). */
export interface ReparseStore {
  /** Messages with an id above `after` in id order: at most `limit`, fewer when their originals are large. */
  read(after: number, limit: number, accountId: number | null): Promise<ReparseCandidate[]>;
  /** Messages with an id above `after` (in the account when given). */
  remaining(after: number, accountId: number | null): Promise<number>;
  /**
   * Rewrites the changed fields of these messages in one transaction (bodies, attachments,
   * conversations, the search index) and marks the archive changed. Ids, dedup keys and
   * originals stay as they are.
   */
  write(changes: readonly ReparseChange[]): Promise<void>;
  /** The progress of an unfinished pass, or null. */
  loadProgress(): Promise<ReparseProgress | null>;
  saveProgress(progress: ReparseProgress): Promise<void>;
  clearProgress(): Promise<void>;
}

/** What saveSearchIndex did (engine/sqlite/index-save.ts). */
export type IndexSaveOutcome =
  /** The file already described every message. */
  | { kind: 'current'; rows: number }
  /** The file was caught up with the messages appended since it was saved, or built anew. */
  | { kind: 'caught up' | 'built'; rows: number; seconds: number }
  /** Another process of the host (a running service) is building it: it saves it itself. */
  | { kind: 'busy' };

export interface ArchiveAdmin {
  readonly kind: 'sqlite' | 'postgres';
  /** Where the archive is, for messages: the file, or host:port/database without credentials. */
  readonly where: string;

  /** A password hash in the store's format (scrypt for SQLite, Mail Archiver's PBKDF2 for PostgreSQL). */
  hashPassword(password: string): Promise<string>;
  addUser(input: {
    username: string;
    email?: string | null;
    isAdmin?: boolean;
    passwordHash?: string | null;
  }): Promise<UserRow>;
  listUsers(): Promise<UserRow[]>;
  requireUser(username: string): Promise<UserRow>;
  setUserActive(username: string, active: boolean): Promise<UserRow>;
  /** Replaces the web sign-in password (a hash from hashPassword); the user's web sessions end with it. */
  setUserPassword(username: string, passwordHash: string): Promise<UserRow>;
  assignAccount(username: string, accountId: number): Promise<boolean>;
  unassignAccount(username: string, accountId: number): Promise<boolean>;

  /** `provider` defaults to IMAP on SQLite and to IMPORT (Mail Archiver's import-only kind) on PostgreSQL. */
  addAccount(input: { name: string; emailAddress: string; provider?: string }): Promise<MailAccountDto>;
  listAccounts(): Promise<MailAccountDto[]>;
  requireAccount(id: number): Promise<MailAccountDto>;
  touchLastSync(accountId: number, at: number): Promise<void>;
  /** Registers an IMAP account (provider IMAP) with its settings; the password is stored encrypted. */
  addImapAccount(input: NewImapAccount): Promise<MailAccountDto>;
  /** Changes what is given; IMAP settings merge with the stored ones (a first set needs host and password). */
  setAccount(id: number, changes: AccountChanges): Promise<MailAccountDto>;
  /** Every account with its IMAP settings (never the password), last sync outcome and message count. */
  listAccountStatus(): Promise<AccountStatus[]>;
  /** What the IMAP sync reads and records (engine/rules/sync-state.ts). */
  sync(): SyncState;
  /**
   * Re-encrypts every stored IMAP password with `next` in one transaction (all or nothing);
   * returns how many. Installing the new key (file or Sync:SecretKey) is the caller's part.
   */
  rotateSecret(next: SecretBox): Promise<number>;

  /** `maxActive`: refuse when the user already holds that many active keys (Web:MaxActiveKeysPerUser). */
  createKey(input: {
    username: string;
    name: string;
    expiresAt?: number | null;
    now?: number;
    maxActive?: number;
  }): Promise<CreatedKey>;
  listKeys(options?: { username?: string; now?: number }): Promise<KeyRow[]>;
  findKey(idOrPrefix: string, now?: number): Promise<KeyRow>;
  revokeKey(id: number, now?: number): Promise<KeyRow>;

  listAccessLog(filter?: { userId?: number; type?: AccessType; limit?: number }): Promise<AccessLogRow[]>;
  /**
   * Walks the access log's hash chain (engine/rules/access-chain.ts) in bounded memory; `head`, a
   * head hash noted earlier, must still be in it.
   */
  verifyAccessLog(options?: { head?: string }): Promise<ChainReport>;

  contents(): Promise<ArchiveContents>;
  /**
   * Brings the search index up to date with every message, and drops entries of deleted ones.
   * SQLite's full-text index is kept by triggers in the same transaction, so there it is a no-op;
   * PostgreSQL's side index (engine/postgres/search-index.ts) may lag mail Mail Archiver wrote itself,
   * and documents written before its word pairs (ADR 24) get them (`onPairs`: how far, of what).
   */
  refreshSearchIndex(
    /** After each batch: messages indexed so far, and how far through the archive's ids (`through` of `last`, the highest id at the start). */
    onProgress?: (indexed: number, ids?: { through: number; last: number }) => void,
    onPairs?: (through: number, goal: number) => void,
  ): Promise<{ indexed: number; pruned: number }>;
  /**
   * `pipelined`: the work that follows a committed batch (PostgreSQL: catching the side tables
   * up, engine/postgres/writer.ts) may run behind the next batch's write, on another connection;
   * `settle()` waits for it. Without it each writeBatch returns once that work is done.
   */
  openWriter(options?: { pipelined?: boolean }): MailWriter;
  /**
   * Brings the saved in-memory search index (Engine:SearchIndexFile, ADR 23) up to every message,
   * so that the service's next start loads it instead of building it: an import's last step.
   * Absent where the store's index is saved by the service alone (PostgreSQL).
   */
  saveSearchIndex?(o: {
    file: string;
    maxBytes: number;
    log: (line: string, level?: 'warn') => void;
  }): Promise<IndexSaveOutcome>;
  /**
   * Re-deriving stored fields from kept originals (docs/reparse.md); absent where the store keeps
   * no originals of its own (PostgreSQL: Mail Archiver's database is never rewritten).
   */
  reparse?(): ReparseStore;
  /** Attachment text: what is still to read, and where outcomes are stored (engine/attachments). */
  attachmentTexts(): AttachmentTextStore;
  /** Runs `work` in one transaction (nested calls join the outer one). */
  transaction<T>(work: (admin: ArchiveAdmin) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
