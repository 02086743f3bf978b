// What this service reads and writes in Mail Archiver's schema, checked at start (schema.ts):
// compatibility by shape, not by migration id (docs/compat.md). A database whose migration
// history this release has never seen is served as long as every table and column below is
// there with its type; a missing one, or one with another type, is refused in one sentence
// naming it. Nothing else of Mail Archiver's schema matters to the service: other tables,
// columns, indexes and triggers may come and go.
import type pg from 'pg';
import { sql, type Sql } from './sql.js';

/**
 * A column's type as information_schema spells it (`data_type`), with `(n)` for a length limit.
 * `w` marks a column the service writes when it inserts rows into that table.
 */
type ColumnSpec = `${string}${'' | ' w'}`;

const TS = 'timestamp without time zone';

/** Per table of schema mail_archiver: each column the service uses, and its type. */
export const USED_COLUMNS: Record<string, Record<string, ColumnSpec>> = {
  MailAccounts: {
    Id: 'integer',
    Name: 'text w',
    EmailAddress: 'text w',
    ImapServer: 'text w',
    ImapPort: 'integer w',
    Username: 'text w',
    Password: 'text',
    UseSSL: 'boolean w',
    LastSync: `${TS} w`,
    IsEnabled: 'boolean w',
    ExcludedFolders: 'text w',
    Provider: 'text w',
  },
  Users: {
    Id: 'integer',
    Username: 'character varying(320) w',
    Email: 'character varying(100) w',
    PasswordHash: 'text w',
    IsAdmin: 'boolean w',
    IsActive: 'boolean w',
    CreatedAt: `${TS} w`,
  },
  UserMailAccounts: {
    UserId: 'integer w',
    MailAccountId: 'integer w',
  },
  ArchivedEmails: {
    Id: 'integer w',
    MailAccountId: 'integer w',
    MessageId: 'text w',
    Subject: 'text w',
    Body: 'text w',
    HtmlBody: 'text w',
    From: 'text w',
    To: 'text w',
    Cc: 'text w',
    Bcc: 'text w',
    SentDate: `${TS} w`,
    ReceivedDate: `${TS} w`,
    IsOutgoing: 'boolean w',
    HasAttachments: 'boolean w',
    FolderName: 'text w',
    BodyUntruncatedText: 'text w',
    BodyUntruncatedHtml: 'text w',
    OriginalBodyText: 'bytea w',
    OriginalBodyHtml: 'bytea w',
    RawHeaders: 'text w',
  },
  EmailAttachments: {
    Id: 'integer',
    ArchivedEmailId: 'integer w',
    FileName: 'text w',
    ContentType: 'text w',
    Content: 'bytea',
    Size: 'bigint w',
    AttachmentContentId: 'integer w',
    ContentId: 'text w',
  },
  AttachmentContents: {
    Id: 'integer',
    Hash: 'character varying(64) w',
    Content: 'bytea w',
    Size: 'bigint w',
  },
  ApiKeys: {
    Id: 'integer',
    UserId: 'integer w',
    Name: 'text w',
    KeyPrefix: 'character varying(16) w',
    KeyHash: 'character varying(64) w',
    CreatedAt: `${TS} w`,
    LastUsedAt: TS,
    ExpiresAt: `${TS} w`,
    RevokedAt: TS,
  },
  AccessLogs: {
    Id: 'integer',
    Username: 'text w',
    Type: 'integer w',
    Timestamp: `${TS} w`,
    EmailId: 'integer w',
    EmailSubject: 'text w',
    EmailFrom: 'text w',
    SearchParameters: 'text w',
    MailAccountId: 'integer w',
  },
};

/**
 * Columns the service uses when they are there (open upstream pull requests): with another type
 * they count as absent.
 */
export const OPTIONAL_COLUMNS = { ArchivedEmails: { IsRead: 'boolean' } } as const;

/**
 * The GoBD fork's write-once schema (docs/compat.md, "The GoBD fork's archive_worm"): it keeps
 * each message's original in "ArchivedEmailSources" and moves "AccessLogs" there behind an
 * insert-only hash chain. Both are used where they are found, by their columns.
 */
export const WORM_SCHEMA = 'archive_worm';
export const SOURCES_TABLE = 'ArchivedEmailSources';

/**
 * The names each part of a kept original may have, first match wins (case-insensitive): the
 * fork's own ("ArchivedEmailId", "RawMime", "Sha256") first, then names a variant of it may use.
 */
export const SOURCE_COLUMN_NAMES = {
  emailId: ['ArchivedEmailId', 'EmailId', 'ArchivedEmailsId'],
  content: ['RawMime', 'RawMessage', 'Raw', 'Mime', 'MimeContent', 'Eml', 'Content', 'Data'],
  sha256: ['Sha256', 'Sha256Hex', 'RawMimeSha256', 'ContentSha256', 'Hash', 'ContentHash'],
} as const;

/** archive_worm."ArchivedEmailSources" as found: its columns' actual names. */
export interface SourcesShape {
  /** The column holding the ArchivedEmails "Id". */
  emailId: string;
  /** The raw message: bytea, or text (its UTF-8 bytes are the message). */
  content: string;
  contentIsText: boolean;
  /** SHA-256 of the raw message, hex. */
  sha256: string;
}

/** Where "AccessLogs" is: Mail Archiver's schema, or the fork's (moved there, hash-chained). */
export type AccessLogSchema = 'mail_archiver' | typeof WORM_SCHEMA;

export interface SchemaShape {
  /** `ArchivedEmails."IsRead"` (upstream PR 501) is there, as a boolean. */
  isRead: boolean;
  /** The schema whose "AccessLogs" this service writes and reads. */
  accessLogSchema: AccessLogSchema;
  /** The fork's kept originals, when the table is there with columns this service recognises. */
  sources: SourcesShape | null;
}

interface CatalogColumn {
  table_schema: string;
  table_name: string;
  column_name: string;
  data_type: string;
  length: number | null;
  required: boolean;
}

const split = (spec: ColumnSpec) => {
  const [, type, length, writes] = /^(.*?)(?:\((\d+)\))?( w)?$/.exec(spec)!;
  return { type: type!, length: length === undefined ? null : Number(length), writes: writes !== undefined };
};

const name = (table: string, column?: string, schema = 'mail_archiver') =>
  column === undefined ? `${schema}."${table}"` : `${schema}."${table}"."${column}"`;
const typeName = (type: string, length: number | null) => (length === null ? type : `${type}(${length})`);

/** A catalog query: the store's Query, or a pg client's through queryOn(). */
export type CatalogQuery = <R extends object>(q: Sql) => Promise<R[]>;
export const queryOn =
  (client: pg.ClientBase): CatalogQuery =>
  async <R extends object>(q: Sql) =>
    (await client.query(q.toQuery())).rows as R[];

const TEXT_TYPES = new Set(['text', 'character varying', 'character']);
const ID_TYPES = new Set(['integer', 'bigint']);

/** The first column of `names` (case-insensitive) whose type passes `ok`. */
function pick(
  columns: Map<string, CatalogColumn>,
  names: readonly string[],
  ok: (type: string) => boolean,
): CatalogColumn | undefined {
  for (const wanted of names) {
    for (const c of columns.values()) {
      if (c.column_name.toLowerCase() === wanted.toLowerCase() && ok(c.data_type)) return c;
    }
  }
  return undefined;
}

function sourcesShape(columns: Map<string, CatalogColumn> | undefined): SourcesShape | null {
  if (!columns) return null;
  const emailId = pick(columns, SOURCE_COLUMN_NAMES.emailId, (t) => ID_TYPES.has(t));
  const content = pick(columns, SOURCE_COLUMN_NAMES.content, (t) => t === 'bytea' || t === 'text');
  const sha256 = pick(columns, SOURCE_COLUMN_NAMES.sha256, (t) => TEXT_TYPES.has(t));
  if (!emailId || !content || !sha256) return null;
  return {
    emailId: emailId.column_name,
    content: content.column_name,
    contentIsText: content.data_type === 'text',
    sha256: sha256.column_name,
  };
}

/**
 * Compares the catalog with USED_COLUMNS. Returns the first problem as a sentence fragment naming
 * the table and column (the caller adds where and what to do), or the shape's optional parts.
 */
export async function checkShape(query: CatalogQuery): Promise<{ problem: string } | { shape: SchemaShape }> {
  const rows = await query<CatalogColumn>(
    sql`SELECT table_schema, table_name, column_name, data_type, character_maximum_length AS length,
               is_nullable = 'NO' AND column_default IS NULL AND is_identity = 'NO' AND is_generated = 'NEVER' AS required
          FROM information_schema.columns
         WHERE table_schema IN ('mail_archiver', ${WORM_SCHEMA}::text)
           AND table_name = ANY(${[...Object.keys(USED_COLUMNS), SOURCES_TABLE]}::text[])
         ORDER BY table_schema, table_name, ordinal_position`,
  );
  const tables = new Map<string, Map<string, CatalogColumn>>();
  for (const r of rows) {
    const key = `${r.table_schema}.${r.table_name}`;
    let table = tables.get(key);
    if (!table) tables.set(key, (table = new Map()));
    table.set(r.column_name, r);
  }
  // "AccessLogs" is Mail Archiver's; where only the fork's moved one is there, that one.
  const accessLogSchema: AccessLogSchema =
    !tables.has('mail_archiver.AccessLogs') && tables.has(`${WORM_SCHEMA}.AccessLogs`) ? WORM_SCHEMA : 'mail_archiver';
  for (const [table, columns] of Object.entries(USED_COLUMNS)) {
    const schema = table === 'AccessLogs' ? accessLogSchema : 'mail_archiver';
    const actual = tables.get(`${schema}.${table}`);
    if (!actual) {
      return table === 'AccessLogs'
        ? {
            problem: `has no table ${name(table)} (nor ${name(table, undefined, WORM_SCHEMA)}, where the GoBD fork moves it), which this service uses`,
          }
        : { problem: `has no table ${name(table)}, which this service uses` };
    }
    for (const [column, spec] of Object.entries(columns)) {
      const want = split(spec);
      const got = actual.get(column);
      if (!got) return { problem: `has no column ${name(table, column, schema)}, which this service uses` };
      // A longer limit than ours is fine (upstream widens columns; 2608.1 did); a shorter one is not.
      const lengthOk = want.length === null || got.length === null || got.length >= want.length;
      if (got.data_type !== want.type || !lengthOk) {
        return {
          problem: `has column ${name(table, column, schema)} as ${typeName(got.data_type, got.length)}, where this service needs ${typeName(want.type, want.length)}`,
        };
      }
    }
    // A new NOT NULL column without a default would make every insert of ours fail; in the
    // fork's access log, one a BEFORE INSERT trigger fills (its hash chain) is fine.
    const written = new Set(
      Object.entries(columns)
        .filter(([, spec]) => split(spec).writes)
        .map(([c]) => c),
    );
    if (written.size === 0) continue;
    if (schema === WORM_SCHEMA) {
      const problem = await checkWormAccessLog(query, actual, new Set(Object.keys(columns)));
      if (problem) return { problem };
      continue;
    }
    for (const got of actual.values()) {
      if (got.required && !written.has(got.column_name)) {
        return {
          problem: `has column ${name(table, got.column_name, schema)} NOT NULL without a default, which this service does not write when it adds rows to that table`,
        };
      }
    }
  }
  const isRead = tables.get('mail_archiver.ArchivedEmails')?.get('IsRead');
  return {
    shape: {
      isRead: isRead?.data_type === OPTIONAL_COLUMNS.ArchivedEmails.IsRead,
      accessLogSchema,
      sources: sourcesShape(tables.get(`${WORM_SCHEMA}.${SOURCES_TABLE}`)),
    },
  };
}

/**
 * The fork's archive_worm."AccessLogs" (docs/compat.md, "The GoBD fork's archive_worm") can take
 * our rows when its "Id" has a sequence (we reserve ids from it) and every column we do not
 * write is nullable and not part of a chain (a name with hash, chain or seq), or is filled by a
 * BEFORE INSERT row trigger: the fork's chain_access_log sets "ChainSeq", "PrevHash" and "Hash".
 * Such columns and no trigger to fill them: rows we added would break the chain, so the service
 * refuses to start.
 */
async function checkWormAccessLog(
  query: CatalogQuery,
  actual: Map<string, CatalogColumn>,
  ours: Set<string>,
): Promise<string | undefined> {
  const table = name('AccessLogs', undefined, WORM_SCHEMA);
  const [found] = await query<{ sequence: string | null; filled: boolean }>(
    sql`SELECT pg_get_serial_sequence(${table}::text, 'Id') AS sequence,
               EXISTS (SELECT 1 FROM pg_trigger
                        WHERE tgrelid = to_regclass(${table}::text) AND NOT tgisinternal AND tgenabled <> 'D'
                          AND tgtype::int & 7 = 7) AS filled`, // ROW (1) | BEFORE (2) | INSERT (4)
  );
  if (!found?.sequence) {
    return `has column ${name('AccessLogs', 'Id', WORM_SCHEMA)} with no sequence behind it, which this service needs to number the entries it adds`;
  }
  const extra = [...actual.values()].filter(
    (c) => !ours.has(c.column_name) && (c.required || /hash|chain|seq/i.test(c.column_name)),
  );
  if (extra.length > 0 && !found.filled) {
    return `has ${table} with columns this service does not write (${extra.map((c) => `"${c.column_name}"`).join(', ')}) and no BEFORE INSERT trigger to fill them (entries this service added would break its chain)`;
  }
  return undefined;
}
