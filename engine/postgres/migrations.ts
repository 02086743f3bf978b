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
  {
    version: 10,
    name: 'word pairs in the search side-index',
    sql: /* sql */ `
      -- Each side-index document also holds its adjacent word pairs, one lexeme per pair and field
      -- ('B:that time': the body has 'b:that' at some position p and 'b:time' at p + 1), derived
      -- from the document's own stored positions, so a pair lexeme is exactly what the phrase
      -- 'b:that' <-> 'b:time' matches. GIN then answers a two-word phrase from one posting list,
      -- without reading each candidate's document (docs/decisions.md, ADR 24). A document whose
      -- pairs do not fit tsvector's limits gets '_:unpaired' instead and is checked by position.
      CREATE FUNCTION mail_archive_gateway.with_pairs(doc tsvector) RETURNS tsvector
      LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
        WITH base AS (
          SELECT ts_delete(doc, ARRAY(SELECT u.lexeme FROM unnest(doc) u WHERE u.lexeme !~ '^[a-z]:')) AS doc
        ), at AS (
          SELECT left(u.lexeme, 1) AS f, substr(u.lexeme, 3) AS w, p
            FROM base, unnest(base.doc) u, unnest(u.positions) p
        ), pairs AS (
          SELECT DISTINCT upper(a.f) || ':' || a.w || ' ' || b.w AS lex
            FROM at a JOIN at b ON b.f = a.f AND b.p = a.p + 1
        )
        SELECT CASE
          WHEN (SELECT coalesce(max(octet_length(lex)), 0) FROM pairs) <= 2046
           AND (SELECT coalesce(sum(octet_length(lex)), 0) FROM pairs)
             + (SELECT coalesce(sum(octet_length(l)), 0) FROM unnest(tsvector_to_array(base.doc)) l) <= 1000000
          THEN base.doc || array_to_tsvector(ARRAY(SELECT lex FROM pairs))
          ELSE base.doc || array_to_tsvector(ARRAY['_:unpaired'])
        END FROM base
      $f$;
      CREATE FUNCTION mail_archive_gateway.search_docs_pairs() RETURNS trigger
      LANGUAGE plpgsql AS $f$
        BEGIN
          NEW.doc := mail_archive_gateway.with_pairs(NEW.doc);
          RETURN NEW;
        END
      $f$;
      -- Every writer gets pairs, whichever release it runs: the trigger, not the JavaScript that
      -- builds the document, adds them.
      CREATE TRIGGER search_docs_pairs BEFORE INSERT OR UPDATE OF doc ON mail_archive_gateway.search_docs
        FOR EACH ROW EXECUTE FUNCTION mail_archive_gateway.search_docs_pairs();
      -- Documents written before this migration are given their pairs in batches, in id order, by
      -- the index builder (search-index.ts addWordPairs): pairs_through is how far it got,
      -- pairs_goal the highest document then (the trigger's lock waited for writers before it).
      -- Searches use the pairs once pairs_through reaches pairs_goal.
      ALTER TABLE mail_archive_gateway.search_state ADD COLUMN pairs_through integer NOT NULL DEFAULT 0,
        ADD COLUMN pairs_goal integer NOT NULL DEFAULT 0;
      UPDATE mail_archive_gateway.search_state
         SET pairs_goal = (SELECT coalesce(max(email_id), 0) FROM mail_archive_gateway.search_docs);
    `,
  },
  {
    version: 11,
    name: 'originals of mail imported here',
    sql: /* sql */ `
      -- Each message's bytes as they arrived, for mail this service imports or syncs into Mail
      -- Archiver's tables, which have no place for them (docs/postgres.md, "Originals and
      -- reconstructions"): stored once per SHA-256, compressed as on SQLite
      -- (engine/rules/originals.ts), so the stored bytes are not compressed again.
      CREATE TABLE mail_archive_gateway.originals (
        id     integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        sha256 text    NOT NULL UNIQUE,
        size   bigint  NOT NULL,
        codec  text    NOT NULL,
        data   bytea   NOT NULL
      );
      ALTER TABLE mail_archive_gateway.originals ALTER COLUMN data SET STORAGE EXTERNAL;
      -- Which ArchivedEmails row each belongs to. A row Mail Archiver deletes leaves its link
      -- here, never served (the message is looked up first).
      CREATE TABLE mail_archive_gateway.email_originals (
        email_id    integer PRIMARY KEY,
        original_id integer NOT NULL REFERENCES mail_archive_gateway.originals (id)
      );
    `,
  },
  {
    version: 12,
    name: 'the access log as a hash chain',
    sql: /* sql */ `
      -- Each of our entries' SHA-256 over the previous one's and its own AccessLogs and details
      -- fields (engine/postgres/access-chain.ts). Entries written before this version have none.
      ALTER TABLE mail_archive_gateway.access_log_details ADD COLUMN hash text;
    `,
  },
  {
    version: 13,
    name: 'documents that come with their word pairs',
    sql: /* sql */ `
      -- This release builds each document's word pairs in JavaScript (search-index.ts
      -- documentVector), exactly as with_pairs derives them: with_pairs cost the server 1.5 ms a
      -- document, the larger part of writing a message. The trigger keeps a document that holds
      -- pairs (or the '_:unpaired' mark) and still pairs one that has none: a document written
      -- by an earlier release during a rolling restart, and addWordPairs' rewrite of old ones.
      -- A document of one word has no pairs either way; pairing it again costs next to nothing.
      CREATE OR REPLACE FUNCTION mail_archive_gateway.search_docs_pairs() RETURNS trigger
      LANGUAGE plpgsql AS $f$
        BEGIN
          -- A lexeme of a pair's field, or the mark: a few binary searches of the document.
          IF NOT NEW.doc @@ $q$'S:':* | 'B:':* | 'F:':* | 'T:':* | 'C:':* | 'K:':* | 'N:':* | 'A:':* | '_:unpaired'$q$::tsquery THEN
            NEW.doc := mail_archive_gateway.with_pairs(NEW.doc);
          END IF;
          RETURN NEW;
        END
      $f$;
    `,
  },
  {
    version: 14,
    name: 'the key that signs the saved search index',
    sql: /* sql */ `
      -- The secret the saved search index file is signed with (HMAC-SHA256,
      -- engine/search/bitsets/persist.ts; ADR 31): Engine:SearchIndexFile may sit where writing is
      -- easier than writing to this database, so a file is trusted only if whoever wrote it could
      -- read this row. One row, made here and never changed; never shown, logged or exported.
      -- Random from the server's strong generator without an extension (gen_random_uuid is core
      -- since PostgreSQL 13): two UUIDs' 244 random bits, hashed to 32 bytes.
      CREATE TABLE mail_archive_gateway.search_index_key (
        id     integer PRIMARY KEY CHECK (id = 1),
        secret bytea   NOT NULL CHECK (length(secret) >= 32)
      );
      INSERT INTO mail_archive_gateway.search_index_key (id, secret)
        VALUES (1, sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')));
    `,
  },
  {
    version: 15,
    name: 'search documents compressed with lz4',
    sql: /* sql */ `
      -- A document (about 10 KB of lexemes and word pairs for typical mail) is compressed as it is
      -- stored. With pglz, the default, storing one took the server 0.16 ms, and three in five
      -- were then kept uncompressed (too little gain); with lz4 0.07 ms, every one compressed,
      -- the table a quarter smaller, and reads decompress faster (docs/decisions.md, ADR 28).
      -- Documents already stored keep theirs until rewritten. A server without lz4 keeps pglz.
      DO $do$ BEGIN
        ALTER TABLE mail_archive_gateway.search_docs ALTER COLUMN doc SET COMPRESSION lz4;
      EXCEPTION WHEN feature_not_supported THEN NULL;
      END $do$;
    `,
  },
];
