// The PostgreSQL archive's schema: Mail Archiver's, which this service never alters, plus the
// service's own schema `mail_archive_gateway` for what it needs beyond it (docs/postgres.md).
//
// Mail Archiver's schema is accepted by its shape (shape.ts, docs/compat.md): every table and
// column the service uses must be there with its type. Its migration history only tells an
// older schema (refused: Mail Archiver migrates it when it next starts) and one newer than this
// release was tested with (served, with one line saying so). An empty database is given the
// whole schema, history included, by the CLI.
import { readFileSync } from 'node:fs';
import type pg from 'pg';
import { ArchiveOpenError } from '../../shared/errors.js';
import { ourMigrations } from './migrations.js';
import { checkShape, queryOn } from './shape.js';

/** The oldest Mail Archiver migration whose schema has every column this service uses. */
export const MAIL_ARCHIVER_MINIMUM = '20260818120000_MigrateV2608_1';
/** The newest Mail Archiver migration this release was tested with (docs/compat.md). */
export const MAIL_ARCHIVER_TESTED = '20260929120000_MigrateV2609_4';

/**
 * Mail Archiver's schema as this service creates it in an empty database (the CLI): 2608.1, then
 * the four 2609 migrations. The files are also the tests' fixtures, read from the source tree.
 */
export const MAIL_ARCHIVER_DDL = new URL('../../../engine/postgres/mail-archiver-schema.sql', import.meta.url);
export const MAIL_ARCHIVER_2609_DDL = new URL('../../../engine/postgres/mail-archiver-2609.sql', import.meta.url);

/** Every migration id of the schemas this release was tested with, oldest first. */
export const KNOWN_MIGRATIONS: readonly string[] = [MAIL_ARCHIVER_DDL, MAIL_ARCHIVER_2609_DDL].flatMap((file) =>
  [...readFileSync(file, 'utf8').matchAll(/'(\d{14}_MigrateV[\w]+)'/g)].map((m) => m[1]!),
);

export type SchemaState =
  | { kind: 'empty' }
  | { kind: 'current' }
  | { kind: 'newer'; id: string }
  | { kind: 'older' | 'unknown'; id: string }
  | { kind: 'incompatible'; problem: string };

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
  if (!/^\d{14}_/.test(id)) return { kind: 'unknown', id };
  if (id < MAIL_ARCHIVER_MINIMUM) return { kind: 'older', id };
  const checked = await checkShape(queryOn(client));
  if ('problem' in checked) return { kind: 'incompatible', problem: checked.problem };
  return KNOWN_MIGRATIONS.includes(id) ? { kind: 'current' } : { kind: 'newer', id };
}

export function describeState(state: SchemaState, where: string): string {
  switch (state.kind) {
    case 'empty':
      return `The PostgreSQL database ${where} holds no Mail Archiver schema; create it with \`mail-archive --db <url> users add …\` (or any command that writes), or point Database:Path at a Mail Archiver database.`;
    case 'older':
      return `The Mail Archiver schema in ${where} is at migration ${state.id}, older than ${MAIL_ARCHIVER_MINIMUM} which this version of mail-archive-gateway needs; start Mail Archiver once to migrate it, then start this service again.`;
    case 'unknown':
      return `The Mail Archiver schema in ${where} is at migration ${state.id}, which this version of mail-archive-gateway does not know (it knows ${MAIL_ARCHIVER_MINIMUM} to ${MAIL_ARCHIVER_TESTED}); upgrade mail-archive-gateway.`;
    case 'incompatible':
      return `The Mail Archiver schema in ${where} ${state.problem}, so this version of mail-archive-gateway cannot serve it (it was tested with Mail Archiver up to migration ${MAIL_ARCHIVER_TESTED}); upgrade mail-archive-gateway.`;
    case 'newer':
      return `The Mail Archiver schema in ${where} is at migration ${state.id}, newer than ${MAIL_ARCHIVER_TESTED}, the newest this version of mail-archive-gateway was tested with; every table and column it uses is unchanged, so it is served.`;
    case 'current':
      return `The Mail Archiver schema in ${where} is current.`;
  }
}

/** Mail Archiver's whole schema, history included, into an empty database (one transaction per file). */
export async function createMailArchiverSchema(client: pg.ClientBase): Promise<void> {
  for (const file of [MAIL_ARCHIVER_DDL, MAIL_ARCHIVER_2609_DDL]) await client.query(readFileSync(file, 'utf8'));
}

/**
 * Checks Mail Archiver's schema and brings the service's own schema up to date. With
 * `createIfEmpty`, an empty database first gets Mail Archiver's whole schema. Several processes
 * starting together serialise on an advisory lock, so each migration runs once. `onNotice` hears
 * the one line said about a schema newer than this release was tested with.
 */
export async function prepareSchema(
  client: pg.ClientBase,
  where: string,
  options: { createIfEmpty?: boolean; onNotice?: (line: string) => void } = {},
): Promise<void> {
  await client.query('SELECT pg_advisory_lock(hashtext($1))', ['mail_archive_gateway.schema']);
  try {
    let state = await detectSchema(client);
    if (state.kind === 'empty' && options.createIfEmpty) {
      await createMailArchiverSchema(client);
      state = await detectSchema(client);
    }
    if (state.kind === 'newer') options.onNotice?.(describeState(state, where));
    else if (state.kind !== 'current') throw new ArchiveOpenError(describeState(state, where));
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
