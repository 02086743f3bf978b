// What the operator pointed the importer at, resolved to a list of sources before anything is
// written (so a typo fails fast), then read one message at a time.
import { closeSync, openSync, readSync, statSync, type Stats } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { StoreError } from '../store/errors.js';
import { normalizeFolder } from '../store/writer.js';
import { listEmlFiles } from './eml.js';
import { findMaildirFolders, isMaildirFolder, listMaildirMessages } from './maildir.js';
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

function startsWithFromLine(path: string): boolean {
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(5);
    return readSync(fd, head, 0, 5, 0) === 5 && head.toString('latin1') === 'From ';
  } finally {
    closeSync(fd);
  }
}

function messageFile(path: string, folder: string): Source {
  const st = statOrFail(path);
  return { kind: 'message', path, folder, size: st.size, mtime: st.mtimeMs };
}

/**
 * Resolves paths to sources. Without `folder`, an mbox or .eml goes to INBOX and a Maildir uses
 * its own names (its root is INBOX); with `folder`, that folder replaces INBOX and a Maildir's
 * sub-folders go beneath it.
 */
export function planSources(paths: readonly string[], folder?: string): Source[] {
  const base = folder === undefined ? undefined : normalizeFolder(folder);
  const sources: Source[] = [];
  for (const given of paths) {
    const path = resolve(given);
    const st = statOrFail(path);
    if (st.isFile()) {
      const kind = startsWithFromLine(path) ? 'mbox' : 'message';
      sources.push({ kind, path, folder: base ?? 'INBOX', size: st.size, mtime: st.mtimeMs });
      continue;
    }
    if (!st.isDirectory()) throw new StoreError(`Cannot import ${given}: it is neither a file nor a directory.`);
    const emls = isMaildirFolder(path) ? [] : listEmlFiles(path);
    if (emls.length > 0) {
      for (const file of emls) sources.push(messageFile(file, base ?? 'INBOX'));
      continue;
    }
    const folders = findMaildirFolders(path);
    if (folders.length === 0) {
      throw new StoreError(`Cannot import ${given}: it is neither a Maildir nor a directory of .eml files.`);
    }
    for (const f of folders) {
      const name = base !== undefined ? [base, ...f.segments].join('/') : f.segments.join('/') || 'INBOX';
      for (const file of listMaildirMessages(f.dir)) sources.push(messageFile(file, normalizeFolder(name)));
    }
  }
  return sources;
}

/** Reads the sources in order, one message at a time; an mbox is streamed, never loaded whole. */
export async function* readSources(sources: readonly Source[]): AsyncGenerator<RawMessage> {
  for (const s of sources) {
    if (s.kind === 'message') {
      try {
        const raw = await readFile(s.path);
        yield { raw, folder: s.folder, origin: s.path, mtime: s.mtime, bytes: s.size };
      } catch (err) {
        const readError = `it cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
        yield { raw: Buffer.alloc(0), folder: s.folder, origin: s.path, mtime: s.mtime, bytes: s.size, readError };
      }
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
        };
      }
    } catch (err) {
      if (err instanceof StoreError) throw err;
      throw new StoreError(`Cannot read ${s.path}: ${(err as Error).message}.`);
    }
  }
}
