import test from 'ava';
import { openArchive, migrate, schemaVersion, LATEST_VERSION } from '../engine/sqlite/open.js';
import { prepareBody, resolveBody } from '../engine/rules/body.js';
import { authenticate } from '../engine/sqlite/keys.js';
import { hashKey, KEY_PATTERN } from '../engine/rules/keys.js';
import { getEmailDetail, searchEmails } from '../engine/sqlite/emails.js';
import { createFixture, email, tempDir } from './helpers/fixture.js';
import { ArchiveWriter } from '../engine/sqlite/writer.js';
import { addAccount } from '../engine/sqlite/accounts.js';
import { join } from 'node:path';
import { QuerySyntaxError } from '../shared/errors.js';

test('migrations apply on an empty file and are a no-op on an existing one', (t) => {
  const { dir, cleanup } = tempDir();
  t.teardown(cleanup);
  const db = openArchive(join(dir, 'a.db'));
  t.is(schemaVersion(db), LATEST_VERSION);
  t.is(db.pragma('journal_mode', { simple: true }), 'wal');
  t.is(db.pragma('foreign_keys', { simple: true }), 1);
  db.prepare("INSERT INTO users (username, created_at) VALUES ('x', 1)").run();
  db.close();
  const again = openArchive(join(dir, 'a.db'));
  t.deepEqual(migrate(again), []);
  t.is(again.prepare('SELECT count(*) FROM users').pluck().get(), 1);
  again.close();
});

test('keys have the documented format and only their hash is stored', (t) => {
  const f = createFixture();
  t.teardown(f.cleanup);
  const db = openArchive(f.dbPath);
  t.teardown(() => db.close());
  for (const key of Object.values(f.keys)) t.regex(key, KEY_PATTERN);
  const stored = JSON.stringify(db.prepare('SELECT * FROM api_keys').all());
  for (const key of Object.values(f.keys)) {
    t.false(stored.includes(key), 'plaintext key must not be stored');
    t.true(stored.includes(hashKey(key)));
  }
  t.like(authenticate(db, hashKey(f.keys.admin), Date.now()), { ok: true, principal: { isAdmin: true } });
  t.deepEqual(authenticate(db, hashKey(f.keys.expired), Date.now()), { ok: false, reason: 'expired' });
  t.deepEqual(authenticate(db, hashKey(f.keys.revoked), Date.now()), { ok: false, reason: 'revoked' });
  t.deepEqual(authenticate(db, hashKey(f.keys.inactive), Date.now()), { ok: false, reason: 'inactive' });
  t.deepEqual(authenticate(db, hashKey('ma_nope'), Date.now()), { ok: false, reason: 'unknown' });
});

test('the body fallback chain returns original, then untruncated, then stored', (t) => {
  const { dir, cleanup } = tempDir();
  t.teardown(cleanup);
  const db = openArchive(join(dir, 'b.db'));
  t.teardown(() => db.close());
  const accountId = addAccount(db, { name: 'A', emailAddress: 'a@example.com' }).id;
  const writer = new ArchiveWriter(db, { bodyLimit: 20 });
  const withNul = 'abc\0def';
  const long = 'x'.repeat(50);
  const ids: number[] = writer.batch(() => [
    writer.add(email({ accountId, subject: 'nul', textBody: withNul, htmlBody: `<p>${withNul}</p>` }))!,
    writer.add(email({ accountId, subject: 'long', textBody: long, htmlBody: `<p>${long}</p>` }))!,
    writer.add(email({ accountId, subject: 'plain', textBody: 'short', htmlBody: '<p>short</p>' }))!,
  ]);
  const admin = { isAdmin: true, userId: 0 };
  const stored = db.prepare('SELECT * FROM email_bodies WHERE email_id = ?');
  // 1. original bytes win: the exact body, NUL included; the stored copy is clean.
  t.is(getEmailDetail(db, admin, ids[0]!)!.textBody, withNul);
  t.is(getEmailDetail(db, admin, ids[0]!)!.htmlBody, `<p>${withNul}</p>`);
  t.like(stored.get(ids[0]), { text_body: 'abcdef', text_untruncated: null });
  // 2. untruncated text next: the full body, while the stored (indexed) copy is cut.
  t.is(getEmailDetail(db, admin, ids[1]!)!.textBody, long);
  t.like(stored.get(ids[1]), { text_body: 'x'.repeat(20), text_original: null });
  // 3. stored body last.
  t.is(getEmailDetail(db, admin, ids[2]!)!.textBody, 'short');
  t.like(stored.get(ids[2]), { text_untruncated: null, text_original: null });
  t.deepEqual(prepareBody(null), { stored: null, untruncated: null, original: null });
  t.is(resolveBody(null, null, null), null);
});

test('search hides accounts the viewer may not see and quotes every operator', (t) => {
  const f = createFixture();
  t.teardown(f.cleanup);
  const db = openArchive(f.dbPath);
  t.teardown(() => db.close());
  const q = (viewer: { isAdmin: boolean; userId: number }, text?: string) =>
    searchEmails(db, viewer, { q: text, page: 1, pageSize: 50, sortBy: 'sentDate', sortOrder: 'desc' });
  t.is(q({ isAdmin: true, userId: f.users.admin }, 'budget').totalItems, 3);
  t.is(q({ isAdmin: false, userId: f.users.bob }, 'budget').totalItems, 1);
  t.is(q({ isAdmin: false, userId: f.users.carol }).totalItems, 0);
  for (const nasty of ['AND OR NOT', 'subject:', 'body:x*', '^NEAR(a b)', "it's", '{subject}:x']) {
    t.notThrows(() => q({ isAdmin: true, userId: f.users.admin }, nasty), nasty);
  }
  // A quote or parenthesis left open has no reading: the query language says what to fix
  // (a 400 at the front ends), never FTS5's own syntax error.
  for (const open of ['"unbalanced', '((('])
    t.throws(() => q({ isAdmin: true, userId: f.users.admin }, open), { instanceOf: QuerySyntaxError }, open);
  t.is(q({ isAdmin: true, userId: f.users.admin }, 'subject:invoice').totalItems, 1);
  t.is(q({ isAdmin: true, userId: f.users.admin }, 'munchen').totalItems, 1, 'diacritic-insensitive');
});
