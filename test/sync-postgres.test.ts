// IMAP accounts on a PostgreSQL archive (engine/postgres/sync-state.ts): the settings both applications
// share in Mail Archiver's MailAccounts columns, the encrypted password, outcome, lease and
// folder state in this service's schema, and Sync:SecretKey required.
import test, { type ExecutionContext } from 'ava';
import { spawnSync } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { type ArchiveAdmin } from '../engine/store-contract.js';
import { openAdmin } from '../engine/archive.js';
import { StoreError } from '../shared/errors.js';
import { PgSyncState } from '../engine/postgres/sync-state.js';
import { cliArchive, fails, json, ok, type CliArchive } from './helpers/cli-archive.js';

const PASSWORD = 'Tr0ub4dor&3-pg-imap-Secret';
const KEY = Buffer.alloc(32, 5).toString('base64');
const env = { Sync__SecretKey: KEY };

async function withAdmin(
  t: ExecutionContext,
  a: CliArchive,
  secretKey: string | undefined = KEY,
): Promise<ArchiveAdmin> {
  const admin = await openAdmin(a.db, { create: true, secretKey });
  t.teardown(() => admin.close());
  return admin;
}

test('IMAP accounts need Sync:SecretKey on PostgreSQL; nothing is stored without it', async (t) => {
  const a = await cliArchive(t, 'postgres');
  const r = await a.cli(
    ['accounts', 'add', '--name', 'W', '--email', 'w@example.com', '--imap-host', 'imap.example', '--password-stdin'],
    { input: PASSWORD },
  );
  fails(t, r, 'need Sync:SecretKey');
  t.false(r.stderr.includes(PASSWORD));
  t.is(await a.count('accounts'), 0);
});

test('accounts add/set/list on PostgreSQL: Mail Archiver columns, our encrypted password, never the plaintext', async (t) => {
  const a = await cliArchive(t, 'postgres');
  const outputs: string[] = [];
  const run = async (args: string[], input?: string) => {
    const r = await a.cli(args, { env, ...(input === undefined ? {} : { input }) });
    outputs.push(r.stdout, r.stderr);
    return r;
  };
  const { id } = json<{ id: number }>(
    t,
    await run(
      [
        'accounts',
        'add',
        '--name',
        'Work',
        '--email',
        'me@work.example',
        '--imap-host',
        'imap.work.example',
        '--imap-security',
        'starttls',
        '--password-stdin',
        '--exclude',
        'Junk,Trash',
        '--json',
      ],
      `${PASSWORD}\n`,
    ),
  );
  const columns = async () =>
    (
      await a.pgQuery(
        `SELECT "ImapServer", "ImapPort", "UseSSL", "Username", "Password", "ExcludedFolders", "Provider", "IsEnabled"
           FROM mail_archiver."MailAccounts" WHERE "Id" = $1`,
        [id],
      )
    )[0];
  t.deepEqual(await columns(), {
    ImapServer: 'imap.work.example',
    ImapPort: 143,
    UseSSL: false,
    Username: 'me@work.example',
    Password: null,
    ExcludedFolders: 'Junk;Trash',
    Provider: 'IMAP',
    IsEnabled: true,
  });
  ok(
    t,
    await run(['accounts', 'set', String(id), '--imap-security', 'tls', '--folders', 'INBOX', '--enabled', 'false']),
  );
  t.like(await columns(), { ImapPort: 993, UseSSL: true, IsEnabled: false });
  const list = json<Array<Record<string, unknown>>>(t, await run(['accounts', 'list', '--json']));
  t.like(list[0], {
    id,
    isEnabled: false,
    lastSync: null,
    messages: 0,
    imap: {
      host: 'imap.work.example',
      port: 993,
      security: 'tls',
      user: 'me@work.example',
      folders: ['INBOX'],
      exclude: ['Junk', 'Trash'],
    },
  });
  const admin = await withAdmin(t, a);
  t.is((await admin.sync().accounts([id]))[0]!.imap!.password, PASSWORD);

  const dump = spawnSync('pg_dump', ['--data-only', a.db], { encoding: 'utf8' });
  t.is(dump.status, 0, dump.stderr);
  t.true(dump.stdout.includes('imap.work.example'), 'the dump holds the settings');
  t.regex(dump.stdout, /v1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+/);
  t.false(dump.stdout.includes(PASSWORD), 'the plaintext is nowhere in the database');
  t.false(outputs.join('\n').includes(PASSWORD), 'nor in any output');

  // A wrong key is that account's error, in one sentence.
  const wrong = await withAdmin(t, a, Buffer.alloc(32, 6).toString('base64'));
  const [seen] = await wrong.sync().accounts([id]);
  t.is(seen!.imap, null);
  t.regex(seen!.imapError!, new RegExp(`^Cannot decrypt the IMAP password of account ${id}: Sync:SecretKey changed`));
});

test('an account whose password Mail Archiver holds is synced with it until we store our own', async (t) => {
  const a = await cliArchive(t, 'postgres');
  const admin = await withAdmin(t, a);
  const account = await admin.addAccount({ name: 'MA', emailAddress: 'ma@example.com', provider: 'IMAP' });
  await a.pgQuery(
    `UPDATE mail_archiver."MailAccounts" SET "ImapServer" = 'imap.ma.example', "ImapPort" = 993, "Username" = 'ma',
       "Password" = 'plain-from-mail-archiver', "UseSSL" = true, "ExcludedFolders" = 'Spam' WHERE "Id" = $1`,
    [account.id],
  );
  let [seen] = await admin.sync().accounts();
  t.deepEqual(seen!.imap, {
    host: 'imap.ma.example',
    port: 993,
    security: 'tls',
    user: 'ma',
    password: 'plain-from-mail-archiver',
    folders: null,
    exclude: ['Spam'],
  });
  await admin.setAccount(account.id, { imap: { password: PASSWORD } });
  [seen] = await admin.sync().accounts();
  t.is(seen!.imap!.password, PASSWORD);
  const [row] = await a.pgQuery<{ Password: string }>(
    `SELECT "Password" FROM mail_archiver."MailAccounts" WHERE "Id" = $1`,
    [account.id],
  );
  t.is(row!.Password, 'plain-from-mail-archiver', "Mail Archiver's column is left as it was");
  const plain = await admin.addAccount({ name: 'Files', emailAddress: 'f@example.com' });
  t.is((await admin.sync().accounts([plain.id]))[0]!.imap, null);
});

test('a password Mail Archiver encrypted (enc:v1) is never tried: the outcome says so and how to set ours', async (t) => {
  const a = await cliArchive(t, 'postgres');
  const admin = await withAdmin(t, a);
  // An IMAP server that only counts connections: sync must not even connect.
  let connections = 0;
  const imap = createServer((socket) => {
    connections++;
    socket.end();
  });
  await new Promise<void>((resolve) => imap.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => imap.close(() => resolve())));
  const port = (imap.address() as AddressInfo).port;
  const account = await admin.addAccount({ name: 'MA', emailAddress: 'ma@example.com', provider: 'IMAP' });
  const encrypted = `enc:v1:${Buffer.alloc(44, 9).toString('base64')}`;
  await a.pgQuery(
    `UPDATE mail_archiver."MailAccounts" SET "ImapServer" = '127.0.0.1', "ImapPort" = $2, "Username" = 'ma',
       "Password" = $3, "UseSSL" = false WHERE "Id" = $1`,
    [account.id, port, encrypted],
  );
  const sentence = `Account ${account.id}'s IMAP password is encrypted by Mail Archiver, which this service cannot read: give it its own with accounts set ${account.id} --password-stdin.`;
  const [seen] = await admin.sync().accounts([account.id]);
  t.is(seen!.imap, null);
  t.is(seen!.imapError, sentence);

  const run = await a.cli(['sync', '--json'], { env: { ...env, Sync__Enabled: 'true' } });
  t.is(run.code, 1, run.stderr);
  t.like(JSON.parse(run.stdout), [{ accountId: account.id, status: 'failed', reason: sentence }]);
  t.false(`${run.stdout}${run.stderr}`.includes(encrypted), 'the stored value is never printed');
  const list = json<Array<Record<string, unknown>>>(t, await a.cli(['accounts', 'list', '--json'], { env }));
  t.like(list[0], { id: account.id, lastOutcome: sentence, failures: 1 });
  t.is(connections, 0, 'no connection was made with the encrypted value');

  // An account with no IMAP settings yet: Mail Archiver's encrypted value is no password to keep.
  const bare = await admin.addAccount({ name: 'Bare', emailAddress: 'bare@example.com', provider: 'IMAP' });
  await a.pgQuery(`UPDATE mail_archiver."MailAccounts" SET "Password" = $2 WHERE "Id" = $1`, [bare.id, encrypted]);
  fails(
    t,
    await a.cli(['accounts', 'set', String(bare.id), '--imap-host', 'other.example'], { env }),
    'give the host and the password',
  );
  // Our own password, given as the sentence says, is used from then on.
  ok(t, await a.cli(['accounts', 'set', String(account.id), '--password-stdin'], { env, input: PASSWORD }));
  t.is((await admin.sync().accounts([account.id]))[0]!.imap!.password, PASSWORD);
});

test('SyncState on PostgreSQL: folder state, outcomes with LastSync, failures, the lease', async (t) => {
  const a = await cliArchive(t, 'postgres');
  const admin = await withAdmin(t, a);
  const acc = await admin.addAccount({ name: 'A', emailAddress: 'a@example.com' });
  const s = admin.sync();
  t.is(await s.folderState(acc.id, 'INBOX'), null);
  await s.saveFolderState(acc.id, 'INBOX', { uidValidity: '4294967295', lastUid: 10 });
  await s.saveFolderState(acc.id, 'INBOX', { uidValidity: '4294967295', lastUid: 4_000_000_000 });
  t.deepEqual(await s.folderState(acc.id, 'INBOX'), { uidValidity: '4294967295', lastUid: 4_000_000_000 });
  t.is(await s.folderState(acc.id, 'Sent'), null);

  await s.recordOutcome(acc.id, { ok: false, at: 1_000, error: 'Host unreachable.' });
  await s.recordOutcome(acc.id, { ok: false, at: 2_000, error: 'Host unreachable.' });
  let [row] = await s.accounts([acc.id]);
  t.like(row, {
    failures: 2,
    lastOutcome: { ok: false, at: 2_000, error: 'Host unreachable.' },
    account: { lastSync: null },
  });
  const at = Date.UTC(2026, 0, 2, 3, 4, 5);
  await s.recordOutcome(acc.id, { ok: true, at });
  [row] = await s.accounts([acc.id]);
  t.like(row, { failures: 0, lastOutcome: { ok: true, at }, account: { lastSync: '2026-01-02T03:04:05.000Z' } });
  await t.throwsAsync(s.recordOutcome(999, { ok: true, at }), { instanceOf: StoreError });

  let now = 5_000_000;
  const clocked = new PgSyncState(
    (admin as unknown as { ctx: ConstructorParameters<typeof PgSyncState>[0] }).ctx,
    () => {
      throw new Error('no key needed');
    },
    () => now,
  );
  t.true(await clocked.acquireLease(acc.id, 'one', 60_000));
  t.false(await clocked.acquireLease(acc.id, 'two', 60_000));
  t.true(await clocked.acquireLease(acc.id, 'one', 60_000), 'renewed by its holder');
  now += 60_000;
  t.true(await clocked.acquireLease(acc.id, 'two', 60_000), 'taken once expired');
  await clocked.releaseLease(acc.id, 'one');
  t.false(await clocked.acquireLease(acc.id, 'three', 60_000), 'only the holder releases');
  await clocked.releaseLease(acc.id, 'two');
  t.true(await clocked.acquireLease(acc.id, 'three', 60_000));
  // The database's clock: a fresh lease on another account, refused to a second runner.
  const other = await admin.addAccount({ name: 'B', emailAddress: 'b@example.com' });
  const results = await Promise.all([s.acquireLease(other.id, 'x', 60_000), s.acquireLease(other.id, 'y', 60_000)]);
  t.deepEqual(results.sort(), [false, true]);
});

test('accounts rotate-secret on PostgreSQL: the new key from stdin, all passwords re-encrypted', async (t) => {
  const a = await cliArchive(t, 'postgres');
  ok(
    t,
    await a.cli(
      ['accounts', 'add', '--name', 'W', '--email', 'w@example.com', '--imap-host', 'h', '--password-stdin'],
      {
        input: PASSWORD,
        env,
      },
    ),
  );
  const next = Buffer.alloc(32, 8).toString('base64');
  fails(t, await a.cli(['accounts', 'rotate-secret'], { env }), '--new-key-stdin');
  t.deepEqual(json(t, await a.cli(['accounts', 'rotate-secret', '--new-key-stdin', '--json'], { env, input: next })), {
    reencrypted: 1,
  });
  t.regex((await (await withAdmin(t, a)).sync().accounts())[0]!.imapError!, /Sync:SecretKey changed/);
  t.is((await (await withAdmin(t, a, next)).sync().accounts())[0]!.imap!.password, PASSWORD);
});
