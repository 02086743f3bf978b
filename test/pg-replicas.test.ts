// Database:ReadReplicas against a real streaming replica (docs/postgres.md, "Read replicas"):
// a private primary (initdb) and a replica of it (pg_basebackup -R), both started and removed by
// this file. Reads go to the replica, key checks and writes to the primary, and the
// replica stopping in the middle of a stream of requests fails none of them.
//
// The observable that tells a replica's answer from the primary's: replay is paused on the
// replica (pg_wal_replay_pause), so whatever is written to the primary afterwards exists only
// there until replay resumes. A read that does not see it came from the replica; a key check that
// sees a key created (or revoked) afterwards went to the primary.
import test from 'ava';
import { prepareArchive } from '../engine/archive.js';
import { sql } from '../engine/postgres/sql.js';
import { PgStore } from '../engine/postgres/store.js';
import { searchEmails } from '../engine/postgres/search.js';
import { exportSnapshot, indexedSearch, type ExportedSnapshot } from '../engine/postgres/search-snapshot.js';
import { EnginePool } from '../engine/pool/pool.js';
import { parseSearchInput } from '../shared/search-input.js';
import { createGateway, type Gateway } from '../gateway/app.js';
import supertest from 'supertest';
import pino from 'pino';
import { apiSettings, bearer } from './helpers/api.js';
import { startPrimary, startReplica, waitForReplay, type PgServer } from './helpers/pg-cluster.js';
import { addKey, addMessage, createSmallArchive, type SmallArchive } from './helpers/pg-mail-archiver.js';
import { waitFor } from './helpers/redis.js';

const DB = 'archive';
let primary: PgServer | undefined;
let replica: PgServer | undefined;
let archive: SmallArchive;

test.before(async () => {
  primary = await startPrimary();
  await primary.query(`CREATE DATABASE ${DB}`);
  archive = await createSmallArchive(primary.url(DB), 3);
  await prepareArchive({ path: primary.url(DB) });
  replica = await startReplica(primary);
  await waitForReplay(primary, replica);
});

test.after.always(async () => {
  await replica?.destroy();
  await primary?.destroy();
});

/** The gateway on the primary and the replica; `errors` collects what it logs as errors (a 500's cause). */
function startGateway(): { gateway: Gateway; request: supertest.Agent; errors: string[] } {
  const settings = apiSettings(primary!.url(DB), { Database: { ReadReplicas: [replica!.url(DB)] } });
  const errors: string[] = [];
  const logger = pino({ level: 'error' }, { write: (line: string) => void errors.push(line.slice(0, 2000)) });
  const gateway = createGateway(settings, { logger });
  return { gateway, request: supertest.agent(gateway.app.callback()), errors };
}

const pauseReplay = async (server: PgServer) => {
  await server.query('SELECT pg_wal_replay_pause()');
  await waitFor('replay to pause', async () => {
    const [row] = await server.query<{ state: string }>('SELECT pg_get_wal_replay_pause_state() AS state');
    return row?.state === 'paused';
  });
};

const count = async (server: PgServer, sql: string, params: unknown[] = []) =>
  Number((await server.query<{ n: string }>(sql, params, DB))[0]!.n);

test.serial('reads come from the replica; key checks, LastUsedAt and the access log use the primary', async (t) => {
  const { gateway, request } = startGateway();
  let paused = false;
  t.teardown(async () => {
    if (paused) await replica!.query('SELECT pg_wal_replay_resume()').catch(() => {});
    await gateway.close();
  });

  const before = await request.get('/api/v1/stats').set(bearer(archive.key));
  t.is(before.status, 200);
  t.is(before.body.emails, 3);

  // Readiness reports both servers, by host:port/database only.
  const ready = await request.get('/readyz');
  t.is(ready.status, 200);
  t.is(ready.body.status, 'ok');
  t.like(ready.body.checks.postgres, {
    status: 'ok',
    primary: { status: 'ok' },
    replicas: [{ server: `127.0.0.1:${replica!.port}/${DB}`, status: 'ok', inRotation: true }],
  });
  t.true(typeof ready.body.checks.postgres.replicas[0].lagBytes === 'number');

  // A key both servers hold, to be revoked while the replica lags.
  const spare = await addKey(primary!.url(DB), archive.userId, 'to be revoked');
  await waitForReplay(primary!, replica!);
  t.is((await request.get('/api/v1/accounts').set(bearer(spare.key))).status, 200);

  // From here the replica lags behind the primary by everything written next.
  await pauseReplay(replica!);
  paused = true;
  const freshId = await addMessage(primary!.url(DB), archive.accountId, 'Written after the replica paused');
  const fresh = await addKey(primary!.url(DB), archive.userId, 'made while the replica lags');
  const accessLogsBefore = await count(primary!, 'SELECT count(*) AS n FROM mail_archiver."AccessLogs"');

  // The new key exists only on the primary, yet it authenticates: key checks go to the primary.
  const stats = await request.get('/api/v1/stats').set(bearer(fresh.key));
  t.is(stats.status, 200, JSON.stringify(stats.body));
  // The answer lacks the new message, which only the primary has: the read came from the replica.
  t.is(stats.body.emails, 3);
  t.is(await count(primary!, 'SELECT count(*) AS n FROM mail_archiver."ArchivedEmails"'), 4);
  const search = await request.get('/api/v1/emails').query({ folder: 'INBOX' }).set(bearer(fresh.key));
  t.is(search.status, 200);
  t.is(search.body.totalItems, 3, 'the replica has not replayed the new message');
  t.false(
    (search.body.items as Array<{ id: number }>).some((m) => m.id === freshId),
    'and does not list it',
  );
  const detail = await request.get(`/api/v1/emails/${freshId}`).set(bearer(fresh.key));
  t.is(detail.status, 404, 'nor can its detail be read there');
  const old = await request.get(`/api/v1/emails/${archive.emailIds[0]}`).set(bearer(fresh.key));
  t.is(old.status, 200);
  t.is(old.body.subject, 'Quarterly report 1');

  // Writes reach the primary: LastUsedAt of the new key, and the access-log rows of these reads.
  await gateway.accessLog.flush();
  const [used] = await primary!.query<{ last: Date | null }>(
    'SELECT "LastUsedAt" AS last FROM mail_archiver."ApiKeys" WHERE "Id" = $1',
    [fresh.keyId],
    DB,
  );
  t.truthy(used?.last, 'LastUsedAt was set on the primary');
  const logged = await primary!.query<{ type: number; n: string }>(
    `SELECT "Type" AS type, count(*) AS n FROM mail_archiver."AccessLogs" WHERE "Id" > 0 GROUP BY "Type" ORDER BY "Type"`,
    [],
    DB,
  );
  t.true(
    (await count(primary!, 'SELECT count(*) AS n FROM mail_archiver."AccessLogs"')) >= accessLogsBefore + 2,
    JSON.stringify(logged),
  );
  t.true(
    logged.some((r) => r.type === 2) && logged.some((r) => r.type === 3),
    `Search (2) and Open (3) rows: ${JSON.stringify(logged)}`,
  );
  // The replica, paused, has none of them.
  t.is(await count(replica!, 'SELECT count(*) AS n FROM mail_archiver."AccessLogs"'), 0);

  // Revoked on the primary: refused on the very next request, though the replica still has the key unrevoked.
  await primary!.query(
    'UPDATE mail_archiver."ApiKeys" SET "RevokedAt" = (now() AT TIME ZONE \'UTC\') WHERE "Id" = $1',
    [spare.keyId],
    DB,
  );
  const refused = await request.get('/api/v1/stats').set(bearer(spare.key));
  t.is(refused.status, 401);
  t.is(
    await count(replica!, 'SELECT count(*) AS n FROM mail_archiver."ApiKeys" WHERE "Id" = $1 AND "RevokedAt" IS NULL', [
      spare.keyId,
    ]),
    1,
    'the replica still holds the key unrevoked',
  );

  // Readiness shows the lag, in WAL bytes not yet replayed (pings are reused for a second).
  await waitFor('readiness to show the lag', async () => {
    const res = await request.get('/readyz');
    return res.status === 200 && res.body.checks.postgres.replicas[0].lagBytes > 0;
  });

  // The gateway's sessions on the replica are there under its application_name.
  const sessions = await count(
    replica!,
    `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'mail-archive-gateway' AND datname = $1`,
    [DB],
  );
  t.true(sessions >= 1, `gateway sessions on the replica: ${sessions}`);

  // Replay resumes: the replica catches up and the same read now shows the new message.
  await replica!.query('SELECT pg_wal_replay_resume()');
  paused = false;
  await waitForReplay(primary!, replica!);
  const after = await request.get('/api/v1/stats').set(bearer(archive.key));
  t.is(after.body.emails, 4);
});

test.serial(
  "the in-memory index is built from the replica and read there: page and totalItems are the replica's state, as SQL on it",
  async (t) => {
    const store = new PgStore({ url: primary!.url(DB), timeZone: 'UTC', readReplicas: [replica!.url(DB)] });
    const onReplica = new PgStore({ url: replica!.url(DB), timeZone: 'UTC' });
    const onPrimary = new PgStore({ url: primary!.url(DB), timeZone: 'UTC' });
    let paused = false;
    let exported: ExportedSnapshot | undefined;
    let added: number | undefined;
    t.teardown(async () => {
      if (paused) await replica!.query('SELECT pg_wal_replay_resume()').catch(() => {});
      // The tests after this one count the archive's messages: this one leaves none behind.
      if (added !== undefined)
        await primary!.query('DELETE FROM mail_archiver."ArchivedEmails" WHERE "Id" = $1', [added], DB);
      await exported?.release();
      await store.close();
      await onReplica.close();
      await onPrimary.close();
    });
    const viewer = { isAdmin: false, userId: archive.userId };
    const queries = [
      { q: 'quarterly' },
      { folder: 'INBOX', sortBy: 'subject' },
      { q: 'report', page: '2', pageSize: '1' },
    ].map((p) => parseSearchInput(p, { defaultPageSize: 20, maxPageSize: 100 }));
    const same = async (stage: string) => {
      for (const query of queries) {
        const indexed = await indexedSearch(store, viewer, query);
        t.truthy(indexed, `${stage}: the index answers ${JSON.stringify(query)}`);
        t.deepEqual(indexed, await searchEmails(onReplica, viewer, query), `${stage}: ${JSON.stringify(query)}`);
      }
    };
    // The tests before left mail the search index may not hold yet (the gateway's snapshot
    // builder catches up when it runs); a search on the replica itself cannot write, so the
    // primary catches up and the replica replays that before it starts to lag.
    await searchEmails(onPrimary, viewer, queries[0]!);
    await waitForReplay(primary!, replica!);
    // The replica lags from here: what the primary gets next is not in its snapshots.
    await pauseReplay(replica!);
    paused = true;
    added = await addMessage(primary!.url(DB), archive.accountId, 'Quarterly report written after the replica paused');
    exported = await exportSnapshot(replica!.url(DB), undefined, { minDocs: 1 });
    store.adoptSearchSnapshot(exported.state.snapshot, exported.token);
    const primaryTotal = (await searchEmails(onPrimary, viewer, queries[0]!)).totalItems;
    const all = await count(primary!, 'SELECT count(*) AS n FROM mail_archiver."ArchivedEmails"');
    t.is(exported.state.snapshot.rows, all - 1, "the snapshot is the replica's");
    await same('replica paused');
    t.is((await indexedSearch(store, viewer, queries[0]!))!.totalItems, primaryTotal - 1);

    // Replay resumes: the replica's present has mail the snapshot lacks, so SQL answers until
    // the next snapshot of the replica has it.
    await replica!.query('SELECT pg_wal_replay_resume()');
    paused = false;
    await waitForReplay(primary!, replica!);
    t.is(await indexedSearch(store, viewer, queries[0]!), undefined, 'new mail on the replica: SQL answers');
    const next = await exportSnapshot(replica!.url(DB), exported.state, { minDocs: 1 });
    await exported.release();
    exported = next;
    store.adoptSearchSnapshot(exported.state.snapshot, exported.token);
    await same('after the next snapshot');
    t.is((await indexedSearch(store, viewer, queries[0]!))!.totalItems, primaryTotal);
  },
);

test.serial(
  'through the engine pool with a replica: readiness reports the index current, built from the replica',
  async (t) => {
    await waitForReplay(primary!, replica!);
    const engine = new EnginePool({
      dbPath: primary!.url(DB),
      readReplicas: [replica!.url(DB)],
      threads: 1,
      searchIndexFile: '', // its default is under the working directory, the repository's data/
    });
    t.teardown(() => engine.close());
    await waitFor(
      'the index built from the replica',
      async () => (await engine.ping('query')).searchIndex?.status === 'current',
      60_000,
    );
    t.is(engine.searchIndexError, undefined);
    const exporting = await count(
      replica!,
      `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'mail-archive-gateway search index' AND datname = $1`,
      [DB],
    );
    t.true(exporting >= 1, 'the snapshot is exported on the replica');
    const principal = {
      userId: archive.userId,
      username: 'alice',
      isAdmin: false,
      keyId: archive.keyId,
      keyPrefix: 'ma_test0000',
    };
    const query = parseSearchInput({ q: 'quarterly' }, { defaultPageSize: 20, maxPageSize: 100 });
    const onReplica = new PgStore({ url: replica!.url(DB), timeZone: 'UTC' });
    t.teardown(() => onReplica.close());
    // The same job on a store that reads only the replica, by SQL.
    t.deepEqual(
      await engine.run({ kind: 'search', principal, query }),
      await onReplica.run({ kind: 'search', principal, query }),
    );
  },
);

test.serial(
  'a read the replica cancels for a recovery conflict is answered by the primary; the replica stays in rotation',
  async (t) => {
    // The replica cancels at once a query that holds up replay, instead of delaying replay.
    await replica!.query('ALTER SYSTEM SET max_standby_streaming_delay = 0');
    await replica!.query('SELECT pg_reload_conf()');
    await primary!.query('CREATE TABLE public.conflict_probe AS SELECT g AS n FROM generate_series(1, 1000) g', [], DB);
    await waitForReplay(primary!, replica!);
    const conflicts = () =>
      count(replica!, 'SELECT confl_snapshot + confl_lock AS n FROM pg_stat_database_conflicts WHERE datname = $1', [
        DB,
      ]);
    const conflictsBefore = await conflicts();

    const store = new PgStore({ url: primary!.url(DB), timeZone: 'UTC', readReplicas: [replica!.url(DB)] });
    t.teardown(() => store.close());
    // A read that holds its snapshot for a second on the replica...
    const reading = store.read<{ n: number }>(sql`SELECT count(*) AS n FROM public.conflict_probe, pg_sleep(1)`);
    await new Promise((r) => setTimeout(r, 300));
    // ...while the primary removes the rows it sees: replaying that cleanup conflicts with it.
    await primary!.query('DELETE FROM public.conflict_probe', [], DB);
    await primary!.query('VACUUM public.conflict_probe', [], DB);

    const rows = await reading;
    t.deepEqual(rows, [{ n: 0 }], 'answered after the delete: by the primary');
    t.true((await conflicts()) > conflictsBefore, 'the replica did cancel the query');
    const health = await store.health();
    t.true(health.replicas[0]!.inRotation, 'a recovery conflict does not take the replica out');
    await replica!.query('ALTER SYSTEM RESET max_standby_streaming_delay');
    await replica!.query('SELECT pg_reload_conf()');
  },
);

test.serial('the replica stopped mid-stream: reads fall back to the primary and no request fails', async (t) => {
  const { gateway, request, errors } = startGateway();
  t.teardown(() => gateway.close());
  const paths = [
    '/api/v1/stats',
    '/api/v1/accounts',
    `/api/v1/accounts/${archive.accountId}/folders`,
    '/api/v1/emails?folder=INBOX',
    `/api/v1/emails/${archive.emailIds[1]}`,
  ];
  // Warm: every thread has its replica connections open before the stop.
  for (const p of paths) t.is((await request.get(p).set(bearer(archive.key))).status, 200);

  const statuses = new Map<number, number>();
  const failures: string[] = [];
  let slowest = 0;
  let stopAt = 0;
  let stopped = false;
  const loop = async (offset: number) => {
    for (let i = offset; !stopped || Date.now() < stopAt + 1500; i++) {
      const started = Date.now();
      const res = await request.get(paths[i % paths.length]!).set(bearer(archive.key));
      slowest = Math.max(slowest, Date.now() - started);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status !== 200) failures.push(`${paths[i % paths.length]} ${res.status} ${res.text.slice(0, 200)}`);
    }
  };
  const clients = [0, 1, 2, 3].map((i) => loop(i));
  await new Promise((r) => setTimeout(r, 400));
  await replica!.stop('fast');
  stopAt = Date.now();
  stopped = true;
  await Promise.all(clients);

  t.deepEqual(failures, [], `logged: ${errors.join('\n')}`);
  t.deepEqual([...statuses.keys()], [200]);
  const total = statuses.get(200) ?? 0;
  t.true(total > 20, `requests across the stop: ${total}`);
  t.log(`${total} requests across the replica stop, all 200; slowest ${slowest} ms`);

  // Readiness: still ready (200), degraded, the replica down and out of rotation.
  await waitFor('readiness to see the replica down', async () => {
    const res = await request.get('/readyz');
    return res.status === 200 && res.body.checks.postgres.replicas[0].status === 'down';
  });
  const ready = await request.get('/readyz');
  t.is(ready.body.status, 'degraded');
  t.like(ready.body.checks.postgres, { status: 'degraded', primary: { status: 'ok' } });
  t.false(ready.body.checks.postgres.replicas[0].inRotation);

  // Started again, the replica rejoins the rotation by itself (a probe every 5 s), and serves again.
  await replica!.start();
  const restarted = Date.now();
  await waitFor(
    'the replica back in rotation',
    async () => {
      const res = await request.get('/readyz');
      return res.body.checks.postgres.status === 'ok' && res.body.checks.postgres.replicas[0].inRotation === true;
    },
    20_000,
    200,
  );
  t.log(`back in rotation ${Date.now() - restarted} ms after the replica started again`);
  const sessions = await count(
    replica!,
    `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'mail-archive-gateway' AND datname = $1`,
    [DB],
  );
  t.true(sessions >= 1, 'the gateway connected to it again');
  const back = await request.get('/api/v1/accounts').set(bearer(archive.key));
  t.is(back.status, 200);

  // With the replica gone the primary answers the reads, now with the fourth message.
  const stats = await request.get('/api/v1/stats').set(bearer(archive.key));
  t.is(stats.status, 200);
  t.is(stats.body.emails, 4);
});
