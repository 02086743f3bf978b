// The agent session of docs/mcp.md ("An agent session"), run for real: an invoice PDF is found by
// words inside it, read as text in pages, and its conversation opened, over MCP with a
// restricted key, on this run's store (TEST_STORE). If this test changes, so does the session in
// the docs.
import anyTest, { type TestFn } from 'ava';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import PDFDocument from 'pdfkit';
import { reindexAttachments } from '../engine/attachments/index-texts.js';
import { Extractor } from '../engine/attachments/extractor.js';
import { openArchive } from '../engine/sqlite/open.js';
import { importPaths } from '../engine/import/importer.js';
import { formatMboxEntry } from '../engine/import/mbox.js';
import type { EmailDetailDto, EmailSummaryDto, PagedResult } from '../shared/dto.js';
import { createFixture, type Fixture } from './helpers/fixture.js';
import { call, connectClient, startMcpGateway, textOf, type McpHarness } from './helpers/mcp.js';
import { TEST_STORE, withAdmin } from './helpers/store.js';

const test = anyTest as TestFn<{ fixture: Fixture; mcp: McpHarness }>;

export const INVOICE_LINES = [
  'Northwind Storage GmbH - Invoice INV-2024-117',
  'Archive migration, phase 1: 38 mailboxes, 212 GB',
  'Total due: 4,250.00 EUR',
  'Payment terms: net 30 days from the invoice date.',
];

function invoicePdf(): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const doc = new PDFDocument();
    const parts: Buffer[] = [];
    doc.on('data', (b: Buffer) => parts.push(b));
    doc.on('end', () => resolve(Buffer.concat(parts)));
    doc.on('error', reject);
    for (const line of INVOICE_LINES) doc.text(line);
    doc.end();
  });
}

interface Mail {
  id: string;
  from: string;
  subject: string;
  date: string;
  body: string;
  inReplyTo?: string;
  references?: string[];
  pdf?: Buffer;
}

function message(m: Mail): Buffer {
  const head = [
    `From: ${m.from}`,
    'To: alice@work.example',
    `Subject: ${m.subject}`,
    `Date: ${new Date(m.date).toUTCString()}`,
    `Message-ID: <${m.id}>`,
    ...(m.inReplyTo ? [`In-Reply-To: <${m.inReplyTo}>`] : []),
    ...(m.references ? [`References: ${m.references.map((r) => `<${r}>`).join(' ')}`] : []),
    'MIME-Version: 1.0',
  ];
  if (!m.pdf) return Buffer.from([...head, 'Content-Type: text/plain; charset=utf-8', '', m.body, ''].join('\r\n'));
  const b = 'part-boundary';
  return Buffer.from(
    [
      ...head,
      `Content-Type: multipart/mixed; boundary="${b}"`,
      '',
      `--${b}`,
      'Content-Type: text/plain; charset=utf-8',
      '',
      m.body,
      `--${b}`,
      'Content-Type: application/pdf',
      'Content-Disposition: attachment; filename="INV-2024-117.pdf"',
      'Content-Transfer-Encoding: base64',
      '',
      m.pdf.toString('base64').replace(/.{76}/g, '$&\r\n'),
      `--${b}--`,
      '',
    ].join('\r\n'),
  );
}

test.before(async (t) => {
  const fixture = createFixture();
  const mails: Mail[] = [
    {
      id: 'quote-1@northwind.example',
      from: 'Dana Reyes <dana@northwind.example>',
      subject: 'Quote: archive migration',
      date: '2024-06-03T09:12:00Z',
      body: 'Hello Alice, please find our quote for moving the 38 mailboxes below.',
    },
    {
      id: 'quote-2@work.example',
      from: 'alice@work.example',
      subject: 'Re: Quote: archive migration',
      date: '2024-06-04T14:40:00Z',
      body: 'Thanks Dana, approved. Please start with phase 1 next week.',
      inReplyTo: 'quote-1@northwind.example',
      references: ['quote-1@northwind.example'],
    },
    {
      id: 'quote-3@northwind.example',
      from: 'Dana Reyes <dana@northwind.example>',
      subject: 'Re: Quote: archive migration',
      date: '2024-07-01T08:05:00Z',
      body: 'Phase 1 is done; our invoice is attached.',
      inReplyTo: 'quote-2@work.example',
      references: ['quote-1@northwind.example', 'quote-2@work.example'],
      pdf: await invoicePdf(),
    },
  ];
  const mbox = join(fixture.dir, 'vendor.mbox');
  writeFileSync(
    mbox,
    Buffer.concat(mails.map((m) => formatMboxEntry(message(m), 'dana@northwind.example', new Date(m.date)))),
  );
  const db = openArchive(fixture.dbPath);
  try {
    const summary = await importPaths(db, [mbox], { accountId: fixture.accounts.work, folder: 'Vendors' });
    if (summary.imported !== mails.length) throw new Error(`imported ${summary.imported} of ${mails.length}`);
  } finally {
    db.close();
  }
  t.context.fixture = fixture;
  t.context.mcp = await startMcpGateway({}, { useFixture: fixture });
  if (TEST_STORE === 'postgres') {
    // A PostgreSQL copy has no attachment text yet, as mail Mail Archiver archived itself: the
    // operator's reindex reads it (docs/import.md, "Attachment text").
    const extractor = new Extractor();
    try {
      await withAdmin(t.context.mcp.settings.Database.Path, (admin) =>
        reindexAttachments(admin.attachmentTexts(), extractor),
      );
    } finally {
      await extractor.close();
    }
  }
});

test.after.always(async (t) => {
  await t.context.mcp?.close();
  t.context.fixture?.cleanup();
});

test('an agent finds an invoice by words inside its PDF, reads it as text and opens its conversation', async (t) => {
  const { mcp, fixture } = t.context;
  const client = await connectClient(mcp.url, fixture.keys.alice);
  try {
    // 1. Words only the PDF holds find the message that carries it.
    const found = await call(client, 'search_emails', { q: 'attachment:"net 30 days"', include: 'threadId' });
    const page = found.structuredContent as unknown as PagedResult<EmailSummaryDto>;
    t.is(page.totalItems, 1);
    const hit = page.items[0]!;
    t.is(hit.subject, 'Re: Quote: archive migration');
    t.true(hit.hasAttachments);
    // Plain words do not search attachment text: the body never says "net".
    const plain = await call(client, 'search_emails', { q: '"net 30 days"' });
    t.is((plain.structuredContent as unknown as PagedResult<EmailSummaryDto>).totalItems, 0);

    // 2. The message lists its attachment; its text comes in pages.
    const { email } = (await call(client, 'get_email', { id: hit.id })).structuredContent as { email: EmailDetailDto };
    const pdf = email.attachments.find((a) => a.fileName === 'INV-2024-117.pdf')!;
    t.truthy(pdf);
    const first = await call(client, 'get_attachment', {
      id: hit.id,
      attachmentId: pdf.id,
      format: 'text',
      maxChars: 60,
    });
    const head = first.structuredContent as { text: string; offset: number; totalChars: number; nextOffset: number };
    t.is(head.offset, 0);
    t.true(head.text.startsWith('Northwind Storage GmbH - Invoice INV-2024-117'));
    t.true(head.totalChars > 60);
    t.is(head.nextOffset, 60);
    // The page as plain text first, then where it sits.
    const blocks = (first.content as Array<{ text: string }>).map((c) => c.text);
    t.is(blocks[0], head.text);
    t.regex(blocks[1]!, /^Characters 0 to 60 of \d+; call get_attachment again with format "text" and offset 60/);
    const rest = await call(client, 'get_attachment', {
      id: hit.id,
      attachmentId: pdf.id,
      format: 'text',
      offset: head.nextOffset,
    });
    const tail = rest.structuredContent as { text: string; nextOffset: number | null };
    t.is(tail.nextOffset, null);
    const whole = (head.text + tail.text).replace(/\s+/g, ' ');
    for (const line of INVOICE_LINES) t.true(whole.includes(line), line);

    // 3. The conversation: the quote, the approval and the invoice, oldest first.
    const thread = await call(client, 'get_thread', { id: hit.id });
    const members = (thread.structuredContent as { items: EmailSummaryDto[] }).items;
    t.deepEqual(
      members.map((m) => [m.from, m.subject]),
      [
        ['Dana Reyes <dana@northwind.example>', 'Quote: archive migration'],
        ['alice@work.example', 'Re: Quote: archive migration'],
        ['Dana Reyes <dana@northwind.example>', 'Re: Quote: archive migration'],
      ],
    );
    t.is(members.at(-1)!.id, hit.id);
    t.is((hit as EmailSummaryDto & { threadId: number }).threadId, members[0]!.id);
  } finally {
    await client.close();
  }
});

test('a key without the account finds nothing of it: no hit, no text, no conversation', async (t) => {
  const { mcp, fixture } = t.context;
  const admin = await connectClient(mcp.url, fixture.keys.admin);
  const bob = await connectClient(mcp.url, fixture.keys.bob);
  try {
    const found = await call(admin, 'search_emails', { q: 'attachment:invoice' });
    const id = (found.structuredContent as unknown as PagedResult<EmailSummaryDto>).items[0]!.id;
    const { email } = (await call(admin, 'get_email', { id })).structuredContent as { email: EmailDetailDto };
    const search = await call(bob, 'search_emails', { q: 'attachment:invoice' });
    t.is((search.structuredContent as unknown as PagedResult<EmailSummaryDto>).totalItems, 0);
    const text = await call(bob, 'get_attachment', { id, attachmentId: email.attachments[0]!.id, format: 'text' });
    t.true(text.isError);
    t.notRegex(textOf(text), /Northwind|4,250/);
    const thread = await call(bob, 'get_thread', { id });
    t.is((thread.content as Array<{ text: string }>)[0]!.text, 'null');
  } finally {
    await admin.close();
    await bob.close();
  }
});
