// Mail Archiver's own search, as its users run it today, for bench/postgres.ts: the statements
// that Services/Core/EmailCoreService.cs (SearchEmailsOptimizedAsync) sends for one search, as
// parameterised SQL. Reconstructed from the upstream file (s1t5/mail-archiver; the copy read
// was commit 00f5bbb, whose search path matches what docs/compat.md describes for f6fae3c):
//
// - the term is split by the regex "([^"]*)"|(\w+):("([^"]*)"|(\S+))|(\S+): free words become
//   one to_tsquery('simple', 'w1:* & w2:*') against to_tsvector('simple', Subject || ' ' || Body
//   || ' ' || From || ' ' || To || ' ' || Cc || ' ' || Bcc) (the expression of its GIN index
//   idx_archivedemails_fulltext_search); a quoted phrase is 'a:* <-> b:*' AND a POSITION() of the
//   phrase in one of the six columns; subject:/body:/from:/to: terms are POSITION() in that column;
// - a restricted user: "MailAccountId" = ANY(allowed); a folder: equal, or LIKE folder + '/' '\' '.';
// - an exact SELECT COUNT(*) with the same WHERE;
// - for date sorts, WITH matched AS MATERIALIZED (Id, SentDate of every match), page AS (sorted,
//   LIMIT/OFFSET), then the page's full rows joined to MailAccounts. (Upstream also selects
//   "IsRead", which the 2608 schema of the benchmark database does not have; left out.)

export interface MailArchiverQuery {
  term?: string | undefined;
  folder?: string | undefined;
  allowedAccountIds?: number[] | undefined;
  skip: number;
  take: number;
}

const DOCUMENT = `to_tsvector('simple',
  COALESCE("Subject", '') || ' ' || COALESCE("Body", '') || ' ' || COALESCE("From", '') || ' ' ||
  COALESCE("To", '') || ' ' || COALESCE("Cc", '') || ' ' || COALESCE("Bcc", ''))`;
const COLUMNS = ['Subject', 'Body', 'From', 'To', 'Cc', 'Bcc'];
const FIELD_COLUMNS: Record<string, string> = { subject: 'Subject', body: 'Body', from: 'From', to: 'To' };
const sanitize = (s: string) => s.replace(/[&|!():*]/g, '');

/** The statements of one search, in the order Mail Archiver sends them. */
export function mailArchiverSearch(q: MailArchiverQuery): Array<{ text: string; values: unknown[] }> {
  const where: string[] = [];
  const values: unknown[] = [];
  const param = (v: unknown) => {
    values.push(v);
    return `$${values.length}`;
  };
  const inAnyColumn = (p: string) =>
    `(${COLUMNS.map((c) => `POSITION(LOWER(${p}) IN LOWER(COALESCE("${c}", ''))) > 0`).join(' OR ')})`;

  if (q.term && q.term.trim() !== '') {
    const words: string[] = [];
    const phrases: string[] = [];
    const fields: Array<[string, string]> = [];
    for (const m of q.term.matchAll(/"([^"]*)"|(\w+):("([^"]*)"|(\S+))|(\S+)/g)) {
      if (m[1] !== undefined) {
        if (m[1].trim()) phrases.push(m[1].trim());
      } else if (m[2] !== undefined) {
        const field = m[2].toLowerCase();
        if (!(field in FIELD_COLUMNS)) continue;
        const value = m[4] !== undefined ? m[4].trim() : sanitize(m[5] ?? '');
        if (value) fields.push([FIELD_COLUMNS[field]!, value]);
      } else if (m[6] !== undefined) {
        const w = sanitize(m[6]);
        if (w) words.push(w);
      }
    }
    const conditions: string[] = [];
    if (words.length)
      conditions.push(
        `${DOCUMENT} @@ to_tsquery('simple', ${param(words.map((w) => `${w.replace(/'/g, "''")}:*`).join(' & '))})`,
      );
    for (const phrase of phrases) {
      const terms = phrase
        .split(/\s+/)
        .map(sanitize)
        .filter(Boolean)
        .map((w) => `${w.replace(/'/g, "''")}:*`);
      conditions.push(
        terms.length
          ? `(${DOCUMENT} @@ to_tsquery('simple', ${param(terms.join(' <-> '))}) AND ${inAnyColumn(param(phrase))})`
          : inAnyColumn(param(phrase)),
      );
    }
    for (const [column, value] of fields)
      conditions.push(`POSITION(LOWER(${param(value)}) IN LOWER(COALESCE("${column}", ''))) > 0`);
    if (conditions.length) where.push(`(${conditions.join(' AND ')})`);
  }
  if (q.allowedAccountIds) where.push(`"MailAccountId" = ANY(${param(q.allowedAccountIds)}::int[])`);
  if (q.folder) {
    const esc = (s: string) => s.replace(/\\/g, '\\\\').replace(/%/g, '\\%').replace(/_/g, '\\_');
    where.push(
      `("FolderName" = ${param(q.folder)} OR "FolderName" LIKE ${param(`${esc(`${q.folder}/`)}%`)} ESCAPE '\\' OR "FolderName" LIKE ${param(`${esc(`${q.folder}\\`)}%`)} ESCAPE '\\' OR "FolderName" LIKE ${param(`${esc(`${q.folder}.`)}%`)} ESCAPE '\\')`,
    );
  }
  const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
  const count = { text: `SELECT COUNT(*) FROM mail_archiver."ArchivedEmails" ${clause}`, values: [...values] };
  const limit = param(q.take);
  const offset = param(q.skip);
  const data = {
    text: `WITH "matched" AS MATERIALIZED (
             SELECT e."Id", e."SentDate" FROM mail_archiver."ArchivedEmails" e ${clause}
           ),
           "page" AS (
             SELECT m."Id", m."SentDate" FROM "matched" m ORDER BY m."SentDate" DESC LIMIT ${limit} OFFSET ${offset}
           )
           SELECT e."Id", e."MailAccountId", e."MessageId", e."Subject", e."Body", e."HtmlBody",
                  e."From", e."To", e."Cc", e."Bcc", e."SentDate", e."ReceivedDate",
                  e."IsOutgoing", e."HasAttachments", e."FolderName", e."IsLocked",
                  ma."Id" AS "AccountId", ma."Name" AS "AccountName", ma."EmailAddress" AS "AccountEmail"
             FROM "page" p
             INNER JOIN mail_archiver."ArchivedEmails" e ON e."Id" = p."Id"
             INNER JOIN mail_archiver."MailAccounts" ma ON e."MailAccountId" = ma."Id"
            ORDER BY p."SentDate" DESC`,
    values,
  };
  return [count, data];
}
