// One function per job kind. The worker thread calls these with its own connection; tests
// and tools may call them directly with any connection.
import type { Job, JobKind, JobResult } from '../../shared/jobs.js';
import type { Db } from './open.js';
import { writeAccessLog } from './access-log.js';
import { listVisibleAccounts } from './accounts.js';
import {
  getAttachmentHandle,
  getEmailDetail,
  getFolderTree,
  getStats,
  storedBodyBytes,
  readAttachmentChunk,
  searchPage,
} from './emails.js';
import { getAttachmentText } from './attachment-text.js';
import { messageCopies } from './originals.js';
import { exportPageQuery } from '../rules/export-ids.js';
import { authenticate } from './keys.js';
import { getThread } from './threads.js';
import { exchangeOAuthToken, getOAuthClient, issueOAuthCode, registerOAuthClient, revokeOAuthToken } from './oauth.js';
import { aggregateEmails } from './aggregate.js';
import { encodeDetail } from '../rules/encoded-detail.js';
import { isMovedToQueryLane, movedToQueryLane } from '../rules/large-detail.js';
import { messageView } from '../rules/mail-view.js';
import { cidParts } from './mail-view.js';
import { currentSnapshot, snapshotInfo } from './index-share.js';
import { threadId } from 'node:worker_threads';
import { NO_KEY_HASH, WARM_UP_PRINCIPAL, warmedUp, warmUpStep } from '../search/warm-up.js';
import { createKeyFor, endSessions, listKeysFor, login, revokeKeyAs, sessionUser } from './web.js';

/** Kinds whose work awaits something besides the database (a reconstruction's MIME build). */
type AsyncKind = 'messageCopies';
type Handlers = {
  [K in JobKind]: (db: Db, job: Job<K>) => K extends AsyncKind ? Promise<JobResult<K>> : JobResult<K>;
};

export const handlers: Handlers = {
  authenticate: (db, job) => authenticate(db, job.keyHash, job.now),
  accounts: (db, job) => listVisibleAccounts(db, job.principal),
  folders: (db, job) => getFolderTree(db, job.principal, job.accountId),
  search: (db, job) => searchPage(db, job.principal, job.query),
  searchView: (db, job) => ({
    results: searchPage(db, job.principal, job.query),
    accounts: listVisibleAccounts(db, job.principal),
    folders: job.folderTreeOf === undefined ? null : getFolderTree(db, job.principal, job.folderTreeOf),
  }),
  aggregate: (db, job) => aggregateEmails(db, job.principal, job.aggregate),
  detail: (db, job) => {
    if (job.interactiveMaxBytes !== undefined) {
      const bytes = storedBodyBytes(db, job.id);
      // The pool takes this back and reruns the job on the query lane (engine/rules/large-detail.ts).
      if (bytes > job.interactiveMaxBytes) return movedToQueryLane(bytes) as never;
    }
    return getEmailDetail(db, job.principal, job.id);
  },
  detailJson: (db, job) => encodeDetail(handlers.detail(db, { ...job, kind: 'detail' })),
  messageView: (db, job) =>
    // One read transaction: the Content-IDs are those of the attachments the detail lists.
    db.transaction(() => {
      const email = handlers.detail(db, { ...job, kind: 'detail' });
      if (email === null) return null;
      // Sized as detail is: the pool reruns the job on the query lane (engine/rules/large-detail.ts).
      if (isMovedToQueryLane(email)) return email as never;
      return messageView(email, cidParts(db, email.id), job);
    })(),
  thread: (db, job) => getThread(db, job.principal, job.id, job.excerpts === true),
  attachment: (db, job) => getAttachmentHandle(db, job.principal, job.emailId, job.attachmentId),
  attachmentText: (db, job) =>
    getAttachmentText(db, job.principal, job.emailId, job.attachmentId, job.offset, job.maxChars),
  attachmentChunk: (db, job) => readAttachmentChunk(db, job.contentId, job.seq),
  stats: (db, job) => getStats(db, job.principal),
  messageCopies: (db, job) => messageCopies(db, job.principal, job.ids, job.reconstruct),
  exportIds: (db, job) =>
    // One read transaction: every page from the same moment of the archive.
    db.transaction(() => {
      const first = searchPage(db, job.principal, exportPageQuery(job.query, 1));
      if (first.totalItems > job.max) return { total: first.totalItems, ids: null };
      const ids = first.items.map((i) => i.id);
      for (let page = 2; page <= first.totalPages; page++) {
        for (const item of searchPage(db, job.principal, exportPageQuery(job.query, page)).items) ids.push(item.id);
      }
      return { total: first.totalItems, ids };
    })(),
  accessLog: (db, job) => ({ written: writeAccessLog(db, job.entries) }),
  // Web UI: scrypt for sign-in runs here, on a worker thread, never on the event loop.
  login: (db, job) => login(db, job.username, job.password),
  sessionUser: (db, job) => sessionUser(db, job.userId, job.stamp, job.issuedAt),
  endSessions: (db, job) => endSessions(db, job.userId, job.now),
  listKeysFor: (db, job) => listKeysFor(db, job.actorId, job.now, job),
  createKeyFor: (db, job) => createKeyFor(db, job.actorId, job.name, job.expiresAt, job.now, job.maxActive),
  revokeKeyAs: (db, job) => revokeKeyAs(db, job.actorId, job.keyId, job.now),
  oauthClient: (db, job) => getOAuthClient(db, job.clientId),
  oauthRegister: (db, job) => registerOAuthClient(db, job.client, job.limits),
  oauthIssueCode: (db, job) => issueOAuthCode(db, job.actorId, job.code, job.now, job.maxGrants),
  oauthToken: (db, job) => exchangeOAuthToken(db, job.request, job.now, job.accessMs),
  oauthRevoke: (db, job) => revokeOAuthToken(db, job.tokenHash, job.clientId, job.now),
  ping: (db) => {
    const searchIndex = snapshotInfo(db);
    return {
      schemaVersion: db.pragma('user_version', { simple: true }) as number,
      ...(searchIndex ? { searchIndex } : {}),
    };
  },
  warmUp: (db) => {
    const step = warmUpStep(threadId, currentSnapshot(db));
    if ('answer' in step) return step.answer;
    const started = performance.now();
    authenticate(db, NO_KEY_HASH, Date.now());
    return warmedUp(step.query, searchPage(db, WARM_UP_PRINCIPAL, step.query).totalItems, started, threadId);
  },
  fault: () => {
    throw new Error('fault injection is disabled');
  },
};

export function runJob<K extends JobKind>(db: Db, job: Job<K>): JobResult<K> | Promise<JobResult<K>> {
  const handler = handlers[job.kind] as ((db: Db, job: Job<K>) => JobResult<K> | Promise<JobResult<K>>) | undefined;
  if (!handler) throw new Error(`Unknown job kind ${String(job.kind)}`);
  return handler(db, job);
}
