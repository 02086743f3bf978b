// A phrase inside attachment text costs a bounded amount per message (docs/security.md, "Mail shaped by an attacker", 2):
// a message whose attachment text is longer than Engine:PhraseScanWords words is matched within
// its first that many words, every other message by FTS5 as before. Shown with a bound of 1,000
// words so that the texts stay small. On PostgreSQL (TEST_STORE=postgres, the REST test) a phrase
// is matched in the side index's tsvector, whose format bounds what one message costs: at most
// 256 positions per word, so there too the phrase past 400 repetitions of its words is not found,
// and the count agrees with the page (docs/search.md, "Differences").
import test from 'ava';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Extractor } from '../engine/attachments/extractor.js';
import { reindexAttachments } from '../engine/attachments/index-texts.js';
import { openArchive } from '../engine/sqlite/open.js';
import { importPaths } from '../engine/import/importer.js';
import { setPhraseScanWords, DEFAULT_PHRASE_SCAN_WORDS } from '../engine/sqlite/attachment-phrase.js';
import { buildSnapshot } from '../engine/sqlite/index-build.js';
import { adoptSnapshot, currentSnapshot } from '../engine/sqlite/index-share.js';
import { Snapshot } from '../engine/search/bitsets/snapshot.js';
import { searchEmails } from '../engine/sqlite/search.js';
import { parseSearchInput } from '../shared/search-input.js';
import { bearer, startApi } from './helpers/api.js';
import { eml } from './helpers/attachment-mail.js';
import { createFixture } from './helpers/fixture.js';
import { TEST_STORE, withAdmin } from './helpers/store.js';

const BOUND = 1_000;
const PHRASE = 'alpha bravo charlie delta';
/** Every word of the phrase, never in its order: a message holding it is a candidate FTS5 must check. */
const filler = (words: number) => 'delta charlie bravo alpha zulu '.repeat(words / 5);

/**
 * Attachment texts by message: the phrase first, only past the bound, in a short text, at the end
 * of a text under the bound whose token count takes as many bytes as a long one's (FTS5 checks it
 * alone), or nowhere.
 */
const TEXTS = {
  early: `${PHRASE} ${filler(3 * BOUND)}`,
  late: `${filler(2 * BOUND)} ${PHRASE}`,
  short: `see ${PHRASE} here`,
  medium: `${filler(300)} end ${PHRASE}`,
  none: filler(3 * BOUND),
};

async function archive() {
  const fixture = createFixture();
  const db = openArchive(fixture.dbPath);
  const ids: Record<string, number> = {};
  try {
    for (const [key, text] of Object.entries(TEXTS)) {
      const path = join(fixture.dir, `${key}.eml`);
      const part = { name: `${key}.txt`, type: 'text/plain', data: Buffer.from(text) };
      writeFileSync(path, eml(`Phrase ${key}`, 'See the attachment.', [part], `phrase-${key}`));
      await importPaths(db, [path], { accountId: fixture.accounts.work });
      ids[key] = db.prepare('SELECT id FROM emails WHERE message_id = ?').pluck().get(`<phrase-${key}@test>`) as number;
    }
  } finally {
    db.close();
  }
  return { fixture, ids };
}

const built = archive();
test.after.always(async () => (await built).fixture.cleanup());

// The engine itself, on the SQLite fixture (the REST test below runs on either store).
if (TEST_STORE === 'sqlite')
  test.serial(
    'a phrase over a long attachment text is matched within Engine:PhraseScanWords words, by the index and by SQL alike',
    async (t) => {
      const { fixture, ids } = await built;
      const db = openArchive(fixture.dbPath);
      setPhraseScanWords(BOUND);
      t.teardown(() => {
        setPhraseScanWords(DEFAULT_PHRASE_SCAN_WORDS);
        adoptSnapshot(db, undefined);
        db.close();
      });
      const admin = { isAdmin: true, userId: 0 };
      const found = (q: string, options = {}) => {
        const result = searchEmails(
          db,
          admin,
          parseSearchInput({ q }, { defaultPageSize: 20, maxPageSize: 100 }),
          options,
        );
        const items = result.items.map((i) => i.id).sort((a, b) => a - b);
        t.is(result.totalItems, items.length, `${q}: the count is what the page holds`);
        return items;
      };
      const within = [ids.early!, ids.short!, ids.medium!].sort((a, b) => a - b);
      const everyCandidate = [ids.early!, ids.late!, ids.short!, ids.medium!, ids.none!].sort((a, b) => a - b);
      const check = (options: object) => {
        t.deepEqual(found(`attachment:"${PHRASE}"`, options), within, 'the late phrase is past the bound');
        t.deepEqual(found('attachment:"alpha bravo char"*', options), within, 'a phrase ending in a prefix');
        t.deepEqual(found('attachment:"zulu alpha"', options).length, 0, 'nowhere in order');
        t.deepEqual(
          found('attachment:"charlie bravo"', options),
          [ids.early!, ids.late!, ids.medium!, ids.none!].sort((a, b) => a - b),
        );
        // One word has no positions to compare: found anywhere in the text, as before.
        t.deepEqual(found('attachment:delta', options), everyCandidate);
        t.deepEqual(
          found(`attachment:"${PHRASE}" OR subject:late`, options),
          [...within, ids.late!].sort((a, b) => a - b),
        );
        t.deepEqual(
          found(`-attachment:"${PHRASE}" attachment:zulu`, options),
          [ids.late!, ids.none!].sort((a, b) => a - b),
        );
      };
      check({ reference: true }); // SQL
      adoptSnapshot(db, new Snapshot(buildSnapshot(db, { minDocs: 1 })));
      t.truthy(currentSnapshot(db));
      check({}); // the in-memory index

      // Lifting the bound finds the late phrase too: the cut is the bound's, nothing else's.
      setPhraseScanWords(10 * BOUND);
      t.deepEqual(
        found(`attachment:"${PHRASE}"`),
        [ids.early!, ids.late!, ids.short!, ids.medium!].sort((a, b) => a - b),
      );
    },
  );

test.serial(
  "over REST a phrase past the bound is not found; four such searches at once and another key's search are all answered",
  async (t) => {
    const { fixture, ids } = await built;
    const h = await startApi({ Engine: { PhraseScanWords: BOUND, Threads: 1 } }, { useFixture: fixture });
    t.teardown(() => h.close());
    if (TEST_STORE === 'postgres') {
      // A PostgreSQL copy has no attachment text yet, as Mail Archiver's own mail: reindex reads it.
      const extractor = new Extractor();
      await withAdmin(h.settings.Database.Path, (admin) => reindexAttachments(admin.attachmentTexts(), extractor));
      await extractor.close();
    }
    const search = (key: string, q: string) => h.request.get('/api/v1/emails').query({ q }).set(bearer(key));
    // Four of the searches at once on the one query thread, then another key's search.
    const phrases = Array.from({ length: 4 }, () => search(fixture.keys.admin, `attachment:"${PHRASE}"`));
    const other = search(fixture.keys.alice, 'subject:phrase');
    for (const res of await Promise.all(phrases)) {
      t.is(res.status, 200);
      t.is(res.body.totalItems, 3);
      t.deepEqual(
        (res.body.items as Array<{ id: number }>).map((i) => i.id).sort((a, b) => a - b),
        [ids.early!, ids.short!, ids.medium!].sort((a, b) => a - b),
      );
    }
    const answer = await other;
    t.is(answer.status, 200);
    t.is(answer.body.totalItems, Object.keys(TEXTS).length, 'alice sees the work account');
  },
);
