// The IMAP side of a sync: connecting with an account's settings, the folders it archives, and
// the messages of one folder as a stream. Nothing here writes to the archive (engine/sync/pass.ts).
import { ImapFlow, type ListResponse } from 'imapflow';
import type { RawMessage } from '../import/sources.js';
import { UNPRINTABLE } from '../../shared/key-name.js';
import type { ImapSettings } from '../rules/sync-state.js';

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

const UNPRINTABLE_ALL = new RegExp(UNPRINTABLE.source, 'gu');

/**
 * A server folder path as the archive names it: `/` between levels, whatever the delimiter, and
 * control characters (and direction marks) from a hostile server replaced with U+FFFD: such a
 * name is stored, shown by the API and printed, and must not carry terminal escapes (docs/security.md, "Mail shaped by an attacker",
 * item 7).
 */
export function archiveFolder(folder: Pick<ListResponse, 'path' | 'delimiter'>): string {
  const parts = folder.delimiter ? folder.path.split(folder.delimiter) : [folder.path];
  return parts.filter(Boolean).join('/').replace(UNPRINTABLE_ALL, '\uFFFD') || 'INBOX';
}

/** The warning for an account whose password travels in clear text (docs/security.md, "Mail shaped by an attacker", item 8). */
export const clearTextWarning = (settings: Pick<ImapSettings, 'host' | 'port'>) =>
  `its IMAP password is sent in clear text to ${settings.host}:${settings.port} (IMAP security none): anyone on the network path can read it; use tls or starttls`;

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

/** UIDs fetched per FETCH command at most. */
export const FETCH_WINDOW = 100;

export interface WindowLimits {
  /** Messages per FETCH at most. */
  count: number;
  /** Message bytes per FETCH at most (a larger message is fetched alone). */
  bytes: number;
  /** A message larger than this is not fetched: it is handed on with its size and no content. */
  maxMessageBytes: number;
}

/**
 * Cuts UIDs (oldest first) with their sizes into FETCH windows: at most `count` messages and
 * `bytes` bytes each, a larger message alone; messages above `maxMessageBytes` in none.
 */
export function fetchWindows(messages: ReadonlyArray<{ uid: number; size: number }>, limits: WindowLimits): number[][] {
  const windows: number[][] = [];
  let current: number[] = [];
  let bytes = 0;
  for (const { uid, size } of messages) {
    if (size > limits.maxMessageBytes) continue;
    if (current.length > 0 && (current.length >= limits.count || bytes + size > limits.bytes)) {
      windows.push(current);
      current = [];
      bytes = 0;
    }
    current.push(uid);
    bytes += size;
  }
  if (current.length > 0) windows.push(current);
  return windows;
}

/**
 * The messages of the selected folder with a UID above `after`, oldest first, one at a time.
 * The UIDs and their sizes are asked first (RFC822.SIZE: no content), then the messages are
 * fetched in windows bounded by count and bytes (fetchWindows), and each is handed on as soon as
 * it and every older one of its window have arrived. So memory holds at most one window of
 * bytes, however large the folder or its messages. A message above `maxMessageBytes` is never
 * fetched: it is handed on with its size and an empty body, and the importer records it as
 * skipped.
 */
export async function* messagesAfter(
  client: ImapFlow,
  folder: string,
  after: number,
  signal?: AbortSignal,
  limits: WindowLimits = { count: FETCH_WINDOW, bytes: 64 * 1024 * 1024, maxMessageBytes: Infinity },
): AsyncGenerator<RawMessage> {
  // `N:*` always includes the highest UID, even when it is below N: filter on the UID.
  const found = await client.search({ uid: `${after + 1}:*` }, { uid: true });
  const uids = (found || []).filter((uid) => uid > after).sort((a, b) => a - b);
  for (let i = 0; i < uids.length; i += SIZE_WINDOW) {
    if (signal?.aborted) return;
    const sizes = new Map<number, number>();
    for await (const m of client.fetch(
      uids.slice(i, i + SIZE_WINDOW).join(','),
      { uid: true, size: true },
      { uid: true },
    ))
      sizes.set(m.uid, m.size ?? 0);
    const listed = uids.slice(i, i + SIZE_WINDOW).filter((uid) => sizes.has(uid));
    const windows = fetchWindows(
      listed.map((uid) => ({ uid, size: sizes.get(uid)! })),
      limits,
    );
    // Messages too large to fetch, handed on in UID order among the others: the checkpoint
    // (the last UID handed on) never passes a message not yet handed on.
    const tooLarge = listed.filter((uid) => sizes.get(uid)! > limits.maxMessageBytes);
    const skipped = (below: number) => {
      const out: RawMessage[] = [];
      while (tooLarge.length > 0 && tooLarge[0]! < below) {
        const uid = tooLarge.shift()!;
        out.push({
          raw: Buffer.alloc(0),
          folder,
          origin: `${folder} (UID ${uid})`,
          mtime: Date.now(),
          bytes: sizes.get(uid)!,
          uid,
        });
      }
      return out;
    };
    for (const window of windows) {
      // Handed on in UID order as they arrive; one that arrives early waits for those before it.
      const order = [...window];
      const early = new Map<number, RawMessage>();
      for await (const m of client.fetch(
        window.join(','),
        { uid: true, source: true, internalDate: true },
        { uid: true },
      )) {
        if (!m.source) continue;
        const date = m.internalDate instanceof Date ? m.internalDate.getTime() : Date.now();
        early.set(m.uid, {
          raw: m.source,
          folder,
          origin: `${folder} (UID ${m.uid})`,
          mtime: date,
          bytes: m.source.length,
          uid: m.uid,
        });
        while (order.length > 0 && early.has(order[0]!)) {
          const next = early.get(order.shift()!)!;
          early.delete(next.uid!);
          for (const m of skipped(next.uid!)) {
            yield m;
            if (signal?.aborted) return;
          }
          yield next;
          // SIGTERM: the message in hand is finished (written and checkpointed), nothing after it.
          if (signal?.aborted) return;
        }
      }
      // Whatever the server did not send (expunged meanwhile) is passed over; the rest in order.
      for (const uid of order) {
        const next = early.get(uid);
        if (!next) continue;
        for (const m of skipped(uid)) {
          yield m;
          if (signal?.aborted) return;
        }
        yield next;
        if (signal?.aborted) return;
      }
    }
    for (const m of skipped(Infinity)) {
      yield m;
      if (signal?.aborted) return;
    }
  }
}

/** UIDs whose sizes are asked per FETCH: a few bytes each. */
const SIZE_WINDOW = 5000;

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
