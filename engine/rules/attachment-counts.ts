// What "has an attachment" means (docs/search.md, "has:attachment"; docs/decisions.md, ADR 17): a
// file the reader could open. A signature or the control part of an encrypted message is a MIME
// part the mail program handles itself, not a file anyone attached: notmuch, Thunderbird and
// Gmail do not count them either. Those parts are still listed and downloadable; they only do
// not make hasAttachments true or match has:attachment.

/** Part types that carry a signature or encryption control data, never a file. */
export const NOT_A_FILE = [
  'application/pgp-signature',
  'application/pkcs7-signature',
  'application/x-pkcs7-signature',
  'application/pgp-encrypted',
] as const;

const notAFile = new Set<string>(NOT_A_FILE);

/** Whether a part of this content type counts towards hasAttachments. */
export function countsAsAttachment(contentType: string): boolean {
  return !notAFile.has(contentType.split(';', 1)[0]!.trim().toLowerCase());
}

/** hasAttachments of a message with these attachments. */
export const hasFileAttachments = (attachments: ReadonlyArray<{ contentType: string }>): boolean =>
  attachments.some((a) => countsAsAttachment(a.contentType));
