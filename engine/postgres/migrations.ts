// The service's own schema in a PostgreSQL archive, `mail_archive_gateway`: what it needs beyond
// Mail Archiver's tables, which it never alters. Versioned like the SQLite archive's migrations
// (engine/sqlite/migrations.ts): append, never edit one that has shipped.

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
    version: 2,
    name: 'search side-index with SQLite FTS5 tokenisation',
    sql: /* sql */ `
      -- One row per indexed message: a tsvector built in JavaScript (engine/postgres/search-index.ts)
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
  {
    version: 3,
    name: 'import dedup keys',
    sql: /* sql */ `
      -- What the importer has stored, by the same identity as the SQLite archive's
      -- emails.dedup_key (Message-ID, else a hash of the raw bytes) within an account and folder:
      -- importing the same mail twice skips it. Mail Archiver's tables have no column for it.
      -- email_id is the ArchivedEmails row; a key whose row Mail Archiver has since deleted
      -- (retention, a user) no longer counts, so the message can be imported again.
      CREATE TABLE mail_archive_gateway.import_keys (
        account_id integer NOT NULL,
        folder     text    NOT NULL,
        dedup_key  text    NOT NULL,
        email_id   integer,
        PRIMARY KEY (account_id, folder, dedup_key)
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
  {
    version: 5,
    name: 'IMAP accounts that sync themselves',
    sql: /* sql */ `
      -- What an IMAP account needs beyond Mail Archiver's MailAccounts columns (ImapServer,
      -- ImapPort, Username, UseSSL, ExcludedFolders, IsEnabled, LastSync hold the rest): the exact
      -- security mode (UseSSL cannot tell STARTTLS from none), the folder list, and the password
      -- encrypted with Sync:SecretKey (engine/rules/secrets.ts). Mail Archiver's plaintext Password
      -- column is never written by this service (docs/sync.md). No foreign keys into Mail
      -- Archiver's tables: its migrations must stay free to rebuild them.
      CREATE TABLE mail_archive_gateway.imap_accounts (
        account_id   integer PRIMARY KEY,
        security     text    NOT NULL CHECK (security IN ('tls', 'starttls', 'none')),
        password_enc text,
        folders      jsonb
      );
      -- Per account: the last pass's outcome, consecutive failures, the sync lease. Epoch ms, UTC.
      CREATE TABLE mail_archive_gateway.account_sync (
        account_id    integer PRIMARY KEY,
        outcome_at    bigint,
        outcome_error text,
        failures      integer NOT NULL DEFAULT 0,
        lease_holder  text,
        lease_until   bigint
      );
      -- Per archived folder: UIDVALIDITY as the server said it, and the highest UID archived.
      CREATE TABLE mail_archive_gateway.sync_folders (
        account_id   integer NOT NULL,
        folder       text    NOT NULL,
        uid_validity text    NOT NULL,
        last_uid     bigint  NOT NULL,
        PRIMARY KEY (account_id, folder)
      );
    `,
  },
  {
    version: 6,
    name: 'Conversations',
    sql: /* sql */ `
      -- Conversations (docs/decisions.md, ADR 14), kept beside Mail Archiver's tables, which have
      -- no column for them: one row per ArchivedEmails row looked at by the thread catch-up
      -- (engine/postgres/threads.ts), with what linking needs (normalised Message-ID and subject, sent
      -- time in epoch ms) and thread_id, the smallest member id of its conversation. Reads join
      -- ArchivedEmails, so a message Mail Archiver deleted is never shown.
      CREATE TABLE mail_archive_gateway.threads (
        email_id    integer PRIMARY KEY,
        account_id  integer NOT NULL,
        thread_id   integer NOT NULL,
        message_id  text    NOT NULL,
        subject_key text    NOT NULL,
        subject     text    NOT NULL,
        sent_ms     float8  NOT NULL
      );
      CREATE INDEX threads_thread ON mail_archive_gateway.threads (thread_id);
      CREATE INDEX threads_message_id ON mail_archive_gateway.threads (account_id, message_id);
      CREATE INDEX threads_subject ON mail_archive_gateway.threads (account_id, subject_key, sent_ms);
      -- Message ids named by References and In-Reply-To (parsed from RawHeaders), normalised.
      CREATE TABLE mail_archive_gateway.thread_refs (
        email_id integer NOT NULL,
        ref      text    NOT NULL,
        PRIMARY KEY (email_id, ref)
      );
      CREATE INDEX thread_refs_ref ON mail_archive_gateway.thread_refs (ref);
      -- The catch-up's watermark, as search_state's.
      CREATE TABLE mail_archive_gateway.thread_state (
        id              integer PRIMARY KEY CHECK (id = 1),
        threaded_through integer NOT NULL
      );
      INSERT INTO mail_archive_gateway.thread_state (id, threaded_through) VALUES (1, 0);
    `,
  },
  {
    version: 7,
    name: 'text inside attachments',
    sql: /* sql */ `
      -- What engine/attachments/extract.ts found in each attachment's bytes, keyed as the
      -- attachment handle keys them (engine/postgres/handlers.ts): an AttachmentContents "Id"
      -- (positive; Mail Archiver stores identical files once) or, for the legacy inline
      -- EmailAttachments.Content, that attachment's "Id" negated. Every content looked at has a
      -- row, whatever the outcome (status as on SQLite, migration 5 there). The words are
      -- searched through search_docs ("a:" lexemes, search-index.ts), not here.
      CREATE TABLE mail_archive_gateway.attachment_texts (
        content_id   integer PRIMARY KEY,
        status       text    NOT NULL,
        text         text    NOT NULL DEFAULT '',
        chars        integer NOT NULL DEFAULT 0,
        truncated    boolean NOT NULL DEFAULT false,
        extracted_at bigint  NOT NULL
      );
    `,
  },
  {
    version: 8,
    name: 'sign-out ends sessions on the server',
    sql: /* sql */ `
      -- When a user last signed out of the web page (SQLite migration 6): a session cookie issued
      -- before it is void. Keyed by Mail Archiver's user id; nothing of its schema changes.
      CREATE TABLE mail_archive_gateway.web_sessions_ended (
        user_id  integer PRIMARY KEY,
        ended_at bigint  NOT NULL
      );
    `,
  },
  {
    version: 9,
    name: 'OAuth 2.1 for MCP',
    sql: /* sql */ `
      -- The authorization server of docs/mcp.md (its OAuth section), as SQLite migration 7. A grant's access
      -- token is a Mail Archiver ApiKeys row (named 'OAuth: <client>', so Mail Archiver shows and
      -- can revoke it); which ApiKeys row is a grant, and everything a key has no column for, is
      -- kept here. No foreign keys into Mail Archiver's tables. Times are epoch ms, UTC.
      CREATE TABLE mail_archive_gateway.oauth_clients (
        client_id     text   PRIMARY KEY,
        name          text   NOT NULL,
        redirect_uris jsonb  NOT NULL,
        metadata      jsonb  NOT NULL,
        created_at    bigint NOT NULL
      );
      CREATE TABLE mail_archive_gateway.oauth_codes (
        code_hash        text    PRIMARY KEY,
        user_id          integer NOT NULL,
        client_id        text    NOT NULL,
        client_name      text    NOT NULL,
        redirect_uri     text    NOT NULL,
        code_challenge   text    NOT NULL,
        resource         text    NOT NULL,
        account_ids      jsonb,
        grant_expires_at bigint  NOT NULL,
        expires_at       bigint  NOT NULL,
        used_at          bigint,
        grant_id         integer
      );
      CREATE TABLE mail_archive_gateway.oauth_grants (
        id          serial  PRIMARY KEY,
        user_id     integer NOT NULL,
        key_id      integer NOT NULL UNIQUE,
        client_id   text    NOT NULL,
        client_name text    NOT NULL,
        resource    text    NOT NULL,
        account_ids jsonb,
        created_at  bigint  NOT NULL,
        expires_at  bigint  NOT NULL,
        revoked_at  bigint
      );
      CREATE TABLE mail_archive_gateway.oauth_refresh_tokens (
        token_hash text    PRIMARY KEY,
        grant_id   integer NOT NULL REFERENCES mail_archive_gateway.oauth_grants (id) ON DELETE CASCADE,
        created_at bigint  NOT NULL,
        used_at    bigint
      );
      CREATE INDEX oauth_refresh_tokens_grant ON mail_archive_gateway.oauth_refresh_tokens (grant_id);
    `,
  },
];
