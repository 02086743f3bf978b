// Mail with real attachments, generated at test time: PDF (pdfkit), DOCX (docx), as an .eml.
import { Document, Packer, Paragraph, TextRun } from 'docx';
import PDFDocument from 'pdfkit';

export function pdf(pages: string[], options: PDFKit.PDFDocumentOptions = {}): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const doc = new PDFDocument({ autoFirstPage: false, ...options });
    const parts: Buffer[] = [];
    doc.on('data', (b: Buffer) => parts.push(b));
    doc.on('end', () => resolve(Buffer.concat(parts)));
    doc.on('error', reject);
    for (const text of pages) {
      doc.addPage();
      doc.text(text);
    }
    doc.end();
  });
}

export async function docx(text: string): Promise<Buffer> {
  const doc = new Document({ sections: [{ children: [new Paragraph({ children: [new TextRun(text)] })] }] });
  return Packer.toBuffer(doc);
}

export interface Part {
  name: string;
  type: string;
  data: Buffer;
  /** message/rfc822 travels as 8bit text, as mail clients send it (base64 is not allowed there). */
  raw?: boolean;
}

export function eml(subject: string, body: string, parts: Part[], id = Math.random().toString(36).slice(2)): string {
  const b = `b-${id}`;
  const lines = [
    'From: Sender <sender@example.com>',
    'To: alice@work.example',
    `Subject: ${subject}`,
    'Date: Mon, 01 Jul 2024 10:00:00 +0000',
    `Message-ID: <${id}@test>`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/mixed; boundary="${b}"`,
    '',
    `--${b}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    body,
  ];
  for (const p of parts) {
    lines.push(`--${b}`, `Content-Type: ${p.type}`, `Content-Disposition: attachment; filename="${p.name}"`);
    if (p.raw) lines.push('Content-Transfer-Encoding: 8bit', '', p.data.toString('utf8'));
    else lines.push('Content-Transfer-Encoding: base64', '', p.data.toString('base64').replace(/.{76}/g, '$&\r\n'));
  }
  lines.push(`--${b}--`, '');
  return lines.join('\r\n');
}
