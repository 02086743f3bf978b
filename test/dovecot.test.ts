// The private Dovecot of test/helpers/dovecot.ts is a real IMAP server the sync tests can rely on:
// cleartext, STARTTLS and implicit TLS with a verified certificate, refused passwords, nested and
// non-ASCII folders, UIDVALIDITY changes, and a server that goes down and comes back.
import test from 'ava';
import { ImapFlow } from 'imapflow';
import {
  appendMessages,
  changeUidValidity,
  countMessages,
  createFolder,
  deleteFolder,
  folderStatus,
  imapOptions,
  listFolders,
  startDovecot,
  withImap,
  writeMaildirMessages,
} from './helpers/dovecot.js';

function message(n: number, subject = `Message ${n}`): string {
  return [
    'From: Sender <sender@example.test>',
    'To: Alice <alice@example.test>',
    `Subject: ${subject}`,
    `Message-ID: <dovecot-harness-${n}@example.test>`,
    'Date: Mon, 04 Mar 2024 10:00:00 +0100',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    `Body of message ${n}.`,
    '',
  ].join('\r\n');
}

async function connected(options: ConstructorParameters<typeof ImapFlow>[0]): Promise<ImapFlow> {
  const client = new ImapFlow(options);
  await client.connect();
  return client;
}

test('cleartext, STARTTLS and implicit TLS all log in, with the certificate verified', async (t) => {
  const server = await startDovecot({}, t);
  t.log(`started in ${server.startMs} ms on ${server.port} (IMAP) and ${server.tlsPort} (IMAPS)`);

  const plain = await connected(imapOptions(server, undefined, 'none'));
  t.false(plain.secureConnection);
  t.truthy(plain.authenticated);
  t.false(plain.capabilities.has('STARTTLS'), 'logged in without upgrading: STARTTLS is no longer offered');
  await plain.logout();

  const starttls = await connected(imapOptions(server, undefined, 'starttls'));
  t.true(starttls.secureConnection, 'upgraded with STARTTLS');
  t.truthy(starttls.authenticated);
  await starttls.logout();

  const tls = await connected(imapOptions(server, undefined, 'tls'));
  t.true(tls.secureConnection);
  t.is(tls.port, server.tlsPort);
  t.truthy(tls.authenticated);
  await tls.logout();

  // Verification is really on: without the CA, both TLS modes refuse the self-signed certificate.
  for (const security of ['starttls', 'tls'] as const) {
    const error = await t.throwsAsync(connected(imapOptions(server, undefined, security, { tls: {} })));
    t.regex(String(error?.message) + String((error as { code?: string })?.code), /self.signed|certificate/i);
  }
  // And with verification explicitly off, an untrusted certificate is accepted.
  const unverified = await connected(imapOptions(server, undefined, 'tls', { tls: { rejectUnauthorized: false } }));
  t.true(unverified.secureConnection);
  await unverified.logout();
});

test('a wrong password is an authentication failure, in every mode', async (t) => {
  const server = await startDovecot({}, t);
  const user = server.users[0]!.user;
  for (const security of ['none', 'starttls', 'tls'] as const) {
    const error = await t.throwsAsync(
      connected(imapOptions(server, user, security, { auth: { user, pass: 'not-the-password' } })),
    );
    t.true((error as { authenticationFailed?: boolean }).authenticationFailed, security);
  }
  const unknown = await t.throwsAsync(
    connected(imapOptions(server, user, 'none', { auth: { user: 'nobody@example.test', pass: 'x' } })),
  );
  t.true((unknown as { authenticationFailed?: boolean }).authenticationFailed);
});

test('messages land in INBOX, nested and non-ASCII folders, listed with their UTF-8 names', async (t) => {
  const server = await startDovecot({}, t);
  const inbox = await appendMessages(server, undefined, 'INBOX', [message(1), message(2)]);
  t.deepEqual(inbox.uids, [1, 2]);
  t.true(typeof inbox.uidValidity === 'bigint' && inbox.uidValidity > 0n);
  await appendMessages(server, undefined, 'Archive/2024', [message(3)]);
  await appendMessages(server, undefined, 'Überweisungen/März', [message(4), message(5), message(6)]);

  t.deepEqual(await listFolders(server), ['Archive', 'Archive/2024', 'INBOX', 'Überweisungen', 'Überweisungen/März']);
  t.is(await countMessages(server, undefined, 'INBOX'), 2);
  t.is(await countMessages(server, undefined, 'Archive/2024'), 1);
  t.is(await countMessages(server, undefined, 'Überweisungen/März'), 3);
  t.is(await countMessages(server, undefined, 'Archive'), 0);

  // On the wire the server uses its own delimiter ('.') and modified UTF-7, which imapflow decodes.
  const listed = await withImap(server, undefined, async (client) => client.list());
  const march = listed.find((box) => box.name === 'März');
  t.is(march?.delimiter, '.');
  t.is(march?.path, 'Überweisungen.März');
  t.is(march?.pathAsListed, '&ANw-berweisungen.M&AOQ-rz');

  // The bytes come back as appended.
  const body = await withImap(server, undefined, async (client) => {
    const lock = await client.getMailboxLock('Überweisungen.März');
    try {
      const fetched = await client.fetchOne('2', { source: true }, { uid: true });
      return fetched ? fetched.source?.toString('utf8') : undefined;
    } finally {
      lock.release();
    }
  });
  t.is(body, message(5));
});

test("a '/' delimiter server and several users, each with their own mailbox", async (t) => {
  const server = await startDovecot(
    {
      separator: '/',
      users: [
        { user: 'alice@example.test', password: 'alice-pw' },
        { user: 'bob', password: 'bob-pw' },
      ],
    },
    t,
  );
  await appendMessages(server, 'bob', 'Archive/2024', [message(1), message(2)]);
  await createFolder(server, 'alice@example.test', 'Sent');
  t.deepEqual(await listFolders(server, 'bob'), ['Archive', 'Archive/2024', 'INBOX']);
  t.deepEqual(await listFolders(server, 'alice@example.test'), ['INBOX', 'Sent']);
  const listed = await withImap(server, 'bob', async (client) => client.list());
  t.is(listed.find((box) => box.name === '2024')?.path, 'Archive/2024');
  t.is(await countMessages(server, 'bob', 'Archive/2024'), 2);
});

test('UIDVALIDITY changes: in place keeping the messages, and by deleting and recreating the folder', async (t) => {
  const server = await startDovecot({}, t);
  await appendMessages(server, undefined, 'Archive/2024', [message(1), message(2)]);
  const before = await folderStatus(server, undefined, 'Archive/2024');
  t.is(before.messages, 2);

  const next = await changeUidValidity(server, undefined, 'Archive/2024');
  const after = await folderStatus(server, undefined, 'Archive/2024');
  t.is(after.uidValidity, next);
  t.not(after.uidValidity, before.uidValidity);
  t.is(after.messages, 2, 'the messages are still there');
  // A client selecting the folder sees the new value too.
  const selected = await withImap(server, undefined, async (client) => {
    const box = await client.mailboxOpen('Archive.2024');
    return box.uidValidity;
  });
  t.is(selected, next);

  await deleteFolder(server, undefined, 'Archive/2024');
  const again = await appendMessages(server, undefined, 'Archive/2024', [message(1)]);
  t.not(again.uidValidity, next);
  t.deepEqual(again.uids, [1]);
});

test('stop() makes connections fail, start() brings the same server and data back', async (t) => {
  const server = await startDovecot({}, t);
  await appendMessages(server, undefined, 'INBOX', [message(1)]);
  const { port, tlsPort } = server;

  await server.stop();
  t.false(server.running());
  for (const security of ['none', 'tls'] as const) {
    const error = await t.throwsAsync(connected(imapOptions(server, undefined, security)));
    t.regex(String((error as { code?: string }).code ?? error?.message), /ECONNREFUSED/);
  }

  await server.start();
  t.true(server.running());
  t.is(server.port, port);
  t.is(server.tlsPort, tlsPort);
  t.log(`restarted in ${server.startMs} ms`);
  t.is(await countMessages(server, undefined, 'INBOX'), 1);
  const tls = await connected(imapOptions(server, undefined, 'tls'));
  t.true(tls.secureConnection);
  await tls.logout();
});

test('bulk fill straight into the Maildir: Dovecot numbers the messages in the order given', async (t) => {
  const server = await startDovecot({}, t);
  await appendMessages(server, undefined, 'INBOX', [message(0)]);
  const count = 300;
  const began = Date.now();
  await writeMaildirMessages(
    server,
    undefined,
    'Überweisungen/März',
    Array.from({ length: count }, (_, i) => message(i + 1)),
  );
  await writeMaildirMessages(server, undefined, 'INBOX', [message(1000)]);
  t.log(`${count} messages written in ${Date.now() - began} ms`);
  t.is(await countMessages(server, undefined, 'Überweisungen/März'), count);
  t.is(await countMessages(server, undefined, 'INBOX'), 2);
  const seen = await withImap(server, undefined, async (client) => {
    await client.mailboxOpen('Überweisungen.März');
    const out: Array<[number, string | undefined]> = [];
    for await (const m of client.fetch(`1,2,${count}`, { envelope: true, uid: true }, { uid: true })) {
      out.push([m.uid, m.envelope?.subject]);
    }
    return out;
  });
  t.deepEqual(seen, [
    [1, 'Message 1'],
    [2, 'Message 2'],
    [count, `Message ${count}`],
  ]);
  // Later APPENDs continue the numbering.
  const more = await appendMessages(server, undefined, 'Überweisungen/März', [message(count + 1)]);
  t.deepEqual(more.uids, [count + 1]);
});

test('destroy() stops the server and removes its directory', async (t) => {
  const server = await startDovecot({ label: 'destroy' });
  const { existsSync } = await import('node:fs');
  t.true(existsSync(server.dir));
  await server.destroy();
  t.false(server.running());
  t.false(existsSync(server.dir));
  await t.throwsAsync(server.start(), { message: /destroyed/ });
});
