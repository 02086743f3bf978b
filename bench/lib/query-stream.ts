// A stream of different searches over the benchmark corpus, deterministic by seed: words drawn
// by the corpus's own Zipf law (so common and rare words come as often as in the mail), two-word
// conjunctions, prefixes, phrases, OR, negations, field terms, filters, sorts and pages in
// proportions a person or an agent might use. Each request differs from the others, so no
// per-query cache flatters the figures (the SQLite engine caches exact counts by query).
import { Random } from '../../engine/demo/random.js';
import { ACCOUNTS, END, FOLDERS, START, vocabulary, Zipf } from '../corpus.js';

export interface StreamQuery {
  params: Record<string, string>;
}

export function queryStream(count: number, options: { seed?: number; corpusSeed?: number; addresses?: string[] } = {}) {
  // The corpus's vocabulary is the first thing its RNG draws: the same words, in the same order.
  const words = vocabulary(new Random(options.corpusSeed ?? 42), 50_000);
  const zipf = new Zipf(words.length);
  const rng = new Random(options.seed ?? 7);
  const word = () => words[zipf.index(rng.next())]!;
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const seen = new Set<string>();
  const out: StreamQuery[] = [];
  while (out.length < count) {
    const params: Record<string, string> = {};
    const kind = rng.int(0, 99);
    if (kind < 35) params.q = word();
    else if (kind < 55) params.q = `${word()} ${word()}`;
    else if (kind < 62) params.q = `${word().slice(0, 4)}*`;
    else if (kind < 69) params.q = `"${word()} ${word()}"`;
    else if (kind < 75) params.q = `${word()} OR ${word()}`;
    else if (kind < 80) params.q = `${word()} -${word()}`;
    else if (kind < 86) params.q = `subject:${word()}`;
    else if (kind < 90 && options.addresses?.length) params.q = `from:${rng.pick(options.addresses)}`;
    // else: no q, filters only
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
    out.push({ params });
  }
  return out;
}
