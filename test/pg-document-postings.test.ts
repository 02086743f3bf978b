// A PostgreSQL full build collects its terms with DocumentPostings (engine/postgres/search-snapshot.ts),
// one Map lookup per lexeme, where a refresh still adds with addDocument. Both must give the same
// terms, in the same first-seen order (keptTerms breaks ties of equal counts by it), the same id
// lists, and the same vocabulary in the same order, for any documents of the side index's lexemes.
import test from 'ava';
import fc from 'fast-check';
import { addDocument, DocumentPostings } from '../engine/postgres/search-snapshot.js';
import { Postings } from '../engine/search/bitsets/rows.js';

// Field letters: the default columns (s b f t c k), hidden tags (g), and others the sets never hold.
const lexeme = fc
  .tuple(
    fc.constantFrom('s', 'b', 'f', 't', 'c', 'k', 'g', 'n', 'a'),
    fc.constantFrom('x', 'y', 'zz', 'über', 'a1', 'x y'),
  )
  .map(([field, word]) => `${field}:${word}`);
// A tsvector holds each lexeme once.
const documents = fc.array(fc.uniqueArray(lexeme, { maxLength: 12 }), { maxLength: 40 });

test('DocumentPostings gives what addDocument gives: terms in the same order, lists and vocabulary', (t) => {
  fc.assert(
    fc.property(documents, (docs) => {
      const postings = new Postings();
      const vocab = new Set<string>();
      const collected = new DocumentPostings();
      docs.forEach((lexemes, i) => {
        addDocument(i + 1, lexemes, (key, id) => postings.add(key, id), vocab);
        collected.add(i + 1, lexemes);
      });
      const keys = [...postings.keys()];
      t.deepEqual([...collected.keys()], keys);
      for (const key of keys) {
        t.is(collected.docs(key), postings.docs(key));
        t.deepEqual([...collected.ids(key)], [...postings.ids(key)]);
      }
      t.is(collected.docs('d:absent'), 0);
      t.deepEqual([...collected.ids('d:absent')], []);
      t.deepEqual([...collected.vocab], [...vocab]);
    }),
  );
});
