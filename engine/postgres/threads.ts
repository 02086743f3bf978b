// Conversations on a PostgreSQL archive (docs/decisions.md, ADR 14; docs/postgres.md).
//
// Mail Archiver's ArchivedEmails has MessageId, Subject and RawHeaders but no thread columns, and
// Mail Archiver inserts rows without telling us. So, like the search side-index
// (search-index.ts), a catch-up looks at the messages above a watermark that have no row in
// mail_archive_gateway.threads yet, in id order, in bounded batches on the primary, and links
// each with the rules of engine/rules/threads.ts: References and In-Reply-To come from RawHeaders
// (a message without raw headers links by Message-ID and subject only). The import writer calls
// it after each batch; reads of a conversation, `thread:` and `include=threadId` call it when
// the archive has grown past the watermark.
import type { Viewer } from '../../shared/jobs.js';
import type { EmailSummaryDto } from '../../shared/dto.js';
import { MAX_THREAD_LENGTH } from '../../shared/jobs.js';
import { toSummary, type RawSummary } from '../rules/summary.js';
import { EXCERPT_SOURCE_CHARS, withExcerpts } from '../search/snippet.js';
import {
  linkDecision,
  normaliseMessageId,
  normaliseSubject,
  referencedIdsFromHeaders,
  SUBJECT_WINDOW_MS,
  subjectMatch,
  type SubjectCandidate,
} from '../rules/threads.js';
import { nextBatch } from './catch-up.js';
import { summaryColumns, T, visibleAccounts, zonedMs } from './columns.js';
import { raw, sql, type Sql } from './sql.js';
import type { PgContext, Query } from './context.js';

export const THREADS = raw('mail_archive_gateway.threads');
const REFS = raw('mail_archive_gateway.thread_refs');
const STATE = raw('mail_archive_gateway.thread_state');
const LOCK = 'mail_archive_gateway.threads';
/** Messages per catch-up transaction. */
export const THREAD_BATCH = 200;
/** Subject candidates read per message, nearest in time first. */
const SUBJECT_CANDIDATES = 50;
/** As the search index's: ids this far below the watermark are looked at again. */
const RECHECK_WINDOW = 1000;

interface SourceRow {
  id: number;
  account_id: number;
  message_id: string | null;
  subject: string | null;
  sent_ms: number;
  raw_headers: string | null;
}

/** A message being linked, with what linking reads from it. */
interface Linking {
  id: number;
  account: number;
  own: string;
  subject: string;
  key: string;
  sent: number;
  refs: string[];
  named: string[];
}

/** A conversation member as linking sees it: from the table, or linked earlier in this batch. */
interface Member {
  account: number;
  thread: number;
}

/**
 * Links a batch of messages (in id order) with a fixed number of statements, whatever its size:
 * what the table already holds for the whole batch is read first (the members their ids and
 * references name, and the subject candidates of each), then each message is linked in memory
 * in id order, seeing the ones before it in the batch as if they had been written, exactly as
 * one message at a time did with three statements each (the larger part of an import's round
 * trips); then the merges, the rows and the references are written.
 */
async function linkBatch(query: Query, rows: readonly SourceRow[]): Promise<void> {
  const batch: Linking[] = rows.map((m) => {
    const own = normaliseMessageId(m.message_id);
    const refs = referencedIdsFromHeaders(m.raw_headers, own);
    const subject = m.subject ?? '';
    return {
      id: m.id,
      account: m.account_id,
      own,
      subject,
      key: normaliseSubject(subject).key,
      sent: m.sent_ms,
      refs,
      named: [...refs, ...(own ? [own] : [])],
    };
  });
  const ids = batch.map((m) => m.id);
  const named = batch.flatMap((m) => m.named.map((n) => ({ account: m.account, id: n })));
  const owns = [...new Set(batch.map((m) => m.own).filter((own) => own !== ''))];
  const [byId, byRef] = await Promise.all([
    named.length === 0
      ? []
      : query<{ account_id: number; message_id: string; thread_id: number }>(
          sql`SELECT DISTINCT t.account_id, t.message_id, t.thread_id
                FROM unnest(${named.map((n) => n.account)}::int[], ${named.map((n) => n.id)}::text[]) AS u(a, m)
                JOIN ${THREADS} t ON t.account_id = u.a AND t.message_id = u.m
               WHERE t.email_id <> ALL(${ids}::int[])`,
        ),
    owns.length === 0
      ? []
      : query<{ ref: string; account_id: number; thread_id: number }>(
          sql`SELECT DISTINCT r.ref, t.account_id, t.thread_id FROM ${REFS} r JOIN ${THREADS} t ON t.email_id = r.email_id
               WHERE r.ref = ANY(${owns}::text[]) AND t.email_id <> ALL(${ids}::int[])`,
        ),
  ]);
  const members = new Map<string, Member[]>(); // account + Message-ID -> members with that id
  const referrers = new Map<string, Member[]>(); // a Message-ID -> members whose references name it
  const push = <K>(map: Map<K, Member[]>, key: K, m: Member) => {
    const list = map.get(key);
    if (list) list.push(m);
    else map.set(key, [m]);
  };
  const idKey = (account: number, id: string) => `${account} ${id}`;
  for (const r of byId)
    push(members, idKey(r.account_id, r.message_id), { account: r.account_id, thread: r.thread_id });
  for (const r of byRef) push(referrers, r.ref, { account: r.account_id, thread: r.thread_id });
  // Subject candidates from the table, for the messages no stored member links by id.
  const bySubject = batch.filter(
    (m) =>
      m.key !== '' &&
      !m.named.some((n) => members.has(idKey(m.account, n))) &&
      !(referrers.get(m.own) ?? []).some((r) => r.account === m.account),
  );
  const stored = new Map<number, SubjectCandidate[]>();
  if (bySubject.length > 0)
    for (const c of await query<SubjectCandidate & { n: number }>(
      sql`SELECT u.n, c.thread_id AS "threadId", c.sent_ms AS "sentDate", c.subject, c.has_refs AS "hasRefs"
            FROM unnest(${bySubject.map((m) => m.id)}::int[], ${bySubject.map((m) => m.account)}::int[],
                        ${bySubject.map((m) => m.key)}::text[], ${bySubject.map((m) => m.sent)}::float8[]) AS u(n, a, k, s)
            CROSS JOIN LATERAL (
              SELECT t.thread_id, t.sent_ms, t.subject,
                     EXISTS (SELECT 1 FROM ${REFS} r WHERE r.email_id = t.email_id) AS has_refs
                FROM ${THREADS} t
               WHERE t.account_id = u.a AND t.subject_key = u.k AND t.email_id <> ALL(${ids}::int[])
                 AND t.sent_ms BETWEEN u.s - ${SUBJECT_WINDOW_MS}::float8 AND u.s + ${SUBJECT_WINDOW_MS}::float8
               ORDER BY abs(t.sent_ms - u.s) LIMIT ${SUBJECT_CANDIDATES}) c`,
    )) {
      const list = stored.get(c.n) ?? [];
      list.push({ threadId: c.threadId, sentDate: c.sentDate, subject: c.subject, hasRefs: c.hasRefs });
      stored.set(c.n, list);
    }

  // Conversations merged so far: a merged id -> the one it joined (followed to the end).
  const joined = new Map<number, number>();
  const current = (thread: number): number => {
    let t = thread;
    while (joined.has(t)) t = joined.get(t)!;
    return t;
  };
  const merges: Array<{ threadId: number; merge: number[] }> = [];
  const linked: Array<Linking & { thread: number }> = [];
  const earlier = new Map<string, Array<Linking & { thread: number }>>(); // account + subject key -> batch members
  for (const m of batch) {
    const threads = [
      ...m.named.flatMap((n) => members.get(idKey(m.account, n)) ?? []),
      ...(m.own === '' ? [] : (referrers.get(m.own) ?? []).filter((r) => r.account === m.account)),
    ].map((r) => current(r.thread));
    let thread: number;
    if (threads.length > 0) {
      const decision = linkDecision(m.id, threads);
      thread = decision.threadId;
      if (decision.merge.length > 0) {
        merges.push(decision);
        for (const t of decision.merge) joined.set(t, thread);
      }
    } else {
      const near = [
        ...(stored.get(m.id) ?? []),
        ...(earlier.get(idKey(m.account, m.key)) ?? [])
          .filter((e) => Math.abs(e.sent - m.sent) <= SUBJECT_WINDOW_MS)
          .map((e) => ({ threadId: e.id, sentDate: e.sent, subject: e.subject, hasRefs: e.refs.length > 0 })),
      ]
        .map((c) => ({ ...c, threadId: current(c.threadId) }))
        .sort((a, b) => Math.abs(a.sentDate - m.sent) - Math.abs(b.sentDate - m.sent))
        .slice(0, SUBJECT_CANDIDATES);
      thread = m.key === '' ? m.id : (subjectMatch({ subject: m.subject, sentDate: m.sent }, near) ?? m.id);
    }
    const member = { ...m, thread };
    linked.push(member);
    // Later members find it by its id, followed through `joined` to its conversation as it is
    // then (no conversation but its own can have its id: it is new).
    if (thread !== m.id) joined.set(m.id, thread);
    const self = { account: m.account, thread: m.id };
    if (m.own) push(members, idKey(m.account, m.own), self);
    for (const ref of m.refs) push(referrers, ref, self);
    if (m.key !== '') {
      const list = earlier.get(idKey(m.account, m.key)) ?? [];
      list.push(member);
      earlier.set(idKey(m.account, m.key), list);
    }
  }
  for (const { threadId, merge } of merges)
    await query(sql`UPDATE ${THREADS} SET thread_id = ${threadId} WHERE thread_id = ANY(${merge}::int[])`);
  await query(
    sql`INSERT INTO ${THREADS} (email_id, account_id, thread_id, message_id, subject_key, subject, sent_ms)
        SELECT * FROM unnest(${linked.map((m) => m.id)}::int[], ${linked.map((m) => m.account)}::int[],
                             ${linked.map((m) => current(m.id))}::int[], ${linked.map((m) => m.own)}::text[],
                             ${linked.map((m) => m.key)}::text[], ${linked.map((m) => m.subject)}::text[],
                             ${linked.map((m) => m.sent)}::float8[])
        ON CONFLICT (email_id) DO NOTHING`,
  );
  const refRows = linked.flatMap((m) => m.refs.map((ref) => ({ id: m.id, ref })));
  if (refRows.length > 0)
    await query(
      sql`INSERT INTO ${REFS} (email_id, ref)
          SELECT * FROM unnest(${refRows.map((r) => r.id)}::int[], ${refRows.map((r) => r.ref)}::text[]) ON CONFLICT DO NOTHING`,
    );
}

async function threadBatch(
  ctx: PgContext,
  query: Query,
  after: number,
  limit: number,
): Promise<{ seen: number; linked: number; last: number }> {
  await query(sql`SELECT pg_advisory_xact_lock(hashtext(${LOCK}))`);
  const { ids, missing } = await nextBatch(query, THREADS, after, limit);
  if (missing.length > 0) {
    const rows = await query<SourceRow>(
      sql`SELECT e."Id" AS id, e."MailAccountId" AS account_id, e."MessageId" AS message_id, e."Subject" AS subject,
                 ${zonedMs('e."SentDate"', ctx.zone)} AS sent_ms, e."RawHeaders" AS raw_headers
            FROM ${T.emails} e WHERE e."Id" = ANY(${missing}::int[]) ORDER BY e."Id"`,
    );
    // In id order: each sees the ones before it, as on SQLite at import.
    await linkBatch(query, rows);
  }
  const last = ids.at(-1) ?? after;
  await query(sql`UPDATE ${STATE} SET threaded_through = greatest(threaded_through, ${last}) WHERE id = 1`);
  return { seen: ids.length, linked: missing.length, last };
}

/**
 * Messages whose RawHeaders were just filled in (a re-import, engine/postgres/writer.ts): record the
 * ids they name and merge the conversations those link. A message the catch-up has not linked
 * yet needs nothing: the catch-up will read its headers. In the caller's transaction.
 */
export async function relinkFromHeaders(query: Query, ids: readonly number[]): Promise<void> {
  await query(sql`SELECT pg_advisory_xact_lock(hashtext(${LOCK}))`);
  const rows = await query<{ id: number; account_id: number; thread_id: number; raw_headers: string; own: string }>(
    sql`SELECT t.email_id AS id, t.account_id, t.thread_id, e."RawHeaders" AS raw_headers, t.message_id AS own
          FROM ${THREADS} t JOIN ${T.emails} e ON e."Id" = t.email_id WHERE t.email_id = ANY(${[...ids]}::int[])`,
  );
  for (const m of rows) {
    const refs = referencedIdsFromHeaders(m.raw_headers, m.own);
    if (refs.length === 0) continue;
    await query(
      sql`INSERT INTO ${REFS} (email_id, ref) SELECT ${m.id}, unnest(${refs}::text[]) ON CONFLICT DO NOTHING`,
    );
    const linked = await query<{ t: number }>(
      sql`SELECT thread_id AS t FROM ${THREADS}
           WHERE account_id = ${m.account_id} AND message_id = ANY(${refs}::text[]) AND email_id <> ${m.id}`,
    );
    // Its own conversation as it is now (an earlier row of this loop may have merged it).
    const [current] = await query<{ t: number }>(sql`SELECT thread_id AS t FROM ${THREADS} WHERE email_id = ${m.id}`);
    const { threadId, merge } = linkDecision(current!.t, [current!.t, ...linked.map((r) => r.t)]);
    if (merge.length > 0)
      await query(sql`UPDATE ${THREADS} SET thread_id = ${threadId} WHERE thread_id = ANY(${merge}::int[])`);
  }
}

/**
 * Batches a read catches up at most (5,000 messages: what Mail Archiver archives between reads
 * many times over). A database that was never linked (a first start on a large existing
 * archive) is linked ahead by `mail-archive index`; until then reads see the conversations linked
 * so far, and a message not linked yet as a conversation of its own.
 */
export const READ_CATCH_UP_BATCHES = 25;

/**
 * Links every message not yet in a conversation (or `maxBatches` batches of them); returns how
 * many. Safe from several processes.
 */
export async function catchUpThreads(ctx: PgContext, maxBatches = Infinity): Promise<number> {
  const [state] = await ctx.primary<{ through: number }>(sql`SELECT threaded_through AS through FROM ${STATE}`);
  let after = Math.max(0, state!.through - RECHECK_WINDOW);
  let linked = 0;
  for (let batch = 0; batch < maxBatches; batch++) {
    const r = await ctx.transaction((query) => threadBatch(ctx, query, after, THREAD_BATCH));
    linked += r.linked;
    after = r.last;
    if (r.seen < THREAD_BATCH) break;
  }
  return linked;
}

/** Before a read that needs conversations: catch up when ArchivedEmails has grown past the watermark. */
export async function ensureThreads(ctx: PgContext): Promise<void> {
  const [state] = await ctx.read<{ behind: boolean }>(
    sql`SELECT coalesce((SELECT max("Id") FROM ${T.emails}), 0) > (SELECT threaded_through FROM ${STATE}) AS behind`,
  );
  if (state!.behind) await catchUpThreads(ctx, READ_CATCH_UP_BATCHES);
}

/** The conversation of a message the viewer may see, oldest first; null when missing or hidden. */
export async function getThread(
  ctx: PgContext,
  viewer: Viewer,
  id: number,
  excerpts = false,
): Promise<Array<EmailSummaryDto & { excerpt?: string }> | null> {
  const visible = visibleAccounts(viewer, 'e."MailAccountId"');
  const own = await ctx.read<{ id: number }>(
    sql`SELECT e."Id" AS id FROM ${T.emails} e WHERE e."Id" = ${id} AND ${visible}`,
  );
  if (own.length === 0) return null;
  await ensureThreads(ctx);
  const rows = await ctx.read<RawSummary>(
    sql`SELECT ${summaryColumns(ctx)} FROM ${T.emails} e
         WHERE (e."Id" = ${id} OR e."Id" IN (SELECT t.email_id FROM ${THREADS} t
                 WHERE t.thread_id = (SELECT thread_id FROM ${THREADS} WHERE email_id = ${id})))
           AND ${visible}
         ORDER BY e."SentDate", e."Id" LIMIT ${MAX_THREAD_LENGTH}`,
  );
  const items = rows.map(toSummary);
  if (!excerpts || items.length === 0) return items;
  // Mail Archiver's text body, as snippets use it; only its beginning is read into the answer.
  const bodies = await ctx.read<{ id: number; body: string | null }>(
    sql`SELECT e."Id" AS id, left(e."Body", ${EXCERPT_SOURCE_CHARS}::int) AS body FROM ${T.emails} e
         WHERE e."Id" = ANY(${items.map((i) => i.id)}::int[])`,
  );
  return withExcerpts(items, new Map(bodies.map((r) => [r.id, r.body])));
}

/** threadId of each of these messages (for include=threadId); a message not linked yet is its own. */
export async function threadIdsOf(ctx: PgContext, ids: readonly number[]): Promise<Map<number, number>> {
  if (ids.length === 0) return new Map();
  await ensureThreads(ctx);
  const rows = await ctx.read<{ id: number; t: number }>(
    sql`SELECT email_id AS id, thread_id AS t FROM ${THREADS} WHERE email_id = ANY(${[...ids]}::int[])`,
  );
  return new Map(rows.map((r) => [r.id, r.t]));
}

/** `thread:<id>` as a condition on the side-index row `d` (search.ts joins it to every match). */
export const threadCondition = (id: number): Sql =>
  sql`d.email_id IN (SELECT email_id FROM ${THREADS}
        WHERE thread_id = (SELECT thread_id FROM ${THREADS} WHERE email_id = ${id}))`;
