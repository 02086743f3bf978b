// Conversations on the SQLite store: linking a message as it is written, re-linking a copy
// whose headers a re-import brings, and reading one conversation (migration 4's one-time
// backfill is engine/sqlite/backfill-threads.ts). The rules are engine/rules/threads.ts's; this file only
// finds the candidates.
import type BetterSqlite3 from 'better-sqlite3';
import type { EmailSummaryDto } from '../../shared/dto.js';
import { prepared } from './statements.js';
import {
  linkDecision,
  MAX_THREAD_LENGTH,
  normaliseMessageId,
  SUBJECT_WINDOW_MS,
  type NormalisedSubject,
  subjectMatch,
  type SubjectCandidate,
} from '../rules/threads.js';
import { visibleAccountsClause } from './accounts.js';
import { toSummary, type RawSummary } from '../rules/summary.js';
import { SUMMARY_COLUMNS } from './summary-columns.js';
import { EXCERPT_SOURCE_CHARS, withExcerpts } from '../search/snippet.js';

type Db = BetterSqlite3.Database;

import type { Viewer as SharedViewer } from '../../shared/jobs.js';
type Viewer = SharedViewer;

/** A stored message as threading sees it. */
export interface ThreadedMessage {
  id: number;
  accountId: number;
  messageId: string;
  subject: string;
  /** Epoch milliseconds. */
  sentDate: number;
  /** Normalised ids from References and In-Reply-To (engine/rules/threads.ts referencedIds). */
  refs: readonly string[];
}

/** Both spellings a Message-ID may be stored in (with or without angle brackets). */
const spellings = (ids: readonly string[]) => ids.flatMap((id) => [id, `<${id}>`]);

/**
 * The conversations a message is linked to by Message-ID: members it names, members that name
 * it, and other copies of it (another folder) in its account.
 */
function linkedThreads(db: Db, m: ThreadedMessage, refs: readonly string[]): number[] {
  const own = normaliseMessageId(m.messageId);
  const named = [...refs, ...(own ? [own] : [])];
  const threads = new Set<number>();
  // Bounded by MAX_REFS (engine/rules/threads.ts) plus one, so one IN list, twice that many values.
  if (named.length > 0) {
    const values = spellings(named);
    const rows = prepared(
      db,
      `SELECT DISTINCT thread_id FROM emails
        WHERE account_id = ? AND message_id IN (${values.map(() => '?').join(',')}) AND id <> ? AND thread_id IS NOT NULL`,
    )
      .pluck()
      .all(m.accountId, ...values, m.id) as number[];
    for (const t of rows) threads.add(t);
  }
  if (own) {
    const rows = prepared(
      db,
      // CROSS JOIN fixes the order: the few rows naming the id first, then their messages. Left
      // to itself (no ANALYZE statistics) the planner walked the whole account instead.
      `SELECT DISTINCT e.thread_id FROM email_refs r CROSS JOIN emails e ON e.id = r.email_id
        WHERE r.ref = ? AND e.account_id = ? AND e.id <> ? AND e.thread_id IS NOT NULL`,
    )
      .pluck()
      .all(own, m.accountId, m.id) as number[];
    for (const t of rows) threads.add(t);
  }
  return [...threads];
}

function subjectThread(db: Db, m: ThreadedMessage, subject: NormalisedSubject): number | null {
  if (subject.key === '') return null;
  // The nearest candidates subjectMatch may choose, one index seek each: for a reply the nearest
  // earlier and later message of either flag, else only the nearest later reply naming no parent
  // (replies with a known parent are skipped by one probe of email_refs each). A common
  // subject ("Updated org chart") has hundreds of messages within the window; reading and sorting
  // them all cost more than the rest of storing the message.
  const nearest = (reply: number, op: '<=' | '>', order: 'DESC' | 'ASC', bound: number, orphan = false) =>
    prepared(
      db,
      `SELECT thread_id AS threadId, sent_date AS sentDate, subject FROM emails e
        WHERE account_id = ? AND thread_subject = ? AND thread_reply = ?
          AND sent_date ${op} ? AND sent_date ${op === '<=' ? '>=' : '<='} ? AND id <> ? AND thread_id IS NOT NULL
          ${orphan ? 'AND NOT EXISTS (SELECT 1 FROM email_refs r WHERE r.email_id = e.id)' : ''}
        ORDER BY sent_date ${order} LIMIT 1`,
    ).all(m.accountId, subject.key, reply, m.sentDate, bound, m.id) as SubjectCandidate[];
  const before = () => [0, 1].flatMap((r) => nearest(r, '<=', 'DESC', m.sentDate - SUBJECT_WINDOW_MS));
  const after = () => [0, 1].flatMap((r) => nearest(r, '>', 'ASC', m.sentDate + SUBJECT_WINDOW_MS));
  // Without a prefix: only a later reply that names no parent (the store filters; hasRefs false).
  const candidates = subject.reply
    ? [...before(), ...after()]
    : nearest(1, '>', 'ASC', m.sentDate + SUBJECT_WINDOW_MS, true);
  return subjectMatch(m, candidates);
}

/** Moves every member of `from` into conversation `into` (thread_id only: no index rewrite). */
function merge(db: Db, into: number, from: readonly number[]): void {
  const update = prepared(db, 'UPDATE emails SET thread_id = ? WHERE thread_id = ?');
  for (const t of from) update.run(into, t);
}

function storeRefs(db: Db, emailId: number, refs: readonly string[]): number {
  const insert = prepared(db, 'INSERT OR IGNORE INTO email_refs (email_id, ref) VALUES (?, ?)');
  let added = 0;
  for (const ref of refs) added += insert.run(emailId, ref).changes;
  return added;
}

/**
 * Links a message just inserted (thread_id NULL; thread_subject and thread_reply written with
 * it, from `subject`) into its conversation. In the writer's transaction.
 */
export function linkNewMessage(db: Db, m: ThreadedMessage, subject: NormalisedSubject): number {
  storeRefs(db, m.id, m.refs);
  const linked = linkedThreads(db, m, m.refs);
  let threadId: number;
  if (linked.length > 0) {
    const decision = linkDecision(m.id, linked);
    threadId = decision.threadId;
    merge(db, threadId, decision.merge);
  } else {
    threadId = subjectThread(db, m, subject) ?? m.id;
  }
  prepared(db, 'UPDATE emails SET thread_id = ? WHERE id = ?').run(threadId, m.id);
  return threadId;
}

/**
 * A message arrived again (same account, folder and dedup key): when it names messages the
 * stored copy did not record (mail archived before migration 4, whose headers SQLite never
 * kept), record them and merge the conversations they link. Re-importing the original files is
 * therefore the re-index for headers. Returns whether anything changed.
 */
export function relinkDuplicate(
  db: Db,
  key: { accountId: number; folder: string; dedupKey: string },
  refs: readonly string[],
): boolean {
  if (refs.length === 0) return false;
  const row = prepared(
    db,
    `SELECT id, account_id AS accountId, message_id AS messageId, subject, sent_date AS sentDate, thread_id AS threadId
       FROM emails WHERE account_id = ? AND folder = ? AND dedup_key = ?`,
  ).get(key.accountId, key.folder, key.dedupKey) as (Omit<ThreadedMessage, 'refs'> & { threadId: number }) | undefined;
  if (!row) return false;
  if (storeRefs(db, row.id, refs) === 0) return false;
  const linked = linkedThreads(db, { ...row, refs }, refs);
  const { threadId, merge: others } = linkDecision(row.threadId, [...linked, row.threadId]);
  merge(db, threadId, others);
  return others.length > 0;
}

/**
 * A message reparsed (docs/reparse.md) whose links may have changed (its Message-ID, References,
 * In-Reply-To, subject or date): its recorded references become the fresh ones, and its
 * conversation merges with every one it is now linked to, by Message-ID, or, when it is alone
 * in its conversation and linked to none, by subject. Conversations only merge (engine/rules/threads.ts):
 * a link an older parse made is not undone. In the caller's transaction.
 */
export function relinkReparsed(db: Db, m: ThreadedMessage, subject: NormalisedSubject): void {
  prepared(db, 'DELETE FROM email_refs WHERE email_id = ?').run(m.id);
  storeRefs(db, m.id, m.refs);
  const current = prepared(db, 'SELECT coalesce(thread_id, id) FROM emails WHERE id = ?').pluck().get(m.id) as number;
  let linked = linkedThreads(db, m, m.refs);
  if (linked.length === 0) {
    const alone =
      prepared(db, 'SELECT 1 FROM emails WHERE thread_id = ? AND id <> ? LIMIT 1').pluck().get(current, m.id) ===
      undefined;
    const bySubject = alone ? subjectThread(db, m, subject) : null;
    if (bySubject !== null) linked = [bySubject];
  }
  if (linked.length === 0) return;
  const { threadId, merge: others } = linkDecision(current, [...linked, current]);
  merge(db, threadId, others);
  // A message written before conversations were linked may have none of its own yet.
  prepared(db, 'UPDATE emails SET thread_id = ? WHERE id = ? AND thread_id IS NULL').run(threadId, m.id);
}

/**
 * The conversation of a message the viewer may see, oldest first (at most MAX_THREAD_LENGTH
 * members, the oldest); null when the message does not exist or is hidden from the viewer.
 * Members in accounts the viewer cannot see are left out (a conversation is per account, so
 * there are none, but the rule is applied where it is read, not assumed).
 */
export function getThread(
  db: Db,
  viewer: Viewer,
  id: number,
  excerpts = false,
): Array<EmailSummaryDto & { excerpt?: string }> | null {
  const visible = visibleAccountsClause(viewer, 'e.account_id');
  const threadId = prepared(db, `SELECT coalesce(e.thread_id, e.id) FROM emails e WHERE e.id = ? AND ${visible.sql}`)
    .pluck()
    .get(id, ...visible.params) as number | undefined;
  if (threadId === undefined) return null;
  const rows = prepared(
    db,
    `SELECT ${SUMMARY_COLUMNS} FROM emails e WHERE (e.thread_id = ? OR e.id = ?) AND ${visible.sql}
      ORDER BY e.sent_date, e.id LIMIT ${MAX_THREAD_LENGTH}`,
  ).all(threadId, id, ...visible.params) as RawSummary[];
  const items = rows.map(toSummary);
  if (!excerpts || items.length === 0) return items;
  // Only the beginning of each body is read into the answer (the stored, searchable text body).
  const bodies = prepared(
    db,
    `SELECT email_id, substr(body_text(text_body), 1, ${EXCERPT_SOURCE_CHARS}) FROM email_bodies
      WHERE email_id IN (SELECT value FROM json_each(?))`,
  )
    .raw()
    .all(JSON.stringify(items.map((i) => i.id))) as Array<[number, string | null]>;
  return withExcerpts(items, new Map(bodies));
}

/** threadId of each of these messages (for `include=threadId`). */
export function threadIdsOf(db: Db, ids: readonly number[]): Map<number, number> {
  if (ids.length === 0) return new Map();
  const rows = prepared(
    db,
    `SELECT id, coalesce(thread_id, id) AS t FROM emails WHERE id IN (${ids.map(() => '?').join(',')})`,
  ).all(...ids) as Array<{ id: number; t: number }>;
  return new Map(rows.map((r) => [r.id, r.t]));
}
