// Mail imported from files into the fixture archive and read back through the real API, on the
// store this run uses (TEST_STORE): what the import-fidelity suites share.
import type { ExecutionContext } from 'ava';
import { openArchive } from '../../engine/sqlite/open.js';
import { importPaths, type ImportSummary } from '../../engine/import/importer.js';
import { bearer, rawBody, startApi, type ApiHarness } from './api.js';
import { createFixture, type Fixture } from './fixture.js';

export interface ImportedMail {
  f: Fixture;
  api: ApiHarness;
  /** Message ids by subject. */
  ids: Record<string, number>;
  folder: string;
  /** Per path imported, its summary, and the warnings of all. */
  summaries: ImportSummary[];
  warnings: string[];
}

export interface EmailDetail {
  id: number;
  from: string;
  to: string;
  cc: string;
  subject: string;
  sentDate: string;
  textBody: string;
  htmlBody: string | null;
  hasAttachments: boolean;
  attachments: Array<{ id: number; fileName: string; contentType: string; size: number }>;
}

/** Imports each path (one importPaths call each) into `folder` of the work account, then serves the archive. */
export async function importAndServe(paths: string[], folder: string): Promise<ImportedMail> {
  const f = createFixture();
  const summaries: ImportSummary[] = [];
  const warnings: string[] = [];
  const db = openArchive(f.dbPath);
  try {
    for (const path of paths)
      summaries.push(
        await importPaths(db, [path], { accountId: f.accounts.work, folder, onWarning: (w) => warnings.push(w) }),
      );
  } finally {
    db.close();
  }
  const api = await startApi({}, { useFixture: f });
  const page = await api.request.get(`/api/v1/emails?folder=${folder}&pageSize=100`).set(bearer(f.keys.admin));
  const ids: Record<string, number> = {};
  for (const item of page.body.items as Array<{ id: number; subject: string }>) ids[item.subject] = item.id;
  return { f, api, ids, folder, summaries, warnings };
}

export async function closeImported(mail: ImportedMail | undefined): Promise<void> {
  await mail?.api.close();
  mail?.f.cleanup();
}

type Ctx = ExecutionContext<ImportedMail>;

/** The message with this subject, through GET /emails/{id}. */
export async function detail(t: Ctx, subject: string): Promise<EmailDetail> {
  const id = t.context.ids[subject];
  t.truthy(id, `imported: ${subject} (have ${Object.keys(t.context.ids).join(' | ')})`);
  const res = await t.context.api.request.get(`/api/v1/emails/${id}`).set(bearer(t.context.f.keys.admin));
  t.is(res.status, 200);
  return res.body as EmailDetail;
}

/** Subjects a search finds in the imported folder, sorted. */
export async function search(t: Ctx, q: string): Promise<string[]> {
  const res = await t.context.api.request
    .get('/api/v1/emails')
    .query({ q, folder: t.context.folder, pageSize: 100 })
    .set(bearer(t.context.f.keys.admin));
  t.is(res.status, 200, q);
  return (res.body.items as Array<{ subject: string }>).map((i) => i.subject).sort();
}

/** An attachment's bytes and response, as downloaded. */
export async function download(t: Ctx, emailId: number, attachmentId: number) {
  const file = await t.context.api.request
    .get(`/api/v1/emails/${emailId}/attachments/${attachmentId}`)
    .set(bearer(t.context.f.keys.admin))
    .buffer(true)
    .parse(rawBody);
  t.is(file.status, 200);
  return { body: file.body as Buffer, headers: file.headers as Record<string, string> };
}
