// Conversations (docs/decisions.md, ADR 14): the threading rules, written once and used by both
// stores (engine/sqlite/threads.ts on SQLite, engine/postgres/threads.ts on PostgreSQL). Everything here
// is pure: which headers name which messages, what a subject is once reply prefixes are gone,
// and which of the candidates a store found a message joins.
//
// A conversation lives inside one account and is named by its smallest message id (threadId).
// A message joins every conversation it is linked to by Message-ID (its References and
// In-Reply-To name a member, or a member names it); linked conversations merge into the one with
// the smallest id. A message linked to nothing joins by subject (subjectMatch): a reply the
// nearest message of its account within SUBJECT_WINDOW_MS with the same normalised subject, a
// message without a reply prefix only a later reply to it. Conversations only ever merge;
// nothing splits one.

/** How far apart in sent time two messages may be and still be joined by subject alone. */
export const SUBJECT_WINDOW_MS = 30 * 24 * 60 * 60 * 1000;
/** At most this many members are returned for one conversation (oldest first). */
export { MAX_THREAD_LENGTH } from '../../shared/jobs.js';
/** References beyond this many (the newest are kept) are ignored: a runaway header stays bounded. */
export const MAX_REFS = 100;

// Reply and forward prefixes of common mail clients, in the languages they are seen in. A prefix
// may carry a count ("Re[2]:", "Re(3):", "AW^2:") and is followed by ':' or '：' (full-width).
const PREFIX =
  /^(?:re|fwd?|aw|wg|sv|vs|antw|r[ée]f|tr|rif|odp|ynt|enc|doorst|vl|ha|res|回复|回覆|答复|答覆|转发|轉寄|转寄)\s*(?:\[\d+\]|\(\d+\)|\^\d+)?\s*[:：]\s*/iu;
// A mailing-list tag: "[list-name] " (letters, digits, punctuation, no nested brackets).
const LIST_TAG = /^\[[^\][]{1,64}\]\s*/u;

export interface NormalisedSubject {
  /** Lower case, prefixes and list tags gone, whitespace collapsed; '' never groups. */
  key: string;
  /** The subject carried a reply or forward prefix (a list tag alone does not count). */
  reply: boolean;
}

export function normaliseSubject(subject: string | null | undefined): NormalisedSubject {
  let s = (subject ?? '').replace(/\s+/gu, ' ').trim();
  let reply = false;
  for (;;) {
    const prefix = PREFIX.exec(s);
    if (prefix) {
      reply = true;
      s = s.slice(prefix[0].length);
      continue;
    }
    const tag = LIST_TAG.exec(s);
    // A subject that is only a tag keeps it: "[ANN]" alone is still a subject.
    if (tag && tag[0].length < s.length) {
      s = s.slice(tag[0].length);
      continue;
    }
    break;
  }
  return { key: s.trim().toLowerCase(), reply };
}

/**
 * A Message-ID as both stores compare it: the text between the angle brackets, trimmed. Mail
 * Archiver stores ids without brackets, mailparser gives them with; this form matches both.
 */
export function normaliseMessageId(id: string | null | undefined): string {
  const s = (id ?? '').trim();
  const m = /^<([^<>]*)>$/.exec(s);
  return (m ? m[1]! : s).trim();
}

/** The message ids in a References or In-Reply-To value: each `<...>`, or bare words when none. */
export function messageIdsIn(value: string | readonly string[] | null | undefined): string[] {
  if (value === null || value === undefined) return [];
  const text = Array.isArray(value) ? value.join(' ') : (value as string);
  const bracketed = [...text.matchAll(/<([^<>\s]+)>/g)].map((m) => m[1]!);
  if (bracketed.length > 0) return bracketed;
  // Some writers leave the brackets off; a bare token with an '@' is still an id.
  return text.split(/[\s,]+/).filter((t) => t.includes('@'));
}

/** The ids a message refers to: References then In-Reply-To, de-duplicated, bounded, never itself. */
export function referencedIds(
  references: string | readonly string[] | null | undefined,
  inReplyTo: string | null | undefined,
  ownId?: string,
): string[] {
  const own = normaliseMessageId(ownId);
  const all = [...messageIdsIn(references), ...messageIdsIn(inReplyTo)].map(normaliseMessageId);
  const unique = [...new Set(all)].filter((id) => id !== '' && id !== own);
  return unique.slice(-MAX_REFS);
}

/** The value of each header named `name` in a raw header block (unfolded), in order. */
export function headerValues(rawHeaders: string | null | undefined, name: string): string[] {
  if (!rawHeaders) return [];
  const unfolded = rawHeaders.replace(/\r?\n[ \t]+/g, ' ');
  const wanted = name.toLowerCase();
  const values: string[] = [];
  for (const line of unfolded.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === wanted) values.push(line.slice(colon + 1).trim());
  }
  return values;
}

/** The ids a stored raw header block refers to (References and In-Reply-To). */
export function referencedIdsFromHeaders(rawHeaders: string | null | undefined, ownId?: string): string[] {
  return referencedIds(
    headerValues(rawHeaders, 'references'),
    headerValues(rawHeaders, 'in-reply-to').join(' '),
    ownId,
  );
}

/** A message found by subject: its conversation, when it was sent, its own subject's reply flag. */
export interface SubjectCandidate {
  threadId: number;
  sentDate: number;
  subject: string;
  /** It names other messages (References/In-Reply-To): its parent is known, not this one. */
  hasRefs?: boolean;
}

/**
 * The conversation a message joins by subject, or null. Candidates are messages of the same
 * account and normalised subject (the store's query) within SUBJECT_WINDOW_MS. A reply joins the
 * nearest earlier one (what it answers), else the nearest later one (a reply archived first). A
 * message without a prefix joins only the nearest later reply (its reply, archived before it):
 * a new "Weekly report" after last week's replies starts a conversation of its own. So two
 * unrelated mails both titled "Hello" never merge.
 */
export function subjectMatch(
  self: { subject: string; sentDate: number },
  candidates: readonly SubjectCandidate[],
): number | null {
  const own = normaliseSubject(self.subject);
  if (own.key === '') return null;
  let earlier: SubjectCandidate | null = null;
  let later: SubjectCandidate | null = null;
  for (const c of candidates) {
    if (Math.abs(c.sentDate - self.sentDate) > SUBJECT_WINDOW_MS) continue;
    const theirs = normaliseSubject(c.subject);
    if (theirs.key !== own.key) continue;
    if (c.sentDate <= self.sentDate) {
      if (own.reply && (!earlier || c.sentDate > earlier.sentDate)) earlier = c;
    } else if ((own.reply || (theirs.reply && !c.hasRefs)) && (!later || c.sentDate < later.sentDate)) later = c;
  }
  return (earlier ?? later)?.threadId ?? null;
}

/**
 * Where a message goes: `threadId` is the smallest of its own id and the linked conversations'
 * ids; `merge` the other conversations, whose members move to threadId.
 */
export function linkDecision(selfId: number, linkedThreads: readonly number[]): { threadId: number; merge: number[] } {
  const ids = [...new Set(linkedThreads)];
  const threadId = Math.min(selfId, ...ids);
  return { threadId, merge: ids.filter((t) => t !== threadId) };
}
