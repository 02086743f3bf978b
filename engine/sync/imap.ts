// The IMAP side of a sync: connecting with an account's settings, the folders it archives, and
// the messages of one folder as a stream. Nothing here writes to the archive (engine/sync/sync.ts).
import { ImapFlow, type ListResponse } from 'imapflow';
import type { RawMessage } from '../import/sources.js';
import type { ImapSettings } from './types.js';

/** Seconds to wait for a server before calling it unreachable. */
const CONNECT_TIMEOUT_MS = 15_000;

export function connect(settings: ImapSettings, options: { ca?: string | Buffer } = {}): ImapFlow {
  return new ImapFlow({
    host: settings.host,
    port: settings.port,
    secure: settings.security === 'tls',
    // starttls: the upgrade is required, so a server (or an attacker) that does not offer it
    // fails the connection instead of receiving the password in clear text.
    doSTARTTLS: settings.security === 'starttls' ? true : settings.security === 'none' ? false : undefined,
    auth: { user: settings.user, pass: settings.password },
    logger: false,
    connectionTimeout: CONNECT_TIMEOUT_MS,
    greetingTimeout: CONNECT_TIMEOUT_MS,
    socketTimeout: 5 * 60_000,
    ...(options.ca ? { tls: { ca: options.ca } } : {}),
  });
}

/** A server folder path as the archive names it: `/` between levels, whatever the delimiter. */
export function archiveFolder(folder: Pick<ListResponse, 'path' | 'delimiter'>): string {
  const parts = folder.delimiter ? folder.path.split(folder.delimiter) : [folder.path];
  return parts.filter(Boolean).join('/') || 'INBOX';
}

const folded = (name: string) => name.normalize('NFC').toLowerCase();

/** Is `folder` (archive form) `other` or inside it? INBOX matches case-insensitively, as IMAP says. */
function within(folder: string, other: string): boolean {
  const a = folded(folder);
  const b = folded(other).replace(/\/+$/, '');
  return a === b || a.startsWith(`${b}/`);
}

/** The folders a pass archives: selectable, in `folders` when given, none of `exclude` or below it. */
export function foldersToSync(
  list: ListResponse[],
  settings: Pick<ImapSettings, 'folders' | 'exclude'>,
): ListResponse[] {
  return list
    .filter((f) => !f.flags.has('\\Noselect') && !f.flags.has('\\NonExistent'))
    .filter((f) => {
      const name = archiveFolder(f);
      if (settings.exclude.some((x) => within(name, x))) return false;
      return settings.folders === null || settings.folders.some((x) => folded(name) === folded(x));
    })
    .sort((a, b) => archiveFolder(a).localeCompare(archiveFolder(b)));
}

/** UIDs fetched per FETCH command: what may be buffered at once, whatever the folder's size. */
export const FETCH_WINDOW = 100;

/**
 * The messages of the selected folder with a UID above `after`, oldest first, one at a time.
 * The UIDs are searched first, then fetched in windows of FETCH_WINDOW, so memory holds at most
 * one window of messages however large the folder is.
 */
export async function* messagesAfter(
  client: ImapFlow,
  folder: string,
  after: number,
  signal?: AbortSignal,
): AsyncGenerator<RawMessage> {
  // `N:*` always includes the highest UID, even when it is below N: filter on the UID.
  const found = await client.search({ uid: `${after + 1}:*` }, { uid: true });
  const uids = (found || []).filter((uid) => uid > after).sort((a, b) => a - b);
  for (let i = 0; i < uids.length; i += FETCH_WINDOW) {
    if (signal?.aborted) return;
    const window = uids.slice(i, i + FETCH_WINDOW);
    const batch: RawMessage[] = [];
    for await (const m of client.fetch(
      window.join(','),
      { uid: true, source: true, internalDate: true },
      { uid: true },
    )) {
      if (!m.source) continue;
      const date = m.internalDate instanceof Date ? m.internalDate.getTime() : Date.now();
      batch.push({
        raw: m.source,
        folder,
        origin: `${folder} (UID ${m.uid})`,
        mtime: date,
        bytes: m.source.length,
        uid: m.uid,
      });
    }
    batch.sort((a, b) => a.uid! - b.uid!);
    for (const m of batch) {
      yield m;
      // SIGTERM: the message in hand is finished (written and checkpointed), nothing after it.
      if (signal?.aborted) return;
    }
  }
}

/** One sentence for an IMAP failure, never the password. */
export function describeImapError(err: unknown, settings: Pick<ImapSettings, 'host' | 'port' | 'user'>): string {
  const e = err as { code?: string; message?: string; authenticationFailed?: boolean; responseText?: string };
  const where = `${settings.host}:${settings.port}`;
  if (e.authenticationFailed || e.code === 'AUTHENTICATIONFAILED')
    return `the server at ${where} refused the user name or password for ${settings.user}`;
  if (e.code === 'ECONNREFUSED') return `nothing accepts connections at ${where}`;
  if (e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN') return `the host name ${settings.host} does not resolve`;
  if (e.code === 'ETIMEDOUT' || e.code === 'CONNECT_TIMEOUT' || e.code === 'GREETING_TIMEOUT')
    return `the server at ${where} did not answer in time`;
  if (/certificate|self[- ]signed|TLS|SSL/i.test(`${e.code ?? ''} ${e.message ?? ''}`))
    return `a secure connection to ${where} could not be made (${(e.message ?? 'TLS error').split('\n')[0]})`;
  const text = (e.responseText ?? e.message ?? String(err)).split('\n')[0]!.replaceAll(/\s+/g, ' ').trim();
  return `the IMAP session with ${where} failed: ${text}`;
}
