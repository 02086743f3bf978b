// Maildir trees: which directories are mail folders and what each one is called.
//
// A folder is a directory with a cur/ or new/ sub-directory (tmp/ holds unfinished deliveries and
// is never read). Two layouts name sub-folders, and both are understood:
//   Maildir++ (Courier, Dovecot default): dot-directories in the root, `.Archive.2023`;
//   nested (Dovecot LAYOUT=fs and copies of IMAP trees): `Archive/2023/{cur,new,tmp}`.
// Maildir++ names are IMAP modified UTF-7 (RFC 3501 section 5.1.3), decoded here.
import { readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';

export interface MaildirFolder {
  /** The directory that holds cur/ and new/. */
  dir: string;
  /** Folder path segments relative to the Maildir root; [] for the root itself. */
  segments: string[];
}

const MESSAGE_DIRS = ['cur', 'new'] as const;

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

export function isMaildirFolder(dir: string): boolean {
  return MESSAGE_DIRS.some((d) => isDirectory(join(dir, d)));
}

/** Real sub-directories only: following symbolic links could walk in circles. */
function subdirectories(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

/** Every mail folder under `root`, the root first when it is one itself. */
export function findMaildirFolders(root: string): MaildirFolder[] {
  const found: MaildirFolder[] = [];
  if (isMaildirFolder(root)) found.push({ dir: root, segments: [] });
  for (const name of subdirectories(root)) {
    if (!name.startsWith('.')) continue;
    const dir = join(root, name);
    const segments = name.slice(1).split('.').filter(Boolean).map(decodeMailboxName);
    if (segments.length > 0 && isMaildirFolder(dir)) found.push({ dir, segments });
  }
  walkNested(root, [], found);
  return found;
}

function walkNested(dir: string, segments: string[], found: MaildirFolder[]): void {
  for (const name of subdirectories(dir)) {
    if (name.startsWith('.') || (MESSAGE_DIRS as readonly string[]).includes(name) || name === 'tmp') continue;
    const child = join(dir, name);
    const childSegments = [...segments, name];
    if (isMaildirFolder(child)) found.push({ dir: child, segments: childSegments });
    walkNested(child, childSegments, found);
  }
}

/** Message files of one folder, oldest delivery first (Maildir names start with a timestamp). */
export function listMaildirMessages(folderDir: string): string[] {
  const files: string[] = [];
  for (const sub of MESSAGE_DIRS) {
    const dir = join(folderDir, sub);
    if (!isDirectory(dir)) continue;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      // Dot-files are not messages (Maildir convention); neither is anything but a file.
      if (!e.name.startsWith('.') && (e.isFile() || e.isSymbolicLink())) files.push(join(dir, e.name));
    }
  }
  return files.sort((a, b) => basename(a).localeCompare(basename(b), 'en', { numeric: true }));
}

/** IMAP modified UTF-7: `&` + base64 of UTF-16BE with `,` for `/`, up to `-`; `&-` is `&`. */
export function decodeMailboxName(name: string): string {
  return name.replace(/&([A-Za-z0-9+,]*)-/g, (_, b64: string) => {
    if (b64 === '') return '&';
    const bytes = Buffer.from(b64.replace(/,/g, '/'), 'base64');
    let out = '';
    for (let i = 0; i + 1 < bytes.length; i += 2) out += String.fromCharCode(bytes.readUInt16BE(i));
    return out;
  });
}
