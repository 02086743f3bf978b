// Writing mail into a PostgreSQL archive: the same input (NewEmail) and the same policies as the
// SQLite ArchiveWriter (engine/sqlite/writer.ts), into Mail Archiver's tables, so Mail Archiver
// shows what was imported here exactly as if it had archived it itself.
//
// - Bodies: engine/rules/body.ts prepareBody. The stored body goes to "Body" / "HtmlBody" ('' when the
//   message has none: the columns are NOT NULL), the whole text when it had to be cut to
//   "BodyUntruncatedText" / "BodyUntruncatedHtml", the original bytes when it had to be cleaned
//   to "OriginalBodyText" / "OriginalBodyHtml".
// - Attachments: bytes de-duplicated in "AttachmentContents" by lowercase hex SHA-256, inserted
//   in the same transaction as the attachment row that refers to them (Mail Archiver deletes
//   unreferenced content rows at any time).
// - Dates: "SentDate" is wall-clock time in Database:TimeZone, to the second like SQLite;
//   "ReceivedDate" is UTC.
// - Duplicates: mail_archive_gateway.import_keys (migration 3) holds the dedup key of every
//   message stored here, per account and folder; a message whose key is there (and whose row
//   still exists) is skipped and counted as a duplicate, as on SQLite. So is one whose Message-ID
//   an earlier version stored under the Message-ID alone (messageIdOnlyKey). Beside each key, a
//   `msgid:<Message-ID>` row names the first message stored with that Message-ID, so that one with
//   the same Message-ID and different content is counted (sameIdDifferentContent) by key, as
//   SQLite counts it from its message_id index.
import { createHash } from 'node:crypto';
import { hasFileAttachments } from '../rules/attachment-counts.js';
import { prepareBody, STORED_BODY_LIMIT, type PreparedBody } from '../rules/body.js';
import { toSecond } from '../search/fts-key.js';
import { messageIdOnlyKey, normalizeFolder, type NewEmail } from '../rules/new-email.js';
import { originalToStore } from '../rules/originals.js';
import { byteaArray, textArray } from './binary.js';
import { T } from './columns.js';
import { insertBuilt, newEmailDocument } from './search-index.js';
import { relinkFromHeaders } from './threads.js';
import { sql } from './sql.js';
import type { PgContext, Query } from './context.js';

/** ArchivedEmails' identity sequence: ids for new messages come from where Mail Archiver takes its own. */
const EMAIL_ID_SEQUENCE = sql`pg_get_serial_sequence('mail_archiver."ArchivedEmails"', 'Id')`;

/** PostgreSQL text cannot hold NUL; SQLite can. Header fields lose theirs (bodies keep the original bytes). */
const noNul = (text: string): string => (text.includes('\0') ? text.replaceAll('\0', '') : text);

export interface PgWriterOptions {
  bodyLimit?: number;
  /** Runs after each committed batch (outside its transaction). */
  afterBatch?: (ctx: PgContext) => Promise<void>;
  /**
   * afterBatch runs behind the next batch's write (in order, one at a time) instead of before
   * writeBatch returns; settle() waits for it. The server then catches one batch up on one
   * connection while it stores the next on another: both cores work.
   */
  pipelined?: boolean;
}

export class PgArchiveWriter {
  readonly #ctx: PgContext;
  readonly #bodyLimit: number;
  readonly #afterBatch: PgWriterOptions['afterBatch'];
  readonly #pipelined: boolean;
  /** The afterBatch runs still to finish (pipelined), and the first failure among them. */
  #following: Promise<void> = Promise.resolve();
  #failed: { error: unknown } | undefined;
  /** Messages stored although another message in their folder has their Message-ID (their content differs). */
  sameIdDifferentContent = 0;
  /** Duplicates this importer stored before originals were kept, given theirs now. */
  originalsAttached = 0;

  constructor(ctx: PgContext, options: PgWriterOptions = {}) {
    this.#ctx = ctx;
    this.#bodyLimit = options.bodyLimit ?? STORED_BODY_LIMIT;
    this.#afterBatch = options.afterBatch;
    this.#pipelined = options.pipelined ?? false;
  }

  /**
   * Stores a batch in one transaction; per message its new id, or null when it is already
   * there. Set-based: a handful of statements per batch (claims, messages, contents,
   * attachments), whatever its size, since a round trip per message would dominate.
   */
  async writeBatch(emails: readonly NewEmail[]): Promise<Array<number | null>> {
    if (this.#failed) throw this.#failed.error;
    const ids = await this.#ctx.transaction((query) => this.#write(query, emails));
    // ── The one call site for work that follows a committed batch (the side tables' catch-up). ──
    const after = this.#afterBatch;
    if (after && !this.#pipelined) await after(this.#ctx);
    else if (after)
      this.#following = this.#following.then(async () => {
        if (this.#failed) return;
        try {
          await after(this.#ctx);
        } catch (error) {
          this.#failed = { error };
        }
      });
    return ids;
  }

  /** Waits for the afterBatch runs of the batches written so far; throws the first failure. */
  async settle(): Promise<void> {
    await this.#following;
    if (this.#failed) throw this.#failed.error;
  }

  async #write(query: Query, emails: readonly NewEmail[]): Promise<Array<number | null>> {
    const ids: Array<number | null> = emails.map(() => null);
    // The same message twice in one batch: the first one counts, as on SQLite.
    const first = new Map<string, number>();
    const keys = emails.map((e) => ({
      account: e.accountId,
      folder: noNul(normalizeFolder(e.folder)),
      key: noNul(e.dedupKey),
    }));
    keys.forEach((k, i) => {
      const id = JSON.stringify([k.account, k.folder, k.key]);
      if (!first.has(id)) first.set(id, i);
    });
    // Stored by an earlier version under the Message-ID alone: duplicates, as they were then.
    const idOnly = await this.#liveKeys(
      query,
      [...first.values()].flatMap((i) => {
        const key = messageIdOnlyKey(keys[i]!.key);
        return key === null ? [] : [{ ...keys[i]!, key }];
      }),
    );
    const earlier = new Set<number>();
    keys.forEach((k, i) => {
      const old = messageIdOnlyKey(k.key);
      if (old === null || !idOnly.has(JSON.stringify([k.account, k.folder, old]))) return;
      k.key = old; // what its stored copy is found by (#fillHeaders)
      earlier.add(i);
    });
    const candidates = [...first.values()].filter((i) => !earlier.has(i));
    // Claim the keys (new ones, or ones whose message has since been deleted from the archive)
    // together with the messages' ids, taken from ArchivedEmails' own identity sequence, so the
    // message rows need no second update.
    const claimed =
      candidates.length === 0
        ? []
        : await query<{ account_id: number; folder: string; dedup_key: string; id: number }>(
            sql`INSERT INTO mail_archive_gateway.import_keys AS k (account_id, folder, dedup_key, email_id)
          SELECT u.a, u.f, u.d, nextval(${EMAIL_ID_SEQUENCE})
            FROM unnest(${candidates.map((i) => keys[i]!.account)}::int[], ${candidates.map((i) => keys[i]!.folder)}::text[],
                        ${candidates.map((i) => keys[i]!.key)}::text[]) AS u(a, f, d)
          ON CONFLICT (account_id, folder, dedup_key) DO UPDATE SET email_id = EXCLUDED.email_id
            WHERE NOT EXISTS (SELECT 1 FROM ${T.emails} e WHERE e."Id" = k.email_id)
          RETURNING account_id, folder, dedup_key, email_id AS id`,
          );
    for (const c of claimed) ids[first.get(JSON.stringify([c.account_id, c.folder, c.dedup_key]))!] = c.id;
    await this.#fillHeaders(
      query,
      [...first.values()].filter((i) => ids[i] === null && (emails[i]!.refs?.length ?? 0) > 0),
      keys,
      emails,
    );
    await this.#countSharedIds(
      query,
      candidates.filter((i) => ids[i] !== null && messageIdOnlyKey(keys[i]!.key) !== null),
      keys,
      emails,
      ids,
    );
    await this.#attachOriginals(
      query,
      [...first.values()].filter((i) => ids[i] === null && emails[i]!.original !== undefined),
      keys,
      emails,
    );
    const fresh = emails.map((e, i) => ({ e, i, id: ids[i] })).filter((x) => x.id !== null);
    if (fresh.length === 0) return ids;

    const col = <V>(f: (x: (typeof fresh)[number], text: PreparedBody, html: PreparedBody) => V): V[] =>
      fresh.map((x, n) => f(x, texts[n]!, htmls[n]!));
    const texts = fresh.map((x) => prepareBody(x.e.textBody, this.#bodyLimit));
    const htmls = fresh.map((x) => prepareBody(x.e.htmlBody, this.#bodyLimit));
    await query(
      sql`INSERT INTO ${T.emails} ("Id", "MailAccountId", "MessageId", "Subject", "Body", "HtmlBody", "From", "To", "Cc", "Bcc",
                                   "SentDate", "ReceivedDate", "IsOutgoing", "HasAttachments", "FolderName",
                                   "BodyUntruncatedText", "BodyUntruncatedHtml", "OriginalBodyText", "OriginalBodyHtml", "RawHeaders")
          SELECT id, account, mid, subject, body, html, fr, t, cc, bcc,
                 (to_timestamp(sent / 1000) AT TIME ZONE ${this.#ctx.zone}::text), (to_timestamp(received / 1000) AT TIME ZONE 'UTC'),
                 outgoing, has_att, folder, text_full, html_full, text_orig, html_orig, headers
            FROM unnest(${col((x) => x.id)}::int[], ${col((x) => x.e.accountId)}::int[], ${col((x) => noNul(x.e.messageId))}::text[],
                        ${textArray(col((x) => noNul(x.e.subject)))}::text[], ${textArray(col((_, t) => t.stored ?? ''))}::text[],
                        ${textArray(col((_, __, h) => h.stored ?? ''))}::text[], ${textArray(col((x) => noNul(x.e.from)))}::text[],
                        ${textArray(col((x) => noNul(x.e.to)))}::text[], ${textArray(col((x) => noNul(x.e.cc)))}::text[],
                        ${textArray(col((x) => noNul(x.e.bcc)))}::text[],
                        ${col((x) => toSecond(x.e.sentDate))}::float8[], ${col((x) => x.e.receivedDate)}::float8[],
                        ${col((x) => x.e.isOutgoing)}::bool[], ${col((x) => hasFileAttachments(x.e.attachments))}::bool[],
                        ${col((x) => keys[x.i]!.folder)}::text[], ${textArray(col((_, t) => t.untruncated))}::text[],
                        ${textArray(col((_, __, h) => h.untruncated))}::text[], ${byteaArray(col((_, t) => t.original))}::bytea[],
                        ${byteaArray(col((_, __, h) => h.original))}::bytea[],
                        ${textArray(col((x) => (x.e.rawHeaders === undefined ? null : noNul(x.e.rawHeaders))))}::text[])
                 AS u(id, account, mid, subject, body, html, fr, t, cc, bcc, sent, received, outgoing, has_att, folder,
                      text_full, html_full, text_orig, html_orig, headers)`,
    );

    const attachments = fresh.flatMap((x) =>
      x.e.attachments.map((a) => ({ emailId: x.id!, a, hash: createHash('sha256').update(a.content).digest('hex') })),
    );
    // Bytes stored before this batch may have text already: those messages' documents are left
    // to the catch-up, which reads it; the others are written here (no read back, no trigger work).
    const storedBefore = new Set<number>();
    if (attachments.length > 0) {
      const { ids: contentIds, existing } = await this.#contents(query, attachments);
      for (const x of attachments) if (existing.has(x.hash)) storedBefore.add(x.emailId);
      await query(
        sql`INSERT INTO ${T.attachments} ("ArchivedEmailId", "FileName", "ContentType", "Size", "AttachmentContentId", "ContentId")
            SELECT * FROM unnest(${attachments.map((x) => x.emailId)}::int[], ${attachments.map((x) => noNul(x.a.fileName))}::text[],
                                 ${attachments.map((x) => noNul(x.a.contentType))}::text[],
                                 ${attachments.map((x) => x.a.content.length)}::bigint[],
                                 ${attachments.map((x) => contentIds.get(x.hash)!)}::int[],
                                 ${attachments.map((x) => (x.a.contentId ? noNul(x.a.contentId) : null))}::text[])`,
      );
    }
    const documents = fresh.flatMap((x) =>
      storedBefore.has(x.id!)
        ? []
        : [
            {
              id: x.id!,
              // Built where the message was parsed (prepare.ts) unless this writer cuts bodies elsewhere.
              doc:
                x.e.searchDocument && this.#bodyLimit === STORED_BODY_LIMIT
                  ? x.e.searchDocument
                  : newEmailDocument(x.e, this.#bodyLimit),
            },
          ],
    );
    await insertBuilt(
      query,
      documents.map((d) => d.id),
      documents.map((d) => d.doc),
    );
    const kept = fresh.filter((x) => x.e.original !== undefined);
    if (kept.length > 0) {
      const originals = await this.#originals(
        query,
        kept.map((x) => x.e),
      );
      await query(
        sql`INSERT INTO mail_archive_gateway.email_originals (email_id, original_id)
            SELECT * FROM unnest(${kept.map((x) => x.id)}::int[], ${originals}::int[])`,
      );
    }
    return ids;
  }

  /**
   * The rows of `originals` for these messages' originals, in order, storing the ones not there
   * yet (once per SHA-256, packed as on SQLite, by a parse thread where one did: engine/rules/originals.ts
   * originalToStore). In the caller's transaction.
   */
  async #originals(query: Query, emails: readonly NewEmail[]): Promise<number[]> {
    const originals = emails.map((e) => originalToStore(e.original!, e.packedOriginal));
    const known = new Map(
      (
        await query<{ id: number; sha256: string }>(
          sql`SELECT id, sha256 FROM mail_archive_gateway.originals WHERE sha256 = ANY(${[...new Set(originals.map((o) => o.sha256))]}::text[])`,
        )
      ).map((r) => [r.sha256, r.id]),
    );
    const missing = new Map(originals.filter((o) => !known.has(o.sha256)).map((o) => [o.sha256, o]));
    if (missing.size > 0) {
      const packed = [...missing.values()].map((o) => o.pack());
      // Another writer storing the same bytes meanwhile: theirs is as good as ours.
      await query(
        sql`INSERT INTO mail_archive_gateway.originals (sha256, size, codec, data)
            SELECT * FROM unnest(${packed.map((p) => p.sha256)}::text[], ${packed.map((p) => p.size)}::bigint[],
                                 ${packed.map((p) => p.codec)}::text[], ${byteaArray(packed.map((p) => p.data))}::bytea[])
            ON CONFLICT (sha256) DO NOTHING`,
      );
      const added = await query<{ id: number; sha256: string }>(
        sql`SELECT id, sha256 FROM mail_archive_gateway.originals WHERE sha256 = ANY(${[...missing.keys()]}::text[])`,
      );
      for (const r of added) known.set(r.sha256, r.id);
    }
    return originals.map((o) => known.get(o.sha256)!);
  }

  /**
   * Duplicates that bring their original: a message this importer stored before originals were
   * kept (import_keys says it is ours, no email_originals row) gets it now, so importing the same
   * source again completes the archive, as on SQLite.
   */
  async #attachOriginals(
    query: Query,
    dupes: number[],
    keys: ReadonlyArray<{ account: number; folder: string; key: string }>,
    emails: readonly NewEmail[],
  ): Promise<void> {
    if (dupes.length === 0) return;
    const lacking = await query<{ n: number; email_id: number }>(
      sql`SELECT u.n, k.email_id
            FROM unnest(${dupes}::int[], ${dupes.map((i) => keys[i]!.account)}::int[], ${dupes.map((i) => keys[i]!.folder)}::text[],
                        ${dupes.map((i) => keys[i]!.key)}::text[]) AS u(n, a, f, d)
            JOIN mail_archive_gateway.import_keys k ON k.account_id = u.a AND k.folder = u.f AND k.dedup_key = u.d
            JOIN ${T.emails} e ON e."Id" = k.email_id
           WHERE NOT EXISTS (SELECT 1 FROM mail_archive_gateway.email_originals o WHERE o.email_id = k.email_id)`,
    );
    if (lacking.length === 0) return;
    const originals = await this.#originals(
      query,
      lacking.map((r) => emails[r.n]!),
    );
    const linked = await query<{ email_id: number }>(
      sql`INSERT INTO mail_archive_gateway.email_originals (email_id, original_id)
          SELECT * FROM unnest(${lacking.map((r) => r.email_id)}::int[], ${originals}::int[])
          ON CONFLICT (email_id) DO NOTHING RETURNING email_id`,
    );
    this.originalsAttached += linked.length;
  }

  /** Which of these keys are held by a message that still exists, as JSON [account, folder, key]. */
  async #liveKeys(
    query: Query,
    wanted: ReadonlyArray<{ account: number; folder: string; key: string }>,
  ): Promise<Set<string>> {
    if (wanted.length === 0) return new Set();
    const rows = await query<{ a: number; f: string; d: string }>(
      sql`SELECT k.account_id AS a, k.folder AS f, k.dedup_key AS d
            FROM unnest(${wanted.map((w) => w.account)}::int[], ${wanted.map((w) => w.folder)}::text[],
                        ${wanted.map((w) => w.key)}::text[]) AS u(a, f, d)
            JOIN mail_archive_gateway.import_keys k ON k.account_id = u.a AND k.folder = u.f AND k.dedup_key = u.d
           WHERE EXISTS (SELECT 1 FROM ${T.emails} e WHERE e."Id" = k.email_id)`,
    );
    return new Set(rows.map((r) => JSON.stringify([r.a, r.f, r.d])));
  }

  /**
   * Newly stored messages with a Message-ID: each claims `msgid:<Message-ID>` in its folder; one
   * that finds it held by another existing message (or follows another in this batch) shares
   * its Message-ID with different content, and is counted.
   */
  async #countSharedIds(
    query: Query,
    stored: number[],
    keys: ReadonlyArray<{ account: number; folder: string; key: string }>,
    emails: readonly NewEmail[],
    ids: ReadonlyArray<number | null>,
  ): Promise<void> {
    const marks = new Map<string, { account: number; folder: string; key: string; id: number }>();
    for (const i of stored) {
      const mark = {
        account: keys[i]!.account,
        folder: keys[i]!.folder,
        key: noNul(`msgid:${emails[i]!.messageId.trim()}`),
      };
      const id = JSON.stringify([mark.account, mark.folder, mark.key]);
      if (marks.has(id)) this.sameIdDifferentContent++;
      else marks.set(id, { ...mark, id: ids[i]! });
    }
    if (marks.size === 0) return;
    const list = [...marks.values()];
    const claimed = await query<{ n: number }>(
      sql`WITH c AS (
            INSERT INTO mail_archive_gateway.import_keys AS k (account_id, folder, dedup_key, email_id)
            SELECT * FROM unnest(${list.map((m) => m.account)}::int[], ${list.map((m) => m.folder)}::text[],
                                 ${list.map((m) => m.key)}::text[], ${list.map((m) => m.id)}::int[])
            ON CONFLICT (account_id, folder, dedup_key) DO UPDATE SET email_id = EXCLUDED.email_id
              WHERE NOT EXISTS (SELECT 1 FROM ${T.emails} e WHERE e."Id" = k.email_id)
            RETURNING 1)
          SELECT count(*)::int AS n FROM c`,
    );
    this.sameIdDifferentContent += list.length - claimed[0]!.n;
  }

  /**
   * Duplicates that bring references: a row this importer wrote before it kept raw headers gets
   * them now ("RawHeaders" only where it is NULL, only rows import_keys says are ours), and its
   * conversation is re-linked (engine/postgres/threads.ts). Re-importing the original files is thus the
   * re-index for headers here too (docs/import.md).
   */
  async #fillHeaders(
    query: Query,
    dupes: number[],
    keys: ReadonlyArray<{ account: number; folder: string; key: string }>,
    emails: readonly NewEmail[],
  ): Promise<void> {
    const withHeaders = dupes.filter((i) => emails[i]!.rawHeaders !== undefined);
    if (withHeaders.length === 0) return;
    const filled = await query<{ id: number }>(
      sql`UPDATE ${T.emails} e SET "RawHeaders" = u.headers
            FROM unnest(${withHeaders.map((i) => keys[i]!.account)}::int[], ${withHeaders.map((i) => keys[i]!.folder)}::text[],
                        ${withHeaders.map((i) => keys[i]!.key)}::text[],
                        ${withHeaders.map((i) => noNul(emails[i]!.rawHeaders!))}::text[]) AS u(a, f, d, headers)
            JOIN mail_archive_gateway.import_keys k ON k.account_id = u.a AND k.folder = u.f AND k.dedup_key = u.d
           WHERE e."Id" = k.email_id AND e."RawHeaders" IS NULL
          RETURNING e."Id" AS id`,
    );
    if (filled.length > 0)
      await relinkFromHeaders(
        query,
        filled.map((r) => r.id),
      );
  }

  /**
   * The AttachmentContents ids of these bytes by hash, inserting the ones not there yet (only
   * those travel). In the caller's transaction, with the attachment rows that refer to them.
   */
  async #contents(
    query: Query,
    items: ReadonlyArray<{ hash: string; a: { content: Buffer } }>,
  ): Promise<{ ids: Map<string, number>; existing: Set<string> }> {
    const bytes = new Map(items.map((x) => [x.hash, x.a.content]));
    const ids = new Map<string, number>();
    const find = async (hashes: string[]) => {
      const rows = await query<{ id: number; hash: string }>(
        sql`SELECT "Id" AS id, "Hash" AS hash FROM ${T.contents} WHERE "Hash" = ANY(${hashes}::text[])`,
      );
      for (const r of rows) ids.set(r.hash, r.id);
    };
    await find([...bytes.keys()]);
    const existing = new Set(ids.keys());
    const missing = [...bytes.keys()].filter((h) => !ids.has(h));
    if (missing.length > 0) {
      const rows = await query<{ id: number; hash: string }>(
        sql`INSERT INTO ${T.contents} ("Hash", "Content", "Size")
            SELECT * FROM unnest(${missing}::text[], ${byteaArray(missing.map((h) => bytes.get(h)!))}::bytea[],
                                 ${missing.map((h) => bytes.get(h)!.length)}::bigint[])
            ON CONFLICT ("Hash") DO NOTHING RETURNING "Id" AS id, "Hash" AS hash`,
      );
      for (const r of rows) ids.set(r.hash, r.id);
      // Not returned: another writer stored the same bytes a moment ago; this statement sees them.
      const raced = missing.filter((h) => !ids.has(h));
      for (const h of raced) existing.add(h);
      if (raced.length > 0) await find(raced);
    }
    return { ids, existing };
  }
}
