// One crossing per keyed request (gateway/admission.ts, docs/decisions.md ADR 7): the key check
// travels to the worker with the request's job, and admission's rules still hold on that path:
// only a genuine key spends its prefix's budget, a failing key is charged to its address, a
// spent budget is told apart only after the key was checked, and key changes apply to the very
// next request. Serial: each test counts the jobs the gateway sends to its pool.
import anyTest, { type TestFn } from 'ava';
import type { EnginePool } from '../engine/pool/pool.js';
import type { AuthedJob, Job } from '../shared/jobs.js';
import { bearer, INVALID_TOKEN_CHALLENGE, startApi, unknownKey, type ApiHarness } from './helpers/api.js';
import { changeArchive, withAdmin } from './helpers/store.js';

const LIMIT = 3;
const AUTH_FAILURES = 1000;
const test = anyTest as TestFn<{ api: ApiHarness; jobs: string[] }>;

test.before(async (t) => {
  const api = await startApi(
    { Api: { RateLimitPerMinute: LIMIT }, Server: { TrustProxy: true, AuthFailuresPerIpPerMinute: AUTH_FAILURES } },
    // Access-log entries stay pending until a test looks at them.
    { gateway: { accessLog: { intervalMs: 60_000 } } },
  );
  t.context = { api, jobs: recordJobs(api.gateway.engine) };
});
test.after.always(async (t) => {
  await t.context.api?.close();
});
test.beforeEach((t) => {
  t.context.jobs.length = 0;
});

/**
 * Every job the gateway sends to its pool from now on, by kind; a key check that carries a job
 * is `authed:<kind of that job>`. Access-log writes (batched off the request path) are left out.
 */
function recordJobs(engine: EnginePool): string[] {
  const jobs: string[] = [];
  const run = engine.run.bind(engine);
  const runAuthed = engine.runAuthed.bind(engine);
  engine.run = ((job: Job) => {
    if (job.kind !== 'accessLog') jobs.push(job.kind);
    return run(job);
  }) as EnginePool['run'];
  engine.runAuthed = ((job: AuthedJob) => {
    jobs.push(`authed:${job.job.kind}`);
    return runAuthed(job);
  }) as EnginePool['runAuthed'];
  return jobs;
}

let ipCounter = 0;
/** A client IP no other test uses, so that no failure budget is shared. */
const freshIp = () => `198.51.100.${++ipCounter}`;
/** An administrator's key of its own, so that no other test spends its budget. */
const freshKey = async (api: ApiHarness) =>
  (await withAdmin(api.settings.Database.Path, (a) => a.createKey({ username: 'admin', name: `one ${Math.random()}` })))
    .key;
/** A made-up key that starts with a real key's (public) prefix. */
const forgedFrom = (key: string) => `${key.slice(0, 11)}${'A'.repeat(key.length - 11)}`;

test.serial('a keyed request runs one job: the key check travels with the read, on every route', async (t) => {
  const { api, jobs } = t.context;
  const f = api.fixture;
  const key = bearer(await freshKey(api));
  const open = await api.request.get(`/api/v1/emails/${f.emails.budget}`).set(key).set('X-Forwarded-For', freshIp());
  t.is(open.status, 200);
  t.is(open.body.subject, 'Quarterly budget review');
  t.is(open.headers['ratelimit-remaining'], String(LIMIT - 1));
  t.deepEqual(jobs, ['authed:detailJson']);

  const routes: Array<[path: string, expected: string[]]> = [
    ['/api/v1/emails?q=budget', ['authed:search']],
    ['/api/v1/accounts', ['authed:accounts']],
    [
      `/api/v1/emails/${f.emails.budget}/attachments/${f.attachments['budget:notes.txt']}`,
      ['authed:attachment', 'attachmentChunk'],
    ],
  ];
  for (const [path, expected] of routes) {
    jobs.length = 0;
    // A key per route: LIMIT is small.
    const res = await api.request
      .get(path)
      .set(bearer(await freshKey(api)))
      .set('X-Forwarded-For', freshIp());
    t.is(res.status, 200, path);
    t.deepEqual(jobs, expected, path);
  }
});

test.serial('revoking a key takes effect on the very next request of the one-job path', async (t) => {
  const { api, jobs } = t.context;
  const path = api.settings.Database.Path;
  const created = await withAdmin(path, (a) => a.createKey({ username: 'admin', name: 'revoked mid-use' }));
  const email = `/api/v1/emails/${api.fixture.emails.lunch}`;
  const ip = freshIp();
  t.is((await api.request.get(email).set(bearer(created.key)).set('X-Forwarded-For', ip)).status, 200);
  await withAdmin(path, (a) => a.revokeKey(created.id));
  jobs.length = 0;
  const next = await api.request.get(email).set(bearer(created.key)).set('X-Forwarded-For', ip);
  t.is(next.status, 401);
  t.regex(next.headers['www-authenticate'] ?? '', INVALID_TOKEN_CHALLENGE);
  t.like(next.body, { status: 401, title: 'Unauthorized', detail: 'The API key has been revoked.', instance: email });
  // The refusal came from the job that carried the check, and nothing was read for it.
  t.deepEqual(jobs, ['authed:detailJson']);
  // Charged to the address's failed-authentication budget, as its headers say.
  t.is(next.headers['ratelimit-limit'], String(AUTH_FAILURES));
  t.is(next.headers['ratelimit-remaining'], String(AUTH_FAILURES - 1));
});

test.serial("a flood of made-up keys with a real key's prefix leaves that key's budget whole", async (t) => {
  const { api, jobs } = t.context;
  const real = await freshKey(api);
  const forged = forgedFrom(real);
  const email = `/api/v1/emails/${api.fixture.emails.budget}`;
  const flood = await Promise.all(
    Array.from({ length: 20 }, () => api.request.get(email).set(bearer(forged)).set('X-Forwarded-For', freshIp())),
  );
  t.deepEqual(new Set(flood.map((r) => r.status)), new Set([401]));
  // The prefix's budget never looked spent, so every guess was checked in the job it carried.
  t.deepEqual(jobs, Array<string>(20).fill('authed:detailJson'));
  for (let i = 0; i < LIMIT; i++) {
    const res = await api.request.get(email).set(bearer(real)).set('X-Forwarded-For', freshIp());
    t.is(res.status, 200, `the owner's request ${i + 1}`);
    t.is(res.headers['ratelimit-remaining'], String(LIMIT - 1 - i));
  }
  t.is((await api.request.get(email).set(bearer(real)).set('X-Forwarded-For', freshIp())).status, 429);
});

test.serial(
  'once a budget is spent, the key is checked on its own first: 429 for the owner, 401 for a forgery',
  async (t) => {
    const { api, jobs } = t.context;
    const real = await freshKey(api);
    const email = `/api/v1/emails/${api.fixture.emails.budget}`;
    for (let i = 0; i < LIMIT; i++) t.is((await api.request.get(email).set(bearer(real))).status, 200);
    jobs.length = 0;
    const forged = await api.request
      .get(email)
      .set(bearer(forgedFrom(real)))
      .set('X-Forwarded-For', freshIp());
    t.is(forged.status, 401);
    t.regex(forged.headers['www-authenticate'] ?? '', INVALID_TOKEN_CHALLENGE);
    const owner = await api.request.get(email).set(bearer(real)).set('X-Forwarded-For', freshIp());
    t.is(owner.status, 429);
    t.is(owner.headers['ratelimit-remaining'], '0');
    // Neither read the message: a spent budget costs a key check only.
    t.deepEqual(jobs, ['authenticate', 'authenticate']);
  },
);

test.serial('concurrent requests past a budget: the answers stay within it, and only they are logged', async (t) => {
  const { api } = t.context;
  const real = await freshKey(api);
  const email = `/api/v1/emails/${api.fixture.emails.budget}`;
  const pendingBefore = api.gateway.accessLog.pending;
  // All in flight at once: each may run its read before the budget is charged (ADR 7's bounded overrun).
  const answers = await Promise.all(
    Array.from({ length: 3 * LIMIT }, () => api.request.get(email).set(bearer(real)).set('X-Forwarded-For', freshIp())),
  );
  const statuses = answers.map((r) => r.status).sort();
  t.deepEqual(statuses, [...Array<number>(LIMIT).fill(200), ...Array<number>(2 * LIMIT).fill(429)]);
  t.is(api.gateway.accessLog.pending - pendingBefore, LIMIT, 'one Open per message sent, none per 429');
  t.true(answers.filter((r) => r.status === 429).every((r) => String(r.body.detail).startsWith('Rate limit')));
});

test.serial(
  'when the route answers before any job, the key is still checked: a failing key gets its 401',
  async (t) => {
    const { api, jobs } = t.context;
    for (const path of ['/api/v1/emails?sortBy=nope', '/api/v1/nope', '/api/v1/emails/notanumber']) {
      jobs.length = 0;
      const ip = freshIp();
      const bad = await api.request.get(path).set(bearer(unknownKey())).set('X-Forwarded-For', ip);
      t.is(bad.status, 401, path);
      t.is(bad.body.detail, 'The API key is not valid.', path);
      t.is(bad.headers['ratelimit-limit'], String(AUTH_FAILURES), `${path}: charged to the address`);
      t.deepEqual(jobs, ['authenticate'], path);
    }
    // A genuine key gets the route's own answer, and spends its point for it.
    const good = await api.request.get('/api/v1/emails?sortBy=nope').set(bearer(await freshKey(api)));
    t.is(good.status, 400);
    t.is(good.headers['ratelimit-limit'], String(LIMIT));
    t.is(good.headers['ratelimit-remaining'], String(LIMIT - 1));
  },
);

test.serial('a genuine key whose read fails spends its point, and the failure is answered as a 500', async (t) => {
  const { api, jobs } = t.context;
  const path = api.settings.Database.Path;
  const key = await freshKey(api);
  // The message read now fails (its attachment list is gone) after the key check succeeded.
  const rename = (away: boolean) =>
    changeArchive(path, {
      sqlite: (db) =>
        db.exec(
          away
            ? 'ALTER TABLE attachments RENAME TO attachments_away'
            : 'ALTER TABLE attachments_away RENAME TO attachments',
        ),
      postgres: (client) =>
        client.query(
          away
            ? 'ALTER TABLE mail_archiver."EmailAttachments" RENAME TO "EmailAttachmentsAway"'
            : 'ALTER TABLE mail_archiver."EmailAttachmentsAway" RENAME TO "EmailAttachments"',
        ),
    });
  await rename(true);
  t.teardown(() => rename(false));
  const email = `/api/v1/emails/${api.fixture.emails.budget}`;
  const failed = await api.request.get(email).set(bearer(key)).set('X-Forwarded-For', freshIp());
  t.is(failed.status, 500);
  t.like(failed.body, { status: 500, title: 'Internal Server Error', instance: email });
  t.is(failed.headers['ratelimit-limit'], String(LIMIT));
  t.is(failed.headers['ratelimit-remaining'], String(LIMIT - 1), "the key's point was spent");
  t.deepEqual(jobs, ['authed:detailJson']);
  // A failing key never gets as far as the read.
  const bad = await api.request.get(email).set(bearer(unknownKey())).set('X-Forwarded-For', freshIp());
  t.is(bad.status, 401);
});
