// The service's own schema in a PostgreSQL archive, `mail_archive_gateway`: what it needs beyond
// Mail Archiver's tables, which it never alters. Versioned like the SQLite archive's migrations
// (engine/db/migrations.ts): append, never edit one that has shipped.

export interface OwnMigration {
  version: number;
  name: string;
  sql: string;
}

export const ourMigrations: OwnMigration[] = [
  {
    version: 1,
    name: 'access-log details Mail Archiver has no columns for',
    sql: /* sql */ `
      -- One row per AccessLogs row this service writes: which key, from where, through which
      -- front end. Mail Archiver's own audit page ignores it; our access-log command shows it.
      CREATE TABLE mail_archive_gateway.access_log_details (
        access_log_id integer PRIMARY KEY,
        user_id       integer NOT NULL,
        account_id    integer,
        key_prefix    text,
        client_ip     text,
        source        text,
        search_params jsonb
      );
    `,
  },
  {
    version: 4,
    name: 'settings every gateway on this database shares',
    sql: /* sql */ `
      -- Values all gateway processes on this database must agree on, wherever they run: the key
      -- that signs web sessions (session_secret), so a session started on one host is honoured
      -- by every other without configuring Web:SessionSecret on each (docs/postgres.md).
      CREATE TABLE mail_archive_gateway.settings (
        name  text PRIMARY KEY,
        value text NOT NULL
      );
    `,
  },
];
