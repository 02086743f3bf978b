// What the web's message page needs beside a message's detail (engine/rules/mail-view.ts): its
// attachments' Content-IDs (migration 10; null for mail stored before it until a reparse).
import type { CidPart } from '../rules/mail-view.js';
import type { Db } from './open.js';
import { prepared } from './statements.js';

/** The message's attachments with their Content-IDs, in id order; the caller has checked visibility. */
export function cidParts(db: Db, emailId: number): CidPart[] {
  return prepared(
    db,
    'SELECT id AS attachmentId, mime_content_id AS cid FROM attachments WHERE email_id = ? ORDER BY id',
  ).all(emailId) as CidPart[];
}
