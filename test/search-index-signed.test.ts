// The saved search index proves it was written by this service for this archive (ADR 31): on
// both stores, a file edited to show a restricted key more mail (the key's account set widened to
// every message, the CRC-32 recomputed, so that the file is whole and every id, rowid and date
// still matches the archive) is refused with one warning and rebuilt, and the key, asked through
// the REST API, sees exactly what it saw before. A grant's access token is a key of its user
// (ADR 19), so it is held by the same check.
import test, { type ExecutionContext } from 'ava';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../gateway/app.js';
import { termKey } from '../engine/search/bitsets/snapshot.js';
import { accountTag } from '../engine/search/tags.js';
import { apiSettings, bearer, capturingLogger, silentLogger } from './helpers/api.js';
import { createKey } from '../engine/sqlite/keys.js';
import { tempDir } from './helpers/fixture.js';
import { archive, current, editSavedSnapshot, savedFile } from './helpers/index-archive.js';
import { serveArchive, type TestStore } from './helpers/store.js';
import supertest from 'supertest';

interface View {
  totalItems: number;
  ids: number[];
  accounts: number[];
}

/** What `key` finds through the REST API: every message, words, a folder. */
async function views(gateway: Gateway, key: string): Promise<Record<string, View>> {
  const request = supertest(gateway.app.callback());
  const out: Record<string, View> = {};
  for (const q of ['', 'q=alpha', 'folder=INBOX', 'q=beta%20gamma']) {
    const res = await request.get(`/api/v1/emails?pageSize=100&${q}`).set(bearer(key));
    if (res.status !== 200) throw new Error(`${q}: ${res.status} ${res.text}`);
    const body = res.body as { totalItems: number; items: Array<{ id: number; accountId: number }> };
    out[q] = {
      totalItems: body.totalItems,
      ids: body.items.map((i) => i.id).sort((a, b) => a - b),
      accounts: [...new Set(body.items.map((i) => i.accountId))].sort(),
    };
  }
  return out;
}

async function edited(t: ExecutionContext, store: TestStore): Promise<void> {
  // 1,200 messages in three accounts: each account's set (about 400) is kept in the index on
  // both stores (SQLite keeps a set from 256 messages). ruth sees the first and the third.
  const { dir, cleanup } = tempDir();
  const a = archive(dir, 'a.db', 1200);
  const key = createKey(a.db, { username: 'ruth', name: 'restricted' }).key;
  a.db.close();
  const served = await serveArchive(a.path, store);
  const file = join(dir, 'search.index');
  const start = (logger = silentLogger()) =>
    createGateway(apiSettings(served.path, { Engine: { SearchIndexFile: file } }), { logger });
  try {
    // The first start builds the index and saves it.
    const first = start();
    let before: Record<string, View>;
    try {
      const built = await current(first.engine);
      await savedFile(file, built.maxId!, served.path);
      before = await views(first, key);
    } finally {
      await first.close();
    }
    t.true(before['']!.totalItems > 700, JSON.stringify(before['']));
    t.deepEqual(before['']!.accounts, [a.accounts[0]!, a.accounts[2]!].sort());

    // ruth's first account's set made every message: she would see the second account too.
    editSavedSnapshot(file, (_bytes, view) => {
      const set = view.term(termKey('t', accountTag(a.accounts[0]!)));
      if (set?.kind !== 'bits') throw new Error(`the account's set is ${set?.kind ?? 'not kept'}`);
      set.bits.set(view.universe);
    });

    const { logger, lines } = capturingLogger();
    const second = start(logger);
    try {
      const index = await current(second.engine);
      t.deepEqual(await views(second, key), before, 'ruth sees exactly what she saw');
      t.false(index.fromFile, 'rebuilt, not loaded from the edited file');
      // The rebuilt index is saved again, signed: the next start loads it.
      await savedFile(file, index.maxId!, served.path);
      const warnings = lines
        .filter((l) => l.level === 40 && String(l.msg).startsWith('search index:'))
        .map((l) => String(l.msg));
      t.deepEqual(
        warnings,
        [
          `search index: ${file} ignored (not written by this service for this archive (its MAC does not match)); building instead`,
        ],
        'one warning',
      );
    } finally {
      await second.close();
    }

    const third = start();
    try {
      const index = await current(third.engine);
      t.true(index.fromFile, 'the file the rebuild saved is trusted');
      t.deepEqual(await views(third, key), before);
    } finally {
      await third.close();
    }
  } finally {
    await served.drop();
    cleanup();
  }
}

for (const store of ['sqlite', 'postgres'] as const) {
  test.serial(
    `${store}: a saved index edited to widen what a restricted key sees is refused with one warning and rebuilt`,
    (t) => edited(t, store),
  );
}
