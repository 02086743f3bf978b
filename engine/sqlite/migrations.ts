// Versioned schema. Each migration runs once, in its own transaction, and bumps
// PRAGMA user_version; opening a file that is already current changes nothing.
// Append new migrations; never edit one that has shipped.

import { randomBytes } from 'node:crypto';
import type BetterSqlite3 from 'better-sqlite3';
import { backfillThreads } from './backfill-threads.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
  /**
   * Work SQL alone cannot do, run after `sql` in the same transaction (a backfill computed in
   * JavaScript). Written once with its migration and never edited, like the SQL.
   */
  run?: (db: BetterSqlite3.Database) => void;
}

export const migrations: Migration[] = [
  {
    version: 1,
    name: 'initial archive schema',
    sql: /* sql */ `
      CREATE TABLE users (
        id            INTEGER PRIMARY KEY,
        username      TEXT    NOT NULL COLLATE NOCASE UNIQUE,
        email         TEXT,
        password_hash TEXT,
        is_admin      INTEGER NOT NULL DEFAULT 0 CHECK (is_admin IN (0, 1)),
        is_active     INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
        created_at    INTEGER NOT NULL
      );

      -- Mail accounts hold no credentials: this service never talks to a mail provider.
      CREATE TABLE mail_accounts (
        id            INTEGER PRIMARY KEY,
        name          TEXT    NOT NULL,
        email_address TEXT    NOT NULL,
        provider      TEXT    NOT NULL DEFAULT 'IMAP',
        is_enabled    INTEGER NOT NULL DEFAULT 1 CHECK (is_enabled IN (0, 1)),
        last_sync     INTEGER
      );

      CREATE TABLE user_accounts (
        user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        account_id INTEGER NOT NULL REFERENCES mail_accounts (id) ON DELETE CASCADE,
        PRIMARY KEY (user_id, account_id)
      ) WITHOUT ROWID;
      CREATE INDEX user_accounts_account ON user_accounts (account_id);

      -- Message metadata stays narrow so that search scans and sorts touch few pages;
      -- bodies live in email_bodies. Dates are epoch milliseconds, UTC.
      CREATE TABLE emails (
        id              INTEGER PRIMARY KEY,
        account_id      INTEGER NOT NULL REFERENCES mail_accounts (id) ON DELETE CASCADE,
        folder          TEXT    NOT NULL,
        message_id      TEXT    NOT NULL DEFAULT '',
        subject         TEXT    NOT NULL DEFAULT '',
        from_addr       TEXT    NOT NULL DEFAULT '',
        to_addr         TEXT    NOT NULL DEFAULT '',
        cc_addr         TEXT    NOT NULL DEFAULT '',
        bcc_addr        TEXT    NOT NULL DEFAULT '',
        sent_date       INTEGER NOT NULL,
        received_date   INTEGER NOT NULL,
        is_outgoing     INTEGER NOT NULL DEFAULT 0 CHECK (is_outgoing IN (0, 1)),
        has_attachments INTEGER NOT NULL DEFAULT 0 CHECK (has_attachments IN (0, 1)),
        -- Message-ID when present, else a hash of the raw message: re-imports are no-ops.
        dedup_key       TEXT    NOT NULL,
        -- The message's rowid in email_fts: sent second * 2^20 + a slot (engine/search/fts-key.ts),
        -- so that the full-text index lists matches in sent-date order. "Newest 20 matches"
        -- then reads 20 entries instead of sorting every match (docs/search.md, "The planner").
        fts_key         INTEGER NOT NULL UNIQUE,
        UNIQUE (account_id, folder, dedup_key)
      );
      CREATE INDEX emails_sent          ON emails (sent_date, id);
      CREATE INDEX emails_received      ON emails (received_date, id);
      CREATE INDEX emails_account_sent  ON emails (account_id, sent_date, id);
      CREATE INDEX emails_account_folder ON emails (account_id, folder, sent_date, id);
      CREATE INDEX emails_folder_subject ON emails (folder, subject COLLATE NOCASE, id);
      -- Sort orders a search can ask for; with many matches the planner walks these.
      CREATE INDEX emails_subject ON emails (subject COLLATE NOCASE, id);
      CREATE INDEX emails_from    ON emails (from_addr COLLATE NOCASE, id);
      CREATE INDEX emails_to      ON emails (to_addr COLLATE NOCASE, id);

      -- The body fallback chain (SPEC.md, “EmailDetailDto”): original bytes, then untruncated text,
      -- then the stored text. The stored text is what the index sees: cleaned and bounded.
      CREATE TABLE email_bodies (
        email_id          INTEGER PRIMARY KEY REFERENCES emails (id) ON DELETE CASCADE,
        text_body         TEXT,
        html_body         TEXT,
        text_untruncated  TEXT,
        html_untruncated  TEXT,
        text_original     BLOB,
        html_original     BLOB,
        -- Filter tags for the full-text index (engine/search/tags.ts); not shown to anyone.
        fts_tags          TEXT    NOT NULL DEFAULT ''
      );

      -- Attachment content is stored once per SHA-256 and split in fixed-size chunks, so a
      -- download streams chunk by chunk and identical files across messages cost nothing.
      CREATE TABLE attachment_contents (
        id     INTEGER PRIMARY KEY,
        sha256 TEXT    NOT NULL UNIQUE,
        size   INTEGER NOT NULL,
        chunks INTEGER NOT NULL
      );
      CREATE TABLE attachment_chunks (
        content_id INTEGER NOT NULL REFERENCES attachment_contents (id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL,
        data       BLOB    NOT NULL,
        UNIQUE (content_id, seq)
      );
      CREATE TABLE attachments (
        id           INTEGER PRIMARY KEY,
        email_id     INTEGER NOT NULL REFERENCES emails (id) ON DELETE CASCADE,
        file_name    TEXT    NOT NULL DEFAULT '',
        content_type TEXT    NOT NULL DEFAULT 'application/octet-stream',
        size         INTEGER NOT NULL,
        is_inline    INTEGER NOT NULL DEFAULT 0,
        content_id   INTEGER NOT NULL REFERENCES attachment_contents (id)
      );
      CREATE INDEX attachments_email   ON attachments (email_id);
      CREATE INDEX attachments_content ON attachments (content_id);

      -- SPEC.md, “API key (record kept by the service)”. Only the SHA-256 of a key is kept.
      CREATE TABLE api_keys (
        id           INTEGER PRIMARY KEY,
        user_id      INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        name         TEXT    NOT NULL,
        key_prefix   TEXT    NOT NULL,
        key_hash     TEXT    NOT NULL,
        created_at   INTEGER NOT NULL,
        last_used_at INTEGER,
        expires_at   INTEGER,
        revoked_at   INTEGER
      );
      CREATE UNIQUE INDEX api_keys_hash ON api_keys (key_hash);
      CREATE INDEX api_keys_user ON api_keys (user_id);

      -- The access log outlives what it names: no foreign keys to emails or accounts.
      CREATE TABLE access_log (
        id            INTEGER PRIMARY KEY,
        user_id       INTEGER NOT NULL,
        type          TEXT    NOT NULL CHECK (type IN ('Search', 'Open', 'Download')),
        at            INTEGER NOT NULL,
        key_prefix    TEXT,
        client_ip     TEXT,
        email_id      INTEGER,
        account_id    INTEGER,
        search_params TEXT,
        source        TEXT
      );
      CREATE INDEX access_log_user_at ON access_log (user_id, at);
      CREATE INDEX access_log_at      ON access_log (at);

      -- Full-text index over subject, body, addresses and attachment file names. Contentless
      -- (the text already lives in the tables) with delete support; the triggers below keep it
      -- in step. A message's attachments are written before its body, so the body trigger sees
      -- their names.
      CREATE VIRTUAL TABLE email_fts USING fts5 (
        subject, body, from_text, to_text, cc_text, bcc_text, filenames, tags,
        content = '',
        contentless_delete = 1,
        tokenize = 'unicode61 remove_diacritics 2'
      );

      CREATE TRIGGER email_bodies_ai AFTER INSERT ON email_bodies BEGIN
        INSERT INTO email_fts (rowid, subject, body, from_text, to_text, cc_text, bcc_text, filenames, tags)
        SELECT e.fts_key, e.subject, NEW.text_body, e.from_addr, e.to_addr, e.cc_addr, e.bcc_addr,
               (SELECT group_concat(file_name, ' ') FROM attachments WHERE email_id = e.id), NEW.fts_tags
        FROM emails e WHERE e.id = NEW.email_id;
      END;
      CREATE TRIGGER email_bodies_au AFTER UPDATE OF text_body, fts_tags ON email_bodies BEGIN
        DELETE FROM email_fts WHERE rowid = (SELECT fts_key FROM emails WHERE id = OLD.email_id);
        INSERT INTO email_fts (rowid, subject, body, from_text, to_text, cc_text, bcc_text, filenames, tags)
        SELECT e.fts_key, e.subject, NEW.text_body, e.from_addr, e.to_addr, e.cc_addr, e.bcc_addr,
               (SELECT group_concat(file_name, ' ') FROM attachments WHERE email_id = e.id), NEW.fts_tags
        FROM emails e WHERE e.id = NEW.email_id;
      END;
      CREATE TRIGGER emails_au AFTER UPDATE OF subject, from_addr, to_addr, cc_addr, bcc_addr, fts_key ON emails BEGIN
        DELETE FROM email_fts WHERE rowid = OLD.fts_key;
        INSERT INTO email_fts (rowid, subject, body, from_text, to_text, cc_text, bcc_text, filenames, tags)
        SELECT NEW.fts_key, NEW.subject, b.text_body, NEW.from_addr, NEW.to_addr, NEW.cc_addr, NEW.bcc_addr,
               (SELECT group_concat(file_name, ' ') FROM attachments WHERE email_id = NEW.id), b.fts_tags
        FROM email_bodies b WHERE b.email_id = NEW.id;
      END;
      CREATE TRIGGER emails_ad AFTER DELETE ON emails BEGIN
        DELETE FROM email_fts WHERE rowid = OLD.fts_key;
      END;

      -- Bumped by every write that changes what a search can return (imports, assignments),
      -- so that cached counts can be checked for staleness with one cheap read.
      CREATE TABLE archive_state (
        id         INTEGER PRIMARY KEY CHECK (id = 1),
        generation INTEGER NOT NULL
      );
      INSERT INTO archive_state (id, generation) VALUES (1, 1);
    `,
  },
  {
    version: 2,
    name: 'IMAP accounts that sync themselves',
    sql: /* sql */ `
      -- How to reach an IMAP account's mailbox (docs/sync.md). The password is AES-256-GCM
      -- ciphertext (engine/rules/secrets.ts), never plaintext. Folder lists are JSON arrays of server
      -- paths with '/'; folders NULL means every folder. Kept apart from mail_accounts so that
      -- nothing that reads an account can serialize a credential by accident.
      CREATE TABLE imap_settings (
        account_id    INTEGER PRIMARY KEY REFERENCES mail_accounts (id) ON DELETE CASCADE,
        host          TEXT    NOT NULL,
        port          INTEGER NOT NULL CHECK (port BETWEEN 1 AND 65535),
        security      TEXT    NOT NULL CHECK (security IN ('tls', 'starttls', 'none')),
        username      TEXT    NOT NULL,
        password_enc  TEXT    NOT NULL,
        folders       TEXT,
        exclude       TEXT    NOT NULL DEFAULT '[]'
      );

      -- Per account: the last pass's outcome, consecutive failures (back-off), and the lease that
      -- keeps two sync runners off one account. Times are epoch milliseconds, UTC.
      CREATE TABLE account_sync (
        account_id    INTEGER PRIMARY KEY REFERENCES mail_accounts (id) ON DELETE CASCADE,
        outcome_at    INTEGER,
        outcome_error TEXT,
        failures      INTEGER NOT NULL DEFAULT 0,
        lease_holder  TEXT,
        lease_until   INTEGER
      );

      -- Per archived folder: the server's UIDVALIDITY (text: it is an unsigned 32-bit number,
      -- kept as the server said it) and the highest UID archived.
      CREATE TABLE sync_folders (
        account_id   INTEGER NOT NULL REFERENCES mail_accounts (id) ON DELETE CASCADE,
        folder       TEXT    NOT NULL,
        uid_validity TEXT    NOT NULL,
        last_uid     INTEGER NOT NULL,
        PRIMARY KEY (account_id, folder)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 3,
    name: 'Count rewrites of indexed mail',
    sql: /* sql */ `
      -- The in-memory search index (engine/search/bitsets) covers messages up to the highest id
      -- it has seen; new messages are noticed by id. Anything that changes or removes a message
      -- the index already holds bumps this counter instead, and the index is rebuilt. Our own
      -- writers only insert; these triggers catch everyone else (repairs, tools).
      ALTER TABLE archive_state ADD COLUMN rewrites INTEGER NOT NULL DEFAULT 0;
      CREATE TRIGGER emails_rewrite_u AFTER UPDATE OF subject, from_addr, to_addr, cc_addr, bcc_addr, fts_key,
          account_id, folder, is_outgoing, sent_date, has_attachments ON emails BEGIN
        UPDATE archive_state SET rewrites = rewrites + 1 WHERE id = 1;
      END;
      CREATE TRIGGER emails_rewrite_d AFTER DELETE ON emails BEGIN
        UPDATE archive_state SET rewrites = rewrites + 1 WHERE id = 1;
      END;
      CREATE TRIGGER email_bodies_rewrite_u AFTER UPDATE OF text_body, fts_tags ON email_bodies BEGIN
        UPDATE archive_state SET rewrites = rewrites + 1 WHERE id = 1;
      END;
      CREATE TRIGGER email_bodies_rewrite_d AFTER DELETE ON email_bodies BEGIN
        UPDATE archive_state SET rewrites = rewrites + 1 WHERE id = 1;
      END;
    `,
  },
  {
    version: 4,
    name: 'Conversations',
    sql: /* sql */ `
      -- Conversations (docs/decisions.md, ADR 14). thread_id names a message's conversation by
      -- its smallest member id; thread_subject is the normalised subject the fallback groups by
      -- (engine/rules/threads.ts). None of them is in the full-text index or the in-memory search index, and
      -- neither is in the rewrite triggers of migration 3: merging two conversations updates
      -- thread_id only, which changes no search text. SQLite does not keep raw messages, so the
      -- References and In-Reply-To of mail archived before this version are unknown; the backfill
      -- below groups it by Message-ID and subject, and re-importing the original files fills the
      -- headers in (docs/import.md, "Conversations").
      ALTER TABLE emails ADD COLUMN thread_id INTEGER;
      ALTER TABLE emails ADD COLUMN thread_subject TEXT NOT NULL DEFAULT '';
      -- 1 when the subject carried a reply or forward prefix (only such pairs group by subject).
      ALTER TABLE emails ADD COLUMN thread_reply INTEGER NOT NULL DEFAULT 0;
      CREATE INDEX emails_thread ON emails (thread_id, sent_date);
      CREATE INDEX emails_thread_subject ON emails (account_id, thread_subject, thread_reply, sent_date);
      CREATE INDEX emails_message_id ON emails (account_id, message_id);
      -- The message ids a message names in References and In-Reply-To, normalised (no brackets).
      CREATE TABLE email_refs (
        email_id INTEGER NOT NULL REFERENCES emails (id) ON DELETE CASCADE,
        ref      TEXT    NOT NULL,
        PRIMARY KEY (email_id, ref)
      ) WITHOUT ROWID;
      CREATE INDEX email_refs_ref ON email_refs (ref);
    `,
    run: backfillThreads,
  },
  {
    version: 5,
    name: 'Text inside attachments',
    sql: /* sql */ `
      -- What engine/attachments/extract.ts found in each stored attachment content (stored once
      -- per SHA-256, so a file attached to many messages is read once). Every content that was
      -- looked at has a row, whatever the outcome: status 'ok' (text holds it, maybe truncated),
      -- or why not ('encrypted', 'too large', 'timeout', 'unsupported', 'failed: ...'). Contents
      -- without a row are what \`mail-archive reindex --attachments\` still has to read.
      CREATE TABLE attachment_texts (
        content_id   INTEGER PRIMARY KEY REFERENCES attachment_contents (id) ON DELETE CASCADE,
        status       TEXT    NOT NULL,
        text         TEXT    NOT NULL DEFAULT '',
        -- Length of text in UTF-16 code units, as the API pages it (offset, maxChars).
        chars        INTEGER NOT NULL DEFAULT 0,
        truncated    INTEGER NOT NULL DEFAULT 0 CHECK (truncated IN (0, 1)),
        extracted_at INTEGER NOT NULL
      );

      -- attachment: terms (docs/search.md). One row per message, rowid = the message's fts_key
      -- as in email_fts, holding the text of all its attachments. A table of its own, not a
      -- column of email_fts: attachment text arrives after the message (after the import batch,
      -- or much later from reindex --attachments), and rewriting email_fts rows would count as a
      -- rewrite of indexed mail and rebuild the in-memory search index (migration 3).
      CREATE VIRTUAL TABLE attachment_fts USING fts5 (
        text,
        content = '',
        contentless_delete = 1,
        tokenize = 'unicode61 remove_diacritics 2'
      );
      CREATE TRIGGER emails_ad_attachment_fts AFTER DELETE ON emails BEGIN
        DELETE FROM attachment_fts WHERE rowid = OLD.fts_key;
      END;
      CREATE TRIGGER emails_au_attachment_fts AFTER UPDATE OF fts_key ON emails BEGIN
        DELETE FROM attachment_fts WHERE rowid = OLD.fts_key;
        INSERT INTO attachment_fts (rowid, text)
        SELECT NEW.fts_key, group_concat(t.text, char(10))
          FROM attachment_texts t
         WHERE t.content_id IN (SELECT content_id FROM attachments WHERE email_id = NEW.id)
           AND t.status = 'ok' AND t.text <> ''
        HAVING count(*) > 0;
      END;
    `,
  },
  {
    version: 6,
    name: 'Sign-out ends sessions on the server',
    sql: /* sql */ `
      -- When a user last signed out of the web page: a session cookie issued before it is void
      -- (gateway/web/session.ts), so a cookie copied before signing out no longer works.
      CREATE TABLE web_sessions_ended (
        user_id  INTEGER PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
        ended_at INTEGER NOT NULL
      );
    `,
  },
  {
    version: 7,
    name: 'OAuth 2.1 for MCP',
    sql: /* sql */ `
      -- The authorization server of docs/mcp.md ("OAuth"). A grant's access token is an api_keys
      -- row (named "OAuth: <client>"); these tables hold what a key has no column for. Codes and
      -- refresh tokens are stored as their SHA-256 only. Times are epoch milliseconds, UTC.
      CREATE TABLE oauth_clients (
        client_id     TEXT    PRIMARY KEY,
        name          TEXT    NOT NULL,
        redirect_uris TEXT    NOT NULL, -- JSON array, matched exactly
        metadata      TEXT    NOT NULL, -- the registration response (JSON)
        created_at    INTEGER NOT NULL
      );
      CREATE TABLE oauth_codes (
        code_hash        TEXT    PRIMARY KEY,
        user_id          INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        client_id        TEXT    NOT NULL,
        client_name      TEXT    NOT NULL,
        redirect_uri     TEXT    NOT NULL,
        code_challenge   TEXT    NOT NULL,
        resource         TEXT    NOT NULL,
        account_ids      TEXT,             -- JSON array; NULL: every account the user sees
        grant_expires_at INTEGER NOT NULL,
        expires_at       INTEGER NOT NULL,
        used_at          INTEGER,
        grant_id         INTEGER           -- the grant it was exchanged for
      );
      CREATE TABLE oauth_grants (
        id          INTEGER PRIMARY KEY,
        user_id     INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        key_id      INTEGER NOT NULL UNIQUE REFERENCES api_keys (id) ON DELETE CASCADE,
        client_id   TEXT    NOT NULL,
        client_name TEXT    NOT NULL,
        resource    TEXT    NOT NULL,
        account_ids TEXT,
        created_at  INTEGER NOT NULL,
        expires_at  INTEGER NOT NULL,
        revoked_at  INTEGER
      );
      CREATE TABLE oauth_refresh_tokens (
        token_hash TEXT    PRIMARY KEY,
        grant_id   INTEGER NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
        created_at INTEGER NOT NULL,
        used_at    INTEGER -- rotated: presenting it again revokes the grant
      );
      CREATE INDEX oauth_refresh_tokens_grant ON oauth_refresh_tokens (grant_id);
    `,
  },
  {
    version: 8,
    name: 'Originals, byte for byte',
    sql: /* sql */ `
      -- Each message's bytes as they arrived (docs/evidence.md, "Originals"), stored once per
      -- SHA-256 and compressed (engine/rules/originals.ts: codec 'br' or 'none').
      CREATE TABLE originals (
        id     INTEGER PRIMARY KEY,
        sha256 TEXT    NOT NULL UNIQUE,
        size   INTEGER NOT NULL,
        codec  TEXT    NOT NULL,
        data   BLOB    NOT NULL
      );
      -- The original a message was parsed from. Mail archived before this version has no row
      -- until the same source is imported again.
      CREATE TABLE email_originals (
        email_id    INTEGER PRIMARY KEY REFERENCES emails (id) ON DELETE CASCADE,
        original_id INTEGER NOT NULL REFERENCES originals (id)
      );
      CREATE INDEX email_originals_original ON email_originals (original_id);
    `,
  },
  {
    version: 9,
    name: 'The access log as a hash chain',
    sql: /* sql */ `
      -- SHA-256 over the previous entry's hash and this entry's fields (engine/rules/access-chain.ts;
      -- docs/evidence.md, "An access log nobody can quietly edit"). Entries written before this
      -- version have none: verification counts them as before the chain.
      ALTER TABLE access_log ADD COLUMN hash TEXT;
    `,
  },
  {
    version: 10,
    name: "Attachments' Content-IDs",
    sql: /* sql */ `
      -- The part's MIME Content-ID without its angle brackets (NewAttachment.contentId), as Mail
      -- Archiver keeps it in EmailAttachments."ContentId": what a cid: link in the HTML body names,
      -- so the web's message page can show inline images. Not content_id, which names the stored
      -- bytes (attachment_contents). Rows written before this version have none; reparse fills it
      -- for mail whose original is kept (docs/reparse.md).
      ALTER TABLE attachments ADD COLUMN mime_content_id TEXT;
    `,
  },
  {
    version: 11,
    name: 'The key that signs the saved search index',
    sql: /* sql */ `
      -- The secret <archive>.index is signed with (HMAC-SHA256, engine/search/bitsets/persist.ts;
      -- ADR 31): a file is trusted only if whoever wrote it could read this archive. One row,
      -- made here and never changed; never shown, logged or exported.
      CREATE TABLE search_index_key (
        id     INTEGER PRIMARY KEY CHECK (id = 1),
        secret BLOB    NOT NULL CHECK (length(secret) >= 32)
      );
    `,
    // node:crypto rather than SQLite's randomblob(), whose generator is not documented as one
    // for secrets.
    run: (db) => {
      db.prepare('INSERT INTO search_index_key (id, secret) VALUES (1, ?)').run(randomBytes(32));
    },
  },
  {
    version: 12,
    name: 'Packed bodies',
    sql: /* sql */ `
      -- A body of 512 bytes or more is stored as a BLOB of its UTF-8 packed with brotli, a shorter
      -- one as TEXT (engine/sqlite/body-codec.ts); rows written before stay as they are. The
      -- full-text triggers index the text: body_text(), which every connection has (open.ts).
      DROP TRIGGER email_bodies_ai;
      DROP TRIGGER email_bodies_au;
      DROP TRIGGER emails_au;
      CREATE TRIGGER email_bodies_ai AFTER INSERT ON email_bodies BEGIN
        INSERT INTO email_fts (rowid, subject, body, from_text, to_text, cc_text, bcc_text, filenames, tags)
        SELECT e.fts_key, e.subject, body_text(NEW.text_body), e.from_addr, e.to_addr, e.cc_addr, e.bcc_addr,
               (SELECT group_concat(file_name, ' ') FROM attachments WHERE email_id = e.id), NEW.fts_tags
        FROM emails e WHERE e.id = NEW.email_id;
      END;
      CREATE TRIGGER email_bodies_au AFTER UPDATE OF text_body, fts_tags ON email_bodies BEGIN
        DELETE FROM email_fts WHERE rowid = (SELECT fts_key FROM emails WHERE id = OLD.email_id);
        INSERT INTO email_fts (rowid, subject, body, from_text, to_text, cc_text, bcc_text, filenames, tags)
        SELECT e.fts_key, e.subject, body_text(NEW.text_body), e.from_addr, e.to_addr, e.cc_addr, e.bcc_addr,
               (SELECT group_concat(file_name, ' ') FROM attachments WHERE email_id = e.id), NEW.fts_tags
        FROM emails e WHERE e.id = NEW.email_id;
      END;
      CREATE TRIGGER emails_au AFTER UPDATE OF subject, from_addr, to_addr, cc_addr, bcc_addr, fts_key ON emails BEGIN
        DELETE FROM email_fts WHERE rowid = OLD.fts_key;
        INSERT INTO email_fts (rowid, subject, body, from_text, to_text, cc_text, bcc_text, filenames, tags)
        SELECT NEW.fts_key, NEW.subject, body_text(b.text_body), NEW.from_addr, NEW.to_addr, NEW.cc_addr, NEW.bcc_addr,
               (SELECT group_concat(file_name, ' ') FROM attachments WHERE email_id = NEW.id), b.fts_tags
        FROM email_bodies b WHERE b.email_id = NEW.id;
      END;
    `,
  },
];
