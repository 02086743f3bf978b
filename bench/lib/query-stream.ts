// A stream of different searches over the benchmark corpus, deterministic by seed: words drawn
// by the corpus's own Zipf law (so common and rare words come as often as in the mail), two-word
// conjunctions, prefixes, phrases, OR, negations, field terms, filters, sorts and pages in
// proportions a person or an agent might use. Each request differs from the others, so no
// per-query cache flatters the figures (the SQLite engine caches exact counts by query).
import { Random } from '../../engine/demo/random.js';
import { ACCOUNTS, END, FOLDERS, START, vocabulary, Zipf } from '../corpus.js';

/** The shape of a query's `q`. */
export const QUERY_KINDS = [
  'single word',
  'two words',
  'prefix',
  'phrase',
  'OR',
  'negation',
  'subject:',
  'from:',
  'no q',
] as const;
export type QueryKind = (typeof QUERY_KINDS)[number];

export interface StreamQuery {
  params: Record<string, string>;
  kind: QueryKind;
}

/**
 * The corpus's vocabulary, most frequent first (index = Zipf rank). It is the first thing the
 * corpus's RNG draws: the same words, in the same order.
 */
export function corpusWords(corpusSeed = 42): string[] {
  return vocabulary(new Random(corpusSeed), 50_000);
}

export function queryStream(
  count: number,
  options: { seed?: number; corpusSeed?: number; addresses?: string[] } = {},
): StreamQuery[] {
  const words = corpusWords(options.corpusSeed);
  const zipf = new Zipf(words.length);
  const rng = new Random(options.seed ?? 7);
  const word = () => words[zipf.index(rng.next())]!;
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const seen = new Set<string>();
  const out: StreamQuery[] = [];
  while (out.length < count) {
    const params: Record<string, string> = {};
    const draw = rng.int(0, 99);
    let kind: QueryKind = 'no q'; // unless a q is drawn below: filters only
    if (draw < 35) [kind, params.q] = ['single word', word()];
    else if (draw < 55) [kind, params.q] = ['two words', `${word()} ${word()}`];
    else if (draw < 62) [kind, params.q] = ['prefix', `${word().slice(0, 4)}*`];
    else if (draw < 69) [kind, params.q] = ['phrase', `"${word()} ${word()}"`];
    else if (draw < 75) [kind, params.q] = ['OR', `${word()} OR ${word()}`];
    else if (draw < 80) [kind, params.q] = ['negation', `${word()} -${word()}`];
    else if (draw < 86) [kind, params.q] = ['subject:', `subject:${word()}`];
    else if (draw < 90 && options.addresses?.length)
      [kind, params.q] = ['from:', `from:${rng.pick(options.addresses)}`];
    if (rng.chance(0.25)) params.accountId = String(rng.int(1, ACCOUNTS));
    if (rng.chance(0.15)) params.folder = rng.pick(FOLDERS)[0];
    if (rng.chance(0.25)) {
      const from = START + Math.floor(rng.next() * (END - START));
      params.from = day(from);
      params.to = day(from + rng.int(7, 400) * 86_400_000);
    }
    const sort = rng.int(0, 99);
    if (sort >= 80 && sort < 88) params.sortBy = 'subject';
    else if (sort >= 88 && sort < 93) params.sortBy = 'receivedDate';
    else if (sort >= 93 && params.q) params.sortBy = 'relevance';
    if (rng.chance(0.2)) params.sortOrder = 'asc';
    if (rng.chance(0.15)) params.page = String(rng.int(2, 5));
    const key = new URLSearchParams(params).toString();
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ params, kind });
  }
  return out;
}
