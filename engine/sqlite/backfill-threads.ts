// Migration 4's one-time backfill, run in its transaction (engine/sqlite/migrations.ts). It lives
// beside the migrations, not in engine/sqlite/, so that opening an archive never imports the store
// (the import circle docs/architecture.md "Boundaries" forbids); the rules are engine/rules/threads.ts's.
// Written once with its migration and never edited, like the migration's SQL.
import type BetterSqlite3 from 'better-sqlite3';
import { normaliseMessageId, normaliseSubject, SUBJECT_WINDOW_MS } from '../rules/threads.js';

/**
 * Migration 4: every stored message gets its normalised subject and a conversation, from what
 * SQLite kept: copies of one Message-ID in an account are one conversation, and in each run of
 * messages of an account with the same normalised subject, in sent order, a reply within
 * SUBJECT_WINDOW_MS of the message before it joins that message's conversation (the import-time
 * rule, subjectMatch). Union-find over ids; each conversation is named by its smallest id.
 */
export function backfillThreads(db: BetterSqlite3.Database): void {
  const rows = db
    .prepare('SELECT id, account_id, message_id, subject, sent_date FROM emails ORDER BY id')
    .raw()
    .iterate() as IterableIterator<[number, number, string, string, number]>;
  const ids: number[] = [];
  const accounts: number[] = [];
  const sent: number[] = [];
  const keys: string[] = [];
  const replies: boolean[] = [];
  const byMessageId = new Map<string, number>();
  const parent = new Map<number, number>();
  const find = (x: number): number => {
    let root = x;
    while (parent.get(root)! !== root) root = parent.get(root)!;
    while (parent.get(x)! !== root) {
      const next = parent.get(x)!;
      parent.set(x, root);
      x = next;
    }
    return root;
  };
  const union = (a: number, b: number) => {
    const ra = find(a);
    const rb = find(b);
    if (ra !== rb) parent.set(Math.max(ra, rb), Math.min(ra, rb)); // the root is the smallest id
  };
  for (const [id, account, messageId, subject, sentDate] of rows) {
    const n = normaliseSubject(subject);
    ids.push(id);
    accounts.push(account);
    sent.push(sentDate);
    keys.push(n.key);
    replies.push(n.reply);
    parent.set(id, id);
    const own = normaliseMessageId(messageId);
    if (own) {
      const mapKey = `${account}\u0000${own}`;
      const first = byMessageId.get(mapKey);
      if (first === undefined) byMessageId.set(mapKey, id);
      else union(first, id);
    }
  }
  const order = ids.map((_, i) => i).filter((i) => keys[i] !== '');
  order.sort((a, b) =>
    accounts[a] !== accounts[b]
      ? accounts[a]! - accounts[b]!
      : keys[a]! < keys[b]!
        ? -1
        : keys[a]! > keys[b]!
          ? 1
          : sent[a]! - sent[b]! || ids[a]! - ids[b]!,
  );
  for (let k = 1; k < order.length; k++) {
    const a = order[k - 1]!;
    const b = order[k]!;
    if (accounts[a] !== accounts[b] || keys[a] !== keys[b]) continue;
    // b joins a when b is a reply (subjectMatch's rule seen from either end: a reply joins the
    // message before it; a message without a prefix joins only a later reply, the next pair).
    if (sent[b]! - sent[a]! > SUBJECT_WINDOW_MS || !replies[b]) continue;
    union(ids[a]!, ids[b]!);
  }
  // One update per message, all three columns at once.
  const set = db.prepare('UPDATE emails SET thread_subject = ?, thread_reply = ?, thread_id = ? WHERE id = ?');
  ids.forEach((id, i) => set.run(keys[i]!, replies[i] ? 1 : 0, find(id), id));
}
