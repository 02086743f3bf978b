// Copies a SQLite archive (users, accounts, assignments, messages with bodies, attachments and
// their bytes) into a PostgreSQL database in Mail Archiver's schema, ids kept, with plain SQL:
// the way Mail Archiver's own rows arrive, without any call into this service. Tests use it
// to hold the very same archive in both stores.
import pg from 'pg';
import { openArchive } from '../../engine/db/open.js';

/** A naive timestamp for Mail Archiver's UTC columns. */
const naive = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString().slice(0, -1));

/** SentDate: the wall clock in Mail Archiver's display zone (docs/compat.md, "Timestamps"). */
function wallClock(ms: number, zone: string): string {
  const format = new Intl.DateTimeFormat('sv-SE', {
    timeZone: zone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  });
  const millis = String(((ms % 1000) + 1000) % 1000).padStart(3, '0');
  return `${format.format(new Date(ms)).replace(' ', 'T')}.${millis}`;
}
const hex = (b: Buffer | null) => (b === null ? null : `\\x${b.toString('hex')}`);

async function insertJson(client: pg.Client, table: string, rows: Record<string, unknown>[]): Promise<void> {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]!)
    .map((c) => `"${c}"`)
    .join(', ');
  for (let i = 0; i < rows.length; i += 500) {
    await client.query(
      `INSERT INTO mail_archiver."${table}" (${columns})
       SELECT ${columns} FROM json_populate_recordset(NULL::mail_archiver."${table}", $1::json)`,
      [JSON.stringify(rows.slice(i, i + 500))],
    );
  }
}

/**
 * Copies everything; the PostgreSQL database must hold Mail Archiver's (empty) schema. Sent
 * dates are written as wall-clock time in `timeZone` (Database:TimeZone; default UTC).
 */
export async function copySqliteArchiveToPg(
  sqlitePath: string,
  url: string,
  options: { timeZone?: string } = {},
): Promise<{ emails: number }> {
  const zone = options.timeZone ?? 'UTC';
  const db = openArchive(sqlitePath);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('BEGIN');
    type Any = Record<string, unknown>;
    const all = (q: string) => db.prepare(q).all() as Any[];
    await insertJson(
      client,
      'MailAccounts',
      all('SELECT * FROM mail_accounts ORDER BY id').map((a) => ({
        Id: a.id,
        Name: a.name,
        EmailAddress: a.email_address,
        Provider: a.provider,
        IsEnabled: a.is_enabled === 1,
        UseSSL: true,
        LastSync: naive((a.last_sync as number | null) ?? 0),
        ExcludedFolders: '',
        IsImportOnly: false,
      })),
    );
    await insertJson(
      client,
      'Users',
      all('SELECT * FROM users ORDER BY id').map((u) => ({
        Id: u.id,
        Username: u.username,
        Email: u.email ?? `${String(u.username)}@users.invalid`,
        PasswordHash: u.password_hash,
        IsAdmin: u.is_admin === 1,
        IsActive: u.is_active === 1,
        CreatedAt: naive(u.created_at as number),
        IsSelfManager: false,
        IsTwoFactorEnabled: false,
        RequiresApproval: false,
      })),
    );
    await insertJson(
      client,
      'UserMailAccounts',
      all('SELECT * FROM user_accounts ORDER BY user_id, account_id').map((ua) => ({
        UserId: ua.user_id,
        MailAccountId: ua.account_id,
      })),
    );
    const emails = all(
      `SELECT e.*, b.text_body, b.html_body, b.text_untruncated, b.html_untruncated, b.text_original, b.html_original
         FROM emails e LEFT JOIN email_bodies b ON b.email_id = e.id ORDER BY e.id`,
    );
    await insertJson(
      client,
      'ArchivedEmails',
      emails.map((e) => ({
        Id: e.id,
        MailAccountId: e.account_id,
        MessageId: e.message_id,
        Subject: e.subject,
        Body: e.text_body ?? '',
        HtmlBody: e.html_body ?? '',
        From: e.from_addr,
        To: e.to_addr,
        Cc: e.cc_addr,
        Bcc: e.bcc_addr,
        SentDate: wallClock(e.sent_date as number, zone),
        ReceivedDate: naive(e.received_date as number),
        IsOutgoing: e.is_outgoing === 1,
        HasAttachments: e.has_attachments === 1,
        FolderName: e.folder,
        IsLocked: false,
        BodyUntruncatedText: e.text_untruncated,
        BodyUntruncatedHtml: e.html_untruncated,
        OriginalBodyText: hex(e.text_original as Buffer | null),
        OriginalBodyHtml: hex(e.html_original as Buffer | null),
      })),
    );
    const chunks = db.prepare('SELECT data FROM attachment_chunks WHERE content_id = ? ORDER BY seq').pluck();
    await insertJson(
      client,
      'AttachmentContents',
      all('SELECT * FROM attachment_contents ORDER BY id').map((c) => ({
        Id: c.id,
        Hash: c.sha256,
        Content: hex(Buffer.concat(chunks.all(c.id) as Buffer[])),
        Size: c.size,
        CreatedAt: naive(0),
      })),
    );
    await insertJson(
      client,
      'EmailAttachments',
      all('SELECT * FROM attachments ORDER BY id').map((a) => ({
        Id: a.id,
        ArchivedEmailId: a.email_id,
        FileName: a.file_name,
        ContentType: a.content_type,
        Size: a.size,
        ContentId: a.is_inline === 1 ? `<inline-${String(a.id)}>` : null,
        AttachmentContentId: a.content_id,
      })),
    );
    // Identity columns: continue after the copied ids, as if the rows had been inserted here.
    for (const table of [
      'MailAccounts',
      'Users',
      'UserMailAccounts',
      'ArchivedEmails',
      'AttachmentContents',
      'EmailAttachments',
    ]) {
      await client.query(
        `SELECT setval(pg_get_serial_sequence('mail_archiver."${table}"', 'Id'),
                       coalesce((SELECT max("Id") FROM mail_archiver."${table}"), 0) + 1, false)`,
      );
    }
    await client.query('COMMIT');
    return { emails: emails.length };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    await client.end();
    db.close();
  }
}
