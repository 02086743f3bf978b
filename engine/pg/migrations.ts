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
        key_prefix    text,
        client_ip     text,
        source        text,
        search_params jsonb
      );
    `,
  },
  {
    version: 2,
    name: 'search side-index with SQLite FTS5 tokenisation',
    sql: /* sql */ `
      -- One row per indexed message: a tsvector built in JavaScript (engine/pg/search-index.ts)
      -- with the tokenisation of the SQLite store's FTS5 index, each lexeme qualified by its
      -- field ("s:" subject, "b:" body, "f:" from, "t:" to, "c:" cc, "k:" bcc, "n:" attachment
      -- file names, "g:" hidden tags), positions kept for phrases. Searches join it to
      -- ArchivedEmails, so a message deleted there is never found; its row here is pruned later.
      CREATE TABLE mail_archive_gateway.search_docs (
        email_id integer PRIMARY KEY,
        doc      tsvector NOT NULL
      );
      CREATE INDEX search_docs_doc ON mail_archive_gateway.search_docs USING gin (doc);
      -- The catch-up's watermark: every ArchivedEmails "Id" up to it has been looked at.
      CREATE TABLE mail_archive_gateway.search_state (
        id              integer PRIMARY KEY CHECK (id = 1),
        indexed_through integer NOT NULL
      );
      INSERT INTO mail_archive_gateway.search_state (id, indexed_through) VALUES (1, 0);
    `,
  },
];
