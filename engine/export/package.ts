// An export of a search (docs/export.md): every message it matches, then manifest.csv (one row per
// message, with the SHA-256 of its bytes as exported) and export.json (who, when, what was asked,
// and the SHA-256 of manifest.csv), streamed as one ZIP (ZIP64 past 4 GB or 65,535 entries). One
// writer for both front ends: the REST route (through engine/index.ts) and `mail-archive export`.
//
// Memory stays flat whatever the size (docs/export.md, "Memory"): the messages come in batches
// (messageCopies stops at MESSAGE_COPY_BATCH_BYTES), at most the batch being written and those read
// ahead are held, every write waits until the reader has taken what came before (backpressure),
// and the manifest grows in a temporary file, not in memory. What the ZIP writer keeps per entry
// for its central directory is the one part that grows with the count.
import { createHash } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { ZipWriter } from './zip.js';
import { asctime } from '../import/mbox.js';
import type { MessageCopy } from '../../shared/jobs.js';

export const EXPORT_FORMATS = ['eml-zip', 'mbox'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
/** What a request or a command gets when it names no format. */
export const DEFAULT_EXPORT_FORMAT: ExportFormat = 'eml-zip';

export const MANIFEST_COLUMNS = [
  'id',
  'account',
  'folder',
  'sentDate',
  'from',
  'subject',
  'size',
  'sha256',
  'copy',
] as const;

/** Ids per messageCopies job: a batch also stops at MESSAGE_COPY_BATCH_BYTES, whichever comes first. */
export const EXPORT_IDS_PER_BATCH = 500;

/** An .eml entry this large or larger is deflated; smaller ones are stored (docs/export.md, "Compression"). */
export const DEFLATE_FROM_BYTES = 64 * 1024;

/** What export.json says about the export besides its counts and hashes. */
export interface ExportDescription {
  format: ExportFormat;
  /** The `q` as given (null: none). */
  query: string | null;
  /** The other search parameters as given (accountId, folder, from, to, direction). */
  filters: Record<string, unknown>;
  /** Who exported: a key's user and prefix, or the operator at the command line. */
  who: { username: string; keyPrefix: string | null; via: 'api' | 'cli' | 'web' };
  createdAt: Date;
}

/** Where the messages come from: the ids in export order, read a batch at a time. */
export interface ExportSource {
  ids: readonly number[];
  /**
   * The copies of `ids` from index `from` up to `to` (exclusive), or fewer when the batch's byte
   * bound stops it first; `next` is the index to ask from again. `first` is set on the first call
   * only (a busy engine may refuse that one alone).
   */
  batch(from: number, to: number, first: boolean): Promise<{ copies: MessageCopy[]; next: number }>;
}

export interface ExportOptions {
  /** Stops the export (no further batch is asked for) and destroys the stream. */
  signal?: AbortSignal;
  /** Called once a message's bytes have been taken by the stream (the access log records a download then). */
  onWritten?: (copy: MessageCopy) => void;
  /** After each batch: messages written so far of `total`. */
  onProgress?: (written: number, total: number) => void;
  /** Before each batch after the first is asked for (the gateway waits here while its access log catches up). */
  pace?: () => Promise<void>;
  /** Deflate level for the entries, 0 (stored) to 9; default 1 (docs/export.md, "Compression"). */
  compressionLevel?: number;
  /** Batches asked for at once (after the first); default 1. */
  parallel?: number;
  /** Ids per batch; default EXPORT_IDS_PER_BATCH. */
  idsPerBatch?: number;
  /** ZIP64 records even where nothing needs them (tests: the records large exports carry). */
  forceZip64?: boolean;
}

export interface ExportSummary {
  messages: number;
  originals: number;
  reconstructed: number;
  manifestSha256: string;
  /** format mbox: the digest and size of export.mbox. */
  mbox?: { sha256: string; bytes: number };
}

export interface ExportPackage {
  /** The ZIP, to be read by one consumer; destroying it stops the export. */
  stream: Readable;
  /** Settles when the whole ZIP has been produced, or with the reason it stopped. */
  done: Promise<ExportSummary>;
}

let version: string | undefined;
/** The service's version, from its package.json (found by walking up from this file). */
export function serviceVersion(): string {
  if (version) return version;
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'mail-archive-gateway' && pkg.version) return (version = pkg.version);
    } catch {
      // not here: look one level up
    }
    if (dirname(dir) === dir) return (version = 'unknown');
  }
}

/** `2024-05-14T081502Z`: an ISO date that sorts and is a valid file name everywhere. */
export function compactUtc(date: Date): string {
  return date
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/:/g, '');
}

/** The entry of a message in an eml-zip: sorted by date, then id (ten digits), never colliding. */
export function messageEntryName(copy: Pick<MessageCopy, 'id' | 'sentDate'>): string {
  const when = new Date(copy.sentDate);
  const stamp = Number.isNaN(when.getTime()) ? '0000-00-00T000000Z' : compactUtc(when);
  return `messages/${stamp}_${String(copy.id).padStart(10, '0')}.eml`;
}

/**
 * One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break, quotes doubled.
 * A text that a spreadsheet would run as a formula (it starts with = + - @, a tab or a carriage
 * return) is given a leading apostrophe first (docs/export.md, "manifest.csv").
 */
export function csvField(value: string | number): string {
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

const csvRow = (fields: ReadonlyArray<string | number>) => `${fields.map(csvField).join(',')}\r\n`;
export const MANIFEST_HEADER = csvRow(MANIFEST_COLUMNS);

/** The sender's address for a From_ line (no white space in it), else MAILER-DAEMON. */
function envelopeSender(from: string): string {
  const address = /<([^<>\s]+@[^<>\s]+)>/.exec(from)?.[1] ?? /(?:^|\s)([^<>\s"]+@[^<>\s"]+)(?:\s|$)/.exec(from)?.[1];
  return address && /^[\x21-\x7e]+$/.test(address) ? address : 'MAILER-DAEMON';
}

const NEEDS_QUOTE = /^(>*From )/gm;

/**
 * A message as it goes into an mbox (docs/export.md, "mbox"): its bytes, with a line break added
 * when the last line has none (an mbox cannot hold a message that does not end in one). The
 * manifest's hash is of these bytes: what an mbox reader gives back.
 */
export function mboxMessageBytes(bytes: Buffer): Buffer {
  return bytes.length === 0 || bytes[bytes.length - 1] !== 0x0a ? Buffer.concat([bytes, Buffer.from('\n')]) : bytes;
}

/**
 * One mboxrd entry: the From_ line, the message with `>*From ` lines given one more '>', and the
 * blank line that ends it. Line endings are the message's own (CRLF stays CRLF); only the From_
 * line and the blank line are added, each ending in LF.
 */
export function mboxEntry(message: Buffer, from: string, sentDate: string): Buffer {
  const when = new Date(sentDate);
  const line = `From ${envelopeSender(from)} ${asctime(Number.isNaN(when.getTime()) ? new Date(0) : when)}\n`;
  // latin1 maps bytes to code points one to one, so any charset survives the quoting.
  const text = message.includes('From ') ? message.toString('latin1').replace(NEEDS_QUOTE, '>$1') : null;
  return Buffer.concat([
    Buffer.from(line, 'latin1'),
    text === null ? message : Buffer.from(text, 'latin1'),
    Buffer.from('\n'),
  ]);
}

/** A DOS date holds 1980 to 2107: a message dated outside it is stamped with the export's time. */
function entryTime(sentDate: string, fallback: Date): Date {
  const when = new Date(sentDate);
  const year = when.getUTCFullYear();
  return Number.isNaN(year) || year < 1981 || year > 2106 ? fallback : when;
}

class Stopped extends Error {
  override name = 'Stopped';
}

/**
 * Starts an export: the returned stream yields the ZIP as its reader takes it. Nothing is asked
 * of `source` beyond what the reader has taken plus the batches read ahead (`parallel`).
 */
export function exportPackage(
  source: ExportSource,
  description: ExportDescription,
  options: ExportOptions = {},
): ExportPackage {
  const level = options.compressionLevel ?? 1;
  const stop = new AbortController();
  /** Waits for `event` on `emitter`, or rejects once the export is stopped. */
  const until = (emitter: NodeJS.EventEmitter, event: string) =>
    new Promise<void>((resolve, reject) => {
      if (stop.signal.aborted) return reject(stop.signal.reason ?? new Stopped('stopped'));
      const done = () => {
        stop.signal.removeEventListener('abort', aborted);
        resolve();
      };
      const aborted = () => {
        emitter.removeListener(event, done);
        reject(stop.signal.reason ?? new Stopped('stopped'));
      };
      emitter.once(event, done);
      stop.signal.addEventListener('abort', aborted, { once: true });
    });
  const checkStopped = () => {
    if (stop.signal.aborted) throw stop.signal.reason ?? new Stopped('stopped');
  };
  const zip = new ZipWriter(until, options.forceZip64 ? { forceZip64: true } : {});
  const out = zip.stream;
  let complete = false;
  const onAbort = () => stop.abort(options.signal?.reason ?? new Stopped('the request was aborted'));
  options.signal?.addEventListener('abort', onAbort, { once: true });
  if (options.signal?.aborted) onAbort();
  // The reader went away (or destroyed the stream) before the end: stop.
  out.once('end', () => {
    complete = true;
  });
  out.once('close', () => {
    if (!complete) stop.abort(new Stopped('the export stream was closed before it ended'));
  });

  /** Every message, in export order, handed to `emit` once its batch is read. */
  async function eachMessage(emit: (copy: MessageCopy) => Promise<void>): Promise<void> {
    const total = source.ids.length;
    const slice = options.idsPerBatch ?? EXPORT_IDS_PER_BATCH;
    const parallel = Math.max(1, options.parallel ?? 1);
    // Batches asked for and not yet written, in export order; the first alone, then up to
    // `parallel` at once (the engine's query threads rebuild messages side by side).
    const queue: Array<{ from: number; to: number; result: Promise<{ copies: MessageCopy[]; next: number }> }> = [];
    const ask = (from: number, to: number, first: boolean, front = false) => {
      const result = source.batch(from, to, first);
      result.catch(() => {}); // a failure is seen when it is awaited
      if (front) queue.unshift({ from, to, result });
      else queue.push({ from, to, result });
    };
    let asked = 0;
    if (total > 0) {
      asked = Math.min(total, slice);
      ask(0, asked, true);
    }
    let written = 0;
    while (queue.length > 0) {
      const head = queue.shift()!;
      const batch = await head.result;
      checkStopped();
      if (batch.next <= head.from) throw new Error(`an export batch from ${head.from} made no progress`);
      // Stopped at its byte bound: the rest of its slice comes next, before the slices after it.
      if (batch.next < head.to) ask(batch.next, head.to, false, true);
      while (queue.length < parallel && asked < total) {
        await options.pace?.();
        checkStopped();
        const to = Math.min(total, asked + slice);
        ask(asked, to, false);
        asked = to;
      }
      for (const copy of batch.copies) {
        await emit(copy);
        checkStopped();
        options.onWritten?.(copy);
      }
      written += batch.copies.length;
      options.onProgress?.(written, total);
    }
  }

  async function run(): Promise<ExportSummary> {
    const tmp = await mkdtemp(join(tmpdir(), 'mail-archive-export-'));
    try {
      const manifestPath = join(tmp, 'manifest.csv');
      const manifest = await open(manifestPath, 'w');
      const manifestHash = createHash('sha256');
      const summary: ExportSummary = { messages: 0, originals: 0, reconstructed: 0, manifestSha256: '' };
      let rows: string[] = [];
      const flushRows = async () => {
        const bytes = Buffer.from(rows.join(''), 'utf8');
        rows = [];
        manifestHash.update(bytes);
        await manifest.write(bytes);
      };
      /** The bytes to export of a message, with its manifest row written. */
      const exported = async (copy: MessageCopy, mbox: boolean): Promise<Buffer> => {
        if (copy.copy === 'none' || !copy.bytes) {
          throw new Error(`email ${copy.id} has no bytes to export: ${copy.note ?? 'no copy'}`);
        }
        const raw = Buffer.from(copy.bytes.buffer, copy.bytes.byteOffset, copy.bytes.byteLength);
        const bytes = mbox ? mboxMessageBytes(raw) : raw;
        const sha256 = createHash('sha256').update(bytes).digest('hex');
        if (bytes === raw && copy.sha256 && copy.sha256 !== sha256) {
          throw new Error(`email ${copy.id}: its bytes do not match the digest the archive gave`);
        }
        rows.push(
          csvRow([
            copy.id,
            copy.accountId,
            copy.folder,
            copy.sentDate,
            copy.from,
            copy.subject,
            bytes.length,
            sha256,
            copy.copy,
          ]),
        );
        if (rows.length >= 1000) await flushRows();
        summary.messages++;
        if (copy.copy === 'original') summary.originals++;
        else summary.reconstructed++;
        return bytes;
      };
      try {
        rows.push(MANIFEST_HEADER);
        if (description.format === 'mbox') {
          const mboxHash = createHash('sha256');
          let mboxBytes = 0;
          await zip.addStream('export.mbox', description.createdAt, level, (write) =>
            eachMessage(async (copy) => {
              const entry = mboxEntry(await exported(copy, true), copy.from, copy.sentDate);
              mboxHash.update(entry);
              mboxBytes += entry.length;
              await write(entry);
            }),
          );
          summary.mbox = { sha256: mboxHash.digest('hex'), bytes: mboxBytes };
        } else {
          await eachMessage(async (copy) => {
            const bytes = await exported(copy, false);
            // Small messages are stored: deflate's setup per entry costs more time than it saves
            // bytes (docs/export.md, "Compression").
            await zip.addBuffer(
              messageEntryName(copy),
              bytes,
              entryTime(copy.sentDate, description.createdAt),
              bytes.length >= DEFLATE_FROM_BYTES ? level : 0,
            );
          });
        }
        await flushRows();
      } finally {
        await manifest.close();
      }
      checkStopped();
      summary.manifestSha256 = manifestHash.digest('hex');
      await zip.addStream('manifest.csv', description.createdAt, level, async (write) => {
        for await (const chunk of createReadStream(manifestPath)) await write(chunk as Buffer);
      });
      await zip.addBuffer(
        'export.json',
        Buffer.from(`${JSON.stringify(exportJson(description, summary), null, 2)}\n`),
        description.createdAt,
        level,
      );
      await zip.finish();
      if (!complete) await until(out, 'end');
      return summary;
    } finally {
      await rm(tmp, { recursive: true, force: true });
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  const done = run().catch((err: unknown) => {
    stop.abort(err);
    if (!out.destroyed) out.destroy(err instanceof Error ? err : new Error(String(err)));
    throw err;
  });
  // The caller may never look at `done` (the stream's error says the same).
  done.catch(() => {});
  return { stream: out, done };
}

/** export.json: what was exported, by whom, when, and the hash that pins manifest.csv. */
export function exportJson(description: ExportDescription, summary: ExportSummary): Record<string, unknown> {
  return {
    format: description.format,
    query: description.query,
    filters: description.filters,
    exportedBy: description.who,
    exportedAt: description.createdAt.toISOString(),
    messages: summary.messages,
    originals: summary.originals,
    reconstructed: summary.reconstructed,
    service: { name: 'mail-archive-gateway', version: serviceVersion() },
    manifest: { file: 'manifest.csv', sha256: summary.manifestSha256 },
    ...(summary.mbox ? { mbox: { file: 'export.mbox', ...summary.mbox } } : {}),
  };
}
