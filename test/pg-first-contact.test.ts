// A first start on a Mail Archiver database the service has not indexed (docs/postgres.md,
// "Search"): while the side index is far behind and the index builder thread catches up, a search
// is answered at once with a 503 that says how far the build is (SearchIndexBuilding), not after
// its time budget; reads by id go on; once the build is through, the same search answers.
import test from 'ava';
import pg from 'pg';
import { INDEX_LOCK, INLINE_CATCH_UP_MAX } from '../engine/postgres/search-index.js';
import { bearer, startApi } from './helpers/api.js';
import { waitFor } from './helpers/redis.js';

const WRITTEN = INLINE_CATCH_UP_MAX + 2_000;

test('a search while the side index is far behind is a 503 saying how far the build is, at once; then it answers', async (t) => {
  const h = await startApi({}, { store: 'postgres' });
  const url = h.settings.Database.Path;
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  t.teardown(async () => {
    await holder.end().catch(() => {});
    await h.close();
  });
  const admin = bearer(h.fixture.keys.admin);
  t.is((await h.request.get('/api/v1/emails').query({ q: 'budget' }).set(admin)).status, 200);

  // Mail Archiver writes mail the service has not seen, more than a search indexes itself, and
  // the test holds the catch-up's lock so that nothing indexes it until the test lets go.
  await holder.query('BEGIN');
  await holder.query('SELECT pg_advisory_xact_lock(hashtext($1))', [INDEX_LOCK]);
  const writer = new pg.Client({ connectionString: url });
  await writer.connect();
  try {
    await writer.query(
      `INSERT INTO mail_archiver."ArchivedEmails" ("MailAccountId", "MessageId", "Subject", "Body", "HtmlBody",
         "From", "To", "Cc", "Bcc", "SentDate", "ReceivedDate", "IsOutgoing", "HasAttachments", "FolderName")
       SELECT (SELECT min("Id") FROM mail_archiver."MailAccounts"), '<' || i || '@first>', 'Zeitgeist ' || i, 'x', '',
              'ma@x.example', '', '', '', timestamp '2020-01-01', timestamp '2020-01-01', false, false, 'INBOX'
         FROM generate_series(1, $1::int) i`,
      [WRITTEN],
    );
  } finally {
    await writer.end();
  }

  const refused = await h.request.get('/api/v1/emails').query({ q: 'zeitgeist' }).set(admin);
  t.is(refused.status, 503);
  t.regex(refused.type, /problem\+json/);
  t.is(refused.headers['retry-after'], '30');
  t.regex(refused.body.detail, /^The search index of this archive is being built \(\d+ % of its messages so far\)/);
  // Reading by id needs no search index.
  t.is((await h.request.get(`/api/v1/emails/${h.fixture.emails.budget}`).set(admin)).status, 200);

  await holder.query('COMMIT');
  // The builder thread catches up by itself; the search answers once it has.
  let found: { status: number; body: { totalItems?: number } } = refused;
  await waitFor(
    'the search to answer',
    async () => {
      found = await h.request.get('/api/v1/emails').query({ q: 'zeitgeist' }).set(admin);
      return found.status === 200;
    },
    120_000,
    200,
  );
  t.is(found.status, 200);
  t.is(found.body.totalItems, WRITTEN);
});
