// A benchmark that writes a corpus of millions of messages asks for the disk first: it stops at
// once, saying what it needs and what there is, instead of failing an hour in with a full disk.
import test from 'ava';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureFreeSpace, freeBytes, NotEnoughSpace } from '../bench/lib/disk.js';

test('a corpus larger than the free space is refused before anything is written, with both sizes', (t) => {
  const free = freeBytes(tmpdir())!;
  t.true(free > 0);
  const error = t.throws(() => ensureFreeSpace(tmpdir(), free * 2 + 1e9, 'A corpus of 10000000 messages'), {
    instanceOf: NotEnoughSpace,
  });
  t.regex(error!.message, /^A corpus of 10000000 messages needs about [\d.]+ GB free on .+, which has [\d.]+ GB/);
});

test('enough free space, or a place not on this machine (a remote server), lets the write go on', (t) => {
  t.notThrows(() => ensureFreeSpace(tmpdir(), 1, 'A corpus'));
  t.is(freeBytes(join(tmpdir(), 'no-such-directory-here')), undefined);
  t.notThrows(() => ensureFreeSpace(join(tmpdir(), 'no-such-directory-here'), Number.MAX_SAFE_INTEGER, 'A corpus'));
});
