// The PostgreSQL archive's schema: Mail Archiver's, which this service never alters, plus the
// service's own schema `mail_archive_gateway` for what it needs beyond it (docs/postgres.md).
//
// Mail Archiver's version is the newest id in EF Core's history table. This service knows one
// version's shape (docs/compat.md); it refuses an older one (Mail Archiver migrates it when it
// next starts) and a newer or unknown one (this service would have to be upgraded), each with
// one sentence. An empty database is given the whole schema, history included, by the CLI.
import { readFileSync } from 'node:fs';
import type pg from 'pg';
import { ArchiveOpenError } from '../db/open.js';
import { ourMigrations } from './migrations.js';

/** The Mail Archiver migration this service's queries are written against. */
export const MAIL_ARCHIVER_VERSION = '20260818120000_MigrateV2608_1';

/** The schema file is also the tests' fixture: one DDL, read from the source tree. */
export const MAIL_ARCHIVER_DDL = new URL('../../../engine/pg/mail-archiver-schema.sql', import.meta.url);

export type SchemaState = { kind: 'empty' } | { kind: 'current' } | { kind: 'older' | 'unknown'; id: string };

export async function detectSchema(client: pg.ClientBase): Promise<SchemaState> {
  const exists = await client.query<{ history: boolean; app: boolean }>(
    `SELECT to_regclass('public."__EFMigrationsHistory"') IS NOT NULL AS history,
            EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'mail_archiver') AS app`,
  );
  const { history, app } = exists.rows[0]!;
  if (!history) return app ? { kind: 'unknown', id: '(none)' } : { kind: 'empty' };
  const newest = await client.query<{ id: string | null }>(
    'SELECT max("MigrationId") AS id FROM public."__EFMigrationsHistory"',
  );
  const id = newest.rows[0]?.id ?? null;
  if (id === null) return app ? { kind: 'unknown', id: '(none)' } : { kind: 'empty' };
  if (id === MAIL_ARCHIVER_VERSION) return { kind: 'current' };
  return id < MAIL_ARCHIVER_VERSION && /^\d{14}_/.test(id) ? { kind: 'older', id } : { kind: 'unknown', id };
}

export function describeState(state: SchemaState, where: string): string {
  switch (state.kind) {
    case 'empty':
      return `The PostgreSQL database ${where} holds no Mail Archiver schema; create it with \`mail-archive --db <url> users add …\` (or any command that writes), or point Database:Path at a Mail Archiver database.`;
    case 'older':
      return `The Mail Archiver schema in ${where} is at migration ${state.id}, older than ${MAIL_ARCHIVER_VERSION} which this version of mail-archive-gateway needs; start Mail Archiver once to migrate it, then start this service again.`;
    case 'unknown':
      return `The Mail Archiver schema in ${where} is at migration ${state.id}, which this version of mail-archive-gateway does not know (it knows ${MAIL_ARCHIVER_VERSION}); upgrade mail-archive-gateway.`;
    case 'current':
      return `The Mail Archiver schema in ${where} is current.`;
  }
}

/**
 * Checks Mail Archiver's version and brings the service's own schema up to date. With
 * `createIfEmpty`, an empty database first gets Mail Archiver's whole schema. Several processes
 * starting together serialise on an advisory lock, so each migration runs once.
 */
export async function prepareSchema(
  client: pg.ClientBase,
  where: string,
  options: { createIfEmpty?: boolean } = {},
): Promise<void> {
  await client.query('SELECT pg_advisory_lock(hashtext($1))', ['mail_archive_gateway.schema']);
  try {
    let state = await detectSchema(client);
    if (state.kind === 'empty' && options.createIfEmpty) {
      // The file is one transaction (BEGIN … COMMIT) of plain DDL.
      await client.query(readFileSync(MAIL_ARCHIVER_DDL, 'utf8'));
      state = await detectSchema(client);
    }
    if (state.kind !== 'current') throw new ArchiveOpenError(describeState(state, where));
    await migrateOwnSchema(client);
  } finally {
    await client.query('SELECT pg_advisory_unlock(hashtext($1))', ['mail_archive_gateway.schema']);
  }
}

export const OWN_SCHEMA_VERSION = ourMigrations.at(-1)!.version;

/** The version of our schema, or null when it has not been created yet. */
async function ownSchemaVersion(client: pg.ClientBase): Promise<number | null> {
  const [probe] = (
    await client.query<{ present: boolean }>(
      `SELECT to_regclass('mail_archive_gateway.schema_version') IS NOT NULL AS present`,
    )
  ).rows;
  if (!probe?.present) return null;
  return (
    (await client.query<{ version: number }>('SELECT version FROM mail_archive_gateway.schema_version')).rows[0]
      ?.version ?? null
  );
}

async function migrateOwnSchema(client: pg.ClientBase): Promise<void> {
  // A current schema needs no DDL, so a role without CREATE on the database starts once the
  // schema exists (CREATE SCHEMA IF NOT EXISTS checks that privilege before it looks;
  // docs/postgres.md, "Privileges").
  if ((await ownSchemaVersion(client)) === OWN_SCHEMA_VERSION) return;
  await client.query(`CREATE SCHEMA IF NOT EXISTS mail_archive_gateway;
    CREATE TABLE IF NOT EXISTS mail_archive_gateway.schema_version (
      id integer PRIMARY KEY CHECK (id = 1), version integer NOT NULL);
    INSERT INTO mail_archive_gateway.schema_version (id, version) VALUES (1, 0) ON CONFLICT DO NOTHING;`);
  const current = (await client.query<{ version: number }>('SELECT version FROM mail_archive_gateway.schema_version'))
    .rows[0]!.version;
  if (current > OWN_SCHEMA_VERSION) {
    throw new ArchiveOpenError(
      `The database's mail_archive_gateway schema is at version ${current}, newer than this program knows (${OWN_SCHEMA_VERSION}); upgrade mail-archive-gateway.`,
    );
  }
  for (const m of ourMigrations) {
    if (m.version <= current) continue;
    await client.query('BEGIN');
    try {
      await client.query(m.sql);
      await client.query('UPDATE mail_archive_gateway.schema_version SET version = $1', [m.version]);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK');
      throw err;
    }
  }
}
