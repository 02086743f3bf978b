// `mail-archive import` leaves the saved search index current (engine/sqlite/index-save.ts;
// docs/import.md, "The search index after an import"): the service's next start loads it instead
// of building it, a second import catches the file up instead of building anew, and
// Engine:SearchIndexFile '' saves nothing. Before, every start after an import built the index
// (557 s at 1,000,000 messages) while searches ran on SQL.
import test from 'ava';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildMessage } from '../engine/demo/mime.js';
import { formatMboxEntry } from '../engine/import/mbox.js';
import { exactCount } from '../engine/sqlite/search.js';
import { parseSearchInput } from '../shared/search-input.js';
import { runCli } from './helpers/cli.js';
import { tempDir } from './helpers/fixture.js';
import { archive, current, indexKey, searchers, startPool } from './helpers/index-archive.js';
import { loadIndex } from '../engine/search/bitsets/persist.js';

/** `count` messages from `first` on as an mbox; every one says "harbour", every third "kestrel". */
function mbox(path: string, first: number, count: number): void {
  const entries = Array.from({ length: count }, (_, k) => {
    const i = first + k;
    const date = new Date(Date.UTC(2024, 0, 1) + i * 60_000);
    const raw = buildMessage({
      from: { address: `sender${i % 7}@example.com` },
      to: [{ address: 'a1@x.com' }],
      subject: `Harbour report ${i}`,
      date,
      messageId: `harbour.${i}@example.com`,
      text: `The harbour figures for week ${i}.${i % 3 === 0 ? ' The kestrel nest is back.' : ''}\n`,
    });
    return formatMboxEntry(raw, `sender${i % 7}@example.com`, date);
  });
  writeFileSync(path, Buffer.concat(entries));
}

/** The rows of the saved index's last full build, as its file says. */
async function savedRows(path: string): Promise<number> {
  const loaded = loadIndex(`${path}.index`, await indexKey(path));
  if (!loaded.ok) throw new Error(loaded.reason);
  return loaded.saved.meta.fullBuildRows;
}

const limits = { defaultPageSize: 20, maxPageSize: 100 };
const admin = { kind: 'search' as const, principal: searchers(0)[0]!.principal };

test('after an import the next start loads the saved index; a second import catches it up; "" saves nothing', async (t) => {
  const { dir, cleanup } = tempDir();
  t.teardown(cleanup);
  const a = archive(dir, 'a.db', 300);
  t.teardown(() => a.db.close());
  const account = String(a.accounts[0]);
  const index = `${a.path}.index`;

  mbox(join(dir, 'one.mbox'), 0, 400);
  const first = await runCli(['--db', a.path, 'import', account, join(dir, 'one.mbox')]);
  t.is(first.code, 0, first.stderr);
  t.is(first.stderr, '', 'a script hears nothing of it (a terminal is told)');
  t.true(existsSync(index));
  t.is(await savedRows(a.path), 700, 'built for every message');

  const log: string[] = [];
  let pool = startPool(a.path, log);
  try {
    const info = await current(pool);
    t.is(info.origin, 'loaded', 'loaded from the file the import left, not built');
    t.true(info.fromFile);
    t.true(log.some((l) => l.startsWith(`search index: loaded ${index}`)));
    const query = parseSearchInput({ q: 'kestrel harbour' }, limits);
    const got = await pool.run({ ...admin, query });
    t.is(got.totalItems, 134);
    t.is(got.totalItems, exactCount(a.db, { isAdmin: true, userId: 0 }, query));
  } finally {
    await pool.close();
  }

  mbox(join(dir, 'two.mbox'), 400, 200);
  const second = await runCli(['--db', a.path, 'import', account, join(dir, 'two.mbox')]);
  t.is(second.code, 0, second.stderr);
  t.is(await savedRows(a.path), 700, 'caught up, not built anew: its last full build is still the first');
  pool = startPool(a.path);
  try {
    const info = await current(pool);
    t.is(info.origin, 'loaded');
    t.is(info.maxId, a.db.prepare('SELECT max(id) FROM emails').pluck().get() as number);
    const got = await pool.run({ ...admin, query: parseSearchInput({ q: 'kestrel' }, limits) });
    t.is(got.totalItems, 200);
  } finally {
    await pool.close();
  }

  mbox(join(dir, 'three.mbox'), 600, 10);
  const unsaved = await runCli(['--db', a.path, 'import', account, join(dir, 'three.mbox')], {
    env: { Engine__SearchIndexFile: join(dir, 'elsewhere.index') },
  });
  t.is(unsaved.code, 0, unsaved.stderr);
  t.true(existsSync(join(dir, 'elsewhere.index')), 'the setting names the file');
  mbox(join(dir, 'four.mbox'), 700, 10);
  const none = await runCli(['--db', a.path, 'import', account, join(dir, 'four.mbox')], {
    env: { Engine__SearchIndexFile: '' },
  });
  t.is(none.code, 0, none.stderr);
  t.regex(none.stdout, /Imported 10 /);
  t.notRegex(none.stderr, /search index/);
});
