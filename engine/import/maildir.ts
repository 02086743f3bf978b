// Maildir trees: which directories are mail folders and what each one is called (the walk itself
// is sources.ts's, which reads every directory alike).
//
// A folder is a directory with a cur/ or new/ sub-directory (tmp/ holds unfinished deliveries and
// is never read). Two layouts name sub-folders, and both are understood:
//   Maildir++ (Courier, Dovecot default): dot-directories in the root, `.Archive.2023`;
//   nested (Dovecot LAYOUT=fs and copies of IMAP trees): `Archive/2023/{cur,new,tmp}`.
// Maildir++ names are IMAP modified UTF-7 (RFC 3501 section 5.1.3), decoded here.
import { statSync } from 'node:fs';
import { join } from 'node:path';

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
