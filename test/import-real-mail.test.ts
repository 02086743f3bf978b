// Real mail, read as it was written (docs/import.md, "What a message says"): one
// hand-written message per class of fault found by importing real-world test messages and
// comparing them field by field with an independent parser. The messages are written here at
// test time, imported from a directory (as an operator would), and read back through the real
// API on both stores (TEST_STORE=postgres). Duplicates and the import summary are checked through
// the CLI on a SQLite file and on a PostgreSQL database.
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import iconv from 'iconv-lite';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openArchive } from '../engine/sqlite/open.js';
import { importPaths, MAX_LISTED_REPAIRS } from '../engine/import/importer.js';
import { parseMailDate } from '../engine/import/mail-date.js';
import { addAccount } from '../engine/sqlite/accounts.js';
import { readMbox } from '../engine/import/mbox.js';
import { cliArchive, STORE_KINDS, type CliArchive, type StoreKind } from './helpers/cli-archive.js';
import { runCli } from './helpers/cli.js';
import { tempDir } from './helpers/fixture.js';
import { closeImported, detail, download, importAndServe, search, type ImportedMail } from './helpers/imported-mail.js';

const test = anyTest as TestFn<ImportedMail>;

const b = (text: string) => Buffer.from(text, 'latin1');
const DATE = 'Date: Mon, 06 May 2024 10:00:00 +0000\n';
/** A JPEG's worth of bytes whose base64 ends in padding. */
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(301, 0x42), Buffer.from([0xff, 0xd9])]);
/** Two pieces of a file, each base64-encoded with its own padding. */
const PIECES = [Buffer.from('first piece, 22 bytes!'), Buffer.from('and the second one.')];
/** UTF-16LE text with a byte-order mark: NUL bytes in a valid part. */
const UTF16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('Notizen zum Projekt\r\n', 'utf16le')]);

/** An encoded word of these bytes, in base64 or Q. */
const wordB = (bytes: Buffer) => `=?UTF-8?B?${bytes.toString('base64')}?=`;
const wordQ = (bytes: Buffer) =>
  `=?UTF-8?Q?${[...bytes].map((c) => (c > 0x20 && c < 0x7f && c !== 0x3d && c !== 0x3f && c !== 0x5f ? String.fromCharCode(c) : `=${c.toString(16).toUpperCase().padStart(2, '0')}`)).join('')}?=`;
const utf8 = (text: string) => Buffer.from(text, 'utf8');
/** `Café`: é (C3 A9) split between two Q words. */
const CAFE = utf8('Café au lait');
/** `Отчёт за май.pdf`: split inside `ч` (D1 87) between two B words. */
const REPORT_NAME = utf8('Отчёт за май.pdf');
/** A message carried inline in 15. */
const ORIGINAL =
  'From: bob@example.com\nTo: carol@example.com\nSubject: The original\nMessage-ID: <original@example.com>\n\nOriginal words about herons.\n';

/** File name → bytes, in the import directory. */
const FILES: Record<string, Buffer> = {
  // 1. A raw 8-bit byte inside an ISO-8859-1 Q word.
  'word8-latin1.eml': Buffer.concat([
    b('From: a@example.com\nTo: alice@example.com\nSubject: =?iso-8859-1?Q?Fr'),
    Buffer.from([0xf6]),
    b(`sche_im_Teich?=\nMessage-ID: <word8-latin1@example.com>\n${DATE}\nBody.\n`),
  ]),
  // 2. UTF-7, in an encoded word and as the body's charset.
  'utf7.eml': b(
    `From: a@example.com\nTo: alice@example.com\nSubject: =?utf-7?Q?Gr+APw-+AN8-e_aus_UTF-7?=\nMessage-ID: <utf7@example.com>\n${DATE}MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-7\n\nFr+APY-sche +APw-ber den Teich\n`,
  ),
  // 3. Every line ends in a bare CR.
  'cr-only.eml': b(
    'From: Carla Mac <carla@example.com>\rTo: alice@example.com\rSubject: Lines that end in CR\rDate: Tue, 07 May 2024 09:30:00 +0200\rMessage-ID: <cr-only@example.com>\r\rFirst line of the body.\rSecond line.\r',
  ),
  // 4. No extension, a NUL in the first 4 KB: a multipart whose part is binary UTF-16.
  'utf16-part': Buffer.concat([
    b(
      `From: a@example.com\nTo: alice@example.com\nSubject: A binary UTF-16 part\nMessage-ID: <utf16-part@example.com>\n${DATE}MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=XX\n\n--XX\nContent-Type: text/plain\n\nSee the notes.\n--XX\nContent-Type: text/plain; charset=utf-16le; name=notes.txt\nContent-Transfer-Encoding: binary\nContent-Disposition: attachment; filename=notes.txt\n\n`,
    ),
    UTF16,
    b('\n--XX--\n'),
  ]),
  // 5. A whitespace-only first line, with and without an extension.
  'leading-space': b(
    ` \nFrom: a@example.com\nTo: alice@example.com\nSubject: Leading whitespace line\nMessage-ID: <leading-space@example.com>\n${DATE}\nBody.\n`,
  ),
  'leading-blank.eml': b(
    `\t\n\nFrom: a@example.com\nTo: alice@example.com\nSubject: Leading blank lines\nMessage-ID: <leading-blank@example.com>\n${DATE}\nBody.\n`,
  ),
  // 7. No blank line after the header block.
  'unterminated.eml': b(
    `From: a@example.com\nTo: alice@example.com\nSubject: Header block never closed\nMessage-ID: <unterminated@example.com>\n${DATE}This sentence is the body.\nAnd so is this one.\n`,
  ),
  // 8. A numeric zone without its leading zero.
  'zone.eml': b(
    'From: a@example.com\nTo: alice@example.com\nSubject: Zone without padding\nDate: Mon, 06 May 2024 10:00:00 -600\nMessage-ID: <zone@example.com>\n\nBody.\n',
  ),
  // 9. Text after the base64 padding of a JPEG.
  'base64-tail.eml': b(
    `From: a@example.com\nTo: alice@example.com\nSubject: Photo with a footer\nMessage-ID: <base64-tail@example.com>\n${DATE}MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=XX\n\n--XX\nContent-Type: text/plain\n\nThe photo.\n--XX\nContent-Type: image/jpeg; name=photo.jpg\nContent-Transfer-Encoding: base64\nContent-Disposition: attachment; filename=photo.jpg\n\n${JPEG.toString('base64').replace(/.{76}/g, '$&\n')}\nSent from the list server\n--XX--\n`,
  ),
  // 9, and what must not be cut: a file encoded as two padded base64 pieces, one after the other.
  'base64-pieces.eml': b(
    `From: a@example.com\nTo: alice@example.com\nSubject: Two padded pieces\nMessage-ID: <base64-pieces@example.com>\n${DATE}MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=XX\n\n--XX\nContent-Type: text/plain\n\nThe file.\n--XX\nContent-Type: application/octet-stream; name=pieces.bin\nContent-Transfer-Encoding: base64\nContent-Disposition: attachment; filename=pieces.bin\n\n${PIECES.map((p) => p.toString('base64')).join('\n')}\nSent from the list server\n--XX--\n`,
  ),
  // 10. An HTML-only message whose HTML part has an unknown disposition.
  'html-disposition.eml': b(
    `From: a@example.com\nTo: alice@example.com\nSubject: HTML with an odd disposition\nMessage-ID: <html-disposition@example.com>\n${DATE}MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=XX\n\n--XX\nContent-Type: text/html; charset=utf-8\nContent-Disposition: body\n\n<html><body><p>Pelicans on the roof</p></body></html>\n--XX--\n`,
  ),
  // 12. A Latin-1 body without a charset.
  'latin1-body.eml': b(
    `From: a@example.com\nTo: alice@example.com\nSubject: Latin-1 body without a charset\nMessage-ID: <latin1-body@example.com>\n${DATE}\nGr\xfc\xdfe aus K\xf6ln, sagt J\xfcrgen.\n`,
  ),
  // 12, and a UTF-8 body with one stray Latin-1 line: only that line is read as windows-1252.
  'utf8-stray.eml': b(
    `From: a@example.com\nTo: alice@example.com\nSubject: UTF-8 with a stray byte\nMessage-ID: <utf8-stray@example.com>\n${DATE}MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\nGr\xc3\xbc\xc3\x9fe, \xe2\x82\xac 5\nM\xfcnchen\n`,
  ),
  // 13. Adjacent encoded words that split one UTF-8 character between them: a subject, and the
  // name of a file that is the whole message.
  'split-words.eml': b(
    `From: a@example.com\nTo: alice@example.com\nSubject: ${wordQ(CAFE.subarray(0, 4))} ${wordQ(CAFE.subarray(4))}\nMessage-ID: <split-words@example.com>\n${DATE}\nBody.\n`,
  ),
  'split-name.eml': b(
    `From: a@example.com\nTo: alice@example.com\nSubject: A file with a split name\nMessage-ID: <split-name@example.com>\n${DATE}MIME-Version: 1.0\nContent-Type: application/pdf;\n name="${wordB(REPORT_NAME.subarray(0, 6))}\n ${wordB(REPORT_NAME.subarray(6))}"\nContent-Disposition: attachment\nContent-Transfer-Encoding: base64\n\n${Buffer.from('%PDF-1.4 report').toString('base64')}\n`,
  ),
  // 14. 8-bit header lines that are not all UTF-8: a Cyrillic file name whose last byte is cut,
  // and Big5 and GB2312 subjects beside bodies that declare those charsets.
  'cut-name.eml': Buffer.concat([
    b(
      `From: a@example.com\nTo: alice@example.com\nSubject: A name cut short\nMessage-ID: <cut-name@example.com>\n${DATE}MIME-Version: 1.0\nContent-Type: application/octet-stream\nContent-Disposition: attachment; filename="`,
    ),
    utf8('Отчёт за май').subarray(0, -1),
    b('"\nContent-Transfer-Encoding: base64\n\nAAEC\n'),
  ]),
  'cut-part-name.eml': Buffer.concat([
    b(
      `From: a@example.com\nTo: alice@example.com\nSubject: A part name cut short\nMessage-ID: <cut-part-name@example.com>\n${DATE}MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=XX\n\n--XX\nContent-Type: text/plain\n\nThe file.\n--XX\nContent-Type: application/octet-stream\nContent-Disposition: attachment; filename="`,
    ),
    utf8('Отчёт за май').subarray(0, -1),
    b('"\nContent-Transfer-Encoding: base64\n\nAAEC\n--XX--\n'),
  ]),
  'big5.eml': Buffer.concat([
    b('From: a@example.com\nTo: alice@example.com\nSubject: '),
    iconv.encode('中文測試郵件', 'big5'),
    b(
      `\nMessage-ID: <big5@example.com>\n${DATE}MIME-Version: 1.0\nContent-Type: text/plain; charset=big5\nContent-Transfer-Encoding: 8bit\n\n`,
    ),
    iconv.encode('你好', 'big5'),
    b('\n'),
  ]),
  'gb2312.eml': Buffer.concat([
    b('From: a@example.com\nTo: alice@example.com\nSubject: '),
    iconv.encode('简体中文主题', 'gb2312'),
    b(
      `\nMessage-ID: <gb2312@example.com>\n${DATE}MIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=XX\n\n--XX\nContent-Type: text/plain; charset="gb2312"\nContent-Transfer-Encoding: 8bit\n\n`,
    ),
    iconv.encode('你好', 'gb2312'),
    b('\n--XX--\n'),
  ]),
  // 15. A message carried inline, as forwards and abuse reports carry it.
  'inline-message.eml': b(
    `From: a@example.com\nTo: alice@example.com\nSubject: Forwarded inline\nMessage-ID: <inline-message@example.com>\n${DATE}MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=XX\n\n--XX\nContent-Type: text/plain\n\nForwarded below.\n--XX\nContent-Type: message/rfc822\nContent-Disposition: inline\n\n${ORIGINAL}\n--XX--\n`,
  ),
  // 16. A delivery report whose explanation is HTML.
  'report-html.eml': b(
    `From: MAILER-DAEMON@example.com\nTo: alice@example.com\nSubject: Undelivered Mail Returned to Sender\nMessage-ID: <report-html@example.com>\n${DATE}MIME-Version: 1.0\nContent-Type: multipart/report; report-type=delivery-status; boundary=XX\n\n--XX\nContent-Type: text/html; charset=utf-8\n\n<html><body><p>Your message to nobody@example.org could not be delivered: the mailbox does not exist.</p></body></html>\n--XX\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; mx.example.com\n\nFinal-Recipient: rfc822; nobody@example.org\nAction: failed\nStatus: 5.1.1\n--XX\nContent-Type: text/rfc822-headers\n\nFrom: alice@example.com\nSubject: Hello\n--XX--\n`,
  ),
  // 17. A Content-Type that is no type/subtype, for the message and for a part.
  'bad-type.eml': b(
    `From: a@example.com\nTo: alice@example.com\nSubject: Content-Type without a slash\nMessage-ID: <bad-type@example.com>\n${DATE}MIME-Version: 1.0\nContent-Type: text plain\n\nHello in plain text.\n`,
  ),
  'bad-part-type.eml': b(
    `From: a@example.com\nTo: alice@example.com\nSubject: A part without a slash\nMessage-ID: <bad-part-type@example.com>\n${DATE}MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=XX\n\n--XX\nContent-Type: text plain\n\nThe part in plain text.\n--XX\nContent-Type: application; name="notes.txt"\nContent-Disposition: attachment\n\nA file whose type has no slash.\n--XX--\n`,
  ),
  // 18. A first line that begins with a space before From:, in a file with no extension.
  indented: b(
    ` From: Dana <dana@example.com>\nTo: alice@example.com\nSubject: Indented first field\nMessage-ID: <indented@example.com>\n${DATE}\nBody.\n`,
  ),
};

// 11. mboxcl2: Content-Length delimits each entry, and nothing is escaped.
const CL2_BODY = 'Quoted from the list:\n>From the archive of 2019, one line.\nEnd.\n';
const MBOXCL2 = b(
  `From a@example.com Mon May  6 10:00:00 2024\nFrom: a@example.com\nTo: alice@example.com\nSubject: mboxcl2 entry\nMessage-ID: <cl2@example.com>\n${DATE}Content-Length: ${CL2_BODY.length}\n\n${CL2_BODY}\nFrom b@example.com Mon May  6 11:00:00 2024\nFrom: b@example.com\nTo: alice@example.com\nSubject: mboxcl2 second\nMessage-ID: <cl2b@example.com>\n${DATE}Content-Length: 6\n\nShort\n`,
);
// 3, in an mbox: a whole file whose lines end in a bare CR.
const MBOX_CR = b(
  `From a@example.com Mon May  6 10:00:00 2024\rFrom: a@example.com\rTo: alice@example.com\rSubject: CR mbox one\rMessage-ID: <crmbox1@example.com>\r${DATE.replace('\n', '\r')}\rOne.\r\rFrom b@example.com Mon May  6 11:00:00 2024\rFrom: b@example.com\rTo: alice@example.com\rSubject: CR mbox two\rMessage-ID: <crmbox2@example.com>\r${DATE.replace('\n', '\r')}\rTwo.\r`,
);

test.before(async (t) => {
  const { dir, cleanup } = tempDir('mag-real-mail-');
  try {
    const mail = join(dir, 'mail');
    mkdirSync(mail);
    for (const [name, raw] of Object.entries(FILES)) writeFileSync(join(mail, name), raw);
    writeFileSync(join(dir, 'cl2.mbox'), MBOXCL2);
    writeFileSync(join(dir, 'cr.mbox'), MBOX_CR);
    t.context = await importAndServe([mail, join(dir, 'cl2.mbox'), join(dir, 'cr.mbox')], 'Real');
  } finally {
    cleanup();
  }
});

test.after.always(async (t) => closeImported(t.context));

type Ctx = ExecutionContext<ImportedMail>;

test('every file is imported: nothing failed, nothing ignored, no warnings', (t) => {
  const { summaries, warnings } = t.context;
  t.deepEqual(warnings, []);
  t.deepEqual(
    summaries.flatMap((s) => s.ignored),
    [],
  );
  t.is(
    summaries.reduce((n, s) => n + s.failed, 0),
    0,
  );
  t.is(
    summaries.reduce((n, s) => n + s.imported, 0),
    Object.keys(FILES).length + 4,
  );
});
test('1. a raw 8-bit byte inside an ISO-8859-1 encoded word is read once: Frösche', async (t) => {
  const e = await detail(t, 'Frösche im Teich');
  t.is(e.subject, 'Frösche im Teich');
  t.deepEqual(await search(t, 'subject:frosche'), ['Frösche im Teich']);
});

test('2. UTF-7 is decoded in an encoded word and as a body charset, and the body is searchable', async (t) => {
  const e = await detail(t, 'Grüße aus UTF-7');
  t.is(e.textBody.trim(), 'Frösche über den Teich');
  t.deepEqual(await search(t, 'über teich'), ['Grüße aus UTF-7']);
});

test('3. a message whose lines end in a bare CR has its From, Subject, Date and body', async (t) => {
  const e = await detail(t, 'Lines that end in CR');
  t.is(e.from, 'Carla Mac <carla@example.com>');
  t.is(e.sentDate, '2024-05-07T07:30:00.000Z');
  t.is(e.textBody.trim(), 'First line of the body.\nSecond line.');
});

test('3. an mbox whose lines end in a bare CR is split into its messages', async (t) => {
  t.is((await detail(t, 'CR mbox one')).textBody.trim(), 'One.');
  t.is((await detail(t, 'CR mbox two')).textBody.trim(), 'Two.');
});

test('4. a message file in a directory with NUL bytes in its first 4 KB (a binary UTF-16 part) is imported', async (t) => {
  const e = await detail(t, 'A binary UTF-16 part');
  t.is(e.textBody.trim(), 'See the notes.');
  t.deepEqual(
    e.attachments.map((a) => [a.fileName, a.size]),
    [['notes.txt', UTF16.length]],
  );
});

test('5. a leading whitespace-only or blank line before the header block is skipped', async (t) => {
  t.is((await detail(t, 'Leading whitespace line')).from, 'a@example.com');
  t.is((await detail(t, 'Leading blank lines')).from, 'a@example.com');
});

test('7. a header block without its blank line ends at the first line that is not a field', async (t) => {
  const e = await detail(t, 'Header block never closed');
  t.is(e.textBody.trim(), 'This sentence is the body.\nAnd so is this one.');
  t.is(e.sentDate, '2024-05-06T10:00:00.000Z');
});

test('8. a numeric zone without padding: -600 is -06:00 and +100 is +01:00', async (t) => {
  t.is((await detail(t, 'Zone without padding')).sentDate, '2024-05-06T16:00:00.000Z');
  t.is(new Date(parseMailDate('Mon, 06 May 2024 10:00:00 +100')!).toISOString(), '2024-05-06T09:00:00.000Z');
  t.is(new Date(parseMailDate('Mon, 06 May 2024 10:00:00 -0600')!).toISOString(), '2024-05-06T16:00:00.000Z');
});

test('9. text after a base64 part padding is not part of the file: the JPEG keeps its size and bytes', async (t) => {
  const e = await detail(t, 'Photo with a footer');
  t.deepEqual(
    e.attachments.map((a) => [a.fileName, a.contentType, a.size]),
    [['photo.jpg', 'image/jpeg', JPEG.length]],
  );
  t.deepEqual((await download(t, e.id, e.attachments[0]!.id)).body, JPEG);
});

test('9. a base64 part written as padded pieces one after another keeps every piece', async (t) => {
  const e = await detail(t, 'Two padded pieces');
  t.deepEqual((await download(t, e.id, e.attachments[0]!.id)).body, Buffer.concat(PIECES));
});

test('10. an HTML part with an unknown Content-Disposition is the body of an HTML-only message', async (t) => {
  const e = await detail(t, 'HTML with an odd disposition');
  t.is(e.textBody, 'Pelicans on the roof');
  t.regex(e.htmlBody ?? '', /<p>Pelicans on the roof<\/p>/);
  t.deepEqual(e.attachments, []);
  t.deepEqual(await search(t, 'pelicans'), ['HTML with an odd disposition']);
});

test('11. ">From " lines of an mboxcl2 entry (delimited by Content-Length) are kept as written', async (t) => {
  const e = await detail(t, 'mboxcl2 entry');
  t.is(e.textBody, CL2_BODY);
  t.is((await detail(t, 'mboxcl2 second')).textBody.trim(), 'Short');
  // An mboxrd entry (no Content-Length) is still unescaped.
  const { dir, cleanup } = tempDir('mag-mboxrd-');
  t.teardown(cleanup);
  writeFileSync(join(dir, 'rd.mbox'), b(`From a@x Mon May  6 10:00:00 2024\nSubject: rd\n\n>From here.\n`));
  const entries = [];
  for await (const entry of readMbox(join(dir, 'rd.mbox'))) entries.push(entry.raw.toString('latin1'));
  t.deepEqual(entries, ['Subject: rd\n\nFrom here.\n']);
});

test('12. a Latin-1 body without a charset is read as windows-1252, as headers are', async (t) => {
  const e = await detail(t, 'Latin-1 body without a charset');
  t.is(e.textBody.trim(), 'Grüße aus Köln, sagt Jürgen.');
  t.deepEqual(await search(t, 'köln'), ['Latin-1 body without a charset']);
});

test('12. a UTF-8 body with a stray Latin-1 line: the UTF-8 lines stay UTF-8, that line is windows-1252', async (t) => {
  t.is((await detail(t, 'UTF-8 with a stray byte')).textBody.trim(), 'Grüße, € 5\nMünchen');
});

test('13. adjacent encoded words that split a UTF-8 character are decoded together: subject and file name', async (t) => {
  t.is((await detail(t, 'Café au lait')).subject, 'Café au lait');
  const e = await detail(t, 'A file with a split name');
  t.deepEqual(
    e.attachments.map((a) => [a.fileName, a.contentType]),
    [['Отчёт за май.pdf', 'application/pdf']],
  );
});

test('14. an 8-bit header: what is valid UTF-8 stays UTF-8; else the charset the parts declare (Big5, GB2312)', async (t) => {
  const e = await detail(t, 'A name cut short');
  t.deepEqual(
    e.attachments.map((a) => a.fileName),
    ['Отчёт за ма'],
  );
  t.deepEqual(
    (await detail(t, 'A part name cut short')).attachments.map((a) => a.fileName),
    ['Отчёт за ма'],
  );
  t.is((await detail(t, '中文測試郵件')).textBody.trim(), '你好');
  t.is((await detail(t, '简体中文主题')).textBody.trim(), '你好');
});

test('15. an inline message/rfc822 part is also a .eml attachment whose bytes are the original', async (t) => {
  const e = await detail(t, 'Forwarded inline');
  t.deepEqual(
    e.attachments.map((a) => [a.fileName, a.contentType]),
    [['attachment-1.eml', 'message/rfc822']],
  );
  t.true(e.hasAttachments);
  t.deepEqual((await download(t, e.id, e.attachments[0]!.id)).body.toString('latin1').trim(), ORIGINAL.trim());
  t.regex(e.textBody, /^Forwarded below\.[\s\S]*Original words about herons\./);
  t.deepEqual(await search(t, 'herons'), ['Forwarded inline']);
});

test('16. a multipart/report whose explanation is HTML has the explanation as its body', async (t) => {
  const e = await detail(t, 'Undelivered Mail Returned to Sender');
  t.regex(e.textBody, /^Your message to nobody@example\.org could not be delivered: the mailbox does not\sexist\./);
  t.deepEqual(await search(t, 'mailbox exist'), ['Undelivered Mail Returned to Sender']);
});

test('17. a Content-Type that is no type/subtype is text/plain; charset=us-ascii (RFC 2045, section 5.2)', async (t) => {
  const e = await detail(t, 'Content-Type without a slash');
  t.is(e.textBody.trim(), 'Hello in plain text.');
  t.deepEqual(e.attachments, []);
  const part = await detail(t, 'A part without a slash');
  t.is(part.textBody.trim(), 'The part in plain text.');
  // Its parameters stay: a file keeps its name.
  t.deepEqual(
    part.attachments.map((a) => [a.fileName, a.contentType]),
    [['notes.txt', 'text/plain']],
  );
});

test('18. a first line with a space before From: is a field; the summary says what was repaired', async (t) => {
  const e = await detail(t, 'Indented first field');
  t.is(e.from, 'Dana <dana@example.com>');
  t.is(e.textBody.trim(), 'Body.');
  const repaired = t.context.summaries[0]!.repaired;
  t.deepEqual(
    repaired.indentedFirstField?.messages.map((m) => m.split(/[\\/]/).pop()),
    ['indented'],
  );
  t.deepEqual(repaired.invalidContentType?.messages.map((m) => m.split(/[\\/]/).pop()).sort(), [
    'bad-part-type.eml',
    'bad-type.eml',
  ]);
});

// ── Duplicates and the summary, through the CLI, on both stores ──

const cli = (archive: CliArchive, args: string[]) => runCli(['--db', archive.db, ...args]);

interface Summary {
  imported: number;
  duplicates: number;
  failed: number;
  sameIdDifferentContent: number;
  repaired: Record<string, { count: number; messages: string[] }>;
}

async function importJson(t: Ctx, archive: CliArchive, args: string[]): Promise<Summary> {
  const r = await cli(archive, ['import', ...args, '--json']);
  const summary = JSON.parse(r.stdout) as Summary;
  t.is(r.code, summary.failed > 0 ? 1 : 0, r.stderr);
  return summary;
}

function eachStore(title: string, body: (t: Ctx, archive: CliArchive, accountId: number) => Promise<void>): void {
  for (const kind of STORE_KINDS as readonly StoreKind[])
    test(`[${kind}] ${title}`, async (t) => {
      const archive = await cliArchive(t, kind);
      const account = await (await archive.admin()).addAccount({ name: 'Alice', emailAddress: 'alice@example.com' });
      await body(t, archive, account.id);
    });
}

const message = (id: string, subject: string, body: string, extra = '') =>
  b(`${extra}From: a@example.com\nTo: alice@example.com\nSubject: ${subject}\nMessage-ID: <${id}>\n${DATE}\n${body}\n`);

eachStore(
  '6. the same Message-ID with different content is imported and counted; the same content is a duplicate; re-import changes nothing',
  async (t, archive, accountId) => {
    const dir = join(archive.dir, 'in');
    mkdirSync(dir);
    writeFileSync(join(dir, '1.eml'), message('reused@example.com', 'First test', 'The first message.'));
    writeFileSync(join(dir, '2.eml'), message('reused@example.com', 'Second test', 'A different message.'));
    // The first one again, as another copy: CRLF line ends, its own trace and status fields.
    writeFileSync(
      join(dir, '3.eml'),
      Buffer.from(
        message(
          'reused@example.com',
          'First test',
          'The first message.',
          'Return-Path: <a@example.com>\nReceived: from mx.example.com; Mon, 06 May 2024 10:00:05 +0000\nStatus: RO\n',
        )
          .toString('latin1')
          .replace(/\n/g, '\r\n'),
        'latin1',
      ),
    );
    writeFileSync(join(dir, '4.eml'), message('reused@example.com', 'Third test', 'Yet another message.'));
    const first = await importJson(t, archive, [String(accountId), dir]);
    t.like(first, { imported: 3, duplicates: 1, failed: 0, sameIdDifferentContent: 2 });
    t.is(await archive.count('emails'), 3);

    const again = await importJson(t, archive, [String(accountId), dir]);
    t.like(again, { imported: 0, duplicates: 4, failed: 0, sameIdDifferentContent: 0 });
    t.is(await archive.count('emails'), 3, 're-importing changes nothing');

    // In another folder, the first copy of each is stored again (folders are separate copies).
    const other = await importJson(t, archive, [String(accountId), join(dir, '2.eml'), '--folder', 'Other']);
    t.like(other, { imported: 1, duplicates: 0, sameIdDifferentContent: 0 });
    // A dry run counts the same.
    const dry = await importJson(t, archive, [String(accountId), dir, '--dry-run']);
    t.like(dry, { imported: 0, duplicates: 4 });
  },
);

eachStore(
  '6. mail an earlier version stored under its Message-ID alone stays a duplicate on re-import',
  async (t, archive, accountId) => {
    const admin = await archive.admin();
    await admin.openWriter().writeBatch([
      {
        accountId,
        folder: 'INBOX',
        messageId: '<old@example.com>',
        subject: 'Stored long ago',
        from: 'a@example.com',
        to: 'alice@example.com',
        cc: '',
        bcc: '',
        sentDate: Date.parse('2024-05-06T10:00:00Z'),
        receivedDate: Date.parse('2024-05-06T10:00:00Z'),
        isOutgoing: false,
        textBody: 'Old.',
        htmlBody: null,
        attachments: [],
        dedupKey: 'mid:<old@example.com>',
      },
    ]);
    const dir = join(archive.dir, 'in');
    mkdirSync(dir);
    writeFileSync(join(dir, 'old.eml'), message('old@example.com', 'Stored long ago', 'Old.'));
    const s = await importJson(t, archive, [String(accountId), dir]);
    t.like(s, { imported: 0, duplicates: 1, sameIdDifferentContent: 0 });
    t.is(await archive.count('emails'), 1);
  },
);

eachStore(
  'the summary lists, per reason, the messages stored with a repair (JSON and text)',
  async (t, archive, accountId) => {
    const dir = join(archive.dir, 'in');
    mkdirSync(dir);
    writeFileSync(join(dir, 'a-cr.eml'), FILES['cr-only.eml']!);
    writeFileSync(join(dir, 'b-latin1.eml'), FILES['latin1-body.eml']!);
    writeFileSync(join(dir, 'c-header.eml'), FILES['word8-latin1.eml']!);
    writeFileSync(
      join(dir, 'd-raw8bit.eml'),
      b(`From: J\xfcrgen <j@example.com>\nSubject: Raw 8-bit name\nMessage-ID: <raw8@example.com>\n${DATE}\nHi.\n`),
    );
    writeFileSync(join(dir, 'e-plain.eml'), message('plain@example.com', 'Nothing to repair', 'Plain.'));
    const s = await importJson(t, archive, [String(accountId), dir]);
    t.like(s, { imported: 5, failed: 0 });
    t.deepEqual(s.repaired, {
      crLineEnds: { count: 1, messages: [join(dir, 'a-cr.eml')] },
      undecodableCharset: { count: 1, messages: [join(dir, 'b-latin1.eml')] },
      eightBitHeaders: { count: 1, messages: [join(dir, 'd-raw8bit.eml')] },
    });
    // Duplicates are not stored, so not listed.
    const again = await importJson(t, archive, [String(accountId), dir]);
    t.deepEqual(again.repaired, {});

    const text = await cli(archive, ['import', String(accountId), join(dir, 'a-cr.eml'), '--folder', 'Text']);
    t.is(text.code, 0, text.stderr);
    t.regex(
      text.stdout,
      /^Imported 1 message into account \d+ \(0 duplicates, 0 failed, 0 ignored\) in \d+\.\d s\.\nRepaired \(CR line ends\): 1 message: .*a-cr\.eml\.\n$/,
    );
  },
);

test('the summary lists at most MAX_LISTED_REPAIRS messages per reason; the count goes on', async (t) => {
  const { dir, cleanup } = tempDir('mag-repair-bound-');
  t.teardown(cleanup);
  const n = MAX_LISTED_REPAIRS + 1;
  // An mbox of old Mac mail: every entry is stored with the CR line ends repair.
  let mbox = '';
  for (let i = 0; i < n; i++)
    mbox += `From a@example.com Mon May  6 10:00:00 2024\rFrom: a@example.com\rSubject: Mac ${i}\rMessage-ID: <mac${i}@example.com>\r\rBody ${i}.\r\r`;
  writeFileSync(join(dir, 'mac.mbox'), b(mbox));
  const db = openArchive(join(dir, 'a.db'));
  t.teardown(() => db.close());
  const accountId = addAccount(db, { name: 'A', emailAddress: 'a@example.com' }).id;
  const s = await importPaths(db, [join(dir, 'mac.mbox')], { accountId, attachmentText: false });
  t.is(s.imported, n);
  t.is(s.repaired.crLineEnds?.count, n);
  t.is(s.repaired.crLineEnds?.messages.length, MAX_LISTED_REPAIRS);
  t.regex(s.repaired.crLineEnds!.messages[0]!, /mac\.mbox at byte 0$/);
});
