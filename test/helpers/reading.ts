// The mail the reading-page tests add to the standard fixture: an HTML message that attacks its
// reader (script, handlers, a tracking pixel) and shows a cid: image, a conversation of three,
// a message kept with its original, an image and a PDF attachment.
import { ArchiveWriter } from '../../engine/sqlite/writer.js';
import { dedupKeyFor } from '../../engine/rules/new-email.js';
import { email, type Fixture } from './fixture.js';
import { withDb } from './web.js';

/** A 1x1 transparent PNG. */
export const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

/** The smallest PDF a viewer opens: one empty page. */
export const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n' +
    '3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n',
);

export const HOSTILE_HTML =
  '<p>Hello <b>reader</b>.</p>' +
  '<script>alert("xss")</script>' +
  '<img src="x" onerror="alert(1)">' +
  '<img src="http://evil.test/pixel.gif" width="1" height="1">' +
  '<img src="cid:logo@example.test" alt="logo">' +
  '<a href="javascript:alert(2)">click</a> <a href="https://example.org/page">a link</a>';

export const ORIGINAL = Buffer.from(
  'From: Olga <olga@work.example>\r\nTo: alice@work.example\r\nSubject: Kept as it came\r\n' +
    'Message-ID: <kept@work.example>\r\nDate: Tue, 02 Apr 2024 10:00:00 +0200\r\n\r\nThe very bytes.\r\n',
);

export interface ReadingMail {
  hostile: number;
  first: number;
  reply: number;
  last: number;
  kept: number;
  pdf: number;
}

export function addReadingMail(f: Fixture): ReadingMail {
  return withDb(f.dbPath, (db) => {
    const writer = new ArchiveWriter(db);
    const at = (iso: string) => Date.parse(iso);
    let ids: ReadingMail | undefined;
    writer.batch(() => {
      const hostile = writer.add(
        email({
          accountId: f.accounts.work,
          subject: 'Newsletter with pictures',
          from: 'news@shop.example',
          sentDate: at('2024-04-01T08:00:00Z'),
          textBody: 'Hello reader, plain text version.',
          htmlBody: HOSTILE_HTML,
          attachments: [
            {
              fileName: 'logo.png',
              contentType: 'image/png',
              content: PNG,
              isInline: true,
              contentId: 'logo@example.test',
            },
          ],
        }),
      )!;
      const first = writer.add(
        email({
          accountId: f.accounts.work,
          messageId: '<plan-1@work.example>',
          subject: 'Offsite plan',
          from: 'erin@work.example',
          sentDate: at('2024-04-03T09:00:00Z'),
          textBody: 'Shall we plan the offsite?',
        }),
      )!;
      const reply = writer.add(
        email({
          accountId: f.accounts.work,
          messageId: '<plan-2@work.example>',
          subject: 'Re: Offsite plan',
          from: 'alice@work.example',
          sentDate: at('2024-04-03T10:00:00Z'),
          textBody: 'Yes, in May.',
          refs: ['plan-1@work.example'],
        }),
      )!;
      const last = writer.add(
        email({
          accountId: f.accounts.work,
          messageId: '<plan-3@work.example>',
          subject: 'Re: Offsite plan',
          from: 'erin@work.example',
          sentDate: at('2024-04-03T11:00:00Z'),
          textBody: 'May it is.',
          refs: ['plan-1@work.example', 'plan-2@work.example'],
        }),
      )!;
      const kept = writer.add({
        ...email({
          accountId: f.accounts.work,
          subject: 'Kept as it came',
          from: 'Olga <olga@work.example>',
          sentDate: at('2024-04-02T08:00:00Z'),
          textBody: 'The very bytes.',
        }),
        messageId: '<kept@work.example>',
        dedupKey: dedupKeyFor('<kept@work.example>', 'kept'),
        original: ORIGINAL,
      })!;
      const pdf = writer.add(
        email({
          accountId: f.accounts.work,
          subject: 'Signed contract',
          from: 'legal@work.example',
          sentDate: at('2024-04-04T08:00:00Z'),
          textBody: 'The contract and a photo.',
          attachments: [
            { fileName: 'contract.pdf', contentType: 'application/pdf', content: PDF },
            { fileName: 'photo.png', contentType: 'image/png', content: PNG },
          ],
        }),
      )!;
      ids = { hostile, first, reply, last, kept, pdf };
    });
    return ids!;
  });
}
