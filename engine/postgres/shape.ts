// What this service reads and writes in Mail Archiver's schema, checked at start (schema.ts):
// compatibility by shape, not by migration id (docs/compat.md). A database whose migration
// history this release has never seen is served as long as every table and column below is
// there with its type; a missing one, or one with another type, is refused in one sentence
// naming it. Nothing else of Mail Archiver's schema matters to the service: other tables,
// columns, indexes and triggers may come and go.
import type pg from 'pg';

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

export interface SchemaShape {
  /** `ArchivedEmails."IsRead"` (upstream PR 501) is there, as a boolean. */
  isRead: boolean;
}

interface CatalogColumn {
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

const name = (table: string, column?: string) =>
  column === undefined ? `mail_archiver."${table}"` : `mail_archiver."${table}"."${column}"`;
const typeName = (type: string, length: number | null) => (length === null ? type : `${type}(${length})`);

/**
 * Compares the catalog with USED_COLUMNS. Returns the first problem as a sentence fragment naming
 * the table and column (the caller adds where and what to do), or the shape's optional parts.
 */
export async function checkShape(client: pg.ClientBase): Promise<{ problem: string } | { shape: SchemaShape }> {
  const { rows } = await client.query<CatalogColumn>(
    `SELECT table_name, column_name, data_type, character_maximum_length AS length,
            is_nullable = 'NO' AND column_default IS NULL AND is_identity = 'NO' AND is_generated = 'NEVER' AS required
       FROM information_schema.columns
      WHERE table_schema = 'mail_archiver' AND table_name = ANY($1::text[])`,
    [Object.keys(USED_COLUMNS)],
  );
  const tables = new Map<string, Map<string, CatalogColumn>>();
  for (const r of rows) {
    let table = tables.get(r.table_name);
    if (!table) tables.set(r.table_name, (table = new Map()));
    table.set(r.column_name, r);
  }
  for (const [table, columns] of Object.entries(USED_COLUMNS)) {
    const actual = tables.get(table);
    if (!actual) return { problem: `has no table ${name(table)}, which this service uses` };
    for (const [column, spec] of Object.entries(columns)) {
      const want = split(spec);
      const got = actual.get(column);
      if (!got) return { problem: `has no column ${name(table, column)}, which this service uses` };
      // A longer limit than ours is fine (upstream widens columns; 2608.1 did); a shorter one is not.
      const lengthOk = want.length === null || got.length === null || got.length >= want.length;
      if (got.data_type !== want.type || !lengthOk) {
        return {
          problem: `has column ${name(table, column)} as ${typeName(got.data_type, got.length)}, where this service needs ${typeName(want.type, want.length)}`,
        };
      }
    }
    // A new NOT NULL column without a default would make every insert of ours fail.
    const written = new Set(
      Object.entries(columns)
        .filter(([, spec]) => split(spec).writes)
        .map(([c]) => c),
    );
    if (written.size > 0) {
      for (const got of actual.values()) {
        if (got.required && !written.has(got.column_name)) {
          return {
            problem: `has column ${name(table, got.column_name)} NOT NULL without a default, which this service does not write when it adds rows to that table`,
          };
        }
      }
    }
  }
  const isRead = tables.get('ArchivedEmails')?.get('IsRead');
  return { shape: { isRead: isRead?.data_type === OPTIONAL_COLUMNS.ArchivedEmails.IsRead } };
}
