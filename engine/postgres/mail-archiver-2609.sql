-- ===========================================================================
-- Mail Archiver 2609.1 .. 2609.4: the four migrations released after 2608.1
-- ---------------------------------------------------------------------------
-- Our own DDL, written from the facts in ../shared/compat/mail-archiver-since-2608.md
-- (docs/compat.md, "Migrations since 2608.1"). Applied on top of
-- mail-archiver-schema.sql (which builds 2608.1), it gives the shape of a
-- database Mail Archiver 2609.4 has migrated. None of it touches a table or
-- column this service uses: the service needs neither the tables nor the
-- index, and is correct with or without them (docs/compat.md).
--
-- Upstream's migrations are idempotent (IF NOT EXISTS); so is this file.
-- ===========================================================================

BEGIN;

-- 20260903120000_MigrateV2609_1: audit data exports, run in the background.
CREATE TABLE IF NOT EXISTS mail_archiver."AuditExportJobs" (
    "Id"                   uuid    NOT NULL,
    "Username"             text    NOT NULL,
    "Created"              timestamp without time zone NOT NULL,
    "Started"              timestamp without time zone,
    "Completed"            timestamp without time zone,
    "Status"               character varying(20) NOT NULL DEFAULT 'Queued',
    "FromDate"             timestamp without time zone NOT NULL,
    "ToDate"               timestamp without time zone NOT NULL,
    "MailAccountId"        integer,
    "MailAccountName"      text,
    "IncludeAttachments"   boolean NOT NULL DEFAULT false,
    "DataSupplierName"     text,
    "DataSupplierLocation" text,
    "DataSupplierComment"  text,
    "TotalEmails"          integer NOT NULL DEFAULT 0,
    "ProcessedEmails"      integer NOT NULL DEFAULT 0,
    "OutputFilePath"       text,
    "OutputFileSize"       bigint  NOT NULL DEFAULT 0,
    "ErrorMessage"         text,
    CONSTRAINT "PK_AuditExportJobs" PRIMARY KEY ("Id")
);
CREATE INDEX IF NOT EXISTS "IX_AuditExportJobs_Created" ON mail_archiver."AuditExportJobs" ("Created");
CREATE INDEX IF NOT EXISTS "IX_AuditExportJobs_Status"  ON mail_archiver."AuditExportJobs" ("Status");

-- 20260915120000_MigrateV2609_1_1: the folder filter's index (equality and
-- LIKE 'prefix%' ranges on FolderName, whatever the database's collation).
CREATE INDEX IF NOT EXISTS ix_archivedemails_foldername_pattern
    ON mail_archiver."ArchivedEmails" ("FolderName" text_pattern_ops);

-- 20260928120000_MigrateV2609_3: the dashboard's aggregates, filled in the background.
CREATE TABLE IF NOT EXISTS mail_archiver."DashboardStatsCache" (
    "Key"                    text   NOT NULL,
    "TotalEmails"            bigint NOT NULL DEFAULT 0,
    "TotalAttachments"       bigint NOT NULL DEFAULT 0,
    "TotalAccounts"          integer NOT NULL DEFAULT 0,
    "TotalDatabaseSizeBytes" bigint NOT NULL DEFAULT 0,
    "TopSendersJson"         jsonb,
    "EmailsByMonthJson"      jsonb,
    "EmailsPerAccountJson"   jsonb,
    "ComputedAtUtc"          timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT "PK_DashboardStatsCache" PRIMARY KEY ("Key")
);

-- 20260929120000_MigrateV2609_4: direction splits and selectable periods.
ALTER TABLE mail_archiver."DashboardStatsCache"
    ADD COLUMN IF NOT EXISTS "IncomingEmails"                bigint  NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS "OutgoingEmails"                bigint  NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS "IncomingAttachments"           bigint  NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS "OutgoingAttachments"           bigint  NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS "AccountDomains"                integer NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS "DefaultSeriesJson"             jsonb,
    ADD COLUMN IF NOT EXISTS "ComputedWithDirectionSplits"   boolean,
    ADD COLUMN IF NOT EXISTS "ComputedWithSelectablePeriods" boolean,
    DROP COLUMN IF EXISTS "TopSendersJson",
    DROP COLUMN IF EXISTS "EmailsByMonthJson";

INSERT INTO public."__EFMigrationsHistory" ("MigrationId", "ProductVersion")
SELECT m, '10.0.11'
FROM unnest(ARRAY[
    '20260903120000_MigrateV2609_1',
    '20260915120000_MigrateV2609_1_1',
    '20260928120000_MigrateV2609_3',
    '20260929120000_MigrateV2609_4'   -- newest: the schema version this release was tested with
]) AS t(m)
ON CONFLICT DO NOTHING;

COMMIT;
