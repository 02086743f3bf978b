// Aggregate benchmark (docs/performance.md, "Aggregates"; docs/search.md, "Aggregates"): the aggregate job
// on the benchmark corpus (default 1,000,000 messages), in-process on one connection as a worker
// thread runs it, with the shared in-memory index built and adopted as the pool's builder thread
// would. Two targets: groupBy=month over a word in about 40% of the messages, and groupBy=from
// over the whole archive, each ≤ 50 ms p50; the baseline, measured in the same run, is plain SQL
// GROUP BY over the same matches (the job's own SQL path, `reference`). Every answer measured is
// checked equal to the baseline's, and so are `--equal` generated queries (default 30).
//
//   npm run bench:aggregate [-- --messages 1000000 --runs 21 --baseline-runs 3 --equal 30]
import { isDeepStrictEqual } from 'node:util';
import { openArchive, type Db } from '../engine/sqlite/open.js';
import { aggregateEmails } from '../engine/sqlite/aggregate.js';
import { adoptSnapshot } from '../engine/sqlite/index-share.js';
import { ColumnPoster, COLUMN_KINDS, columnFor, followColumns } from '../engine/sqlite/aggregate-columns.js';
import { Snapshot } from '../engine/search/bitsets/snapshot.js';
import { searchEmails } from '../engine/sqlite/search.js';
import { GROUP_BY, type AggregateQuery } from '../shared/jobs.js';
import { parseAggregateInput } from '../shared/search-input.js';
import { COMMON_WORDS, ensureCorpus } from './corpus.js';
import { arg } from './lib/args.js';
import { ms, percentile, ratio } from './lib/load.js';
import { Scorecard } from './lib/scorecard.js';
import { benchSnapshot } from './lib/saved-snapshot.js';

const TARGET_MS = 50;
const admin = { isAdmin: true, userId: 0 };

function timed<T>(work: () => T): { value: T; ms: number } {
  const started = performance.now();
  const value = work();
  return { value, ms: performance.now() - started };
}

/** p50 of `runs` calls, and the last answer. */
function measure(db: Db, aggregate: AggregateQuery, runs: number, reference: boolean) {
  const samples: number[] = [];
  let answer: ReturnType<typeof aggregateEmails> | undefined;
  for (let i = 0; i < runs; i++) {
    const t = timed(() => aggregateEmails(db, admin, aggregate, { reference }));
    samples.push(t.ms);
    answer = t.value;
  }
  return { p50: percentile(samples, 50), answer: answer! };
}

/** The common word whose share of the archive is closest to 40%. */
function wordNear40(db: Db, messages: number): { word: string; share: number } {
  let best = { word: '', share: -1 };
  for (const word of COMMON_WORDS) {
    const total = searchEmails(db, admin, {
      q: word,
      page: 1,
      pageSize: 1,
      sortBy: 'sentDate',
      sortOrder: 'desc',
    }).totalItems;
    const share = total / messages;
    if (Math.abs(share - 0.4) < Math.abs(best.share - 0.4)) best = { word, share };
  }
  return best;
}

/** Until the posted columns have reached this thread (a channel delivers on the event loop). */
async function waitForColumns(db: Db, snap: Snapshot): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!COLUMN_KINDS.every((k) => columnFor(db, snap, k).of.buffer instanceof SharedArrayBuffer)) {
    if (Date.now() > deadline) throw new Error('the posted columns never arrived');
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function main(): Promise<void> {
  const messages = arg('--messages', 1_000_000);
  const runs = arg('--runs', 21);
  const baselineRuns = arg('--baseline-runs', 3);
  const equalRuns = arg('--equal', 30);
  const dbPath = ensureCorpus({ messages });
  const db = openArchive(dbPath, { readonly: true });
  console.log(`# Aggregate benchmark: ${messages.toLocaleString('en')} messages (${dbPath})`);

  const { snapshot, how } = benchSnapshot(db, dbPath);
  adoptSnapshot(db, snapshot);
  // The group columns, as the builder thread reads and posts them after each snapshot.
  const channel = `bench-aggregate-${process.pid}`;
  followColumns(db, channel);
  const poster = new ColumnPoster(db, channel);
  const posted = timed(() => poster.post(snapshot));
  await waitForColumns(db, snapshot);
  console.log(
    `In-memory index ${how}, its group columns in ${(posted.ms / 1000).toFixed(1)} s (the builder thread's work, not measured below).`,
  );
  const { word, share } = wordNear40(db, messages);
  console.log(`Word: "${word}", in ${(share * 100).toFixed(1)}% of the messages.`);
  console.log('');

  const cases: Array<{ name: string; args: Record<string, unknown>; target: boolean }> = [
    { name: `groupBy=month, q=${word}`, args: { groupBy: 'month', q: word }, target: true },
    { name: 'groupBy=from, whole archive', args: { groupBy: 'from' }, target: true },
    { name: 'groupBy=to, whole archive', args: { groupBy: 'to' }, target: false },
    { name: `groupBy=fromDomain, q=${word}`, args: { groupBy: 'fromDomain', q: word }, target: false },
    {
      name: 'groupBy=week, 2015, incoming',
      args: { groupBy: 'week', from: '2015-01-01', to: '2015-12-31', direction: 'incoming' },
      target: false,
    },
    { name: 'groupBy=folder, q=invoice', args: { groupBy: 'folder', q: 'invoice' }, target: false },
  ];
  const scorecard = new Scorecard();
  console.log(
    '| aggregate | first call (columns posted by the builder) | p50 | plain SQL GROUP BY p50 | SQL / index | equal |',
  );
  console.log('|---|---:|---:|---:|---:|---|');
  for (const c of cases) {
    const aggregate = parseAggregateInput(c.args);
    const first = timed(() => aggregateEmails(db, admin, aggregate));
    const fast = measure(db, aggregate, runs, false);
    const sql = measure(db, aggregate, baselineRuns, true);
    const equal = isDeepStrictEqual(fast.answer, sql.answer) && isDeepStrictEqual(first.value, sql.answer);
    console.log(
      `| ${c.name} | ${ms(first.ms)} | ${ms(fast.p50)} | ${ms(sql.p50)} | ${ratio(sql.p50, fast.p50)} | ${equal ? 'yes' : '**NO**'} |`,
    );
    if (c.target) scorecard.atMost(c.name, 'p50', fast.p50, TARGET_MS, ms);
    scorecard.add(c.name, 'equal to plain SQL GROUP BY', equal ? 'equal' : 'different', equal);
  }

  // Generated queries: a word or two of the corpus's common words, a filter or two, any grouping.
  let seed = 12_345;
  const rnd = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  let equal = 0;
  const differing: string[] = [];
  for (let i = 0; i < equalRuns; i++) {
    const args: Record<string, unknown> = { groupBy: pick(GROUP_BY), limit: 1 + Math.floor(rnd() * 100) };
    const words = COMMON_WORDS.slice(18);
    if (rnd() < 0.8) args.q = rnd() < 0.5 ? pick(words) : `${pick(words)} ${rnd() < 0.5 ? 'OR ' : '-'}${pick(words)}`;
    if (rnd() < 0.3) args.from = `${2014 + Math.floor(rnd() * 8)}-01-01`;
    if (rnd() < 0.3) args.direction = pick(['incoming', 'outgoing']);
    const aggregate = parseAggregateInput(args);
    const same = isDeepStrictEqual(
      aggregateEmails(db, admin, aggregate),
      aggregateEmails(db, admin, aggregate, { reference: true }),
    );
    if (same) equal++;
    else differing.push(JSON.stringify(args));
  }
  console.log('');
  console.log(
    `Generated queries equal to plain SQL GROUP BY: ${equal} of ${equalRuns}.${differing.length ? ` Different: ${differing.join(' ')}` : ''}`,
  );
  scorecard.add(
    `${equalRuns} generated queries`,
    'equal to plain SQL GROUP BY',
    `${equal} of ${equalRuns}`,
    equal === equalRuns,
  );
  console.log('');
  console.log('## Targets');
  console.log('');
  scorecard.print();
  adoptSnapshot(db, undefined);
  poster.close();
  db.close();
}

await main();
