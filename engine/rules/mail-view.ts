// The web's message page (JobMap.messageView), the same on both stores: a message's detail with its
// HTML body made safe to show (engine/rules/mail-html.ts), its cid: images pointed at the message's
// own attachments. Pure: each store reads the detail and the attachments' Content-IDs, this file
// only decides.
import type { EmailDetailDto } from '../../shared/dto.js';
import type { JobMap, MessageView } from '../../shared/jobs.js';
import { sanitizeMailHtml } from './mail-html.js';

/** One attachment of the message and the Content-ID its part had (null: none, or none kept). */
export interface CidPart {
  attachmentId: number;
  cid: string | null;
}

/** What the view takes of the job's arguments. */
export type MailViewArgs = Pick<JobMap['messageView']['args'], 'remoteImages' | 'partUrl'>;

/**
 * The attachment a `cid:` link names, or null. By Content-ID, exactly, then ignoring case (a
 * Content-ID's domain is case-insensitive, and some mail writers change the case of one side). When no
 * Content-ID matches (SQLite mail stored before migration 10, Mail Archiver rows whose ContentId
 * is empty), by file name: Outlook names its inline images `image001.png@01D9...`, the part
 * before '@' being the file name it also gives the part.
 */
export function attachmentForCid(
  cid: string,
  parts: readonly CidPart[],
  attachments: EmailDetailDto['attachments'],
): number | null {
  const exact = parts.find((p) => p.cid === cid);
  if (exact) return exact.attachmentId;
  const lower = cid.toLowerCase();
  const folded = parts.find((p) => p.cid !== null && p.cid.toLowerCase() === lower);
  if (folded) return folded.attachmentId;
  const at = cid.indexOf('@');
  const name = at === -1 ? cid : cid.slice(0, at);
  if (name === '') return null;
  return attachments.find((a) => a.fileName === name)?.id ?? null;
}

/**
 * The page's view of a message whose detail a store has just read (its visibility checked by
 * that read): `email` is that detail unchanged; `html` its HTML body made safe, or null when it
 * has none. `parts` are the message's attachments with their Content-IDs, in id order.
 */
export function messageView(email: EmailDetailDto, parts: readonly CidPart[], args: MailViewArgs): MessageView {
  if (email.htmlBody === null || email.htmlBody === '') return { email, html: null };
  const cidUrl = (cid: string): string | null => {
    const id = attachmentForCid(cid, parts, email.attachments);
    return id === null ? null : args.partUrl.replace('{attachmentId}', String(id));
  };
  return { email, html: sanitizeMailHtml(email.htmlBody, { remoteImages: args.remoteImages, cidUrl }) };
}
