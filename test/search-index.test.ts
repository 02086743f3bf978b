// The shared in-memory search index (engine/search/bitsets): every count and every page it
// gives equals what plain SQL gives, and it is never used once the archive has moved on
// (new mail, rewritten mail), while permission changes apply at once.
import test from 'ava';
import fc from 'fast-check';
import { openArchive, type Db } from '../engine/sqlite/open.js';
import { buildSnapshot } from '../engine/sqlite/index-build.js';
import { extendSnapshot } from '../engine/sqlite/index-extend.js';
import { adoptSnapshot, currentSnapshot } from '../engine/sqlite/index-share.js';
import { pack, setBytes, Snapshot, wordsFor } from '../engine/search/bitsets/snapshot.js';
import { newPostCount, postSnapshot, SnapshotFollower } from '../engine/search/bitsets/share.js';
import { BroadcastChannel } from 'node:worker_threads';
import { countMatches } from '../engine/search/bitsets/count.js';
import type { Leaf, LeafSource } from '../engine/search/bitsets/source.js';
import { FtsSource } from '../engine/sqlite/fts-source.js';
import { addPrefixTails, TAIL_MIN_COST_US, type TailCost } from '../engine/search/bitsets/tails.js';
import type { TermSet } from '../engine/search/bitsets/snapshot.js';
import { SIDE_INDEX_TAIL_COST } from '../engine/postgres/search-snapshot.js';
import { parseQuery } from '../shared/query-language.js';
import { exactCount, RELEVANCE_WINDOW, searchEmails } from '../engine/sqlite/search.js';
import { addAccount } from '../engine/sqlite/accounts.js';
import { createKey } from '../engine/sqlite/keys.js';
import { addUser, assignAccount, unassignAccount } from '../engine/sqlite/users.js';
import { ArchiveWriter } from '../engine/sqlite/writer.js';
import type { SearchQuery } from '../shared/jobs.js';
import { parseSearchInput } from '../shared/search-input.js';
import { bearer, startApi } from './helpers/api.js';
import { createFixture, email, tempDir } from './helpers/fixture.js';

const limits = { defaultPageSize: 20, maxPageSize: 100 };
const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'omega', 'zeta', 'müller', 'report', 'repo', 'reply'];
const FOLDERS = ['INBOX', 'Sent', 'Archive/2020'];
const DAY = 86_400_000;
const START = Date.parse('2020-01-01T00:00:00Z');

/** A few hundred messages over a small vocabulary, so that common and rare words both occur. */
function buildArchive(db: Db, count: number, seed = 1): { accounts: number[] } {
  const accounts = [1, 2, 3].map((i) => addAccount(db, { name: `acct${i}`, emailAddress: `acct${i}@x.com` }).id);
  addMessages(db, accounts, count, seed, WORDS);
  return { accounts };
}

function addMessages(db: Db, accounts: number[], count: number, seed: number, vocabulary: readonly string[]): void {
  const WORDS = vocabulary;
  let s = seed;
  const rnd = () => (s = (s * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const zipf = () => WORDS[Math.min(WORDS.length - 1, Math.floor(WORDS.length * rnd() * rnd()))]!;
  const writer = new ArchiveWriter(db);
  writer.batch(() => {
    for (let i = 0; i < count; i++) {
      const body = Array.from({ length: 3 + Math.floor(rnd() * 8) }, zipf).join(' ');
      writer.add(
        email({
          accountId: pick(accounts),
          folder: pick(FOLDERS),
          subject: `${zipf()} ${zipf()}`,
          from: `${pick(['ann', 'bob', 'cy'])}@x.com`,
          to: `${pick(['dee', 'eve'])}@y.org`,
          textBody: body,
          // Some share a second, so that order within a second is exercised too.
          sentDate: START + Math.floor(rnd() * 400) * DAY + (i % 3) * 1000,
          receivedDate: START + Math.floor(rnd() * 400) * DAY,
          isOutgoing: rnd() < 0.3,
          attachments:
            rnd() < 0.2
              ? [{ fileName: `${zipf()}.pdf`, contentType: 'application/pdf', content: Buffer.from('x') }]
              : [],
        }),
      );
    }
  });
}

/** Runs `work` on a new archive file, removed afterwards. */
function withArchive(work: (db: Db) => void): void {
  const { dir, cleanup } = tempDir();
  const db = openArchive(`${dir}/a.db`);
  try {
    work(db);
  } finally {
    db.close();
    cleanup();
  }
}

/** Whether a search gives the same count and page with `snap` adopted as with plain SQL. */
function sameAsSql(db: Db, snap: Snapshot, viewer: { isAdmin: boolean; userId: number }, query: SearchQuery): boolean {
  adoptSnapshot(db, snap);
  const fast = searchEmails(db, viewer, query);
  adoptSnapshot(db, undefined);
  const slow = searchEmails(db, viewer, query, { reference: true });
  return (
    fast.totalItems === slow.totalItems &&
    JSON.stringify(fast.items.map((i) => i.id)) === JSON.stringify(slow.items.map((i) => i.id))
  );
}

const term = fc.oneof(
  fc.constantFrom(...WORDS, 'absent', 'MÜLLER', 'Muller'),
  fc.constantFrom(...WORDS).map((w) => `${w.slice(0, 3)}*`),
  fc.constantFrom(...WORDS).map((w) => `subject:${w}`),
  fc.constantFrom('from:ann@x.com', 'to:eve@y.org', 'from:bob', 'has:attachment', 'filename:alpha'),
  fc.tuple(fc.constantFrom(...WORDS), fc.constantFrom(...WORDS)).map(([a, b]) => `"${a} ${b}"`),
  // Conversations (groupConversations); ids past the archive name none.
  fc.integer({ min: 1, max: 620 }).map((id) => `thread:${id}`),
);

/**
 * Groups the generated mail into conversations of up to 7 messages per account, as merges leave
 * them: thread_id is written directly, which neither the snapshot nor the rewrite counter sees.
 */
function groupConversations(db: Db): void {
  db.exec(`UPDATE emails SET thread_id = (SELECT min(o.id) FROM emails o
             WHERE o.account_id = emails.account_id AND o.id / 7 = emails.id / 7)`);
}
const q = fc.oneof(
  term,
  fc.tuple(term, term).map(([a, b]) => `${a} ${b}`),
  fc.tuple(term, term).map(([a, b]) => `${a} OR ${b}`),
  fc.tuple(term, term).map(([a, b]) => `${a} -${b}`),
  term.map((a) => `-${a}`),
  fc.tuple(term, term, term).map(([a, b, c]) => `(${a} OR ${b}) ${c}`),
);
const params = fc.record(
  {
    q,
    accountId: fc.constantFrom('1', '2', '3', '99'),
    folder: fc.constantFrom(...FOLDERS),
    direction: fc.constantFrom('incoming', 'outgoing'),
    range: fc.tuple(fc.integer({ min: 0, max: 400 }), fc.integer({ min: 0, max: 200 })),
    sortBy: fc.constantFrom('sentDate', 'receivedDate', 'subject', 'from', 'to', 'relevance'),
    sortOrder: fc.constantFrom('asc', 'desc'),
    page: fc.constantFrom('1', '2', '4'),
    pageSize: fc.constantFrom('5', '20'),
  },
  { requiredKeys: [] },
);

function toInput(p: Record<string, unknown>): Record<string, string> {
  const { range, ...rest } = p as Record<string, unknown> & { range?: [number, number] };
  const out = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, String(v)]));
  if (range) {
    out.from = new Date(START + range[0] * DAY).toISOString();
    out.to = new Date(START + (range[0] + range[1]) * DAY).toISOString();
  }
  return out;
}

for (const [name, minDocs, tailMinCostUs] of [
  ['most words kept', 3, undefined],
  ['nothing kept: every term asked of FTS5', 1_000_000_000, undefined],
  ['the common words kept, a prefix tail for every prefix', 60, 0],
] as const) {
  test(`counts and pages equal SQL's for generated searches (${name})`, (t) => {
    withArchive((db) => {
      const { accounts } = buildArchive(db, 600);
      groupConversations(db);
      addUser(db, { username: 'ruth', isAdmin: false });
      assignAccount(db, 'ruth', accounts[1]!);
      addUser(db, { username: 'nobody', isAdmin: false });
      const userId = (u: string) => db.prepare('SELECT id FROM users WHERE username = ?').pluck().get(u) as number;
      const viewers = [
        { isAdmin: true, userId: 0 },
        { isAdmin: false, userId: userId('ruth') },
        { isAdmin: false, userId: userId('nobody') },
      ];
      const snap = new Snapshot(
        buildSnapshot(db, { minDocs, ...(tailMinCostUs === undefined ? {} : { tailMinCostUs }) }),
      );
      t.is(snap.maxId, 600);
      if (minDocs === 3) t.true(snap.terms > 20, `only ${snap.terms} terms kept`);
      else if (tailMinCostUs === 0)
        t.truthy(snap.term('p:re'), 'a tail for re*: repo, reply and report are not all kept');
      else t.is(snap.terms, 0);
      let runs = 0;
      fc.assert(
        fc.property(params, fc.constantFrom(0, 1, 2), (p, v) => {
          const query = parseSearchInput(toInput(p), limits);
          const viewer = viewers[v]!;
          runs++;
          return sameAsSql(db, snap, viewer, query);
        }),
        { numRuns: 1500, seed: 20261123 },
      );
      t.is(runs, 1500);
    });
  });
}

test('a prefix counts every message of its words kept as lists of ids, and of its tail', (t) => {
  withArchive((db) => {
    const { accounts } = buildArchive(db, 600);
    // Under `qu`: quill and quince are kept (3 messages or more) as lists of ids (far fewer than
    // the 19 words of bits a bitset of 600 messages takes); quoit (2 messages) is in the tail.
    // The first message of each word has no other word of the prefix, so a word read from its
    // second id on, or a tail left out, changes the count.
    const writer = new ArchiveWriter(db);
    writer.batch(() => {
      for (const [word, n] of [
        ['quill', 4],
        ['quince', 3],
        ['quoit', 2],
      ] as const)
        for (let i = 0; i < n; i++)
          writer.add(email({ accountId: accounts[i % 3]!, subject: `about ${word}`, textBody: `${word} ${i}` }));
    });
    const snap = new Snapshot(buildSnapshot(db, { minDocs: 3, tailMinCostUs: 0 }));
    for (const word of ['quill', 'quince']) {
      const set = snap.term(`d:${word}`);
      t.is(set?.kind, 'ids', `${word} is kept as a list of ids`);
    }
    t.is(snap.term('d:quoit'), undefined);
    t.truthy(snap.term('p:qu'), 'quoit is in the tail of qu*');
    const admin = { isAdmin: true, userId: 0 };
    for (const q of ['qu*', 'qui*', 'quo*', 'quill OR quoit']) {
      const query = parseSearchInput({ q }, limits);
      t.true(sameAsSql(db, snap, admin, query), q);
    }
    adoptSnapshot(db, snap);
    t.is(searchEmails(db, admin, parseSearchInput({ q: 'qu*' }, limits)).totalItems, 9);
  });
});

/**
 * An archive with three words under `qu`, and a snapshot that keeps nothing of them and no tail:
 * every word under the prefix is the store's to list.
 */
function prefixLeftToStore(db: Db): Snapshot {
  const { accounts } = buildArchive(db, 100);
  const writer = new ArchiveWriter(db);
  writer.batch(() => {
    for (const word of ['quill', 'quince', 'quoit'])
      writer.add(email({ accountId: accounts[0]!, subject: `about ${word}`, textBody: word }));
  });
  return new Snapshot(buildSnapshot(db, { minDocs: 1_000_000, tailMinCostUs: Number.MAX_SAFE_INTEGER }));
}

test('a prefix asks the store once for all its words the index does not keep', (t) => {
  withArchive((db) => {
    // A store whose every question is a round trip (PostgreSQL) must be asked once, not once per word.
    const snap = prefixLeftToStore(db);
    t.is(snap.term('p:qu'), undefined);
    const fts = new FtsSource(db);
    const asked: Leaf[] = [];
    const source: LeafSource = { ids: (leaf, s) => (asked.push(leaf), fts.ids(leaf, s)) };
    const query = parseSearchInput({ q: 'qu*' }, limits);
    const counted = countMatches(source, snap, null, query, parseQuery('qu*'));
    t.is(asked.length, 1);
    t.deepEqual(asked[0], { kind: 'words', words: ['quill', 'quince', 'quoit'] });
    t.is(counted?.total, 3);
    t.true(sameAsSql(db, snap, { isAdmin: true, userId: 0 }, query));
  });
});

test('the words a prefix leaves to the store are asked once per snapshot when that took a while, as a word is', (t) => {
  withArchive((db) => {
    const snap = prefixLeftToStore(db);
    const fts = new FtsSource(db);
    const asked: Leaf[] = [];
    // A store slow enough for the leaf cache (it keeps answers that took 2 ms or more).
    const source: LeafSource = {
      ids: (leaf, s) => {
        asked.push(leaf);
        for (const started = performance.now(); performance.now() - started < 3;);
        return fts.ids(leaf, s);
      },
    };
    const first = parseSearchInput({ q: 'qu*' }, limits);
    // Another search with the same prefix: its next page, or another sort.
    const second = parseSearchInput({ q: 'qu*', sortBy: 'subject', page: 2, pageSize: 1 }, limits);
    t.is(countMatches(source, snap, null, first, parseQuery('qu*'))?.total, 3);
    t.is(countMatches(source, snap, null, second, parseQuery('qu*'))?.total, 3);
    t.deepEqual(
      asked,
      [{ kind: 'words', words: ['quill', 'quince', 'quoit'] }],
      'the second search found the answer kept',
    );
    t.true(sameAsSql(db, snap, { isAdmin: true, userId: 0 }, second));
  });
});

test('a budget short of every common word pair keeps the pairs of the commonest pair words, and phrases stay exact', (t) => {
  withArchive((db) => {
    buildArchive(db, 400);
    const full = new Snapshot(buildSnapshot(db, { minDocs: 3 }));
    const size = (key: string) => setBytes(full.term(key)!);
    const pairWords = full.termKeys.filter((k) => k.startsWith('w:')).map((k) => k.slice(2));
    const pairKeys = full.termKeys.filter((k) => k.startsWith('b:'));
    t.true(pairWords.length >= 3, 'the archive has common words to pair');
    const single = full.termKeys.filter((k) => !k.startsWith('b:')).reduce((n, k) => n + size(k), 0);
    const pairBytes = pairKeys.reduce((n, k) => n + size(k), 0);
    // Room for every single word and half the pairs' bytes: before, no pair at all was kept.
    const part = new Snapshot(buildSnapshot(db, { minDocs: 3, maxBytes: single + Math.floor(pairBytes / 2) }));
    const kept = part.termKeys.filter((k) => k.startsWith('w:')).map((k) => k.slice(2));
    t.true(kept.length > 0 && kept.length < pairWords.length, `${kept.length} of ${pairWords.length} pair words`);
    t.deepEqual(kept, pairWords.slice(0, kept.length), 'the commonest pair words first');
    const both = (key: string) =>
      key
        .slice(2)
        .split(' ')
        .every((w) => kept.includes(w));
    t.deepEqual(
      part.termKeys.filter((k) => k.startsWith('b:')),
      pairKeys.filter(both),
      'every pair of two kept words, and no other',
    );
    const admin = { isAdmin: true, userId: 0 };
    for (const first of pairWords)
      for (const second of pairWords) {
        const query = parseSearchInput({ q: `"${first} ${second}"` }, limits);
        t.true(sameAsSql(db, part, admin, query), `"${first} ${second}"`);
      }
  });
});

test('positionOfKey finds a full-text rowid from any start at or before it, and where a missing one would go', (t) => {
  // It gallops from `from` (a word's rowids come ascending, close together); a rowid it does not
  // find is how FtsSource tells the archive has moved past the snapshot.
  fc.assert(
    fc.property(fc.uniqueArray(fc.integer({ min: 1, max: 400 }), { maxLength: 120 }), fc.nat(), (raw, pick) => {
      const keys = Float64Array.from(raw.sort((a, b) => a - b));
      const rows = keys.length;
      const maxId = rows;
      const snap = new Snapshot(
        pack({
          maxId,
          rewrites: 0,
          sent: new Float64Array(maxId + 1),
          keys,
          ids: Int32Array.from(keys, (_, i) => i + 1),
          orders: {
            receivedDate: new Int32Array(rows),
            subject: new Int32Array(rows),
            from: new Int32Array(rows),
            to: new Int32Array(rows),
          },
          universe: new Uint32Array(wordsFor(maxId)),
          terms: [],
          vocab: [],
          buildMs: 0,
        }),
      );
      for (let i = 0; i < rows; i++) t.is(snap.positionOfKey(keys[i]!, pick % (i + 1)), i);
      for (let key = 0; key <= 401; key++) {
        if (keys.includes(key)) continue;
        const insertion = keys.findIndex((k) => k > key);
        t.is(snap.positionOfKey(key, 0), -1 - (insertion < 0 ? rows : insertion));
      }
    }),
    { numRuns: 60 },
  );
});

test('new mail is counted at once: the index steps aside until it has caught up', (t) => {
  withArchive((db) => {
    const { accounts } = buildArchive(db, 200);
    adoptSnapshot(db, new Snapshot(buildSnapshot(db, { minDocs: 3 })));
    const query = parseSearchInput({ q: 'alpha' }, limits);
    const admin = { isAdmin: true, userId: 0 };
    const before = searchEmails(db, admin, query).totalItems;
    t.truthy(currentSnapshot(db));
    const writer = new ArchiveWriter(db);
    const id = writer.batch(() =>
      writer.add(email({ accountId: accounts[0]!, subject: 'alpha arrives', textBody: 'x' })),
    );
    t.is(currentSnapshot(db), undefined);
    const after = searchEmails(db, admin, query);
    t.is(after.totalItems, before + 1);
    t.is(after.totalItems, exactCount(db, admin, query));
    t.is(after.items[0]?.id, id ?? -1, 'the newest message leads the date order');
  });
});

test('rewritten or deleted mail makes the index step aside (rewrite counter)', (t) => {
  withArchive((db) => {
    buildArchive(db, 200);
    adoptSnapshot(db, new Snapshot(buildSnapshot(db, { minDocs: 3 })));
    const admin = { isAdmin: true, userId: 0 };
    const query = parseSearchInput({ q: 'beta' }, limits);
    const before = searchEmails(db, admin, query).totalItems;
    const victim = searchEmails(db, admin, query).items[0]!.id;
    db.prepare('DELETE FROM email_bodies WHERE email_id = ?').run(victim);
    db.prepare('DELETE FROM emails WHERE id = ?').run(victim);
    t.is(currentSnapshot(db), undefined);
    t.is(searchEmails(db, admin, query).totalItems, before - 1);
    const other = searchEmails(db, admin, query).items[0]!.id;
    db.prepare("UPDATE emails SET subject = 'nothing here' WHERE id = ?").run(other);
    t.is(searchEmails(db, admin, query).totalItems, exactCount(db, admin, query));
  });
});

test('a permission change applies to the next search, with the index still in use', (t) => {
  withArchive((db) => {
    const { accounts } = buildArchive(db, 300);
    addUser(db, { username: 'ruth', isAdmin: false });
    const ruth = {
      isAdmin: false,
      userId: db.prepare("SELECT id FROM users WHERE username = 'ruth'").pluck().get() as number,
    };
    adoptSnapshot(db, new Snapshot(buildSnapshot(db, { minDocs: 3 })));
    const query = parseSearchInput({ q: 'gamma OR delta' }, limits);
    t.is(searchEmails(db, ruth, query).totalItems, 0);
    assignAccount(db, 'ruth', accounts[0]!);
    t.truthy(currentSnapshot(db), 'permissions are not part of the snapshot');
    const one = searchEmails(db, ruth, query).totalItems;
    t.true(one > 0);
    t.is(one, exactCount(db, ruth, query));
    assignAccount(db, 'ruth', accounts[2]!);
    const two = searchEmails(db, ruth, query).totalItems;
    t.true(two > one);
    t.is(two, exactCount(db, ruth, query));
    unassignAccount(db, 'ruth', accounts[0]!);
    t.is(searchEmails(db, ruth, query).totalItems, exactCount(db, ruth, query));
    t.true(searchEmails(db, ruth, query).totalItems < two);
  });
});

test('through the gateway: the pool builds the index, shares it, and catches up after an import', async (t) => {
  const fixture = createFixture();
  const api = await startApi({}, { useFixture: fixture });
  try {
    const ready = async (predicate: (index: Record<string, unknown>) => boolean) => {
      for (let i = 0; i < 200; i++) {
        const index = (await api.request.get('/readyz')).body.checks.searchIndex as Record<string, unknown> | undefined;
        if (index && predicate(index)) return index;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error('the search index did not get there');
    };
    const first = await ready((i) => i.status === 'current');
    t.true((first.bytes as number) > 0);
    const search = async () =>
      (await api.request.get('/api/v1/emails?q=quarterly').set(bearer(fixture.keys.admin)).expect(200)).body as {
        totalItems: number;
      };
    const before = (await search()).totalItems;
    const db = api.db();
    const writer = new ArchiveWriter(db);
    writer.batch(() => writer.add(email({ accountId: fixture.accounts.work, subject: 'quarterly figures, again' })));
    t.is((await search()).totalItems, before + 1, 'counted by SQL while the index catches up');
    const caughtUp = await ready((i) => i.status === 'current' && (i.maxId as number) > (first.maxId as number));
    t.true((caughtUp.maxId as number) > (first.maxId as number));
    t.is((await search()).totalItems, before + 1, 'and by the index once it has');
  } finally {
    await api.close();
    fixture.cleanup();
  }
});

test('Engine:SearchMemoryMB = 0 turns the index off', async (t) => {
  const api = await startApi({ Engine: { SearchMemoryMB: 0 } });
  try {
    const res = await api.request.get('/readyz').expect(200);
    t.is(res.body.checks.searchIndex, undefined);
    const key = createKey(api.db(), { username: 'admin', name: 'x' }).key;
    const found = await api.request.get('/api/v1/emails?q=quarterly').set(bearer(key)).expect(200);
    t.true(found.body.totalItems > 0);
  } finally {
    await api.close();
  }
});

test('relevance ranks the newest RELEVANCE_WINDOW matches, subject hits first, then the older ones by date', (t) => {
  withArchive((db) => {
    const account = addAccount(db, { name: 'a', emailAddress: 'a@x.com' }).id;
    const writer = new ArchiveWriter(db);
    const total = RELEVANCE_WINDOW + 500;
    const strong = new Set<number>();
    writer.batch(() => {
      for (let i = 0; i < total; i++) {
        // Every 97th message has "alpha" in its subject: those lead the window.
        const id = writer.add(
          email({
            accountId: account,
            subject: i % 97 === 0 ? `alpha note ${i}` : `note ${i}`,
            textBody: `alpha and a long ${'filler '.repeat(20)}`,
            sentDate: START + i * 60_000,
          }),
        )!;
        if (i % 97 === 0 && i >= total - RELEVANCE_WINDOW) strong.add(id);
      }
    });
    const admin = { isAdmin: true, userId: 0 };
    const all = (sortOrder: string, snap: Snapshot | undefined, pageSize = '100') => {
      adoptSnapshot(db, snap);
      const ids: number[] = [];
      for (let page = 1; ; page++) {
        const res = searchEmails(
          db,
          admin,
          parseSearchInput({ q: 'alpha', sortBy: 'relevance', sortOrder, page: String(page), pageSize }, limits),
        );
        t.is(res.totalItems, total);
        if (res.items.length === 0) return ids;
        ids.push(...res.items.map((i) => i.id));
      }
    };
    const desc = all('desc', undefined);
    t.is(desc.length, total);
    t.is(new Set(desc).size, total, 'every match once');
    const byDate = [...desc].sort((a, b) => b - a); // ids ascend with sent date here
    t.deepEqual(
      desc.slice(0, strong.size),
      [...strong].sort((a, b) => b - a),
      'subject hits lead, newest first',
    );
    t.deepEqual(
      desc.slice(strong.size, RELEVANCE_WINDOW),
      byDate.slice(0, RELEVANCE_WINDOW).filter((id) => !strong.has(id)),
      'then the rest of the window, newest first',
    );
    t.deepEqual(desc.slice(RELEVANCE_WINDOW), byDate.slice(RELEVANCE_WINDOW), 'older matches follow, newest first');
    t.deepEqual(all('asc', undefined), [...desc].reverse(), 'ascending is the reverse');
    // The index lists the window itself (page.ts); pages of 70 cross both of its edges mid-page.
    const snap = new Snapshot(buildSnapshot(db, { minDocs: 3 }));
    t.deepEqual(all('desc', snap), desc, 'the same with the index');
    t.deepEqual(all('desc', snap, '70'), desc, 'the same with the index, pages of 70');
    t.deepEqual(all('asc', snap, '70'), [...desc].reverse(), 'ascending with the index, pages of 70');
  });
});

test('relevance weighs rarer words more, on both paths, and follows an import that changes how rare they are', (t) => {
  withArchive((db) => {
    const account = addAccount(db, { name: 'a', emailAddress: 'a@x.com' }).id;
    const writer = new ArchiveWriter(db);
    const add = (subject: string, body: string, i: number) =>
      writer.add(email({ accountId: account, subject, textBody: body, sentDate: START + i * 60_000 }))!;
    // "kiwi" is in 3 messages, "plum" in 40: kiwi weighs more (ln(100.5/3.5) against ln(63.5/40.5),
    // so even in a body it outweighs plum in a subject). One message has each in its subject.
    let n = 0;
    const kiwi = add('kiwi', 'fruit salad', n++);
    const plum = add('plum', 'fruit salad', n++);
    writer.batch(() => {
      for (let i = 0; i < 2; i++) add('other', 'kiwi and fruit', n++);
      for (let i = 0; i < 39; i++) add('other', 'plum and fruit', n++);
      for (let i = 0; i < 60; i++) add('other', 'just fruit', n++);
    });
    const admin = { isAdmin: true, userId: 0 };
    const top = () =>
      searchEmails(
        db,
        admin,
        parseSearchInput({ q: 'kiwi OR plum', sortBy: 'relevance', pageSize: '100' }, limits),
      ).items.map((i) => i.id);
    const both = () => {
      adoptSnapshot(db, undefined);
      const sql = top();
      adoptSnapshot(db, new Snapshot(buildSnapshot(db, { minDocs: 3 })));
      const indexed = top();
      adoptSnapshot(db, undefined);
      t.deepEqual(indexed, sql, 'the index ranks as SQL does');
      return sql;
    };
    const before = both();
    t.is(before[0], kiwi, 'the rarer word, in the subject, first');
    t.true(before.indexOf(plum) > 2, 'after the two messages with kiwi in the body');
    // An import makes kiwi the common one: plum now leads. A cached document count would not see it.
    writer.batch(() => {
      for (let i = 0; i < 80; i++) add('other', 'kiwi again', n++);
    });
    const after = both();
    t.is(after[0], plum);
    t.true(after.indexOf(kiwi) > 39, 'after every message with plum');
  });
});

test('appended mail extends the snapshot: counts and pages equal SQL, and its sets equal a full build', (t) => {
  withArchive((db) => {
    const { accounts } = buildArchive(db, 400);
    const options = { minDocs: 20, tailMinCostUs: 0 };
    const before = new Snapshot(buildSnapshot(db, options));
    // New words too: a new common one, accented ones, and more under the prefix `rep`.
    addMessages(db, accounts, 240, 7, WORDS);
    const writer = new ArchiveWriter(db);
    writer.batch(() => {
      for (let i = 0; i < 10; i++)
        writer.add(
          email({
            accountId: accounts[i % 3]!,
            subject: i % 2 ? 'novaword alpha' : 'Ångström repertoire',
            textBody: i % 3 ? 'repast beta' : 'müller novaword',
            sentDate: START + i * DAY,
          }),
        );
    });
    const buffer = extendSnapshot(db, before);
    t.truthy(buffer);
    const extended = new Snapshot(buffer!);
    t.is(extended.maxId, 650);
    const added = extended.termKeys.filter((k) => !before.termKeys.includes(k));
    t.true(
      added.every((k) => k.startsWith('b:')),
      `the same words are kept; only word pairs seen for the first time are new: ${added.join(', ')}`,
    );
    adoptSnapshot(db, extended);
    t.truthy(currentSnapshot(db));

    const full = new Snapshot(buildSnapshot(db, options));
    const members = (set: ReturnType<Snapshot['term']>) =>
      set!.kind === 'ids'
        ? [...set!.ids]
        : [...Array(650 + 1).keys()].filter((id) => (set!.bits[id >>> 5]! & (1 << (id & 31))) !== 0);
    let compared = 0;
    for (const key of extended.termKeys) {
      // Tails depend on which words are kept (a full build may choose others); a pair's set does not.
      if (!full.term(key) || key.startsWith('p:') || key.startsWith('w:')) continue;
      t.deepEqual(members(extended.term(key)), members(full.term(key)), key);
      compared++;
    }
    t.true(compared > 20);
    t.deepEqual([...extended.keys], [...full.keys]);
    t.deepEqual([...extended.ids], [...full.ids]);
    t.true(
      extended.vocab.includes('angstrom') && extended.vocab.includes('novaword'),
      'new words are in the word list',
    );

    const admin = { isAdmin: true, userId: 0 };
    fc.assert(
      fc.property(
        fc.oneof(params, fc.constant({ q: 'novaword' }), fc.constant({ q: 'rep*' }), fc.constant({ q: 'Angs*' })),
        (p) => {
          const query = parseSearchInput(toInput(p), limits);
          return sameAsSql(db, extended, admin, query);
        },
      ),
      { numRuns: 800, seed: 7 },
    );
    db.prepare('UPDATE emails SET subject = ? WHERE id = 1').run('changed');
    t.is(extendSnapshot(db, extended), undefined, 'a rewrite needs a full build');
  });
});

test('a store whose rare-word answers cost more gets tail sets for more prefixes (PostgreSQL side index)', (t) => {
  // 200 rare words under `tast`, 10 messages each: 4.8 ms of FTS5 queries (no tail), but more
  // than the 5 ms threshold for the side index, whose answer visits a heap page per message.
  const vocab = new Set(Array.from({ length: 200 }, (_, i) => `taster${i}`));
  const bound = new Map([...vocab].map((w) => [`d:${w}`, 10]));
  const build = (cost?: TailCost) => {
    const terms: Array<{ key: string; set: TermSet }> = [];
    addPrefixTails({
      vocab,
      bound,
      terms,
      budget: 1 << 20,
      words: 2000,
      minCostUs: TAIL_MIN_COST_US,
      ...(cost ? { cost } : {}),
      fetch: (word) => Int32Array.from({ length: 10 }, (_, i) => Number(word.slice(6)) * 10 + i),
    });
    return new Map(terms.map((x) => [x.key, x.set]));
  };
  t.false(build().has('p:tast'));
  const tails = build(SIDE_INDEX_TAIL_COST);
  t.is(tails.get('p:tast')?.docs, 2000);
  t.is(tails.get('p:t')?.docs, 2000);
});

test('a thread keeps its view of a snapshot posted again (the builder posts it to each new thread, and with each PostgreSQL token)', async (t) => {
  const { dir, cleanup } = tempDir();
  const db = openArchive(`${dir}/a.db`);
  const channel = `mag-test-repost-${process.pid}`;
  const builder = new BroadcastChannel(channel);
  const posted = newPostCount();
  const follower = new SnapshotFollower(channel, posted);
  /** Posts and waits until the follower has taken it (its token is the mark). */
  const post = async (buffer: SharedArrayBuffer, token: string) => {
    postSnapshot(builder, posted, { buffer, token });
    while (follower.latest()?.token !== token) await new Promise((r) => setTimeout(r, 5));
    return follower.latest()!.snapshot;
  };
  try {
    buildArchive(db, 50);
    const buffer = buildSnapshot(db, { minDocs: 1 });
    const first = await post(buffer, 't1');
    // Reading a snapshot's dictionary costs 35 ms per thread at a million messages: a thread that
    // read it again at each post paid that on the next user's search.
    t.is(await post(buffer, 't2'), first, 'the same buffer posted again keeps the view');
    const other = buildSnapshot(db, { minDocs: 1 });
    t.not(await post(other, 't3'), first, 'another buffer is another view');
  } finally {
    follower.close();
    builder.close();
    db.close();
    cleanup();
  }
});
