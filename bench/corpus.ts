// A deterministic benchmark archive: N messages (default 1,000,000) written through the
// engine's own write path (ArchiveWriter), cached under bench/.cache/ (outside git).
//
// Realistic shape, seeded: a Zipf-distributed vocabulary (common English words first, then a
// long tail of made-up words), 5,000 correspondents at 300 domains, 20 accounts with nested
// folders, threads ("Re: …" subjects), 11 years of dates, HTML parts on a quarter of the
// mail and small attachments (from a pool, so content de-duplication applies) on a tenth.
//
//   node dist/bench/corpus.js [--messages N] [--seed S]    prints the archive's path
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { migrate, openArchive, type Db } from '../engine/sqlite/open.js';
import Database from '../engine/sqlite/driver.js';
import { Random } from '../engine/demo/random.js';
import { addAccount } from '../engine/sqlite/accounts.js';
import { addUser, assignAccount } from '../engine/sqlite/users.js';
import { ArchiveWriter } from '../engine/sqlite/writer.js';
import { dedupKeyFor, type NewAttachment, type NewEmail } from '../engine/rules/new-email.js';
import { CORPUS_BYTES_PER_MESSAGE, ensureFreeSpace, orStopForSpace } from './lib/disk.js';

export const CORPUS_VERSION = 4;
export const CACHE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../bench/.cache');

/** Words the query mix relies on: "meeting" is very common, "zanzibar" is rare. */
export const COMMON_WORDS = [
  'the',
  'and',
  'to',
  'of',
  'a',
  'in',
  'for',
  'is',
  'on',
  'that',
  'with',
  'we',
  'this',
  'you',
  'it',
  'be',
  'are',
  'please',
  'meeting',
  'project',
  'report',
  'team',
  'update',
  'review',
  'budget',
  'thanks',
  'time',
  'week',
  'next',
  'plan',
  'client',
  'call',
  'draft',
  'schedule',
  'invoice',
  'contract',
  'deadline',
  'quarter',
  'sales',
  'design',
];
const RARE_WORDS = ['zanzibar', 'quokka', 'marzipan', 'obsidian', 'halcyon'];
const FIRST = [
  'Anna',
  'Ben',
  'Carla',
  'David',
  'Elena',
  'Felix',
  'Greta',
  'Hugo',
  'Ines',
  'Jonas',
  'Karin',
  'Lukas',
  'Maria',
  'Nils',
  'Olga',
  'Paul',
  'Rosa',
  'Sven',
  'Tanja',
  'Uwe',
  'Vera',
  'Wim',
  'Yara',
  'Zoe',
  'Amélie',
  'Björn',
  'Çelik',
  'Dörte',
  'Émile',
  'Søren',
];
const LAST = [
  'Adler',
  'Becker',
  'Costa',
  'Dubois',
  'Eriksen',
  'Fischer',
  'García',
  'Hansen',
  'Ivanova',
  'Jansen',
  'Klein',
  'Lefèvre',
  'Meyer',
  'Novak',
  'Olsen',
  'Peters',
  'Quinn',
  'Rossi',
  'Schmidt',
  'Tanaka',
  'Urban',
  'Vogel',
  'Weber',
  'Young',
  'Zimmermann',
];
const FILES: ReadonlyArray<readonly [string, string]> = [
  ['report.pdf', 'application/pdf'],
  ['invoice.pdf', 'application/pdf'],
  ['photo.jpg', 'image/jpeg'],
  ['budget.xlsx', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'],
  ['notes.txt', 'text/plain'],
  ['minutes.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
  ['data.csv', 'text/csv'],
];
export const FOLDERS: ReadonlyArray<readonly [string, number]> = [
  ['INBOX', 45],
  ['Sent', 20],
  ['INBOX/Projects/Apollo', 6],
  ['INBOX/Projects/Zephyr', 5],
  ['INBOX/Receipts', 4],
  ['Newsletters', 6],
  ['Archive/2019', 4],
  ['Archive/2020', 4],
  ['Archive/2021', 3],
  ['Archive/2022', 3],
];
export const ACCOUNTS = 20;
export const START = Date.UTC(2015, 0, 1);
export const END = Date.UTC(2025, 11, 31);

/** Cumulative Zipf weights over the vocabulary, sampled by binary search. */
export class Zipf {
  readonly #cdf: Float64Array;
  constructor(size: number, s = 1.05) {
    this.#cdf = new Float64Array(size);
    let sum = 0;
    for (let i = 0; i < size; i++) this.#cdf[i] = sum += 1 / (i + 1) ** s;
    for (let i = 0; i < size; i++) this.#cdf[i]! /= sum;
  }
  index(r: number): number {
    let lo = 0;
    let hi = this.#cdf.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.#cdf[mid]! < r) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

export function vocabulary(rng: Random, size: number): string[] {
  const syllables = [
    'ka',
    'lo',
    'mi',
    'ne',
    'ru',
    'ta',
    'vo',
    'shi',
    'pra',
    'den',
    'gor',
    'bel',
    'fin',
    'ster',
    'qua',
    'lix',
    'mon',
    'tra',
    'zel',
    'dor',
  ];
  const words = new Set<string>(COMMON_WORDS);
  while (words.size < size - RARE_WORDS.length) {
    const n = rng.int(2, 4);
    let w = '';
    for (let i = 0; i < n; i++) w += rng.pick(syllables);
    words.add(w);
  }
  return [...words, ...RARE_WORDS]; // the rare words sit in the far tail
}

export interface CorpusOptions {
  messages?: number;
  seed?: number;
  log?: (line: string) => void;
}

/** A sender address the query mix searches for (`from:` an address): message 1000's sender. */
export function sampleAddress(db: Db): string {
  const from = db.prepare('SELECT from_addr FROM emails WHERE is_outgoing = 0 AND id = 1000').pluck().get() as string;
  return /<([^>]+)>/.exec(from)?.[1] ?? from;
}

/** Up to `count` distinct sender addresses for `from:` queries: the senders of messages 1000, 2000, … (incoming only). */
export function sampleAddresses(db: Db, count: number): string[] {
  const ids = Array.from({ length: count }, (_, i) => (i + 1) * 1000);
  const rows = db
    .prepare(
      `SELECT from_addr FROM emails WHERE is_outgoing = 0 AND id IN (${ids.map(() => '?').join(',')}) ORDER BY id`,
    )
    .pluck()
    .all(...ids) as string[];
  return [...new Set(rows.map((from) => /<([^>]+)>/.exec(from)?.[1] ?? from))];
}

export function corpusPath(messages: number, seed: number): string {
  return join(CACHE_DIR, `corpus-v${CORPUS_VERSION}-${messages}-${seed}.db`);
}

/** A corpus to write: its accounts and users, and its messages as a stream (same RNG order as ever). */
export interface CorpusPlan {
  accounts: Array<{ name: string; emailAddress: string; provider: string }>;
  /** `admin`, then user0..user9, each assigned two accounts (indexes into `accounts`). */
  users: Array<{ username: string; isAdmin: boolean; accounts: number[] }>;
  /** The messages, given the ids the accounts received. */
  messages(accountIds: readonly number[]): Generator<NewEmail>;
}

export function planCorpus(messages: number, seed: number): CorpusPlan {
  const rng = new Random(seed);
  const words = vocabulary(rng, 50_000);
  const zipf = new Zipf(words.length);
  const word = () => words[zipf.index(rng.next())]!;
  const sentence = (n: number) => Array.from({ length: n }, word).join(' ');

  const people = Array.from({ length: 5000 }, (_, i) => {
    const first = rng.pick(FIRST);
    const last = rng.pick(LAST);
    const domain = `${rng.pick(['north', 'south', 'blue', 'green', 'alpha', 'delta'])}${i % 50}.example`;
    const local = `${first}.${last}`
      .normalize('NFD')
      .replace(/[^\x20-\x7e]/g, '')
      .toLowerCase();
    return { name: `${first} ${last}`, address: `${local}${i % 7 || ''}@${domain}` };
  });
  const accounts = Array.from({ length: ACCOUNTS }, (_, a) => ({
    name: `${people[a]!.name} (${a % 2 ? 'Work' : 'Home'})`,
    emailAddress: people[a]!.address,
    provider: a % 3 ? 'IMAP' : 'M365',
  }));
  const users = [
    { username: 'admin', isAdmin: true, accounts: [] as number[] },
    ...Array.from({ length: 10 }, (_, u) => ({ username: `user${u}`, isAdmin: false, accounts: [u * 2, u * 2 + 1] })),
  ];
  const attachmentPool: NewAttachment[] = Array.from({ length: 300 }, (_, i) => {
    const [fileName, contentType] = FILES[i % FILES.length]!;
    return {
      fileName: `${i % 3 ? '' : `${rng.pick(COMMON_WORDS)}-`}${fileName}`,
      contentType,
      content: rng.bytes(rng.int(1024, 6144)),
    };
  });

  function* stream(accountIds: readonly number[]): Generator<NewEmail> {
    const threadSubjects: string[] = [];
    for (let i = 0; i < messages; i++) {
      const accountIndex = rng.int(0, ACCOUNTS - 1);
      const owner = people[accountIndex]!;
      const folder = rng.weighted(FOLDERS);
      const outgoing = folder === 'Sent';
      const other = people[rng.int(ACCOUNTS, people.length - 1)]!;
      const from = outgoing ? owner : other;
      const to = outgoing ? other : owner;
      let subject: string;
      if (threadSubjects.length > 0 && rng.chance(0.3)) subject = `Re: ${rng.pick(threadSubjects)}`;
      else {
        subject = sentence(rng.int(3, 8));
        subject = subject[0]!.toUpperCase() + subject.slice(1);
        if (threadSubjects.length < 20_000) threadSubjects.push(subject);
        else threadSubjects[rng.int(0, threadSubjects.length - 1)] = subject;
      }
      const paragraphs = Array.from({ length: rng.int(1, 5) }, () => sentence(rng.int(15, 60)));
      if (rng.chance(0.0005)) paragraphs.push(rng.pick(RARE_WORDS));
      const text = `Hi ${to.name.split(' ')[0]},\n\n${paragraphs.join('\n\n')}\n\nBest,\n${from.name}`;
      const sentDate = START + Math.floor(rng.next() * (END - START));
      const attachments = rng.chance(0.1) ? [rng.pick(attachmentPool)] : [];
      yield {
        accountId: accountIds[accountIndex]!,
        folder,
        messageId: `<${seed}.${i}@corpus.example>`,
        subject,
        from: `${from.name} <${from.address}>`,
        to: `${to.name} <${to.address}>`,
        cc: rng.chance(0.2) ? `${rng.pick(people).address}` : '',
        bcc: outgoing && rng.chance(0.05) ? rng.pick(people).address : '',
        sentDate,
        receivedDate: sentDate + rng.int(1000, 120_000),
        isOutgoing: outgoing,
        textBody: text,
        htmlBody: rng.chance(0.25)
          ? `<html><body>${paragraphs.map((p) => `<p>${p}</p>`).join('')}</body></html>`
          : null,
        attachments,
        dedupKey: dedupKeyFor(`<${seed}.${i}@corpus.example>`, ''),
      };
    }
  }
  return { accounts, users, messages: stream };
}

/** Messages per write transaction of the PostgreSQL corpus (bench/pg-corpus.ts). */
export const CORPUS_BATCH = 5000;

/**
 * Messages per write transaction of the SQLite corpus: a random index page takes several rows
 * before it is written out (with a batch of 5,000, each commit wrote most pages it touched again).
 */
const SQLITE_CORPUS_BATCH = 25_000;

/** Builds the corpus unless it is cached; returns its path. */
export function ensureCorpus(options: CorpusOptions = {}): string {
  const messages = options.messages ?? 1_000_000;
  const seed = options.seed ?? 42;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const path = corpusPath(messages, seed);
  if (existsSync(path)) {
    // A corpus cached by an earlier release is brought to the current schema, as the service
    // brings an archive at start (a new migration changes no message: no rebuild for it).
    const cached = new Database(path);
    try {
      migrate(cached);
    } finally {
      cached.close();
    }
    return path;
  }
  mkdirSync(CACHE_DIR, { recursive: true });
  ensureFreeSpace(CACHE_DIR, messages * CORPUS_BYTES_PER_MESSAGE.sqlite, `A corpus of ${messages} messages`);
  const building = `${path}.building`;
  for (const suffix of ['', '-wal', '-shm']) rmSync(building + suffix, { force: true });
  const started = Date.now();
  const db = openArchive(building);
  // Written under a temporary name and renamed when complete, so a crash leaves nothing to trust:
  // no sync to disk per batch, and a page cache that holds the 13 message indexes' hot pages
  // (their keys, dates and subjects, come in no order). 1.39x faster at 150,000 messages and
  // rising with the size, where the service's own 32 MB cache kept re-reading them.
  db.pragma('synchronous = OFF');
  db.pragma(`cache_size = -${2 * 1024 * 1024}`);
  const plan = planCorpus(messages, seed);
  const accountIds = plan.accounts.map((a) => addAccount(db, a).id);
  for (const u of plan.users) {
    addUser(db, { username: u.username, isAdmin: u.isAdmin });
    for (const a of u.accounts) assignAccount(db, u.username, accountIds[a]!);
  }
  const writer = new ArchiveWriter(db);
  const stream = plan.messages(accountIds);
  for (let start = 0; start < messages; start += SQLITE_CORPUS_BATCH) {
    writer.batch(() => {
      for (let i = start; i < Math.min(messages, start + SQLITE_CORPUS_BATCH); i++)
        writer.add(stream.next().value as NewEmail);
    });
    if ((start / SQLITE_CORPUS_BATCH) % 4 === 0)
      log(
        `corpus: ${Math.min(messages, start + SQLITE_CORPUS_BATCH)} / ${messages} messages (${((Date.now() - started) / 1000).toFixed(0)} s)`,
      );
  }
  db.pragma('optimize');
  db.exec("INSERT INTO email_fts (email_fts) VALUES ('optimize')");
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  renameSync(building, path);
  for (const suffix of ['-wal', '-shm']) rmSync(building + suffix, { force: true });
  log(`corpus: built ${messages} messages in ${((Date.now() - started) / 1000).toFixed(0)} s at ${path}`);
  return path;
}

/** `--messages N --seed S` of a corpus builder's command line (defaults 1,000,000 and 42). */
export function corpusArgs(argv: readonly string[] = process.argv): { messages: number; seed: number } {
  const arg = (name: string) => {
    const i = argv.indexOf(name);
    return i === -1 ? undefined : argv[i + 1];
  };
  return { messages: Number(arg('--messages') ?? 1_000_000), seed: Number(arg('--seed') ?? 42) };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await orStopForSpace(() => process.stdout.write(`${ensureCorpus(corpusArgs())}\n`));
}
