// Filter tags: hidden words in the full-text index's `tags` column that let FTS5 itself apply
// the account, folder, direction, attachment and exact-address filters. Counting "meeting" for a user who
// sees two accounts is then one index query (`meeting AND {tags}:(a1 OR a2)`) instead of a
// join over every match. User input can never name the `tags` column (see compile.ts), and
// every tag is a single token of letters and digits, as SQLite's unicode61 tokenizer sees it.

export const accountTag = (accountId: number) => `a${accountId}`;
export const directionTag = (outgoing: boolean) => (outgoing ? 'dout' : 'din');
export const folderTag = (folder: string) => `f${hash(folder)}`;
/** Messages with at least one attachment: `has:attachment`. */
export const ATTACHMENT_TAG = 'hatt';

export type AddressField = 'from' | 'to' | 'cc' | 'bcc';
const FIELD_PREFIX: Record<AddressField, string> = { from: 'xf', to: 'xt', cc: 'xc', bcc: 'xb' };
export const addressTag = (field: AddressField, address: string) =>
  `${FIELD_PREFIX[field]}${hash(address.toLowerCase())}`;

/** A value that is an e-mail address and nothing else: `from:` such a value is matched exactly. */
const ADDRESS = /^[^\s@<>"',;()]+@[^\s@<>"',;()]+\.[^\s@<>"',;()]+$/;

/**
 * The tag of a term that is one whole address in an address field (`from:alice@x.com`, not a
 * prefix), which every store matches exactly by that tag; null for any other term. An exact
 * address is one short list to read, and `alice@x.com` never matches `malice@x.com`.
 */
export function exactAddressTag(term: { field: string | null; prefix: boolean; text: string }): string | null {
  const { field } = term;
  return (field === 'from' || field === 'to' || field === 'cc' || field === 'bcc') &&
    !term.prefix &&
    ADDRESS.test(term.text)
    ? addressTag(field, term.text)
    : null;
}
const ADDRESS_IN_TEXT = /[^\s@<>"',;()]+@[^\s@<>"',;()]+\.[^\s@<>"',;()]+/g;

/** FNV-1a, 64 bits, in base 36: short, stable, and collisions only ever add a false hit. */
function hash(text: string): string {
  let h = 0xcbf29ce484222325n;
  for (const byte of Buffer.from(text, 'utf8')) {
    h ^= BigInt(byte);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(36);
}

export function messageTags(m: {
  accountId: number;
  folder: string;
  isOutgoing: boolean;
  hasAttachments: boolean;
  from: string;
  to: string;
  cc: string;
  bcc: string;
}): string {
  const tags = [accountTag(m.accountId), directionTag(m.isOutgoing), folderTag(m.folder)];
  if (m.hasAttachments) tags.push(ATTACHMENT_TAG);
  tags.push(...addressTags(m));
  return tags.join(' ');
}

/** The exact-address tags of a message's from, to, cc and bcc (`from:alice@x.com`). */
export function addressTags(m: { from: string; to: string; cc: string; bcc: string }): string[] {
  const tags: string[] = [];
  for (const field of ['from', 'to', 'cc', 'bcc'] as const) {
    for (const address of new Set((m[field].match(ADDRESS_IN_TEXT) ?? []).map((a) => a.toLowerCase()))) {
      tags.push(addressTag(field, address));
    }
  }
  return tags;
}
