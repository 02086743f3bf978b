// What a message says is what the archive says (docs/import.md, "What a message says"): one
// message per class of mismatch found by comparing real collections with other MIME parsers,
// written here at test time, imported, and read back through the real API (detail, download,
// search) on both stores (TEST_STORE=postgres).
import anyTest, { type TestFn } from 'ava';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseMailDate } from '../engine/import/mail-date.js';
import { tempDir } from './helpers/fixture.js';
import { closeImported, detail, download, importAndServe, search, type ImportedMail } from './helpers/imported-mail.js';
import { tnef } from './helpers/tnef.js';

const test = anyTest as TestFn<ImportedMail>;

const HEAD = 'To: alice@example.com\nDate: Mon, 06 May 2024 10:00:00 +0000\n';
const b = (text: string) => Buffer.from(text, 'latin1');
const FILE_BYTES = Buffer.from([0, 1, 2, 250, 251, 252, 253, 254, 255, 10, 13, 32, 77, 65, 73, 76]);

/** uuencode, as `uuencode` writes it: 45 bytes a line, "`" for zero. */
function uuencode(name: string, data: Buffer): string {
  const ch = (n: number) => (n === 0 ? '`' : String.fromCharCode(n + 32));
  let out = `begin 644 ${name}\n`;
  for (let i = 0; i < data.length; i += 45) {
    const line = data.subarray(i, i + 45);
    let text = ch(line.length);
    for (let j = 0; j < line.length; j += 3) {
      const [x, y, z] = [line[j]!, line[j + 1] ?? 0, line[j + 2] ?? 0];
      text += ch(x >> 2) + ch(((x << 4) | (y >> 4)) & 63) + ch(((y << 2) | (z >> 6)) & 63) + ch(z & 63);
    }
    out += `${text}\n`;
  }
  return `${out}\`\nend\n`;
}

const TNEF_FILES = [
  {
    name: 'photo.jpg',
    data: Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(700, 7), Buffer.from([0xff, 0xd9])]),
  },
  { name: 'notes.txt', data: Buffer.from('Minutes of the meeting.\r\n', 'latin1') },
  { name: 'budget.xlsx', data: Buffer.from('PK\x03\x04 not really a spreadsheet', 'latin1') },
];
const WINMAIL = tnef(TNEF_FILES);

/** One message per class (docs/decisions.md, ADR 17), keyed by a short name. */
const MESSAGES: Record<string, Buffer> = {
  latin1: Buffer.concat([
    b(
      'From: J\xfcrgen M\xfcller <juergen@example.com>\nSubject: Gr\xfc\xdfe aus K\xf6ln\nMessage-ID: <latin1@example.com>\n',
    ),
    b(HEAD),
    b('\nHallo.\n'),
  ]),
  twoFrom: b(
    `From: First Sender <first@example.com>\nFrom: Second Sender <second@example.com>\nSubject: The first subject\nSubject: The second subject\nMessage-ID: <two-from@example.com>\n${HEAD}\nBody.\n`,
  ),
  comments: b(
    'From: Pete(his account)@silly.test (his host)\nTo: unlisted-recipients:; (no To-header on input)\n' +
      'Cc: A Group:Ed Jones <c@a.test>,joe@where.test,John <jdoe@one.test>;\nSubject: Comments\n' +
      'Date: Mon, 06 May 2024 10:00:00 +0000\nMessage-ID: <comments@example.com>\n\nBody.\n',
  ),
  uuencoded: b(
    `From: a@example.com\nSubject: Uuencoded\nMessage-ID: <uu@example.com>\n${HEAD}MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=XX\n\n--XX\nContent-Type: text/plain\n\nSee the file.\n--XX\nContent-Type: application/octet-stream; name="data.bin"\nContent-Transfer-Encoding: x-uuencode\nContent-Disposition: attachment; filename="data.bin"\n\n${uuencode('data.bin', FILE_BYTES)}--XX--\n`,
  ),
  octetStream: b(
    `From: a@example.com\nSubject: Declared octet-stream\nMessage-ID: <octet@example.com>\n${HEAD}MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=XX\n\n--XX\nContent-Type: text/plain\n\nThe report.\n--XX\nContent-Type: application/octet-stream; name="report.pdf"\nContent-Transfer-Encoding: base64\nContent-Disposition: attachment; filename="report.pdf"\n\nJVBERi0xLjQK\n--XX--\n`,
  ),
  htmlOutside: b(
    `From: a@example.com\nSubject: HTML outside body\nMessage-ID: <html@example.com>\n${HEAD}MIME-Version: 1.0\nContent-Type: text/html\n\n<html><head><title>Not shown</title><style>p{color:red}</style></head>Zebrafish before the body<body><p>Inside the body</p></body>Walrus after the body</html>\n`,
  ),
  isoDate: b(
    'From: a@example.com\nTo: alice@example.com\nSubject: ISO date without a zone\nDate: 2012-12-08 00:48\nMessage-ID: <iso@example.com>\n\nBody.\n',
  ),
  signed: b(
    `From: a@example.com\nSubject: Signed only\nMessage-ID: <signed@example.com>\n${HEAD}MIME-Version: 1.0\nContent-Type: multipart/signed; protocol="application/pgp-signature"; micalg=pgp-sha256; boundary=XX\n\n--XX\nContent-Type: text/plain\n\nSigned text.\n--XX\nContent-Type: application/pgp-signature; name="signature.asc"\n\n-----BEGIN PGP SIGNATURE-----\nabc\n-----END PGP SIGNATURE-----\n--XX--\n`,
  ),
  encrypted: b(
    `From: a@example.com\nSubject: Encrypted\nMessage-ID: <encrypted@example.com>\n${HEAD}MIME-Version: 1.0\nContent-Type: multipart/encrypted; protocol="application/pgp-encrypted"; boundary=XX\n\n--XX\nContent-Type: application/pgp-encrypted\n\nVersion: 1\n--XX\nContent-Type: application/octet-stream; name="encrypted.asc"\n\n-----BEGIN PGP MESSAGE-----\nabc\n-----END PGP MESSAGE-----\n--XX--\n`,
  ),
  tnef: b(
    `From: a@example.com\nSubject: From Outlook\nMessage-ID: <tnef@example.com>\n${HEAD}MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=XX\n\n--XX\nContent-Type: text/plain\n\nSee attached.\n--XX\nContent-Type: application/ms-tnef; name="winmail.dat"\nContent-Transfer-Encoding: base64\nContent-Disposition: attachment; filename="winmail.dat"\n\n${WINMAIL.toString('base64').replace(/.{76}/g, '$&\n')}\n--XX--\n`,
  ),
  word8: Buffer.concat([
    b('From: a@example.com\nSubject: =?UTF-8?Q?Fr=F6sche?= und =?UTF-8?Q?Fr'),
    Buffer.from([0xf6]),
    b(`sche?= im Teich\nMessage-ID: <word8@example.com>\n${HEAD}\nBody.\n`),
  ]),
};

test.before(async (t) => {
  const { dir, cleanup } = tempDir('mag-fidelity-');
  try {
    const mail = join(dir, 'mail');
    mkdirSync(mail);
    for (const [name, raw] of Object.entries(MESSAGES)) writeFileSync(join(mail, `${name}.eml`), raw);
    t.context = await importAndServe([mail], 'Fidelity');
  } finally {
    cleanup();
  }
  const [summary] = t.context.summaries;
  if (summary!.imported !== Object.keys(MESSAGES).length || summary!.failed !== 0)
    throw new Error(`fixture import: ${JSON.stringify(summary)}`);
});

test.after.always(async (t) => closeImported(t.context));

test('raw 8-bit header bytes are read as windows-1252: Jürgen stays Jürgen, and from: finds him', async (t) => {
  const e = await detail(t, 'Grüße aus Köln');
  t.is(e.from, 'Jürgen Müller <juergen@example.com>');
  t.deepEqual(await search(t, 'from:jürgen'), ['Grüße aus Köln']);
  t.deepEqual(await search(t, 'subject:grüße'), ['Grüße aus Köln']);
});

test('a duplicated From or Subject: the first counts, for display and for from:', async (t) => {
  const e = await detail(t, 'The first subject');
  t.is(e.from, 'First Sender <first@example.com>');
  t.deepEqual(await search(t, 'from:first@example.com'), ['The first subject']);
  t.deepEqual(await search(t, 'from:second@example.com'), []);
});

test('address comments are dropped, a trailing one names a bare address, groups stay readable', async (t) => {
  const e = await detail(t, 'Comments');
  t.is(e.from, 'his host <Pete@silly.test>');
  t.is(e.to, 'unlisted-recipients: ;');
  t.is(e.cc, 'A Group: Ed Jones <c@a.test>, joe@where.test, John <jdoe@one.test>;');
  t.deepEqual(await search(t, 'from:pete@silly.test'), ['Comments']);
});

test('an x-uuencode part is the decoded file (size and bytes) with its declared type', async (t) => {
  const e = await detail(t, 'Uuencoded');
  t.deepEqual(
    e.attachments.map((a) => [a.fileName, a.contentType, a.size]),
    [['data.bin', 'application/octet-stream', FILE_BYTES.length]],
  );
  const file = await download(t, e.id, e.attachments[0]!.id);
  t.deepEqual(file.body, FILE_BYTES);
});

test('a declared application/octet-stream stays that, in the API and in the download', async (t) => {
  const e = await detail(t, 'Declared octet-stream');
  t.deepEqual(
    e.attachments.map((a) => [a.fileName, a.contentType, a.size]),
    [['report.pdf', 'application/octet-stream', 9]],
  );
  const file = await download(t, e.id, e.attachments[0]!.id);
  t.is(file.headers['content-type'], 'application/octet-stream');
  t.is(file.body.toString('latin1'), '%PDF-1.4\n');
});

test('text outside <body> of an HTML-only message is in the text body and searchable; <head> is not', async (t) => {
  const e = await detail(t, 'HTML outside body');
  t.is(e.textBody, 'Zebrafish before the body\n\nInside the body\n\nWalrus after the body');
  t.deepEqual(await search(t, 'zebrafish walrus'), ['HTML outside body']);
  t.deepEqual(await search(t, 'color'), []);
});

test('a Date in ISO form without a zone is read as UTC, not replaced by the file time', async (t) => {
  const e = await detail(t, 'ISO date without a zone');
  t.is(e.sentDate, '2012-12-08T00:48:00.000Z');
  for (const [text, iso] of [
    ['2012-12-08 00:48', '2012-12-08T00:48:00.000Z'],
    ['2012/12/08 00:48:30', '2012-12-08T00:48:30.000Z'],
    ['2012-12-08T00:48:30+0200', '2012-12-07T22:48:30.000Z'],
    ['2012-12-08 00:48 UTC', '2012-12-08T00:48:00.000Z'],
  ] as const) {
    t.is(new Date(parseMailDate(text)!).toISOString(), iso, text);
  }
});

test('has:attachment means a file to open: signatures and encryption control parts do not count', async (t) => {
  const signed = await detail(t, 'Signed only');
  t.false(signed.hasAttachments);
  t.deepEqual(
    signed.attachments.map((a) => a.contentType),
    ['application/pgp-signature'],
    'the signature is still listed and downloadable',
  );
  const encrypted = await detail(t, 'Encrypted');
  t.true(encrypted.hasAttachments, 'the encrypted payload is a file; its Version: 1 control part is not');
  t.deepEqual(await search(t, 'has:attachment'), ['Declared octet-stream', 'Encrypted', 'From Outlook', 'Uuencoded']);
});

test('8-bit bytes inside a UTF-8 encoded word are repaired, and subject:frosche finds the message', async (t) => {
  const e = await detail(t, 'Frösche und Frösche im Teich');
  t.is(e.subject, 'Frösche und Frösche im Teich');
  t.deepEqual(await search(t, 'subject:frosche'), ['Frösche und Frösche im Teich']);
});

test('a winmail.dat (TNEF) is followed by the files it carries, each with its bytes; the original stays', async (t) => {
  const e = await detail(t, 'From Outlook');
  t.deepEqual(
    e.attachments.map((a) => [a.fileName, a.contentType, a.size]),
    [
      ['winmail.dat', 'application/ms-tnef', WINMAIL.length],
      ['photo.jpg', 'image/jpeg', TNEF_FILES[0]!.data.length],
      ['notes.txt', 'text/plain', TNEF_FILES[1]!.data.length],
      ['budget.xlsx', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', TNEF_FILES[2]!.data.length],
    ],
  );
  for (const [i, a] of e.attachments.entries()) {
    const file = await download(t, e.id, a.id);
    t.deepEqual(file.body, i === 0 ? WINMAIL : TNEF_FILES[i - 1]!.data, a.fileName);
  }
  t.deepEqual(await search(t, 'filename:photo'), ['From Outlook']);
});
