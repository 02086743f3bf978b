// A message as every writer hands it to a store (the importer, sync, the demo builder), and the
// rules both stores keep for it: its identity in its folder (dedupKeyFor) and its folder path.
import { createHash } from 'node:crypto';
import { ATTACHMENT_CHUNK_BYTES } from '../../shared/jobs.js';
import type { PackedOriginal } from './originals.js';

export { ATTACHMENT_CHUNK_BYTES };

export interface NewAttachment {
  fileName: string;
  contentType: string;
  content: Buffer;
  isInline?: boolean;
  /**
   * The part's Content-ID without its angle brackets, as Mail Archiver keeps it
   * (EmailAttachments."ContentId"): what cid: links in the HTML body name. Absent: none.
   */
  contentId?: string;
}

export interface NewEmail {
  accountId: number;
  folder: string;
  messageId: string;
  subject: string;
  from: string;
  to: string;
  cc: string;
  bcc: string;
  /** Epoch milliseconds, UTC; stored to the second. */
  sentDate: number;
  receivedDate: number;
  isOutgoing: boolean;
  textBody: string | null;
  htmlBody: string | null;
  attachments: NewAttachment[];
  /** Identity of the message inside its account and folder; see dedupKeyFor. */
  dedupKey: string;
  /**
   * The message ids its References and In-Reply-To name, normalised (engine/rules/threads.ts
   * referencedIds); they link it into a conversation. Absent: none.
   */
  refs?: string[];
  /** The raw header block as received, for stores that keep it (PostgreSQL's RawHeaders). */
  rawHeaders?: string;
  /**
   * The message's bytes as they arrived (docs/evidence.md, "Originals"): a file's or an IMAP
   * fetch's bytes as read, an mbox entry without its From_ line and with its escapes undone.
   * Stores that keep originals store it; absent for mail made up on the spot.
   */
  original?: Buffer;
  /** `original` already hashed and compressed (engine/rules/originals.ts packOriginal), when a parse thread did it ahead of the writer. */
  packedOriginal?: PackedOriginal;
  /**
   * The store's search document for the message, built ahead of the write where the message was
   * parsed (a writer's `prepare` module, engine/store-contract.ts MailWriter; PostgreSQL: the side
   * index's tsvector in binary form). The writer builds it itself when absent.
   */
  searchDocument?: Buffer;
  /** The bodies as the SQLite writer stores them, packed where the message was parsed (engine/sqlite/prepare.ts). */
  packedBodies?: PackedBodies;
}

/** A text and an HTML body as stored by a store that packs them: the text, or its packed bytes. */
export interface PackedBodies {
  /** The stored-body limit they were cut at: a writer with another limit packs them itself. */
  limit: number;
  text: string | Buffer | null;
  html: string | Buffer | null;
}

/**
 * A message's identity inside its account and folder: its Message-ID together with a hash of its
 * content (engine/import/fingerprint.ts; different messages do reuse Message-IDs), or without a
 * Message-ID a hash of its raw bytes. Without a content hash, the Message-ID alone: the key mail
 * imported before content counted has (messageIdOnlyKey).
 */
export function dedupKeyFor(messageId: string | null | undefined, raw: Buffer | string, contentHash?: string): string {
  const id = (messageId ?? '').trim();
  if (id) return contentHash ? `mid:${id}${CONTENT_MARK}${contentHash}` : `mid:${id}`;
  return `sha256:${createHash('sha256').update(raw).digest('hex')}`;
}

const CONTENT_MARK = ' content:';
const CONTENT_SUFFIX = / content:[0-9a-f]{64}$/;

/**
 * For a key with a content hash, the key of the same Message-ID without one: what earlier versions
 * stored. A message already stored under it is a duplicate, as it was then (docs/import.md).
 */
export function messageIdOnlyKey(key: string): string | null {
  const suffix = key.startsWith('mid:') ? CONTENT_SUFFIX.exec(key) : null;
  return suffix ? key.slice(0, suffix.index) : null;
}

/** Folder paths use `/`, have no empty segments and no surrounding slashes. */
export function normalizeFolder(folder: string): string {
  const cleaned = folder
    .split('/')
    .map((s) => s.trim())
    .filter(Boolean)
    .join('/');
  return cleaned || 'INBOX';
}
