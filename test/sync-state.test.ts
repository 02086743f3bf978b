// What the IMAP sync stores (engine/rules/sync-state.ts SyncState) on a SQLite archive, and how the
// IMAP passwords are kept at rest (engine/rules/secrets.ts).
import test from 'ava';
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from '../engine/sqlite/driver.js';
import { SqliteAdmin } from '../engine/sqlite/admin.js';
import { migrations } from '../engine/sqlite/migrations.js';
import { openArchive, schemaVersion, LATEST_VERSION } from '../engine/sqlite/open.js';
import { loadSecretKey, SecretBox, syncSecretFilePath } from '../engine/rules/secrets.js';
import { getAccount } from '../engine/sqlite/accounts.js';
import { StoreError } from '../shared/errors.js';
import { SqliteSyncState } from '../engine/sqlite/sync-state.js';
import { tempDir } from './helpers/fixture.js';

const PASSWORD = 'p@ss-wörd-for-imap';

function archive(t: import('ava').ExecutionContext, secretKey?: string) {
  const { dir, cleanup } = tempDir('mag-sync-');
  const path = join(dir, 'a.db');
  const admin = new SqliteAdmin(openArchive(path), true, { secretKey });
  t.teardown(async () => {
    await admin.close();
    cleanup();
  });
  return { dir, path, admin };
}

test('SecretBox: round trip, a fresh IV each time, and the format v1:iv:tag:ciphertext', (t) => {
  const box = new SecretBox(Buffer.alloc(32, 1));
  const a = box.encrypt(PASSWORD);
  const b = box.encrypt(PASSWORD);
  t.not(a, b);
  t.regex(a, /^v1:[A-Za-z0-9+/]{16}:[A-Za-z0-9+/]{22}==:[A-Za-z0-9+/=]+$/);
  t.false(a.includes(PASSWORD));
  t.is(box.decrypt(a, 'x'), PASSWORD);
  t.is(box.decrypt(box.encrypt(''), 'x'), '');
});

test('SecretBox: a tampered value or a wrong key is one sentence that never holds the plaintext', (t) => {
  const box = new SecretBox(Buffer.alloc(32, 1));
  const stored = box.encrypt(PASSWORD);
  const [v, iv, tag, ct] = stored.split(':') as [string, string, string, string];
  const flip = (b64: string) => {
    const bytes = Buffer.from(b64, 'base64');
    bytes[0]! ^= 1;
    return bytes.toString('base64');
  };
  for (const bad of [
    [v, iv, tag, flip(ct)].join(':'),
    [v, iv, flip(tag), ct].join(':'),
    [v, flip(iv), tag, ct].join(':'),
  ]) {
    const err = t.throws(() => box.decrypt(bad, 'the IMAP password of account 3'), { instanceOf: StoreError });
    t.is(
      err!.message,
      'Cannot decrypt the IMAP password of account 3: Sync:SecretKey changed, or the stored value was altered?',
    );
  }
  const other = new SecretBox(Buffer.alloc(32, 2));
  const err = t.throws(() => other.decrypt(stored, 'the IMAP password of account 3'), { instanceOf: StoreError });
  t.regex(err!.message, /^Cannot decrypt the IMAP password of account 3: Sync:SecretKey changed/);
  t.false(err!.message.includes(PASSWORD));
  t.throws(() => box.decrypt(PASSWORD, 'it'), { instanceOf: StoreError, message: /not in the expected format/ });
});

test('the key: Sync:SecretKey when set, else generated once beside the database with mode 0600', (t) => {
  const { dir, cleanup } = tempDir('mag-key-');
  t.teardown(cleanup);
  const db = join(dir, 'sub', 'a.db');
  const configured = Buffer.alloc(32, 9);
  t.deepEqual(loadSecretKey({ secretKey: configured.toString('hex'), databasePath: db }), configured);
  t.throws(() => statSync(syncSecretFilePath(db)), undefined, 'a configured key writes no file');
  const generated = loadSecretKey({ databasePath: db });
  t.is(generated.length, 32);
  const file = syncSecretFilePath(db);
  t.is(file, join(dir, 'sub', 'sync-secret'));
  t.is(statSync(file).mode & 0o777, 0o600);
  t.deepEqual(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64'), generated);
  t.deepEqual(loadSecretKey({ databasePath: db }), generated, 'the same key on the next start');
  chmodSync(file, 0o644);
  t.deepEqual(loadSecretKey({ databasePath: db }), generated);
  t.is(statSync(file).mode & 0o777, 0o600, 'a loosened mode is reset');
  writeFileSync(file, 'short\n');
  t.throws(() => loadSecretKey({ databasePath: db }), { instanceOf: StoreError, message: /does not hold 32 bytes/ });
  t.throws(() => loadSecretKey({ databasePath: 'postgres://u:pw@h/db' }), {
    instanceOf: StoreError,
    message: /need Sync:SecretKey/,
  });
  t.throws(() => loadSecretKey({ secretKey: 'nope', databasePath: db }), { instanceOf: StoreError });
});

test('migration 2 keeps the accounts of a version 1 archive as they were', (t) => {
  const { dir, cleanup } = tempDir('mag-v1-');
  t.teardown(cleanup);
  const path = join(dir, 'a.db');
  const old = new Database(path);
  old.exec(migrations[0]!.sql);
  old.pragma('user_version = 1');
  old
    .prepare(
      "INSERT INTO mail_accounts (name, email_address, provider, is_enabled, last_sync) VALUES ('W', 'w@x.example', 'IMAP', 0, 1000)",
    )
    .run();
  old.close();
  const db = openArchive(path);
  t.teardown(() => db.close());
  t.is(schemaVersion(db), LATEST_VERSION);
  t.is(LATEST_VERSION, 12);
  t.deepEqual(getAccount(db, 1), {
    id: 1,
    name: 'W',
    emailAddress: 'w@x.example',
    provider: 'IMAP',
    isEnabled: false,
    lastSync: '1970-01-01T00:00:01.000Z',
  });
});

test('SyncState.accounts: IMAP settings with the password for IMAP accounts only, in id order, filtered by id', async (t) => {
  const { admin } = archive(t);
  const work = await admin.addImapAccount({
    name: 'Work',
    emailAddress: 'me@work.example',
    imap: {
      host: 'imap.work.example',
      password: PASSWORD,
      security: 'starttls',
      folders: ['INBOX'],
      exclude: ['Junk'],
    },
  });
  const plain = await admin.addAccount({ name: 'Files', emailAddress: 'f@x.example' });
  const m365 = await admin.addImapAccount({
    name: 'M',
    emailAddress: 'm@x.example',
    imap: { host: 'h', password: PASSWORD },
  });
  await admin.setAccount(m365.id, { provider: 'M365' });
  const all = await admin.sync().accounts();
  t.deepEqual(
    all.map((a) => a.account.id),
    [work.id, plain.id, m365.id],
  );
  t.deepEqual(all[0]!.imap, {
    host: 'imap.work.example',
    port: 143,
    security: 'starttls',
    user: 'me@work.example',
    password: PASSWORD,
    folders: ['INBOX'],
    exclude: ['Junk'],
  });
  t.is(all[1]!.imap, null, 'no settings: not synced');
  t.is(all[2]!.imap, null, 'a provider other than IMAP is not synced');
  t.deepEqual(
    (await admin.sync().accounts([m365.id, work.id])).map((a) => a.account.id),
    [work.id, m365.id],
  );
  t.deepEqual(await admin.sync().accounts([999]), []);
});

test("SyncState.accounts: a password the key cannot decrypt is that account's error, not everyone's", async (t) => {
  const { path, admin } = archive(t, Buffer.alloc(32, 1).toString('base64'));
  const a = await admin.addImapAccount({
    name: 'A',
    emailAddress: 'a@x.example',
    imap: { host: 'h', password: PASSWORD },
  });
  await admin.close();
  const other = new SqliteAdmin(openArchive(path), true, { secretKey: Buffer.alloc(32, 2).toString('base64') });
  t.teardown(() => other.close());
  await other.addImapAccount({ name: 'B', emailAddress: 'b@x.example', imap: { host: 'h', password: 'second' } });
  const [first, second] = await other.sync().accounts();
  t.is(first!.imap, null);
  t.is(
    first!.imapError,
    `Cannot decrypt the IMAP password of account ${a.id}: Sync:SecretKey changed, or the stored value was altered?`,
  );
  t.is(second!.imap!.password, 'second');
  t.is(second!.imapError, undefined);
});

test('SyncState folder state: none at first, saved, replaced, per account and folder', async (t) => {
  const { admin } = archive(t);
  const a = await admin.addAccount({ name: 'A', emailAddress: 'a@x.example' });
  const b = await admin.addAccount({ name: 'B', emailAddress: 'b@x.example' });
  const s = admin.sync();
  t.is(await s.folderState(a.id, 'INBOX'), null);
  await s.saveFolderState(a.id, 'INBOX', { uidValidity: '4294967295', lastUid: 10 });
  await s.saveFolderState(a.id, 'Archiv/Größe', { uidValidity: '7', lastUid: 3 });
  t.deepEqual(await s.folderState(a.id, 'INBOX'), { uidValidity: '4294967295', lastUid: 10 });
  await s.saveFolderState(a.id, 'INBOX', { uidValidity: '4294967295', lastUid: 25 });
  t.deepEqual(await s.folderState(a.id, 'INBOX'), { uidValidity: '4294967295', lastUid: 25 });
  t.deepEqual(await s.folderState(a.id, 'Archiv/Größe'), { uidValidity: '7', lastUid: 3 });
  t.is(await s.folderState(b.id, 'INBOX'), null);
  t.is(await s.folderState(a.id, 'inbox'), null, 'folder paths are exact');
});

test('SyncState.recordOutcome: lastSync moves only on success; failures count up and reset', async (t) => {
  const { admin } = archive(t);
  const a = await admin.addAccount({ name: 'A', emailAddress: 'a@x.example' });
  const s = admin.sync();
  const state = async () => {
    const [row] = await s.accounts([a.id]);
    return { lastSync: row!.account.lastSync, outcome: row!.lastOutcome, failures: row!.failures };
  };
  t.deepEqual(await state(), { lastSync: null, outcome: null, failures: 0 });
  await s.recordOutcome(a.id, { ok: false, at: 1000, error: 'Host unreachable.' });
  t.deepEqual(await state(), {
    lastSync: null,
    outcome: { ok: false, at: 1000, error: 'Host unreachable.' },
    failures: 1,
  });
  await s.recordOutcome(a.id, { ok: false, at: 2000, error: 'Host unreachable.' });
  t.is((await state()).failures, 2);
  await s.recordOutcome(a.id, { ok: true, at: 3000 });
  t.deepEqual(await state(), { lastSync: '1970-01-01T00:00:03.000Z', outcome: { ok: true, at: 3000 }, failures: 0 });
  await s.recordOutcome(a.id, { ok: false, at: 4000, error: 'Wrong password.' });
  t.deepEqual(await state(), {
    lastSync: '1970-01-01T00:00:03.000Z',
    outcome: { ok: false, at: 4000, error: 'Wrong password.' },
    failures: 1,
  });
  await t.throwsAsync(s.recordOutcome(999, { ok: true, at: 1 }), { instanceOf: StoreError, message: /999/ });
});

test('SyncState lease: refused to a second holder while it runs, taken after expiry, released', async (t) => {
  const { admin } = archive(t);
  const a = await admin.addAccount({ name: 'A', emailAddress: 'a@x.example' });
  let now = 1_000_000;
  const s = new SqliteSyncState(admin.db, admin.secretBox, () => now);
  t.true(await s.acquireLease(a.id, 'runner-1', 60_000));
  t.false(await s.acquireLease(a.id, 'runner-2', 60_000), 'the first lease is still running');
  now += 30_000;
  t.true(await s.acquireLease(a.id, 'runner-1', 60_000), 'the holder renews');
  now += 59_999;
  t.false(await s.acquireLease(a.id, 'runner-2', 60_000));
  now += 1;
  t.true(await s.acquireLease(a.id, 'runner-2', 60_000), 'taken once expired');
  t.false(await s.acquireLease(a.id, 'runner-1', 60_000));
  await s.releaseLease(a.id, 'runner-1');
  t.false(await s.acquireLease(a.id, 'runner-3', 60_000), 'only the holder releases');
  await s.releaseLease(a.id, 'runner-2');
  t.true(await s.acquireLease(a.id, 'runner-3', 60_000), 'free once released');
  // The lease and the outcome share a row; neither disturbs the other.
  await s.recordOutcome(a.id, { ok: true, at: 5 });
  t.false(await s.acquireLease(a.id, 'runner-1', 60_000));
  t.is((await s.accounts([a.id]))[0]!.failures, 0);
  await t.throwsAsync(s.acquireLease(999, 'x', 1), { instanceOf: StoreError });
});

test('two connections to one file: only one of two runners gets the lease', async (t) => {
  const { path, admin } = archive(t);
  const a = await admin.addAccount({ name: 'A', emailAddress: 'a@x.example' });
  const second = new SqliteAdmin(openArchive(path));
  t.teardown(() => second.close());
  const results = await Promise.all([
    admin.sync().acquireLease(a.id, 'one', 60_000),
    second.sync().acquireLease(a.id, 'two', 60_000),
  ]);
  t.deepEqual(results.sort(), [false, true]);
});
