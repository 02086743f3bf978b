// What the operator pointed the importer at, resolved to a list of sources before anything is
// written (so a typo fails fast), then read one message at a time.
import { closeSync, openSync, readdirSync, readFileSync, readSync, statSync, type Dirent, type Stats } from 'node:fs';
import { join, resolve } from 'node:path';
import { StoreError } from '../../shared/errors.js';
import { normalizeFolder } from '../rules/new-email.js';
import { decodeMailboxName, isMaildirFolder } from './maildir.js';
import { readMbox } from './mbox.js';

export interface Source {
  /** An mbox holds many messages; a message file (.eml, Maildir entry) holds one. */
  kind: 'mbox' | 'message';
  path: string;
  folder: string;
  size: number;
  mtime: number;
}

/** One message as read, before parsing. */
export interface RawMessage {
  raw: Buffer;
  folder: string;
  /** Where it came from, for warnings: a file, or an mbox file and byte offset. */
  origin: string;
  /** The file's modification time, the date of last resort. */
  mtime: number;
  /** Source bytes this message accounts for, for progress. */
  bytes: number;
  /** Set when the file could not be read (a Maildir in use may move or delete it meanwhile). */
  readError?: string;
  /** The message's IMAP UID, when it comes from a server (engine/sync/): the sync's checkpoint. */
  uid?: number;
  /** Set when its lines ended in a bare CR, already read as LF (an mbox of old Mac mail). */
  crLineEnds?: true;
  /** Set on an mbox's last message when it looks cut short: why (engine/import/mbox.ts, cutShort). */
  cut?: string;
}

function statOrFail(path: string): Stats {
  try {
    return statSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'no such file or directory'
        : code === 'EACCES'
          ? 'permission denied'
          : (err as Error).message;
    throw new StoreError(`Cannot import ${path}: ${why}.`);
  }
}

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** The first bytes of a file (at most n). */
function headOf(path: string, n = 4096): Buffer {
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(n);
    return head.subarray(0, readSync(fd, head, 0, n, 0));
  } finally {
    closeSync(fd);
  }
}

/** An mbox starts with a From_ line (after a UTF-8 byte-order mark, if any). */
function startsWithFromLine(head: Buffer): boolean {
  const at = head.subarray(0, 3).equals(UTF8_BOM) ? 3 : 0;
  return head.toString('latin1', at, at + 5) === 'From ';
}

/** UTF-16 text: a byte-order mark, or ASCII with every other byte NUL. */
export function isUtf16(head: Buffer): boolean {
  if (head.length >= 2 && ((head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff)))
    return true;
  return (
    head.length >= 4 && ((head[1] === 0 && head[3] === 0) || (head[0] === 0 && head[2] === 0)) && head[0] !== head[1]
  );
}

export const UTF16_REASON = 'it is UTF-16 text, which mail never is; save it as UTF-8 (or ASCII) and import it again';

function messageFile(path: string, folder: string): Source {
  const st = statOrFail(path);
  return { kind: 'message', path, folder, size: st.size, mtime: st.mtimeMs };
}

/** A file or directory under an import path that is not read, and why (listed in the summary). */
export interface IgnoredFile {
  path: string;
  reason: string;
}

export interface SourcePlan {
  sources: Source[];
  ignored: IgnoredFile[];
}

// Files mail programs keep beside the mail, by name: never messages (docs/import.md, "What is read").
const METADATA: Array<[RegExp, string]> = [
  [/^\./, 'hidden file'],
  [/\.msf$/i, 'Thunderbird folder index (.msf), not mail'],
  [/^dovecot[-.]/i, 'Dovecot index or list, not mail'],
  [/^(?:maildirfolder|maildirsize|subscriptions|courierimap.*)$/i, 'Maildir bookkeeping, not mail'],
  [
    /^(?:\.?mh_sequences|\.?mh_profile|\.xmhcache|\.mew-cache|\.sylpheed_cache|\.sylpheed_mark|\.claws_cache|\.claws_mark)$/i,
    'MH folder bookkeeping, not mail',
  ],
  [/^(?:Thumbs\.db|desktop\.ini|Icon\r)$/i, 'operating system file, not mail'],
  [/\.(?:dat|db|idx|ibex|sqlite|json|xml|plist|log)$/i, 'index or database file, not mail'],
];

/** A header field's start (RFC 5322 ftext, then a colon), or an mbox From_ line. */
const HEADER_START = /^(?:[!-9;-~]+[ \t]*:|From )/;

/**
 * The lines of a file's start, after a byte-order mark, blank or whitespace-only lines and the
 * blanks before a first field (the parser repairs an indented first field, headers.ts); CR, LF
 * or CRLF ends.
 */
function leadingLines(head: Buffer): string[] {
  const text = head.toString('latin1', head.subarray(0, 3).equals(UTF8_BOM) ? 3 : 0);
  return text
    .replace(/^(?:[ \t]*(?:\r\n|\r|\n))+/, '')
    .replace(/^[ \t]+(?=[!-9;-~]+[ \t]*:)/, '')
    .split(/\r\n|\r|\n/);
}

/**
 * Whether a file starts with a header block: header fields (and their continuation lines) up to a
 * blank line, with no NUL in them. Such a file is a message even when a part further on is
 * binary (a UTF-16 or raw binary attachment puts NUL bytes in the first 4 KB).
 */
function startsWithHeaderBlock(head: Buffer): boolean {
  const lines = leadingLines(head);
  if (!HEADER_START.test(lines[0] ?? '')) return false;
  for (const line of lines.slice(1, -1)) {
    if (line === '') return true;
    if (line.includes('\0') || !/^(?:[!-9;-~]+[ \t]*:|[ \t])/.test(line)) return false;
  }
  return false;
}

/** Where the first line ends, after its CR, LF or CRLF (old Mac mail ends lines in CR alone). */
function lineEnd(bytes: Buffer): number {
  const i = bytes.findIndex((b) => b === 0x0a || b === 0x0d);
  if (i < 0) return bytes.length;
  return bytes[i] === 0x0d && bytes[i + 1] === 0x0a ? i + 2 : i + 1;
}

/** Names of single-message files: `.eml`, and MH's numbered files. */
const MESSAGE_NAME = /(?:\.eml|^\d+)$/i;

/**
 * Resolves paths to sources, and lists what is left out with the reason. Without `folder`, an
 * mbox or message file named on the command line goes to INBOX, and a directory's own files to
 * INBOX; with `folder`, that folder replaces INBOX. Below a directory every sub-directory is a
 * sub-folder (a Maildir's `.Name` folders by their decoded names, Thunderbird's `Name.sbd`
 * beside the `Name` mbox as `Name`), and every regular file is a message, an mbox (a file that
 * starts with a From_ line, unless named as a message: its own folder, named after it), or
 * ignored with a reason (docs/import.md, "What is read").
 */
export function planSources(paths: readonly string[], folder?: string): SourcePlan {
  const base = folder === undefined ? undefined : normalizeFolder(folder);
  const plan: SourcePlan = { sources: [], ignored: [] };
  for (const given of paths) {
    const path = resolve(given);
    const st = statOrFail(path);
    if (st.isFile()) {
      const kind = st.size > 0 && startsWithFromLine(headOf(path)) ? 'mbox' : 'message';
      plan.sources.push({ kind, path, folder: base ?? 'INBOX', size: st.size, mtime: st.mtimeMs });
      continue;
    }
    if (!st.isDirectory()) throw new StoreError(`Cannot import ${given}: it is neither a file nor a directory.`);
    const before = plan.sources.length + plan.ignored.length;
    walk(path, [], base, plan);
    if (plan.sources.length + plan.ignored.length === before) {
      throw new StoreError(`Cannot import ${given}: the directory holds no files.`);
    }
  }
  return plan;
}

const byName = (a: string, b: string) => a.localeCompare(b, 'en', { numeric: true });

function folderOf(segments: string[], base: string | undefined): string {
  if (segments.length === 0) return base ?? 'INBOX';
  return normalizeFolder((base !== undefined ? [base, ...segments] : segments).join('/'));
}

/** One directory: its messages go to the folder its path names, its sub-directories below. */
function walk(dir: string, segments: string[], base: string | undefined, plan: SourcePlan): void {
  const maildir = isMaildirFolder(dir);
  const here = folderOf(segments, base);
  const entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => byName(a.name, b.name));
  for (const e of entries) {
    const path = join(dir, e.name);
    const kind = typeOf(path, e);
    if (kind === 'directory') {
      if (maildir && (e.name === 'cur' || e.name === 'new')) maildirMessages(path, here, plan);
      else if (maildir && e.name === 'tmp') ignoreAll(path, 'unfinished delivery (Maildir tmp/)', plan);
      else if (e.name.startsWith('.')) {
        const named = e.name.slice(1).split('.').filter(Boolean).map(decodeMailboxName);
        if (named.length > 0 && isMaildirFolder(path)) walk(path, [...segments, ...named], base, plan);
        else plan.ignored.push({ path, reason: 'hidden directory' });
      } else if (/\.sbd$/i.test(e.name)) walk(path, [...segments, e.name.slice(0, -4)], base, plan);
      else walk(path, [...segments, e.name], base, plan);
    } else if (kind === 'file') {
      fileSource(path, e.name, segments, here, base, plan);
    } else {
      plan.ignored.push({ path, reason: 'not a regular file' });
    }
  }
}

function typeOf(path: string, e: Dirent): 'directory' | 'file' | 'other' {
  if (e.isDirectory()) return 'directory';
  if (e.isFile()) return 'file';
  if (e.isSymbolicLink()) {
    // A link to a file is read (Maildir tools link messages); links to directories are not
    // followed, since they could walk in circles.
    try {
      return statSync(path).isFile() ? 'file' : 'other';
    } catch {
      return 'other';
    }
  }
  return 'other';
}

/** A Maildir's cur/ or new/: every file but dot-files is a message (the Maildir convention). */
function maildirMessages(dir: string, folder: string, plan: SourcePlan): void {
  for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => byName(a.name, b.name))) {
    const path = join(dir, e.name);
    const kind = typeOf(path, e);
    if (kind !== 'file') plan.ignored.push({ path, reason: 'not a regular file' });
    else if (e.name.startsWith('.')) plan.ignored.push({ path, reason: 'hidden file' });
    else plan.sources.push(messageFile(path, folder));
  }
}

function ignoreAll(dir: string, reason: string, plan: SourcePlan): void {
  for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => byName(a.name, b.name))) {
    plan.ignored.push({ path: join(dir, e.name), reason });
  }
}

function fileSource(
  path: string,
  name: string,
  segments: string[],
  here: string,
  base: string | undefined,
  plan: SourcePlan,
): void {
  const metadata = METADATA.find(([pattern]) => pattern.test(name));
  if (metadata) {
    plan.ignored.push({ path, reason: metadata[1] });
    return;
  }
  const st = statOrFail(path);
  if (st.size === 0) {
    plan.ignored.push({ path, reason: 'empty file' });
    return;
  }
  const head = headOf(path);
  if (!isUtf16(head) && !MESSAGE_NAME.test(name) && startsWithFromLine(head)) {
    // An mbox in a directory is a folder of its own, named after the file (Thunderbird's layout).
    const folder = folderOf([...segments, name.replace(/\.(?:mbox|mbx)$/i, '')], base);
    plan.sources.push({ kind: 'mbox', path, folder, size: st.size, mtime: st.mtimeMs });
    return;
  }
  if (!isUtf16(head) && head.includes(0) && !startsWithHeaderBlock(head)) {
    plan.ignored.push({ path, reason: 'binary file, not a mail message' });
    return;
  }
  // A file named as a message is one, and fails with its reason if it is not; any other file must
  // look like mail from its first line (a README or a note beside the mail is not).
  if (!isUtf16(head) && !MESSAGE_NAME.test(name) && !HEADER_START.test(leadingLines(head)[0] ?? '')) {
    plan.ignored.push({ path, reason: 'not a mail message (its first line is not a header field)' });
    return;
  }
  plan.sources.push({ kind: 'message', path, folder: here, size: st.size, mtime: st.mtimeMs });
}

/**
 * Reads the sources in order, one message at a time; an mbox is streamed, never loaded whole. A
 * message file larger than `maxMessageBytes` is not read: it is given with its size and no bytes,
 * to be refused for its size as it would be after reading.
 */
export async function* readSources(sources: readonly Source[], maxMessageBytes = Infinity): AsyncGenerator<RawMessage> {
  for (const s of sources) {
    if (s.kind === 'message') {
      yield readMessageFile(s, maxMessageBytes);
      continue;
    }
    try {
      for await (const e of readMbox(s.path)) {
        yield {
          raw: e.raw,
          folder: s.folder,
          origin: `${s.path} at byte ${e.offset}`,
          mtime: s.mtime,
          bytes: e.length,
          ...(e.crLineEnds ? { crLineEnds: e.crLineEnds } : {}),
          ...(e.cut ? { cut: e.cut } : {}),
        };
      }
    } catch (err) {
      if (err instanceof StoreError) throw err;
      throw new StoreError(`Cannot read ${s.path}: ${(err as Error).message}.`);
    }
  }
}

/** One message file, as read; without bytes when it is too large to read or cannot be read. */
function readMessageFile(s: Source, maxMessageBytes: number): RawMessage {
  const message = { folder: s.folder, origin: s.path, mtime: s.mtime, bytes: s.size };
  const unread = (readError?: string) => ({ ...message, raw: Buffer.alloc(0), ...(readError ? { readError } : {}) });
  // Refused for its size (importer.ts) as it would be once read.
  if (s.size > maxMessageBytes) return unread();
  let raw: Buffer;
  try {
    // Synchronous on purpose: a message file is small and cached, and fs/promises' readFile
    // costs about 300 µs of CPU per file against 10 µs for readFileSync (Node 20, 2 KB files),
    // on the thread that also writes the archive. A Maildir import was bound by it.
    raw = readFileSync(s.path);
  } catch (err) {
    return unread(`it cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (isUtf16(raw.subarray(0, 4))) return unread(UTF16_REASON);
  // A UTF-8 byte-order mark (Windows tools write one) is not part of the message, nor is an
  // mbox envelope line that some tools leave at the top of a saved message: read alone as
  // an mbox, the same file gives the same message.
  let bytes = raw.subarray(0, 3).equals(UTF8_BOM) ? raw.subarray(3) : raw;
  if (startsWithFromLine(bytes)) bytes = bytes.subarray(lineEnd(bytes));
  return { ...message, raw: bytes };
}
