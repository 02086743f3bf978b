// The operator's CLI, end to end: every command is run as a child process against a fresh
// archive, the way an operator (or a script) runs it. Each store-independent test runs twice:
// on a SQLite file and on a fresh PostgreSQL database (test/helpers/cli-archive.ts). The
// PostgreSQL-only facts (schema creation, connection errors, stored formats) are in
// test/cli-postgres.test.ts.
import test, { type ExecutionContext } from 'ava';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteAdmin } from '../engine/sqlite/admin.js';
import { openStore } from '../engine/archive.js';
import { openArchive, type Db } from '../engine/sqlite/open.js';
import { hashKey, KEY_PATTERN } from '../engine/rules/keys.js';
import { passwordHashOf } from '../engine/sqlite/users.js';
import { verifyPassword } from '../engine/rules/password-hash.js';
import type { WebUser } from '../shared/jobs.js';
import { CLI } from './helpers/cli.js';
import { cliArchive, fails, json, ok, STORE_FACTS, STORE_KINDS, type CliArchive } from './helpers/cli-archive.js';

/** Runs the same test body against a SQLite file and against a fresh PostgreSQL database. */
function eachStore(title: string, body: (t: ExecutionContext, a: CliArchive) => Promise<void>): void {
  for (const kind of STORE_KINDS) test(`[${kind}] ${title}`, async (t) => body(t, await cliArchive(t, kind)));
}

/** Tests that read the SQLite file itself. */
function sqliteOnly(
  title: string,
  body: (t: ExecutionContext, a: CliArchive & { open: () => Db }) => Promise<void>,
): void {
  test(`[sqlite] ${title}`, async (t) => {
    const a = await cliArchive(t, 'sqlite');
    const handles: Db[] = [];
    t.teardown(() => {
      for (const h of handles) if (h.open) h.close();
    });
    await body(t, {
      ...a,
      open: () => {
        const h = openArchive(a.db);
        handles.push(h);
        return h;
      },
    });
  });
}

eachStore('users add: plain, --admin and --email; users list shows them as one JSON value', async (t, a) => {
  t.regex(ok(t, await a.cli(['users', 'add', 'alice'])), /^Created user alice \(id \d+\)\.\n$/);
  const root = json<{ username: string; isAdmin: boolean; email: string | null }>(
    t,
    await a.cli(['users', 'add', 'root', '--admin', '--email', 'root@example.com', '--json']),
  );
  t.like(root, { username: 'root', isAdmin: true, email: 'root@example.com' });
  const list = json<
    Array<{ username: string; isAdmin: boolean; isActive: boolean; email: string | null; accountIds: number[] }>
  >(t, await a.cli(['users', 'list', '--json']));
  t.deepEqual(
    list.map((u) => [u.username, u.isAdmin, u.isActive, u.email, u.accountIds]),
    [
      ['alice', false, true, null, []],
      ['root', true, true, 'root@example.com', []],
    ],
  );
  const table = ok(t, await a.cli(['users', 'list']));
  t.regex(table, /^id\s+username/);
  t.regex(table, /\broot\s+root@example\.com\s+true\b/);
});

sqliteOnly('users add --password-stdin stores an scrypt hash, never the password', async (t, a) => {
  const password = 'correct horse battery staple';
  ok(t, await a.cli(['users', 'add', 'alice', '--password-stdin'], { input: `${password}\n` }));
  const db = a.open();
  const id = db.prepare("SELECT id FROM users WHERE username = 'alice'").pluck().get() as number;
  const hash = passwordHashOf(db, id)!;
  t.regex(hash, /^scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
  t.false(hash.includes(password));
  t.true(await verifyPassword(password, hash), 'the trailing newline is not part of the password');
  t.false(await verifyPassword(`${password}\n`, hash));
  db.close();
  const bytes = Buffer.concat([
    readFileSync(a.db),
    existsSync(`${a.db}-wal`) ? readFileSync(`${a.db}-wal`) : Buffer.alloc(0),
  ]);
  t.false(bytes.includes(password), 'the plaintext is nowhere in the file');
});

sqliteOnly(
  'a reader that stops early (… --json | head) ends a command quietly, not with a stack trace',
  async (t, a) => {
    ok(t, await a.cli(['users', 'add', 'alice']));
    const child = spawn(process.execPath, [CLI, '--db', a.db, 'users', 'list', '--json'], {
      cwd: a.dir,
      env: { PATH: process.env.PATH, TZ: 'UTC' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.destroy(); // the reader is gone before the command writes a byte
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    t.is(stderr, '');
    t.is(code, 0);
  },
);

eachStore('users add refuses a short password, a duplicate name in any case and a bad name', async (t, a) => {
  fails(t, await a.cli(['users', 'add', 'alice', '--password-stdin'], { input: 'short\n' }), '8 characters');
  fails(t, await a.cli(['users', 'add', 'alice', '--password-stdin'], { input: '' }), '8 characters');
  ok(t, await a.cli(['users', 'add', 'alice']));
  fails(t, await a.cli(['users', 'add', 'ALICE']), 'already exists');
  fails(t, await a.cli(['users', 'add', 'bad name']), 'Invalid username');
  t.deepEqual(await a.usernames(), ['alice'], 'nothing else was created');
});

// Bug fixed with this test: usernames were unique only under SQLite's NOCASE, which folds ASCII
// letters alone, so "jürgen" and "JÜRGEN" (or a decomposed "jürgen") became different users.
eachStore('usernames are case-insensitive beyond ASCII', async (t, a) => {
  ok(t, await a.cli(['users', 'add', 'jürgen']));
  fails(t, await a.cli(['users', 'add', 'JÜRGEN']), 'already exists');
  fails(t, await a.cli(['users', 'add', 'ju\u0308rgen']), 'already exists');
  t.is(ok(t, await a.cli(['users', 'set-active', 'JÜRGEN', 'false'])), 'jürgen is now inactive.\n');
  t.deepEqual(await a.usernames(), ['jürgen']);
});

/** The archive as the gateway's workers see it, for the `login` and `sessionUser` jobs; closed at teardown. */
async function webStore(t: ExecutionContext, a: CliArchive) {
  const store = await openStore({ path: a.db });
  t.teardown(() => store.close());
  return {
    /** Signs in the way the web pages do. */
    signIn: (username: string, password: string) => store.run({ kind: 'login', username, password }),
    /** Whether a session begun as `user` still holds. */
    sessionHolds: async (user: WebUser) =>
      (await store.run({ kind: 'sessionUser', userId: user.id, stamp: user.stamp, issuedAt: Date.now() })) !== null,
  };
}

eachStore('users set-password replaces the web password from stdin and ends the web sessions', async (t, a) => {
  const old = 'the old password';
  const next = 'a brand new password';
  ok(t, await a.cli(['users', 'add', 'alice', '--password-stdin'], { input: `${old}\n` }));
  const { signIn, sessionHolds } = await webStore(t, a);
  const before = await signIn('alice', old);
  t.truthy(before);
  t.true(await sessionHolds(before!));

  const run = await a.cli(['users', 'set-password', 'ALICE'], { input: `${next}\n` });
  t.is(ok(t, run), 'Set a new web password for alice; their web sessions have ended.\n');
  t.false(run.stdout.includes(next) || run.stderr.includes(next), 'the password is never printed');
  t.is(await signIn('alice', old), null, 'the old password no longer signs in');
  t.false(await sessionHolds(before!), 'a session begun with the old password has ended');
  t.like(await signIn('alice', next), { username: 'alice' });
  t.is(await signIn('alice', `${next}\n`), null, 'the trailing newline is not part of the password');

  t.like(json(t, await a.cli(['users', 'set-password', 'alice', '--json'], { input: 'yet another one\n' })), {
    username: 'alice',
    isActive: true,
  });
  t.like(await signIn('alice', 'yet another one'), { username: 'alice' });
  fails(t, await a.cli(['users', 'set-password', 'alice'], { input: 'short\n' }), '8 characters');
  fails(t, await a.cli(['users', 'set-password', 'alice'], { input: '' }), '8 characters');
  t.like(await signIn('alice', 'yet another one'), { username: 'alice' }, 'a refused password changes nothing');
  fails(t, await a.cli(['users', 'set-password', 'nobody'], { input: `${next}\n` }), 'nobody');
});

eachStore('users set-active switches a user and refuses anything but true or false', async (t, a) => {
  await (await a.admin()).addUser({ username: 'alice' });
  t.is(ok(t, await a.cli(['users', 'set-active', 'alice', 'false'])), 'alice is now inactive.\n');
  t.like(json(t, await a.cli(['users', 'set-active', 'Alice', 'TRUE', '--json'])), {
    username: 'alice',
    isActive: true,
  });
  fails(t, await a.cli(['users', 'set-active', 'alice', 'maybe']), '"maybe"');
  fails(t, await a.cli(['users', 'set-active', 'nobody', 'true']), 'nobody');
  t.true((await (await a.admin()).requireUser('alice')).isActive);
});

eachStore('users assign and unassign, with unknown users, unknown accounts and bad ids', async (t, a) => {
  const admin = await a.admin();
  await admin.addUser({ username: 'alice' });
  const accountId = (await admin.addAccount({ name: 'Work', emailAddress: 'work@example.com' })).id;
  t.regex(ok(t, await a.cli(['users', 'assign', 'alice', String(accountId)])), /^Done: alice sees account \d+\.\n$/);
  t.deepEqual(json(t, await a.cli(['users', 'assign', 'alice', String(accountId), '--json'])), {
    username: 'alice',
    accountId,
    changed: false,
  });
  t.deepEqual(json<Array<{ accountIds: number[] }>>(t, await a.cli(['users', 'list', '--json']))[0]!.accountIds, [
    accountId,
  ]);
  t.like(json(t, await a.cli(['users', 'unassign', 'alice', String(accountId), '--json'])), { changed: true });
  t.is(await a.count('assignments'), 0);
  fails(t, await a.cli(['users', 'assign', 'nobody', String(accountId)]), 'nobody');
  fails(t, await a.cli(['users', 'assign', 'alice', '999']), '999');
  fails(t, await a.cli(['users', 'unassign', 'alice', '999']), '999');
  fails(t, await a.cli(['users', 'assign', 'alice', 'x']), '"x"');
  fails(t, await a.cli(['users', 'unassign', 'alice', '0']), '"0"');
});

eachStore(
  'sync skips an import-only account (provider IMAP, no server) because it has no IMAP settings',
  async (t, a) => {
    const { id } = json<{ id: number }>(
      t,
      await a.cli([
        'accounts',
        'add',
        '--name',
        'Imported',
        '--email',
        'i@example.test',
        '--provider',
        'IMAP',
        '--json',
      ]),
    );
    // On PostgreSQL Mail Archiver syncs its own accounts unless this service is told to.
    const run = await a.cli(['sync', String(id)], { env: { Sync__Enabled: 'true' } });
    t.is(
      ok(t, run),
      `Imported (id ${id}): skipped, it has no IMAP settings (import-only; add them with accounts set ${id} --imap-host HOST --password-stdin)\n`,
    );
  },
);

eachStore('accounts add prints the id (or {"id":N}) and accounts list shows the accounts', async (t, a) => {
  t.is(ok(t, await a.cli(['accounts', 'add', '--name', 'Work', '--email', 'work@example.com'])), '1\n');
  t.deepEqual(
    json(
      t,
      await a.cli(['accounts', 'add', '--name', 'Home', '--email', 'me@home.example', '--provider', 'M365', '--json']),
    ),
    { id: 2 },
  );
  const none = { lastOutcome: null, lastOutcomeAt: null, failures: 0, messages: 0, imap: null };
  t.deepEqual(json(t, await a.cli(['accounts', 'list', '--json'])), [
    {
      id: 1,
      name: 'Work',
      emailAddress: 'work@example.com',
      provider: STORE_FACTS[a.kind].defaultProvider,
      isEnabled: true,
      lastSync: null,
      ...none,
    },
    {
      id: 2,
      name: 'Home',
      emailAddress: 'me@home.example',
      provider: 'M365',
      isEnabled: true,
      lastSync: null,
      ...none,
    },
  ]);
  t.regex(
    ok(t, await a.cli(['accounts', 'list'])),
    /^id\s+name\s+emailAddress\s+provider\s+isEnabled\s+lastSync\s+lastOutcome\s+messages\n/,
  );
  fails(t, await a.cli(['accounts', 'add', '--name', 'Bad', '--email', 'not-an-address']), 'not-an-address');
  fails(t, await a.cli(['accounts', 'add', '--name', 'NoMail']), '--email');
  t.is(await a.count('accounts'), 2);
});

sqliteOnly('keys create prints a well-formed key once; only its SHA-256 reaches the file and the WAL', async (t, a) => {
  // Holding a connection keeps the CLI's writes in the -wal file, so both files are checked.
  const db = a.open();
  await (await a.admin()).addUser({ username: 'alice' });
  const created = json<{ id: number; key: string; prefix: string }>(
    t,
    await a.cli(['keys', 'create', 'alice', '--name', 'laptop', '--json']),
  );
  t.deepEqual(Object.keys(created).sort(), ['id', 'key', 'prefix']);
  t.regex(created.key, /^ma_[A-Za-z0-9_-]{43}$/);
  t.regex(created.key, KEY_PATTERN);
  t.is(created.prefix, created.key.slice(0, 11));
  const plain = ok(t, await a.cli(['keys', 'create', 'alice', '--name', 'phone']));
  const [second, note] = plain.split('\n');
  t.regex(second!, /^ma_[A-Za-z0-9_-]{43}$/);
  t.regex(note!, new RegExp(`^Key \\d+ \\(${second!.slice(0, 11)}…\\) for alice\\.`));

  const wal = readFileSync(`${a.db}-wal`);
  t.true(wal.length > 0, 'the writes are in the WAL');
  const bytes = Buffer.concat([readFileSync(a.db), wal]);
  for (const key of [created.key, second!]) {
    t.false(bytes.includes(key), 'the plaintext key is not stored');
    t.true(bytes.includes(hashKey(key)), 'its SHA-256 hex is');
  }
  t.is(db.prepare('SELECT key_hash FROM api_keys WHERE id = ?').pluck().get(created.id), hashKey(created.key));

  fails(t, await a.cli(['keys', 'create', 'nobody', '--name', 'x']), 'nobody');
  fails(t, await a.cli(['keys', 'create', 'alice']), '--name');
  fails(t, await a.cli(['keys', 'create', 'alice', '--name', '   ']), 'name');
});

eachStore(
  'keys create --expires: a past date is refused, a bad date fails, a date-time without offset is UTC',
  async (t, a) => {
    await (await a.admin()).addUser({ username: 'alice' });
    // A key born expired is refused on its first request; the web form refuses such dates too.
    const past = await a.cli(['keys', 'create', 'alice', '--name', 'old', '--expires', '2020-01-01', '--json']);
    t.is(past.code, 2);
    fails(t, past, '2020-01-01', 'in the past');
    const earlierToday = new Date(Date.now() - 60_000).toISOString();
    fails(t, await a.cli(['keys', 'create', 'alice', '--name', 'x', '--expires', earlierToday]), 'in the past');
    for (const bad of ['tomorrow', '2027-13-01', '2027-01-31T12:00:00+25:00']) {
      fails(t, await a.cli(['keys', 'create', 'alice', '--name', 'x', '--expires', bad]), '--expires', bad);
    }
    // Run in New York: a date-time without an offset must still be read as UTC, as --help says.
    const ny = { TZ: 'America/New_York' };
    const noOffset = json<{ id: number }>(
      t,
      await a.cli(['keys', 'create', 'alice', '--name', 'utc', '--expires', '2030-01-31T12:00:00', '--json'], {
        env: ny,
      }),
    );
    const offset = json<{ id: number }>(
      t,
      await a.cli(['keys', 'create', 'alice', '--name', 'cet', '--expires', '2030-01-31T12:00+01:00', '--json'], {
        env: ny,
      }),
    );
    const keys = json<Array<{ id: number; expiresAt: string | null; status: string }>>(
      t,
      await a.cli(['keys', 'list', '--json']),
    );
    const byId = new Map(keys.map((k) => [k.id, k]));
    t.like(byId.get(noOffset.id), { expiresAt: '2030-01-31T12:00:00.000Z', status: 'active' });
    t.like(byId.get(offset.id), { expiresAt: '2030-01-31T11:00:00.000Z' });
    t.is(keys.length, 2, 'the refused ones were not created');
  },
);

// Bug fixed with this test: Date.parse rolls impossible dates over, so a key asked to expire on
// 30 February silently expired on 2 March.
eachStore('keys create --expires refuses a date that does not exist', async (t, a) => {
  await (await a.admin()).addUser({ username: 'alice' });
  fails(t, await a.cli(['keys', 'create', 'alice', '--name', 'x', '--expires', '2031-02-30']), '2031-02-30');
  fails(
    t,
    await a.cli(['keys', 'create', 'alice', '--name', 'x', '--expires', '2031-01-31T24:00']),
    '2031-01-31T24:00',
  );
  t.is(await a.count('keys'), 0);
});

eachStore('keys list shows status but never the key or its hash; --user filters', async (t, a) => {
  const admin = await a.admin();
  await admin.addUser({ username: 'alice' });
  await admin.addUser({ username: 'bob' });
  const alice = json<{ key: string; id: number }>(t, await a.cli(['keys', 'create', 'alice', '--name', 'a', '--json']));
  const bob = json<{ key: string; id: number }>(t, await a.cli(['keys', 'create', 'bob', '--name', 'b', '--json']));
  const all = await a.cli(['keys', 'list', '--json']);
  const rows = json<Array<{ id: number; username: string; status: string; prefix: string }>>(t, all);
  t.deepEqual(
    rows.map((r) => [r.username, r.status, r.prefix]),
    [
      ['alice', 'active', alice.key.slice(0, 11)],
      ['bob', 'active', bob.key.slice(0, 11)],
    ],
  );
  for (const k of [alice.key, bob.key]) {
    t.false(all.stdout.includes(k));
    t.false(all.stdout.includes(hashKey(k)));
  }
  t.deepEqual(
    json<Array<{ id: number }>>(t, await a.cli(['keys', 'list', '--user', 'bob', '--json'])).map((r) => r.id),
    [bob.id],
  );
  const table = ok(t, await a.cli(['keys', 'list']));
  t.false(table.includes(alice.key));
  t.regex(table, /\balice\s+a\s+ma_/);
  fails(t, await a.cli(['keys', 'list', '--user', 'nobody']), 'nobody');
});

eachStore('keys revoke by id and by prefix; unknown ids and prefixes fail', async (t, a) => {
  await (await a.admin()).addUser({ username: 'alice' });
  const one = json<{ id: number; prefix: string }>(
    t,
    await a.cli(['keys', 'create', 'alice', '--name', 'one', '--json']),
  );
  const two = json<{ id: number; prefix: string }>(
    t,
    await a.cli(['keys', 'create', 'alice', '--name', 'two', '--json']),
  );
  const byId = json<{ id: number; status: string; revokedAt: string | null }>(
    t,
    await a.cli(['keys', 'revoke', String(one.id), '--json']),
  );
  t.like(byId, { id: one.id, status: 'revoked' });
  t.regex(byId.revokedAt!, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  t.regex(
    ok(t, await a.cli(['keys', 'revoke', two.prefix])),
    new RegExp(`^Revoked key ${two.id} \\(${two.prefix}…\\) of alice at `),
  );
  const again = json<{ revokedAt: string | null }>(t, await a.cli(['keys', 'revoke', String(one.id), '--json']));
  t.is(again.revokedAt, byId.revokedAt, 'revoking twice keeps the first RevokedAt');
  const rows = json<Array<{ status: string }>>(t, await a.cli(['keys', 'list', '--json']));
  t.deepEqual(
    rows.map((r) => r.status),
    ['revoked', 'revoked'],
  );
  fails(t, await a.cli(['keys', 'revoke', '999']), '999');
  fails(t, await a.cli(['keys', 'revoke', 'ma_nothere']), 'ma_nothere');
});

eachStore('keys revoke accepts the whole key, and no message ever repeats one', async (t, a) => {
  await (await a.admin()).addUser({ username: 'alice' });
  const made = json<{ id: number; key: string }>(t, await a.cli(['keys', 'create', 'alice', '--name', 'k', '--json']));
  const revoked = json<{ id: number; status: string }>(t, await a.cli(['keys', 'revoke', made.key, '--json']));
  t.like(revoked, { id: made.id, status: 'revoked' });
  const stranger = `ma_${'A'.repeat(43)}`;
  const err = fails(t, await a.cli(['keys', 'revoke', stranger]), 'ma_AAAAAAAA');
  t.false(err.includes(stranger), 'the whole key is not echoed');
});

eachStore('commands that only read or change an archive refuse a missing one instead of creating it', async (t, a) => {
  for (const args of [
    ['users', 'list'],
    ['accounts', 'list'],
    ['keys', 'list'],
    ['access-log'],
    ['users', 'set-active', 'x', 'true'],
    ['keys', 'revoke', '1'],
    ['reparse'],
  ]) {
    fails(t, await a.cli(args), ...a.missingMentions);
    t.false(await a.exists(), `${args.join(' ')} must not create the archive`);
  }
  ok(t, await a.cli(['accounts', 'add', '--name', 'A', '--email', 'a@example.com']));
  t.true(await a.exists(), 'accounts add starts an archive');
});

eachStore('users add refuses an e-mail that is not an address', async (t, a) => {
  fails(t, await a.cli(['users', 'add', 'alice', '--email', 'not an address']), 'not an e-mail address');
});

eachStore('access-log lists entries newest first, filtered by user, type and limit', async (t, a) => {
  const admin = await a.admin();
  const alice = (await admin.addUser({ username: 'alice' })).id;
  const bob = (await admin.addUser({ username: 'bob' })).id;
  const base = Date.parse('2024-05-01T10:00:00Z');
  await a.writeAccessLog([
    {
      userId: alice,
      type: 'Search',
      at: base,
      keyPrefix: 'ma_aaaaaaaa',
      clientIp: '127.0.0.1',
      searchParams: { q: 'budget' },
      source: 'api',
    },
    {
      userId: alice,
      type: 'Open',
      at: base + 1000,
      keyPrefix: 'ma_aaaaaaaa',
      clientIp: '127.0.0.1',
      emailId: 7,
      accountId: 1,
      source: 'api',
    },
    {
      userId: bob,
      type: 'Download',
      at: base + 2000,
      keyPrefix: 'ma_bbbbbbbb',
      clientIp: '10.0.0.2',
      emailId: 8,
      accountId: 2,
      source: 'mcp',
    },
    {
      userId: alice,
      type: 'Open',
      at: base + 3000,
      keyPrefix: 'ma_aaaaaaaa',
      clientIp: '127.0.0.1',
      emailId: 9,
      accountId: 1,
      source: 'mcp',
    },
  ]);
  type Row = {
    username: string;
    type: string;
    at: string;
    emailId: number | null;
    accountId: number | null;
    searchParams: unknown;
    source: string;
  };
  const all = json<Row[]>(t, await a.cli(['access-log', '--json']));
  t.deepEqual(
    all.map((r) => [r.username, r.type, r.emailId]),
    [
      ['alice', 'Open', 9],
      ['bob', 'Download', 8],
      ['alice', 'Open', 7],
      ['alice', 'Search', null],
    ],
  );
  t.like(all[3], { at: '2024-05-01T10:00:00.000Z', searchParams: { q: 'budget' }, source: 'api' });
  t.deepEqual(
    all.map((r) => r.accountId),
    [1, 2, 1, null],
  );
  t.deepEqual(
    json<Row[]>(t, await a.cli(['access-log', '--user', 'bob', '--json'])).map((r) => r.type),
    ['Download'],
  );
  t.deepEqual(
    json<Row[]>(t, await a.cli(['access-log', '--user', 'alice', '--type', 'open', '--limit', '1', '--json'])).map(
      (r) => r.emailId,
    ),
    [9],
  );
  t.regex(ok(t, await a.cli(['access-log', '--type', 'Search'])), /\balice\s+Search\s+api\s+ma_aaaaaaaa/);
  fails(t, await a.cli(['access-log', '--type', 'Delete']), '--type', 'Delete');
  fails(t, await a.cli(['access-log', '--limit', 'ten']), '--limit');
  fails(t, await a.cli(['access-log', '--user', 'nobody']), 'nobody');
});

sqliteOnly('help exits 0; an unknown command fails', async (t, a) => {
  const help = await a.cli(['--help']);
  t.is(help.code, 0);
  t.regex(help.stdout, /^Usage: mail-archive /);
  for (const command of ['users', 'accounts', 'keys', 'access-log']) t.true(help.stdout.includes(command));
  fails(t, await a.cli(['frobnicate']), 'frobnicate');
});

// Bug fixed with this test: commander's own usage errors printed a second line
// ("(run with --help for usage)"), and suggestions a third.
sqliteOnly("commander's usage errors are one line too", async (t, a) => {
  fails(t, await a.cli(['users', 'lst']), "unknown command 'lst'", 'list');
  fails(t, await a.cli(['users', 'list', '--bogus']), '--bogus');
  fails(t, await a.cli(['users', 'add']), 'username');
});

// Bug fixed with this test: a --db that is not an SQLite file failed at the first pragma with
// an SqliteError, which the CLI printed as an "unexpected error" with a stack trace.
sqliteOnly('a --db file that is not an archive fails in one line', async (t, a) => {
  const notDb = join(a.dir, 'notes.txt');
  writeFileSync(notDb, 'this is not a database, just some text that is long enough to have a header\n'.repeat(20));
  fails(t, await a.cli(['--db', notDb, 'users', 'list'], { noDb: true }), 'notes.txt', 'not a database');
});

sqliteOnly('without --db the archive is Database:Path from the settings', async (t, a) => {
  writeFileSync(join(a.dir, 'appsettings.json'), JSON.stringify({ Database: { Path: 'custom/archive.db' } }));
  ok(t, await a.cli(['users', 'add', 'alice'], { noDb: true }));
  t.true(existsSync(join(a.dir, 'custom', 'archive.db')));
  t.false(existsSync(a.db));
  fails(t, await a.cli(['users', 'list'], { noDb: true, env: { Database__Path: '' } }), 'Database:Path');
});

const IMAP_PASSWORD = 'Tr0ub4dor&3-imap-Secret';

sqliteOnly('accounts add/set for IMAP: defaults, changes, and the password is nowhere in clear', async (t, a) => {
  // Holding a connection keeps the CLI's writes in the -wal file, so both files are checked.
  const db = a.open();
  const outputs: string[] = [];
  const run = async (args: string[], input?: string) => {
    const r = await a.cli(args, input === undefined ? {} : { input });
    outputs.push(r.stdout, r.stderr);
    return r;
  };
  const added = json<{ id: number }>(
    t,
    await run(
      [
        'accounts',
        'add',
        '--name',
        'Work',
        '--email',
        'me@work.example',
        '--provider',
        'IMAP',
        '--imap-host',
        'imap.work.example',
        '--password-stdin',
        '--exclude',
        'Junk,Trash',
        '--json',
      ],
      `${IMAP_PASSWORD}\n`,
    ),
  );
  t.is(added.id, 1);
  type Listed = { id: number; imap: Record<string, unknown> | null; lastOutcome: string | null; messages: number };
  let list = json<Listed[]>(t, await run(['accounts', 'list', '--json']));
  t.deepEqual(list[0]!.imap, {
    host: 'imap.work.example',
    port: 993,
    security: 'tls',
    user: 'me@work.example',
    folders: null,
    exclude: ['Junk', 'Trash'],
  });
  const stored = db.prepare('SELECT password_enc FROM imap_settings WHERE account_id = 1').pluck().get() as string;
  t.regex(stored, /^v1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);

  // starttls moves a default port to 143; an explicit port and user stay as given.
  ok(t, await run(['accounts', 'set', '1', '--imap-security', 'starttls', '--folders', 'INBOX, Sent/2024']));
  list = json<Listed[]>(t, await run(['accounts', 'list', '--json']));
  t.like(list[0]!.imap, { port: 143, security: 'starttls', folders: ['INBOX', 'Sent/2024'] });
  ok(t, await run(['accounts', 'set', '1', '--imap-port', '1143', '--imap-user', 'me', '--enabled', 'false']));
  const after = json<Array<Listed & { isEnabled: boolean }>>(t, await run(['accounts', 'list', '--json']));
  t.like(after[0]!, { isEnabled: false, imap: { port: 1143, user: 'me', security: 'starttls' } });
  const newPassword = `${IMAP_PASSWORD}-rotated`;
  ok(t, await run(['accounts', 'set', '1', '--password-stdin'], `${newPassword}\n`));
  t.not(db.prepare('SELECT password_enc FROM imap_settings WHERE account_id = 1').pluck().get(), stored);

  // The sync sees the password; nothing else does.
  const admin = await a.admin();
  const [seen] = await admin.sync().accounts([1]);
  t.is(seen!.imap!.password, newPassword);
  const table = ok(t, await run(['accounts', 'list']));
  t.regex(table, /\bWork\s+me@work\.example\s+IMAP\s+false\s+-\s+-\s+0\n/);

  const bytes = Buffer.concat([
    readFileSync(a.db),
    existsSync(`${a.db}-wal`) ? readFileSync(`${a.db}-wal`) : Buffer.alloc(0),
  ]);
  t.true(bytes.includes('imap.work.example'), 'the check reads the settings that were written');
  for (const secret of [IMAP_PASSWORD, newPassword]) {
    t.false(bytes.includes(secret), 'the plaintext is nowhere in the file or its WAL');
    t.false(outputs.join('\n').includes(secret), 'nor in any output of the CLI');
  }
  t.is((statSync(join(a.dir, 'sync-secret')).mode & 0o777).toString(8), '600');
});

sqliteOnly('accounts add/set refuse bad IMAP options with one sentence and exit 2', async (t, a) => {
  const base = ['accounts', 'add', '--name', 'W', '--email', 'w@example.com'];
  const usage = async (args: string[], mention: string, input = `${IMAP_PASSWORD}\n`) => {
    const r = await a.cli(args, { input });
    fails(t, r, mention);
    t.is(r.code, 2, `exit 2 for ${args.join(' ')}`);
    t.false(r.stderr.includes(IMAP_PASSWORD));
  };
  await usage([...base, '--imap-host', 'h', '--imap-security', 'ssl', '--password-stdin'], 'tls, starttls or none');
  await usage([...base, '--imap-host', 'h', '--imap-port', '70000', '--password-stdin'], '1 to 65535');
  await usage([...base, '--imap-host', 'h', '--imap-port', 'x', '--password-stdin'], '--imap-port');
  await usage([...base, '--imap-host', 'h'], '--password-stdin');
  await usage([...base, '--imap-host', 'h', '--password-stdin'], 'no password', '');
  await usage([...base, '--provider', 'IMAP', '--imap-port', '993', '--password-stdin'], '--imap-host');
  await usage([...base, '--provider', 'M365', '--imap-host', 'h', '--password-stdin'], 'M365');
  await usage([...base, '--imap-host', 'h', '--password-stdin', '--exclude', 'Junk,,Trash'], 'empty folder');
  t.false(existsSync(a.db), 'no refused command started an archive');
  ok(t, await a.cli(base));
  await usage(['accounts', 'set', '1', '--enabled', 'maybe'], 'true or false');
  await usage(['accounts', 'set', 'one', '--enabled', 'true'], '"one"');
  await usage(['accounts', 'set', '1'], 'Nothing to change');
  const noSettings = await a.cli(['accounts', 'set', '1', '--imap-port', '143']);
  fails(t, noSettings, 'has no IMAP settings yet');
  t.is(noSettings.code, 1);
  fails(t, await a.cli(['accounts', 'set', '9', '--enabled', 'false']), 'No mail account with id 9');
  t.like(json<Array<{ isEnabled: boolean; imap: null }>>(t, await a.cli(['accounts', 'list', '--json']))[0], {
    isEnabled: true,
    imap: null,
  });
});

sqliteOnly('accounts list shows the last sync, the last outcome and the message count', async (t, a) => {
  ok(
    t,
    await a.cli(
      ['accounts', 'add', '--name', 'W', '--email', 'w@example.com', '--imap-host', 'imap.example', '--password-stdin'],
      { input: IMAP_PASSWORD },
    ),
  );
  const admin = await a.admin();
  await admin.openWriter().writeBatch([
    {
      accountId: 1,
      folder: 'INBOX',
      messageId: '<a@example>',
      subject: 'hello',
      from: 'x@example.com',
      to: 'w@example.com',
      cc: '',
      bcc: '',
      sentDate: Date.UTC(2024, 0, 1),
      receivedDate: Date.UTC(2024, 0, 1),
      isOutgoing: false,
      textBody: 'hi',
      htmlBody: null,
      attachments: [],
      dedupKey: 'mid:<a@example>',
    },
  ]);
  const at = Date.UTC(2026, 0, 2, 3, 4, 5);
  await admin.sync().recordOutcome(1, { ok: true, at });
  await admin.sync().recordOutcome(1, { ok: false, at: at + 1000, error: 'The server refused the password.' });
  const [row] = json<Array<Record<string, unknown>>>(t, await a.cli(['accounts', 'list', '--json']));
  t.like(row, {
    lastSync: '2026-01-02T03:04:05.000Z',
    lastOutcome: 'The server refused the password.',
    lastOutcomeAt: '2026-01-02T03:04:06.000Z',
    failures: 1,
    messages: 1,
  });
  t.regex(
    ok(t, await a.cli(['accounts', 'list'])),
    /2026-01-02T03:04:05\.000Z\s+The server refused the password\.\s+1\n/,
  );
});

sqliteOnly('accounts rotate-secret re-encrypts every password under a new generated key file', async (t, a) => {
  const add = (name: string, password: string) =>
    a.cli(
      [
        'accounts',
        'add',
        '--name',
        name,
        '--email',
        `${name}@example.com`,
        '--imap-host',
        'imap.example',
        '--password-stdin',
      ],
      { input: password },
    );
  ok(t, await add('one', IMAP_PASSWORD));
  ok(t, await add('two', `${IMAP_PASSWORD}-2`));
  const keyFile = join(a.dir, 'sync-secret');
  const oldKey = readFileSync(keyFile, 'utf8');
  const db = a.open();
  const stored = () =>
    db.prepare('SELECT password_enc FROM imap_settings ORDER BY account_id').pluck().all() as string[];
  const before = stored();
  t.deepEqual(json(t, await a.cli(['accounts', 'rotate-secret', '--json'])), { reencrypted: 2 });
  t.not(readFileSync(keyFile, 'utf8'), oldKey);
  t.is(statSync(keyFile).mode & 0o777, 0o600);
  t.false(existsSync(`${keyFile}.next`));
  const after = stored();
  t.not(after[0], before[0]);
  t.not(after[1], before[1]);
  const fresh = new SqliteAdmin(openArchive(a.db));
  t.teardown(() => fresh.close());
  t.deepEqual(
    (await fresh.sync().accounts()).map((x) => x.imap?.password),
    [IMAP_PASSWORD, `${IMAP_PASSWORD}-2`],
  );

  // A value the current key cannot open stops the rotation: nothing changes, the key file stays.
  db.prepare(
    "UPDATE imap_settings SET password_enc = replace(password_enc, 'v1:', 'v1:AA') WHERE account_id = 2",
  ).run();
  const keyNow = readFileSync(keyFile, 'utf8');
  const unchanged = stored();
  const r = await a.cli(['accounts', 'rotate-secret']);
  fails(t, r, 'Cannot decrypt the IMAP password of account 2');
  t.is(r.code, 1);
  t.deepEqual(stored(), unchanged);
  t.is(readFileSync(keyFile, 'utf8'), keyNow);
  t.false(existsSync(`${keyFile}.next`));
});

sqliteOnly('accounts rotate-secret with Sync:SecretKey takes the new key from stdin', async (t, a) => {
  const oldKey = Buffer.alloc(32, 1).toString('base64');
  const newKey = Buffer.alloc(32, 2).toString('hex');
  ok(
    t,
    await a.cli(
      ['accounts', 'add', '--name', 'W', '--email', 'w@example.com', '--imap-host', 'h', '--password-stdin'],
      { input: IMAP_PASSWORD, env: { Sync__SecretKey: oldKey } },
    ),
  );
  t.false(existsSync(join(a.dir, 'sync-secret')), 'a configured key writes no file');
  const refused = await a.cli(['accounts', 'rotate-secret'], { env: { Sync__SecretKey: oldKey } });
  fails(t, refused, '--new-key-stdin');
  t.is(refused.code, 2);
  const bad = await a.cli(['accounts', 'rotate-secret', '--new-key-stdin'], {
    env: { Sync__SecretKey: oldKey },
    input: 'short',
  });
  fails(t, bad, '32 bytes');
  t.is(bad.code, 2);
  t.regex(
    ok(
      t,
      await a.cli(['accounts', 'rotate-secret', '--new-key-stdin'], {
        env: { Sync__SecretKey: oldKey },
        input: newKey,
      }),
    ),
    /^Re-encrypted 1 IMAP password\(s\); set Sync:SecretKey to the new key/,
  );
  const withOld = new SqliteAdmin(openArchive(a.db), true, { secretKey: oldKey });
  t.teardown(() => withOld.close());
  t.regex((await withOld.sync().accounts())[0]!.imapError!, /Sync:SecretKey changed/);
  const withNew = new SqliteAdmin(openArchive(a.db), true, { secretKey: newKey });
  t.teardown(() => withNew.close());
  t.is((await withNew.sync().accounts())[0]!.imap!.password, IMAP_PASSWORD);
});
