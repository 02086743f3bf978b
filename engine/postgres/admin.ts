// The operator's side of a PostgreSQL archive (ArchiveAdmin, engine/store-contract.ts) over Mail
// Archiver's tables: the same checks, the same messages and the same rows out as the SQLite
// store, written the way Mail Archiver writes them (docs/compat.md, docs/postgres.md "CLI on
// PostgreSQL").
import type { AttachmentTextStore } from '../rules/attachment-text.js';
import { PgAttachmentTexts } from './attachment-text.js';
import { randomBytes } from 'node:crypto';
import type { AccessType, MailAccountDto } from '../../shared/dto.js';
import type { KeyRow } from '../../shared/jobs.js';
import type {
  AccessLogRow,
  AccountChanges,
  AccountStatus,
  ArchiveAdmin,
  ArchiveContents,
  CreatedKey,
  MailWriter,
  NewImapAccount,
  UserRow,
} from '../store-contract.js';
import { loadSecretKey, SecretBox } from '../rules/secrets.js';
import type { SyncState } from '../rules/sync-state.js';
import { pgAddImapAccount, pgListAccountStatus, pgRotateSecret, pgSetAccount, PgSyncState } from './sync-state.js';
import { hashMailArchiverPassword } from '../rules/passwords.js';
import { checkEmail, checkUsername, EMAIL_ADDRESS, foldName } from '../rules/users.js';
import { StoreError } from '../../shared/errors.js';
import { keyNameProblem } from '../../shared/key-name.js';
import { hashKey, KEY_PATTERN, KEY_PREFIX_LENGTH, toRow, type RawKey } from '../rules/keys.js';
import { iso } from '../rules/time.js';
import { accessLogsTable, T, utcMs, utcTimestamp } from './columns.js';
import { verifyChain } from './access-chain.js';
import type { ChainReport } from '../rules/access-chain.js';
import {
  ACCESS_TYPE_CODES,
  accessTypeOf,
  ACCOUNT_COLUMNS,
  insertKey,
  KEY_COLUMNS,
  KEY_FROM,
  toAccountDto,
} from './handlers.js';
import { sql, type Sql } from './sql.js';
import type { PgContext, Query } from './context.js';
import { PgStore } from './store.js';
import { addWordPairs, catchUpSearchIndex, pruneSearchIndex } from './search-index.js';
import { PgArchiveWriter } from './writer.js';
import { catchUpThreads } from './threads.js';

/**
 * Runs after every committed import batch: the search side-index catches up with what was
 * written (engine/postgres/search-index.ts), so imported mail is searchable when the import returns.
 */
const AFTER_BATCH: ((ctx: PgContext) => Promise<void>) | undefined = async (ctx) => {
  await catchUpSearchIndex(ctx);
  await catchUpThreads(ctx); // conversations too (engine/postgres/threads.ts)
};

/** Builds each message's search document where it is parsed (MailWriter.prepare). */
const PREPARE = new URL('./prepare.js', import.meta.url).href;

/** Users.Email is NOT NULL, unique and at most 100 characters in Mail Archiver. */
const MAX_EMAIL_LENGTH = 100;
/**
 * What a user added without --email gets in Users.Email: unique, never deliverable (.invalid is
 * reserved, RFC 2606), and read back as "no address".
 */
const placeholderEmail = () => `no-email-${randomBytes(8).toString('hex')}@users.invalid`;
const PLACEHOLDER = /^no-email-[0-9a-f]{16}@users\.invalid$/;

interface RawUser {
  id: number;
  username: string;
  email: string;
  is_admin: boolean;
  is_active: boolean;
  created_at: number;
  account_ids: number[];
}

// Orders as the SQLite archive's NOCASE column does: ASCII letters folded, then code points.
const USER_COLUMNS = sql`u."Id" AS id, u."Username" AS username, u."Email" AS email, u."IsAdmin" AS is_admin,
  u."IsActive" AS is_active, ${utcMs('u."CreatedAt"')} AS created_at,
  ARRAY(SELECT m."MailAccountId" FROM ${T.userAccounts} m WHERE m."UserId" = u."Id" ORDER BY m."MailAccountId") AS account_ids`;

const toUser = (r: RawUser): UserRow => ({
  id: r.id,
  username: r.username,
  email: PLACEHOLDER.test(r.email) ? null : r.email,
  isAdmin: r.is_admin,
  isActive: r.is_active,
  createdAt: iso(r.created_at)!,
  accountIds: r.account_ids,
});

interface RawLog {
  id: number;
  at: number;
  username: string;
  user_id: number;
  type_code: number;
  key_prefix: string | null;
  client_ip: string | null;
  email_id: number | null;
  account_id: number | null;
  search_params: Record<string, unknown> | null;
  search_text: string | null;
  source: string | null;
}

/** Mail Archiver's own SearchParameters text (`q=…; from=…`) as an object, for rows it wrote. */
function parseSearchText(text: string | null): Record<string, unknown> | null {
  if (!text) return null;
  const out: Record<string, unknown> = {};
  for (const part of text.split('; ')) {
    const eq = part.indexOf('=');
    if (eq > 0) out[part.slice(0, eq)] = part.slice(eq + 1);
  }
  return out;
}

const isUniqueViolation = (err: unknown, constraint: string) =>
  (err as { code?: string; constraint?: string }).code === '23505' &&
  (err as { constraint?: string }).constraint === constraint;

export class PgAdmin implements ArchiveAdmin {
  readonly kind = 'postgres' as const;

  private constructor(
    private readonly ctx: PgContext,
    readonly where: string,
    private readonly store: PgStore | null,
    /** Sync:SecretKey, read when an IMAP password is written or read (required on PostgreSQL). */
    readonly box: () => SecretBox,
  ) {}

  static open(url: string, timeZone: string, where: string, secretKey?: string): PgAdmin {
    // Two: a pipelined import catches up one batch while it writes the next (writer.ts).
    const store = new PgStore({ url, timeZone, connections: 2 });
    let box: SecretBox | undefined;
    return new PgAdmin(
      store,
      where,
      store,
      () => (box ??= new SecretBox(loadSecretKey({ secretKey, databasePath: url }))),
    );
  }

  private get q(): Query {
    return this.ctx.primary;
  }

  hashPassword = (password: string) => hashMailArchiverPassword(password);

  async #findUser(username: string): Promise<UserRow | null> {
    // Mail Archiver compares user names lower-cased; folding here (not lower() in SQL, which
    // depends on the database's locale) gives the same answer as the SQLite store for any script.
    const wanted = foldName(username.trim());
    const all = await this.q<{ id: number; username: string }>(
      sql`SELECT "Id" AS id, "Username" AS username FROM ${T.users}`,
    );
    const ids = all.filter((u) => foldName(u.username) === wanted).map((u) => u.id);
    return ids.length === 1 ? this.#getUser(ids[0]!) : null;
  }

  async #getUser(id: number): Promise<UserRow | null> {
    const rows = await this.q<RawUser>(sql`SELECT ${USER_COLUMNS} FROM ${T.users} u WHERE u."Id" = ${id}`);
    return rows[0] ? toUser(rows[0]) : null;
  }

  async requireUser(username: string): Promise<UserRow> {
    const user = await this.#findUser(username);
    if (!user) throw new StoreError(`No user named "${username}".`);
    return user;
  }

  async addUser(input: { username: string; email?: string | null; isAdmin?: boolean; passwordHash?: string | null }) {
    const username = checkUsername(input.username);
    const email = checkEmail(input.email);
    if (email !== null && email.length > MAX_EMAIL_LENGTH) {
      throw new StoreError(
        `"${email}" is longer than the ${MAX_EMAIL_LENGTH} characters Mail Archiver allows for an e-mail address.`,
      );
    }
    if (await this.#findUser(username)) throw new StoreError(`User "${username}" already exists.`);
    try {
      const rows = await this.q<{ id: number }>(
        sql`INSERT INTO ${T.users} ("Username", "Email", "PasswordHash", "IsAdmin", "IsActive", "CreatedAt")
            VALUES (${username}, ${email ?? placeholderEmail()}, ${input.passwordHash ?? null}, ${input.isAdmin ?? false},
                    true, ${utcTimestamp(Date.now())})
            RETURNING "Id" AS id`,
      );
      return (await this.#getUser(rows[0]!.id))!;
    } catch (err) {
      if (isUniqueViolation(err, 'IX_Users_Email'))
        throw new StoreError(`Another user already has the e-mail address "${email}".`);
      if (isUniqueViolation(err, 'IX_Users_Username')) throw new StoreError(`User "${username}" already exists.`);
      throw err;
    }
  }

  async listUsers(): Promise<UserRow[]> {
    const rows = await this.q<RawUser>(
      sql`SELECT ${USER_COLUMNS} FROM ${T.users} u ORDER BY lower(u."Username" COLLATE "C"), u."Id"`,
    );
    return rows.map(toUser);
  }

  async setUserActive(username: string, active: boolean): Promise<UserRow> {
    const user = await this.requireUser(username);
    await this.q(sql`UPDATE ${T.users} SET "IsActive" = ${active} WHERE "Id" = ${user.id}`);
    return (await this.#getUser(user.id))!;
  }

  async setUserPassword(username: string, passwordHash: string): Promise<UserRow> {
    const user = await this.requireUser(username);
    await this.q(sql`UPDATE ${T.users} SET "PasswordHash" = ${passwordHash} WHERE "Id" = ${user.id}`);
    return (await this.#getUser(user.id))!;
  }

  async assignAccount(username: string, accountId: number): Promise<boolean> {
    const user = await this.requireUser(username);
    await this.requireAccount(accountId);
    const rows = await this.q(
      sql`INSERT INTO ${T.userAccounts} ("UserId", "MailAccountId") VALUES (${user.id}, ${accountId})
          ON CONFLICT DO NOTHING RETURNING 1 AS ok`,
    );
    return rows.length > 0;
  }

  async unassignAccount(username: string, accountId: number): Promise<boolean> {
    const user = await this.requireUser(username);
    await this.requireAccount(accountId);
    const rows = await this.q(
      sql`DELETE FROM ${T.userAccounts} WHERE "UserId" = ${user.id} AND "MailAccountId" = ${accountId} RETURNING 1 AS ok`,
    );
    return rows.length > 0;
  }

  async addAccount(input: { name: string; emailAddress: string; provider?: string }): Promise<MailAccountDto> {
    const name = input.name.trim();
    const email = input.emailAddress.trim();
    if (!name) throw new StoreError('An account needs a name.');
    if (!EMAIL_ADDRESS.test(email)) throw new StoreError(`"${input.emailAddress}" is not an e-mail address.`);
    // IMPORT: Mail Archiver's import-only kind, which it never tries to sync (no server, no credentials).
    const provider = (input.provider ?? 'IMPORT').trim() || 'IMPORT';
    const rows = await this.q<{ id: number }>(
      sql`INSERT INTO ${T.accounts} ("Name", "EmailAddress", "UseSSL", "LastSync", "IsEnabled", "Provider")
          VALUES (${name}, ${email}, true, '1970-01-01 00:00:00', true, ${provider})
          RETURNING "Id" AS id`,
    );
    return (await this.#getAccount(rows[0]!.id))!;
  }

  async #getAccount(id: number): Promise<MailAccountDto | null> {
    const rows = await this.q<Parameters<typeof toAccountDto>[0]>(
      sql`SELECT ${ACCOUNT_COLUMNS} FROM ${T.accounts} a WHERE a."Id" = ${id}`,
    );
    return rows[0] ? toAccountDto(rows[0]) : null;
  }

  async listAccounts(): Promise<MailAccountDto[]> {
    const rows = await this.q<Parameters<typeof toAccountDto>[0]>(
      sql`SELECT ${ACCOUNT_COLUMNS} FROM ${T.accounts} a ORDER BY a."Id"`,
    );
    return rows.map(toAccountDto);
  }

  async requireAccount(id: number): Promise<MailAccountDto> {
    const account = await this.#getAccount(id);
    if (!account) throw new StoreError(`No mail account with id ${id}.`);
    return account;
  }

  async touchLastSync(accountId: number, at: number): Promise<void> {
    await this.q(sql`UPDATE ${T.accounts} SET "LastSync" = ${utcTimestamp(at)} WHERE "Id" = ${accountId}`);
  }

  /** IMAP accounts over Mail Archiver's MailAccounts columns plus this service's schema (engine/postgres/sync-state.ts). */
  async addImapAccount(input: NewImapAccount): Promise<MailAccountDto> {
    return this.requireAccount(await pgAddImapAccount(this.ctx, this.box, input));
  }

  async setAccount(id: number, changes: AccountChanges): Promise<MailAccountDto> {
    await pgSetAccount(this.ctx, this.box, id, changes);
    return this.requireAccount(id);
  }

  listAccountStatus = (): Promise<AccountStatus[]> => pgListAccountStatus(this.ctx);

  sync(): SyncState {
    return new PgSyncState(this.ctx, this.box);
  }

  rotateSecret = (next: SecretBox): Promise<number> => pgRotateSecret(this.ctx, this.box, next);

  async #keysWhere(where: Sql, order: Sql, now: number): Promise<KeyRow[]> {
    const rows = await this.q<RawKey>(sql`SELECT ${KEY_COLUMNS} FROM ${KEY_FROM} WHERE ${where} ORDER BY ${order}`);
    return rows.map((r) => toRow(r, now));
  }

  async #getKey(id: number, now: number): Promise<KeyRow | null> {
    return (await this.#keysWhere(sql`k."Id" = ${id}`, sql`k."Id"`, now))[0] ?? null;
  }

  async createKey(input: Parameters<ArchiveAdmin['createKey']>[0]): Promise<CreatedKey> {
    const user = await this.requireUser(input.username);
    const name = input.name.trim();
    const problem = keyNameProblem(name);
    if (problem) throw new StoreError(problem);
    const now = input.now ?? Date.now();
    const cap = input.maxActive !== undefined ? { maxActive: input.maxActive, username: user.username } : undefined;
    const created = await insertKey(this.ctx, user.id, name, input.expiresAt ?? null, now, cap);
    return { ...created, row: (await this.#getKey(created.id, now))! };
  }

  async listKeys(options: { username?: string; now?: number } = {}): Promise<KeyRow[]> {
    const now = options.now ?? Date.now();
    if (options.username !== undefined) {
      const user = await this.requireUser(options.username);
      return this.#keysWhere(sql`k."UserId" = ${user.id}`, sql`k."Id"`, now);
    }
    return this.#keysWhere(sql`true`, sql`lower(u."Username" COLLATE "C"), k."Id"`, now);
  }

  async findKey(idOrPrefix: string, now = Date.now()): Promise<KeyRow> {
    const text = idOrPrefix.trim();
    if (/^\d+$/.test(text)) {
      const row = Number(text) <= 2_147_483_647 ? await this.#getKey(Number(text), now) : null;
      if (!row) throw new StoreError(`No API key with id ${text}.`);
      return row;
    }
    if (KEY_PATTERN.test(text)) {
      const [row] = await this.#keysWhere(sql`k."KeyHash" = ${hashKey(text)}`, sql`k."Id"`, now);
      if (!row) throw new StoreError(`No API key matches the key given (prefix ${text.slice(0, KEY_PREFIX_LENGTH)}).`);
      return row;
    }
    const rows = await this.#keysWhere(sql`k."KeyPrefix" = ${text}`, sql`k."Id"`, now);
    if (rows.length === 0) throw new StoreError(`No API key with prefix "${text}".`);
    if (rows.length > 1) throw new StoreError(`Prefix "${text}" names ${rows.length} keys; revoke by id instead.`);
    return rows[0]!;
  }

  async revokeKey(id: number, now = Date.now()): Promise<KeyRow> {
    await this.q(
      sql`UPDATE ${T.keys} SET "RevokedAt" = ${utcTimestamp(now)} WHERE "Id" = ${id} AND "RevokedAt" IS NULL`,
    );
    const row = await this.#getKey(id, now);
    if (!row) throw new StoreError(`No API key with id ${id}.`);
    return row;
  }

  /**
   * Mail Archiver's AccessLogs, newest first, with what this service adds (key prefix, client
   * address, front end) from access_log_details. Only reads are listed (Search, Open,
   * Download); the other types (sign-ins, restores, deletions, …) are Mail Archiver's own
   * events, shown on its audit page. Read rows Mail Archiver wrote itself have no details:
   * their source is "mail-archiver" and their search parameters are parsed from its text.
   */
  /** The chain of our entries (engine/postgres/access-chain.ts), in pages by id. */
  async verifyAccessLog(options: { head?: string } = {}): Promise<ChainReport> {
    const table = accessLogsTable(this.store ? await this.store.detectShape() : this.ctx);
    return verifyChain(this.q, table, options.head);
  }

  async listAccessLog(filter: { userId?: number; type?: AccessType; limit?: number } = {}): Promise<AccessLogRow[]> {
    const codes = filter.type !== undefined ? [ACCESS_TYPE_CODES[filter.type]] : Object.values(ACCESS_TYPE_CODES);
    // Mail Archiver's table, or the GoBD fork's in archive_worm (PgContext.accessLogSchema).
    const table = accessLogsTable(this.store ? await this.store.detectShape() : this.ctx);
    const rows = await this.q<RawLog>(
      sql`SELECT * FROM (
            SELECT l."Id" AS id, ${utcMs('l."Timestamp"')} AS at, l."Username" AS username,
                   COALESCE(d.user_id, (SELECT min(u."Id") FROM ${T.users} u WHERE lower(u."Username") = lower(l."Username")), 0) AS user_id,
                   l."Type" AS type_code, d.key_prefix, d.client_ip, l."EmailId" AS email_id,
                   COALESCE(d.account_id, l."MailAccountId", (SELECT e."MailAccountId" FROM ${T.emails} e WHERE e."Id" = l."EmailId")) AS account_id,
                   d.search_params, l."SearchParameters" AS search_text,
                   CASE WHEN d.access_log_id IS NULL THEN 'mail-archiver' ELSE d.source END AS source
              FROM ${table} l
              LEFT JOIN mail_archive_gateway.access_log_details d ON d.access_log_id = l."Id"
             WHERE l."Type" = ANY(${codes}::int[])) r
          WHERE ${filter.userId !== undefined ? sql`r.user_id = ${filter.userId}` : sql`true`}
          ORDER BY r.id DESC LIMIT ${filter.limit ?? 100}`,
    );
    return rows.map((r) => ({
      id: r.id,
      at: iso(r.at)!,
      username: r.username,
      userId: r.user_id,
      type: accessTypeOf(r.type_code)!,
      keyPrefix: r.key_prefix,
      clientIp: r.client_ip,
      emailId: r.email_id,
      accountId: r.account_id,
      searchParams: r.search_params ?? (r.source === 'mail-archiver' ? parseSearchText(r.search_text) : null),
      source: r.source,
    }));
  }

  async contents(): Promise<ArchiveContents> {
    const rows = await this.q<ArchiveContents>(
      sql`SELECT (SELECT count(*) FROM ${T.emails}) AS messages, (SELECT count(*) FROM ${T.accounts}) AS accounts,
                 (SELECT count(*) FROM ${T.users}) AS users`,
    );
    return rows[0]!;
  }

  async refreshSearchIndex(
    onProgress?: (indexed: number, ids?: { through: number; last: number }) => void,
    onPairs?: (through: number, goal: number) => void,
  ): Promise<{ indexed: number; pruned: number }> {
    const [top] = await this.q<{ last: number }>(sql`SELECT coalesce(max("Id"), 0) AS last FROM ${T.emails}`);
    const last = top!.last;
    const indexed = await catchUpSearchIndex(this.ctx, (p) =>
      onProgress?.(p.indexed, { through: Math.min(p.through, last), last }),
    );
    await catchUpThreads(this.ctx);
    // Documents written before migration 10 get their word pairs here rather than from a serving
    // process's builder, five seconds per look (ADR 24).
    await addWordPairs(this.ctx, Infinity, onPairs);
    return { indexed, pruned: await pruneSearchIndex(this.ctx) };
  }

  attachmentTexts(): AttachmentTextStore {
    return new PgAttachmentTexts(this.ctx);
  }

  openWriter(options: { pipelined?: boolean } = {}): MailWriter {
    const writer = new PgArchiveWriter(this.ctx, {
      ...(AFTER_BATCH ? { afterBatch: AFTER_BATCH } : {}),
      pipelined: options.pipelined ?? false,
    });
    return {
      writeBatch: (emails) => writer.writeBatch(emails),
      settle: () => writer.settle(),
      prepare: PREPARE,
      get sameIdDifferentContent() {
        return writer.sameIdDifferentContent;
      },
      // Mail Archiver's schema keeps no original; ours does, for mail imported here (docs/postgres.md).
      get originalsAttached() {
        return writer.originalsAttached;
      },
    };
  }

  async transaction<T>(work: (admin: ArchiveAdmin) => Promise<T>): Promise<T> {
    if (!this.store) return work(this);
    const shape = await this.store.detectShape();
    return this.store.transaction((query) => {
      const inner: PgContext = {
        zone: this.ctx.zone,
        isRead: shape.isRead,
        accessLogSchema: shape.accessLogSchema,
        sources: shape.sources,
        read: query,
        primary: query,
        transaction: (nested) => nested(query),
        health: () => this.ctx.health(),
        // Inside a transaction nothing reads the in-memory index: searches answer by SQL.
        snapshotSession: async () => undefined,
        searchSnapshot: () => undefined,
      };
      return work(new PgAdmin(inner, this.where, null, this.box));
    });
  }

  async close(): Promise<void> {
    await this.store?.close();
  }
}
