// A helper thread of a full index build (index-build.ts, `startPairs`): the word pairs of one run
// of messages, read in a read transaction of its own. That transaction is not the builder's, so
// it checks that it sees the same archive: no rewrite since (a deletion, a move or a reparse
// raises `rewrites`), and the messages it reads are at most the builder's `maxId` (mail appended
// since has higher ids and is left out). Otherwise it answers 'stale' and the builder finds the
// pairs itself.
import { helperMain } from '../threads/sync-workers.js';
import { findPairs, type PairLists } from '../search/bitsets/pairs.js';
import { archiveState, inReadTransaction, messageTexts, type PairsInput } from './index-build.js';
import { openArchive } from './open.js';

helperMain<PairsInput, PairLists | 'stale'>((input, beat) => {
  const db = openArchive(input.dbPath, { readonly: true });
  try {
    return inReadTransaction(db, () => {
      const now = archiveState(db);
      if (now.rewrites !== input.rewrites || now.maxId < input.maxId) return { answer: 'stale' };
      const lists = findPairs(input.pairWords, messageTexts(db, input.after, input.upTo), beat);
      return { answer: lists, transfer: [lists.pairs, lists.starts, lists.ids].map((a) => a.buffer as ArrayBuffer) };
    });
  } finally {
    db.close();
  }
});
