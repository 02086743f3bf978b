// Text inside attachments (docs/import.md, "Attachment text"; ADR 16): one store-independent
// function from an attachment's bytes to its text, bounded. It runs in a worker thread of its
// own (extractor.ts) that is terminated when an attachment takes too long, because a hostile
// PDF can keep the CPU busy synchronously where no timer inside the thread would ever fire.
//
// Kinds: text/* (charset from a BOM, else UTF-8 when the bytes are valid UTF-8, else
// Windows-1252, which never fails), HTML (html-to-text, as message bodies), PDF (pdfjs-dist),
// DOCX (mammoth), message/rfc822 (subject, addresses and text body of the inner message, through
// the importer's own MIME parser). Everything else is 'unsupported' without reading a byte.
import { compile } from 'html-to-text';
import type { ExtractResult } from '../rules/attachment-text.js';

export type ExtractKind = 'text' | 'html' | 'pdf' | 'docx' | 'rfc822';

export interface ExtractLimits {
  /** Larger attachments are not read at all: 'too large'. */
  maxBytes: number;
  /** PDF pages read, from the first. */
  maxPages: number;
  /** Characters kept (UTF-16 code units, as JavaScript counts). */
  maxChars: number;
  /** Wall time per attachment, enforced from outside the extracting thread. */
  timeoutMs: number;
}

export const DEFAULT_LIMITS: ExtractLimits = {
  maxBytes: 50 * 1024 * 1024,
  maxPages: 200,
  maxChars: 1_000_000,
  timeoutMs: 5_000,
};

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/** Which extractor reads this attachment, from its stored type and, for generic types, its name. */
export function extractKind(contentType: string, fileName: string): ExtractKind | null {
  const type = contentType.toLowerCase().split(';')[0]!.trim();
  const ext = /\.([a-z0-9]+)$/i.exec(fileName.trim())?.[1]?.toLowerCase() ?? '';
  if (type === 'text/html' || type === 'application/xhtml+xml') return 'html';
  if (type === 'application/pdf') return 'pdf';
  if (type === DOCX) return 'docx';
  if (type === 'message/rfc822' || type === 'message/global') return 'rfc822';
  if (type.startsWith('text/')) return 'text';
  // Mail clients often label files application/octet-stream: then the name decides.
  if (type === 'application/octet-stream' || type === '') {
    if (ext === 'pdf') return 'pdf';
    if (ext === 'docx') return 'docx';
    if (ext === 'eml') return 'rfc822';
    if (ext === 'html' || ext === 'htm') return 'html';
    if (ext === 'txt' || ext === 'csv' || ext === 'md') return 'text';
  }
  return null;
}

/**
 * A verdict from the first bytes alone, or null when the file must be read: a "PDF" without a
 * %PDF header or a "DOCX" that is no ZIP archive is refused here, without a thread round trip
 * (mail labels random bytes application/pdf more often than one would think).
 */
export function quickVerdict(bytes: Uint8Array, kind: ExtractKind): ExtractResult | null {
  if (kind === 'pdf') {
    // The header may follow some junk; readers accept it within the first KiB.
    const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 1024)).toString('latin1');
    if (!head.includes('%PDF-')) return failed('the PDF is damaged or not a PDF (no %PDF header)');
  }
  if (kind === 'docx' && !(bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04))
    return failed('the DOCX is damaged or not a DOCX (not a ZIP archive)');
  return null;
}

const failed = (sentence: string): ExtractResult => ({
  status: `failed: ${sentence.replace(/\s+/g, ' ').trim().slice(0, 200)}`,
  text: '',
  truncated: false,
});

/** Bytes as text: a BOM decides, else strict UTF-8, else Windows-1252 (every byte is a character). */
export function decodeText(bytes: Uint8Array): string {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return new TextDecoder('utf-8').decode(bytes);
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return new TextDecoder('utf-16le').decode(bytes);
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return new TextDecoder('utf-16be').decode(bytes);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return new TextDecoder('windows-1252').decode(bytes);
  }
}

const htmlToText = compile({
  wordwrap: false,
  selectors: [
    { selector: 'img', format: 'skip' },
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true } },
    ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: { uppercase: false } })),
  ],
});

/** Cuts to `maxChars` without splitting a surrogate pair. */
function bounded(text: string, maxChars: number, truncated = false): ExtractResult {
  let out = text.replace(/\u0000/g, '').trim();
  if (out.length > maxChars) {
    let end = maxChars;
    const c = out.charCodeAt(end - 1);
    if (c >= 0xd800 && c <= 0xdbff) end--;
    out = out.slice(0, end);
    truncated = true;
  }
  return { status: 'ok', text: out, truncated };
}

/**
 * The text of one attachment. Never throws: a file it cannot read is a status. Runs in the
 * extractor thread (the time bound is the caller's); callable directly in tests.
 */
export async function extractText(
  bytes: Uint8Array,
  contentType: string,
  fileName: string,
  limits: ExtractLimits = DEFAULT_LIMITS,
): Promise<ExtractResult> {
  const kind = extractKind(contentType, fileName);
  if (kind === null) return { status: 'unsupported', text: '', truncated: false };
  if (bytes.length > limits.maxBytes) return { status: 'too large', text: '', truncated: false };
  const quick = quickVerdict(bytes, kind);
  if (quick) return quick;
  try {
    switch (kind) {
      case 'text':
        // Decoding more than the kept characters' worth (at most 4 bytes each) is wasted work.
        return bounded(
          decodeText(bytes.subarray(0, limits.maxChars * 4)),
          limits.maxChars,
          bytes.length > limits.maxChars * 4,
        );
      case 'html':
        return bounded(htmlToText(decodeText(bytes)), limits.maxChars);
      case 'pdf':
        return await pdfText(bytes, limits);
      case 'docx':
        return await docxText(bytes, limits);
      case 'rfc822':
        return await messageText(bytes, limits);
    }
  } catch (err) {
    return failed(
      `the ${kind === 'rfc822' ? 'attached message' : kind.toUpperCase()} could not be read (${(err as Error).message ?? String(err)})`,
    );
  }
}

async function pdfText(bytes: Uint8Array, limits: ExtractLimits): Promise<ExtractResult> {
  // The legacy build is the one for Node.js; loaded on the first PDF only.
  const { getDocument } = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const task = getDocument({
    data: new Uint8Array(bytes), // pdf.js takes ownership of (and may detach) what it is given
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    verbosity: 0,
  });
  let doc;
  try {
    doc = await task.promise;
  } catch (err) {
    const name = (err as Error).name;
    if (name === 'PasswordException') return { status: 'encrypted', text: '', truncated: false };
    if (name === 'InvalidPDFException') return failed('the PDF is damaged or not a PDF (invalid PDF structure)');
    throw err;
  }
  try {
    const pages = Math.min(doc.numPages, limits.maxPages);
    const parts: string[] = [];
    let chars = 0;
    let truncated = doc.numPages > limits.maxPages;
    for (let n = 1; n <= pages; n++) {
      const page = await doc.getPage(n);
      const content = await page.getTextContent();
      let text = '';
      for (const item of content.items) {
        if ('str' in item) text += item.str + (item.hasEOL ? '\n' : '');
      }
      page.cleanup();
      parts.push(text);
      chars += text.length + 2;
      if (chars > limits.maxChars) {
        truncated ||= n < doc.numPages;
        break;
      }
    }
    return bounded(parts.join('\n\n'), limits.maxChars, truncated);
  } finally {
    await doc.destroy();
  }
}

async function docxText(bytes: Uint8Array, limits: ExtractLimits): Promise<ExtractResult> {
  const mammoth = (await import('mammoth')).default;
  const { value } = await mammoth.extractRawText({
    buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
  });
  return bounded(value, limits.maxChars);
}

async function messageText(bytes: Uint8Array, limits: ExtractLimits): Promise<ExtractResult> {
  const { parseMessage } = await import('../import/parse.js');
  const mail = await parseMessage(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), {
    accountId: 0,
    accountEmail: '',
    folder: '',
    fallbackDate: 0,
  });
  const head = [
    ['Subject', mail.subject],
    ['From', mail.from],
    ['To', mail.to],
    ['Cc', mail.cc],
  ]
    .filter(([, v]) => v)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n');
  return bounded(`${head}\n\n${mail.textBody ?? ''}`, limits.maxChars);
}
