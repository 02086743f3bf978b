// Copies a SQLite archive into a PostgreSQL database in Mail Archiver's schema, row by row, the
// way Mail Archiver itself stores them (docs/compat.md): so that the very same fixture or
// generated archive can be served by either store and the answers compared. Ids are kept, so a
// test's known message, attachment and key ids hold on both stores.
import { createHash } from 'node:crypto';
import pg from 'pg';
import Database from '../../engine/sqlite/driver.js';
import { addFunctions } from '../../engine/sqlite/open.js';

type Row = Record<string, unknown>;

/** Rows per INSERT statement. */
const BATCH = 200;

async function insertRows(client: pg.ClientBase, table: string, columns: string[], rows: unknown[][]): Promise<void> {
  for (let i = 0; i < rows.length; i += BATCH) {
    const slice = rows.slice(i, i + BATCH);
    const values: unknown[] = [];
    const tuples = slice.map((row) => {
      const marks = row.map((v) => {
        values.push(v);
        return `$${values.length}`;
      });
      return `(${marks.join(', ')})`;
    });
    await client.query(
      `INSERT INTO mail_archiver."${table}" (${columns.map((c) => `"${c}"`).join(', ')}) VALUES ${tuples.join(', ')}`,
      values,
    );
  }
}

/** Epoch ms to a naive UTC timestamp text, as Mail Archiver stores UTC columns. */
const utc = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString().replace('Z', ''));

/** Epoch ms to naive wall-clock text in `zone`, as Mail Archiver stores SentDate. */
function wallClock(ms: number, zone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  );
  const millis = String(ms % 1000).padStart(3, '0');
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}.${millis}`;
}

export async function copySqliteToPostgres(sqlitePath: string, url: string, options: { timeZone?: string } = {}) {
  const zone = options.timeZone ?? 'UTC';
  const db = new Database(sqlitePath, { readonly: true });
  addFunctions(db); // body_text(): a long body is stored packed (engine/sqlite/body-codec.ts)
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('BEGIN');
    const all = (sql: string) => db.prepare(sql).all() as Row[];
    await insertRows(
      client,
      'Users',
      ['Id', 'Username', 'Email', 'PasswordHash', 'IsAdmin', 'IsActive', 'CreatedAt'],
      all('SELECT * FROM users ORDER BY id').map((u) => [
        u.id,
        u.username,
        // Mail Archiver requires a unique e-mail address per user.
        (u.email as string | null) ?? `${String(u.username).toLowerCase()}@users.invalid`,
        u.password_hash,
        u.is_admin === 1,
        u.is_active === 1,
        utc(u.created_at as number),
      ]),
    );
    await insertRows(
      client,
      'MailAccounts',
      ['Id', 'Name', 'EmailAddress', 'Provider', 'IsEnabled', 'LastSync', 'UseSSL'],
      all('SELECT * FROM mail_accounts ORDER BY id').map((a) => [
        a.id,
        a.name,
        a.email_address,
        a.provider,
        a.is_enabled === 1,
        utc((a.last_sync as number | null) ?? 0), // 1970-01-01: never synced
        true,
      ]),
    );
    await insertRows(
      client,
      'UserMailAccounts',
      ['UserId', 'MailAccountId'],
      all('SELECT * FROM user_accounts').map((r) => [r.user_id, r.account_id]),
    );
    const refsOf = db.prepare('SELECT ref FROM email_refs WHERE email_id = ? ORDER BY ref').pluck();
    await insertRows(
      client,
      'ArchivedEmails',
      [
        'Id',
        'MailAccountId',
        'MessageId',
        'Subject',
        'Body',
        'HtmlBody',
        'From',
        'To',
        'Cc',
        'Bcc',
        'SentDate',
        'ReceivedDate',
        'IsOutgoing',
        'HasAttachments',
        'FolderName',
        'BodyUntruncatedText',
        'BodyUntruncatedHtml',
        'OriginalBodyText',
        'OriginalBodyHtml',
        'RawHeaders',
      ],
      all(
        `SELECT e.*, b.*, body_text(b.text_body) AS text_plain, body_text(b.html_body) AS html_plain
           FROM emails e LEFT JOIN email_bodies b ON b.email_id = e.id ORDER BY e.id`,
      ).map((e) => [
        e.id,
        e.account_id,
        e.message_id,
        e.subject,
        e.text_plain ?? '',
        e.html_plain ?? '',
        e.from_addr,
        e.to_addr,
        e.cc_addr,
        e.bcc_addr,
        wallClock(e.sent_date as number, zone),
        utc(e.received_date as number),
        e.is_outgoing === 1,
        e.has_attachments === 1,
        e.folder,
        e.text_untruncated,
        e.html_untruncated,
        e.text_original,
        e.html_original,
        // SQLite keeps the References and In-Reply-To ids, not the header block: written back as
        // the headers Mail Archiver would have stored, so conversations link the same on both.
        rawHeaders(e.message_id as string, refsOf.all(e.id) as string[]),
      ]),
    );
    const contents = all('SELECT * FROM attachment_contents ORDER BY id');
    const chunks = db.prepare('SELECT data FROM attachment_chunks WHERE content_id = ? ORDER BY seq').pluck();
    for (const c of contents) {
      const bytes = Buffer.concat(chunks.all(c.id) as Buffer[]);
      const hash = createHash('sha256').update(bytes).digest('hex');
      await client.query(
        'INSERT INTO mail_archiver."AttachmentContents" ("Id", "Hash", "Content", "Size") VALUES ($1, $2, $3, $4)',
        [c.id, hash, bytes, bytes.length],
      );
    }
    await insertRows(
      client,
      'EmailAttachments',
      ['Id', 'ArchivedEmailId', 'FileName', 'ContentType', 'Size', 'AttachmentContentId'],
      all('SELECT * FROM attachments ORDER BY id').map((a) => [
        a.id,
        a.email_id,
        a.file_name,
        a.content_type,
        a.size,
        a.content_id,
      ]),
    );
    await insertRows(
      client,
      'ApiKeys',
      ['Id', 'UserId', 'Name', 'KeyPrefix', 'KeyHash', 'CreatedAt', 'LastUsedAt', 'ExpiresAt', 'RevokedAt'],
      all('SELECT * FROM api_keys ORDER BY id').map((k) => [
        k.id,
        k.user_id,
        k.name,
        k.key_prefix,
        k.key_hash,
        utc(k.created_at as number),
        utc(k.last_used_at as number | null),
        utc(k.expires_at as number | null),
        utc(k.revoked_at as number | null),
      ]),
    );
    // Explicit ids leave the identity sequences behind: move them past the copied rows.
    for (const table of [
      'Users',
      'MailAccounts',
      'UserMailAccounts',
      'ArchivedEmails',
      'EmailAttachments',
      'ApiKeys',
      'AttachmentContents',
    ]) {
      await client.query(
        `SELECT setval(pg_get_serial_sequence('mail_archiver."${table}"', 'Id'),
                       GREATEST((SELECT max("Id") FROM mail_archiver."${table}"), 1))`,
      );
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    await client.end();
    db.close();
  }
}

/** A header block with the message's References, or null when it names none (as a bare import). */
function rawHeaders(messageId: string, refs: string[]): string | null {
  if (refs.length === 0) return null;
  return `Message-ID: ${messageId}\r\nReferences: ${refs.map((r) => `<${r}>`).join('\r\n ')}\r\n`;
}
