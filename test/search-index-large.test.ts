// The saved search index past the sizes one call handles (engine/search/bitsets/persist.ts,
// "Sizes"; docs/scale.md, "What breaks first"): a file written and read in pieces of a few bytes
// is the file written in one piece, byte for byte, and its CRC-32 and HMAC are those of the
// format (computed here over the whole file); a snapshot over 4 GiB, which Node 20 cannot view
// as one Uint8Array and no HMAC update takes whole, is saved, loaded and verified; and a
// PostgreSQL archive's sections hold folder names that, as one JSON string, would pass the
// longest string JavaScript holds, and so does a snapshot's vocabulary. Serial, so that nothing else of this file runs beside the
// 4 GiB one (4.3 GB resident).
import test from 'ava';
import { constants } from 'node:buffer';
import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { loadIndex, NOT_SIGNED, saveIndex, type SavedMeta } from '../engine/search/bitsets/persist.js';
import { decodeWords, encodeWords, ORDERS, pack, Snapshot } from '../engine/search/bitsets/snapshot.js';
import { buildSnapshot } from '../engine/sqlite/index-build.js';
import { searchIndexKey } from '../engine/sqlite/index-verify.js';
import { fromSections, sections } from '../engine/postgres/saved-sections.js';
import { tempDir } from './helpers/fixture.js';
import { archive } from './helpers/index-archive.js';

const meta = (rows: number): SavedMeta => ({
  store: 'sqlite',
  identity: 'sqlite-archive',
  fullBuildRows: rows,
  savedAt: 1_700_000_000_000,
});

/** The same bytes, wherever each lies (a piece of a SharedArrayBuffer, a section's view). */
const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);

test('a saved index written and read in pieces of a few bytes is the one written whole, CRC-32 and HMAC included', (t) => {
  const { dir, cleanup } = tempDir();
  const a = archive(dir, 'a.db', 600);
  try {
    const snapshot = buildSnapshot(a.db, { tailMinCostUs: 0 });
    const key = searchIndexKey(a.db);
    // Sections of odd lengths, one a view at an odd offset of a larger buffer.
    const wide = randomBytes(10_011);
    const sectionsIn = [Uint8Array.from([1, 2, 3, 4, 5]), new Uint8Array(wide.buffer, wide.byteOffset + 3, 10_001)];
    const whole = join(dir, 'whole.index');
    const total = saveIndex(whole, key, meta(600), snapshot, sectionsIn);
    const bytes = readFileSync(whole);
    t.is(bytes.byteLength, total);
    t.true(snapshot.byteLength > 16 * 1024, `a snapshot of ${snapshot.byteLength} bytes spans many pieces`);

    // The format, from the whole file: the CRC-32 of all after the header, the HMAC of the
    // header's first half and all after the header, the snapshot where the table says.
    t.is(bytes.toString('latin1', 0, 8), 'MAGINDEX');
    t.is(bytes.readDoubleLE(24), total);
    t.is(bytes.readUInt32LE(20), crc32(bytes.subarray(64)) >>> 0);
    const mac = createHmac('sha256', key).update(bytes.subarray(0, 32)).update(bytes.subarray(64)).digest();
    t.true(mac.equals(bytes.subarray(32, 64)), 'the HMAC of the format');
    const tableAt = 64 + Math.ceil(bytes.readUInt32LE(12) / 8) * 8;
    const snapshotAt = tableAt + 8 * bytes.readUInt32LE(16);
    t.is(bytes.readDoubleLE(tableAt), snapshot.byteLength);
    t.true(same(new Uint8Array(snapshot), bytes.subarray(snapshotAt, snapshotAt + snapshot.byteLength)));

    for (const pieceBytes of [1, 7, 4093, 65_536]) {
      const file = join(dir, `pieces-${pieceBytes}.index`);
      t.is(saveIndex(file, key, meta(600), snapshot, sectionsIn, { pieceBytes }), total);
      t.true(readFileSync(file).equals(bytes), `written in pieces of ${pieceBytes}: the same file`);

      const loaded = loadIndex(whole, key, { pieceBytes });
      if (!loaded.ok) return t.fail(`${pieceBytes}: ${loaded.reason}`);
      t.deepEqual(loaded.saved.meta, meta(600));
      t.true(same(new Uint8Array(loaded.saved.snapshot), new Uint8Array(snapshot)), `read in pieces of ${pieceBytes}`);
      t.deepEqual(
        loaded.saved.sections.map((s) => [...s]),
        sectionsIn.map((s) => [...s]),
      );
      // The CRC-32, summed in pieces, tells a file this key did not sign from a damaged one.
      const other = loadIndex(whole, randomBytes(32), { pieceBytes });
      t.deepEqual(other, { ok: false, reason: NOT_SIGNED });
    }
    const damaged = Buffer.from(bytes);
    damaged[snapshotAt + snapshot.byteLength - 1]! ^= 1;
    writeFileSync(join(dir, 'damaged.index'), damaged);
    t.deepEqual(loadIndex(join(dir, 'damaged.index'), key, { pieceBytes: 4093 }), {
      ok: false,
      reason: 'checksum mismatch',
    });
  } finally {
    a.db.close();
    cleanup();
  }
});

test.serial('a snapshot over 4 GiB is saved, loaded whole and verified', (t) => {
  // Untouched pages of a SharedArrayBuffer are the kernel's zero page: only the loaded copy
  // takes memory. A few bytes are set where a 31- or 32-bit length or offset would lose them.
  const size = 2 ** 32 + 65_544;
  const snapshot = new SharedArrayBuffer(size);
  const marks = [0, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 8, size - 1];
  marks.forEach((at, i) => (new Uint8Array(snapshot, at, 1)[0] = i + 1));
  const key = randomBytes(32);
  const { dir, cleanup } = tempDir();
  try {
    const file = join(dir, 'large.index');
    const total = saveIndex(file, key, meta(0), snapshot, [Uint8Array.from([9, 8, 7])]);
    t.true(total > size);
    t.is(statSync(file).size, total);

    const loaded = loadIndex(file, key);
    if (!loaded.ok) return t.fail(loaded.reason);
    const back = loaded.saved.snapshot;
    t.is(back.byteLength, size);
    t.deepEqual(
      marks.map((at) => new Uint8Array(back, at, 1)[0]),
      marks.map((_, i) => i + 1),
    );
    const differ: number[] = [];
    for (let at = 0; at < size; at += 2 ** 30) {
      const length = Math.min(2 ** 30, size - at);
      if (!Buffer.from(snapshot, at, length).equals(Buffer.from(back, at, length))) differ.push(at);
    }
    t.deepEqual(differ, [], 'every GiB as saved');
    t.deepEqual([...loaded.saved.sections[0]!], [9, 8, 7]);
  } finally {
    cleanup();
  }
});

test('the vocabulary in pieces of a few words and bytes is the vocabulary joined whole', (t) => {
  const words = ['a', 'bé', '日本語', 'zz', '', 'x'.repeat(40), '😀', 'q'];
  const whole = new TextEncoder().encode(words.join('\n'));
  for (const pieceWords of [1, 2, 3, 7, 8, 100])
    t.true(same(encodeWords(words, pieceWords), whole), `${pieceWords} words`);
  for (const pieceBytes of [1, 2, 5, 17, 1000])
    t.deepEqual(decodeWords(whole, pieceBytes), words, `${pieceBytes} bytes`);
  t.deepEqual(decodeWords(new Uint8Array(0)), []);
});

test.serial('a vocabulary longer together than a JavaScript string is packed and read back', (t) => {
  // 1,000,000 words of 540 characters: 540 MB joined, past V8's longest string (2^29 − 24).
  // Each word starts with its own number, so sorting compares a few characters.
  const tail = 'v'.repeat(533);
  const count = 1_000_000;
  const vocab = Array.from({ length: count }, (_, i) => i.toString(36).padStart(6, '0') + tail + (i % 10));
  t.true(count * 541 > constants.MAX_STRING_LENGTH);
  const orders = Object.fromEntries(ORDERS.map((o) => [o, new Int32Array(0)])) as Parameters<typeof pack>[0]['orders'];
  const buffer = pack({
    maxId: 0,
    rewrites: 0,
    sent: new Float64Array(1),
    keys: new Float64Array(0),
    ids: new Int32Array(0),
    orders,
    universe: new Uint32Array(1),
    terms: [],
    vocab,
    buildMs: 0,
  });
  const back = new Snapshot(buffer).vocab;
  t.is(back.length, count);
  t.is(back[0], vocab[0]);
  t.is(back[count - 1], vocab[count - 1]);
  t.is(back[654_321], vocab[654_321]);
});

test.serial('PostgreSQL sections hold folder names longer together than a JavaScript string', (t) => {
  // 200-character names: as one JSON array of every message's folder, 203 characters a message,
  // so these 2.7 million messages would need a string longer than V8 makes.
  const names = ['a', 'b', 'c'].map((c) => `Archive/${c.repeat(192)}`);
  const n = Math.ceil(constants.MAX_STRING_LENGTH / 203) + 50_000;
  const folder = Array.from({ length: n }, (_, i) => (i % 1000 === 999 ? null : names[i % 3]!));
  const ids = Int32Array.from({ length: n }, (_, i) => i + 1);
  const rows = {
    ids,
    sent: Float64Array.from(ids, (id) => id * 1000),
    account: Int32Array.from(ids, (id) => id % 4),
    outgoing: Uint8Array.from(ids, (id) => id % 2),
    folder,
  };
  const saved = sections({ indexed: new Set([1, 5, n]), rows });
  // As persist.ts gives them back: each section a fresh buffer of its own.
  const back = fromSections(saved.map((s) => Uint8Array.from(s)));
  if (!back) return t.fail('not read back');
  t.deepEqual([...back.indexed], [1, 5, n]);
  t.true(same(new Uint8Array(back.rows.ids.buffer), new Uint8Array(ids.buffer)));
  t.true(same(new Uint8Array(back.rows.sent.buffer), new Uint8Array(rows.sent.buffer)));
  t.true(same(new Uint8Array(back.rows.account.buffer), new Uint8Array(rows.account.buffer)));
  t.true(same(back.rows.outgoing, rows.outgoing));
  t.is(back.rows.folder.length, n);
  t.is(
    back.rows.folder.findIndex((f, i) => f !== folder[i]),
    -1,
  );

  // A file of an earlier release: every message's folder in one JSON array.
  const small = { ids: ids.slice(0, 4), sent: rows.sent.slice(0, 4), account: rows.account.slice(0, 4) };
  const bytes = (a: Int32Array | Float64Array) => new Uint8Array(a.buffer);
  const earlier = fromSections([
    bytes(Int32Array.from([2])),
    bytes(small.ids),
    bytes(small.sent),
    bytes(small.account),
    rows.outgoing.slice(0, 4),
    new TextEncoder().encode(JSON.stringify(['INBOX', null, 'Sent', 'INBOX'])),
  ]);
  t.deepEqual(earlier?.rows.folder, ['INBOX', null, 'Sent', 'INBOX']);
  t.deepEqual([...(earlier?.rows.ids ?? [])], [1, 2, 3, 4]);
});
