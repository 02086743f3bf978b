// A small, fully known archive on a real SQLite file, for tests of every layer.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openArchive, type Db } from '../../engine/sqlite/open.js';
import { addAccount } from '../../engine/sqlite/accounts.js';
import { createKey } from '../../engine/sqlite/keys.js';
import { addUser, assignAccount, setUserActive } from '../../engine/sqlite/users.js';
import { ArchiveWriter } from '../../engine/sqlite/writer.js';
import { dedupKeyFor, type NewEmail } from '../../engine/rules/new-email.js';

export function tempDir(prefix = 'mag-test-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface Fixture {
  dir: string;
  dbPath: string;
  accounts: { work: number; personal: number; shared: number };
  users: { admin: number; alice: number; bob: number; carol: number };
  keys: {
    /** admin: sees everything */
    admin: string;
    /** alice: assigned work + shared */
    alice: string;
    /** bob: assigned personal only */
    bob: string;
    /** carol: no accounts assigned */
    carol: string;
    /** owned by an inactive user */
    inactive: string;
    expired: string;
    revoked: string;
  };
  emails: Record<string, number>;
  attachments: Record<string, number>;
  cleanup: () => void;
}

const T = (iso: string) => Date.parse(iso);

export function email(partial: Partial<NewEmail> & Pick<NewEmail, 'accountId' | 'subject'>): NewEmail {
  const messageId = partial.messageId ?? `<${Math.random().toString(36).slice(2)}@test>`;
  return {
    folder: 'INBOX',
    from: 'sender@example.com',
    to: 'rcpt@example.com',
    cc: '',
    bcc: '',
    sentDate: T('2024-01-01T00:00:00Z'),
    receivedDate: partial.sentDate ?? T('2024-01-01T00:00:00Z'),
    isOutgoing: false,
    textBody: 'hello',
    htmlBody: null,
    attachments: [],
    dedupKey: dedupKeyFor(messageId, ''),
    ...partial,
    messageId,
  };
}

/** Builds the standard fixture: three accounts, four users, keys in every state, a dozen messages. */
export function createFixture(options: { bodyLimit?: number } = {}): Fixture {
  const { dir, cleanup } = tempDir();
  const dbPath = join(dir, 'archive.db');
  const db = openArchive(dbPath);
  try {
    return { dir, dbPath, cleanup, ...populate(db, options) };
  } finally {
    db.close();
  }
}

function populate(db: Db, options: { bodyLimit?: number }) {
  const work = addAccount(db, { name: 'Work', emailAddress: 'alice@work.example', provider: 'IMAP' }).id;
  const personal = addAccount(db, { name: 'Personal', emailAddress: 'bob@home.example', provider: 'M365' }).id;
  const shared = addAccount(db, { name: 'Shared', emailAddress: 'team@work.example' }).id;

  const admin = addUser(db, { username: 'admin', isAdmin: true }).id;
  const alice = addUser(db, { username: 'alice' }).id;
  const bob = addUser(db, { username: 'bob' }).id;
  const carol = addUser(db, { username: 'carol' }).id;
  addUser(db, { username: 'dave' });
  assignAccount(db, 'alice', work);
  assignAccount(db, 'alice', shared);
  assignAccount(db, 'bob', personal);
  assignAccount(db, 'dave', work);
  setUserActive(db, 'dave', false);

  const keys = {
    admin: createKey(db, { username: 'admin', name: 'admin key' }).key,
    alice: createKey(db, { username: 'alice', name: 'alice key' }).key,
    bob: createKey(db, { username: 'bob', name: 'bob key' }).key,
    carol: createKey(db, { username: 'carol', name: 'carol key' }).key,
    inactive: createKey(db, { username: 'dave', name: 'dave key' }).key,
    expired: createKey(db, { username: 'alice', name: 'old', expiresAt: Date.now() - 60_000 }).key,
    revoked: '',
  };
  const revoked = createKey(db, { username: 'alice', name: 'revoked' });
  db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ?').run(Date.now(), revoked.id);
  keys.revoked = revoked.key;

  const writer = new ArchiveWriter(db, options.bodyLimit !== undefined ? { bodyLimit: options.bodyLimit } : {});
  const emails: Record<string, number> = {};
  const add = (name: string, e: NewEmail) => {
    emails[name] = writer.add(e)!;
  };
  writer.batch(() => {
    add(
      'budget',
      email({
        accountId: work,
        subject: 'Quarterly budget review',
        from: 'Carol Finance <carol@work.example>',
        to: 'alice@work.example',
        cc: 'boss@work.example',
        sentDate: T('2024-03-05T09:30:00Z'),
        receivedDate: T('2024-03-05T09:31:00Z'),
        textBody: 'Please review the attached budget spreadsheet.',
        htmlBody: '<p>Please review the attached <b>budget</b> spreadsheet.</p>',
        attachments: [
          {
            fileName: 'budget "Q1" €.xlsx',
            contentType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
            content: Buffer.from('fake xlsx bytes'),
          },
          { fileName: 'notes.txt', contentType: 'text/plain', content: Buffer.from('line one\nline two\n') },
        ],
      }),
    );
    add(
      'lunch',
      email({
        accountId: work,
        subject: 'Lunch on Friday?',
        from: 'alice@work.example',
        to: 'dan@work.example',
        sentDate: T('2024-03-07T12:00:00Z'),
        isOutgoing: true,
        textBody: 'Shall we try the new ramen place?',
      }),
    );
    add(
      'invoice',
      email({
        accountId: work,
        folder: 'INBOX/Invoices',
        subject: 'Invoice 2024-017',
        from: 'billing@vendor.example',
        to: 'alice@work.example',
        sentDate: T('2024-02-10T08:00:00Z'),
        textBody: 'Invoice attached. Total due: 1,200 EUR.',
        attachments: [
          { fileName: 'notes.txt', contentType: 'text/plain', content: Buffer.from('line one\nline two\n') },
        ],
      }),
    );
    add(
      'archived',
      email({
        accountId: work,
        folder: 'Archive/2023/Q4',
        subject: 'Year end party',
        from: 'hr@work.example',
        to: 'all@work.example',
        sentDate: T('2023-12-15T17:00:00Z'),
        textBody: 'Join us for the year end party.',
      }),
    );
    add(
      'sent',
      email({
        accountId: work,
        folder: 'Sent',
        subject: 'Re: Quarterly budget review',
        from: 'alice@work.example',
        to: 'carol@work.example',
        bcc: 'archive@work.example',
        sentDate: T('2024-03-06T10:00:00Z'),
        isOutgoing: true,
        textBody: 'Looks good to me.',
      }),
    );
    add(
      'family',
      email({
        accountId: personal,
        subject: 'Family reunion',
        from: 'mom@home.example',
        to: 'bob@home.example',
        sentDate: T('2024-03-01T18:00:00Z'),
        textBody: 'The reunion is on the 12th. Bring the budget for the trip.',
      }),
    );
    add(
      'umlaut',
      email({
        accountId: personal,
        subject: 'Grüße aus München',
        from: 'Jürgen Müller <juergen@example.de>',
        to: 'bob@home.example',
        sentDate: T('2024-01-20T07:00:00Z'),
        textBody: 'Schöne Grüße, Jürgen',
        htmlBody: null,
      }),
    );
    add(
      'team',
      email({
        accountId: shared,
        subject: 'Team standup notes',
        from: 'malice@work.example',
        to: 'team@work.example',
        sentDate: T('2024-03-08T09:00:00Z'),
        textBody: 'Standup notes for the week.',
      }),
    );
  });
  const attachments: Record<string, number> = {};
  for (const row of db.prepare('SELECT id, email_id, file_name FROM attachments ORDER BY id').all() as Array<{
    id: number;
    email_id: number;
    file_name: string;
  }>) {
    const owner = Object.entries(emails).find(([, id]) => id === row.email_id)![0];
    attachments[`${owner}:${row.file_name}`] = row.id;
  }
  return {
    accounts: { work, personal, shared },
    users: { admin, alice, bob, carol },
    keys,
    emails,
    attachments,
  };
}
