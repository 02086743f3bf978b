// IMAP sync benchmark: N typical messages (default 20,000, the same generator as bench:import)
// in the INBOX of a private local Dovecot (test/helpers/dovecot.ts), synced into a fresh archive
// through the real sync pass (engine/sync/pass.ts), beside the file importer on the same messages
// written as one mbox, also into a fresh archive. Both run in this process, alternating, each
// several times; the medians give the ratio, against the target of 70% of the importer's rate.
// A fetch-only pass (the same IMAP reads, nothing parsed or written) shows what IMAP itself costs.
//
//   npm run bench:sync [-- --messages 20000 --runs 3]
//
// Needs Dovecot (scripts/test-prereqs.sh); as root, Dovecot's own accounts run it.
import { createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { openAdmin } from '../engine/archive.js';
import { importPaths } from '../engine/import/importer.js';
import { formatMboxEntry } from '../engine/import/mbox.js';
import { connect, messagesAfter } from '../engine/sync/imap.js';
import { syncPass } from '../engine/sync/pass.js';
import { countMessages, startDovecot, writeMaildirMessages, type DovecotServer } from '../test/helpers/dovecot.js';
import { typicalMail } from './typical-mail.js';

const TARGET = 0.7; // the sync's rate as a share of the importer's, at least

function argValue(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive whole number.`);
  return value;
}

interface Run {
  seconds: number;
  cpuSeconds: number;
}

async function timed(work: () => Promise<number>, expected: number, what: string): Promise<Run> {
  const t = performance.now();
  const cpu = process.cpuUsage();
  const n = await work();
  const seconds = (performance.now() - t) / 1000;
  const { user, system } = process.cpuUsage(cpu);
  if (n !== expected) throw new Error(`${what}: ${n} messages, expected ${expected}`);
  return { seconds, cpuSeconds: (user + system) / 1e6 };
}

const secretKey = randomBytes(32).toString('base64');

/** The file importer: the mbox into a fresh archive (account set-up not timed, as for the sync). */
async function importOnce(dir: string, mbox: string, count: number, i: number): Promise<Run> {
  const admin = await openAdmin(join(dir, `import-${i}.db`), { create: true, secretKey });
  try {
    const { id } = await admin.addAccount({ name: 'Bench', emailAddress: 'person0@example.com' });
    return await timed(
      async () => {
        const summary = await importPaths(admin, [mbox], { accountId: id });
        if (summary.failed) throw new Error(`import: ${summary.failed} failed`);
        return summary.imported;
      },
      count,
      'import',
    );
  } finally {
    await admin.close();
  }
}

/** The sync: an IMAP account on the Dovecot, one pass into a fresh archive (account set-up not timed). */
async function syncOnce(dir: string, server: DovecotServer, count: number, i: number): Promise<Run> {
  const admin = await openAdmin(join(dir, `sync-${i}.db`), { create: true, secretKey });
  try {
    const { user, password } = server.users[0]!;
    await admin.addImapAccount({
      name: 'Bench',
      emailAddress: user,
      imap: { host: '127.0.0.1', port: server.port, security: 'none', user, password },
    });
    return await timed(
      async () => {
        const [summary] = await syncPass(admin, admin.sync(), { holder: `bench:${process.pid}` });
        if (!summary || summary.status !== 'synced')
          throw new Error(`sync: ${summary?.status} ${summary?.reason ?? ''}`);
        if (summary.failed) throw new Error(`sync: ${summary.failed} failed`);
        return summary.imported;
      },
      count,
      'sync',
    );
  } finally {
    await admin.close();
  }
}

/** IMAP alone: the same search and windowed fetches the sync makes, nothing parsed or written. */
async function fetchOnce(server: DovecotServer): Promise<number> {
  const { user, password } = server.users[0]!;
  const client = connect({
    host: '127.0.0.1',
    port: server.port,
    security: 'none',
    user,
    password,
    folders: null,
    exclude: [],
  });
  client.on('error', () => {});
  await client.connect();
  let n = 0;
  const lock = await client.getMailboxLock('INBOX', { readOnly: true });
  try {
    for await (const _ of messagesAfter(client, 'INBOX', 0)) n++;
  } finally {
    lock.release();
    await client.logout();
  }
  return n;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

async function main(): Promise<void> {
  const count = argValue('--messages', 20_000);
  const runs = argValue('--runs', 3);
  const dir = mkdtempSync(join(tmpdir(), 'mag-bench-sync-'));
  let server: DovecotServer | undefined;
  try {
    // The same messages both ways: an mbox for the importer, the Dovecot INBOX for the sync.
    const raws: Buffer[] = [];
    const mbox = join(dir, 'corpus.mbox');
    const out = createWriteStream(mbox);
    for (const m of typicalMail(count)) {
      raws.push(m.raw);
      if (!out.write(formatMboxEntry(m.raw, m.sender, m.date))) await once(out, 'drain');
    }
    out.end();
    await once(out, 'finish');
    const mb = raws.reduce((s, r) => s + r.length, 0) / 1e6;
    console.log(
      `Corpus: ${fmt(count)} messages, ${mb.toFixed(1)} MB (avg ${((mb * 1e3) / count).toFixed(1)} KB); mbox ${(statSync(mbox).size / 1e6).toFixed(1)} MB.`,
    );

    server = await startDovecot({ label: 'bench' });
    let t = performance.now();
    await writeMaildirMessages(server, undefined, 'INBOX', raws);
    raws.length = 0;
    // A server's mailbox is indexed already: let Dovecot build its index before any timing.
    const held = await countMessages(server, undefined, 'INBOX');
    if (held !== count) throw new Error(`Dovecot holds ${held} messages, expected ${count}`);
    console.log(`Dovecot INBOX written and indexed in ${((performance.now() - t) / 1000).toFixed(1)} s.`);

    const fetchRun = await timed(() => fetchOnce(server!), count, 'fetch only');
    const imports: Run[] = [];
    const syncs: Run[] = [];
    for (let i = 0; i < runs; i++) {
      imports.push(await importOnce(dir, mbox, count, i));
      syncs.push(await syncOnce(dir, server, count, i));
      rmSync(join(dir, `import-${i}.db`), { force: true });
      rmSync(join(dir, `sync-${i}.db`), { force: true });
      const r = (x: Run) => `${fmt(count / x.seconds)} msg/s (${x.seconds.toFixed(1)} s)`;
      console.log(`Run ${i + 1}: import ${r(imports[i]!)}, sync ${r(syncs[i]!)}`);
    }

    const importRate = median(imports.map((x) => count / x.seconds));
    const syncRate = median(syncs.map((x) => count / x.seconds));
    const cpuRate = (xs: Run[]) => median(xs.map((x) => count / x.cpuSeconds));
    const runsOf = (xs: Run[]) => xs.map((x) => fmt(count / x.seconds)).join(', ');
    console.log('');
    console.log('| | median msg/s | runs (msg/s) | msg per CPU-second of this process |');
    console.log('|---|---:|---|---:|');
    console.log(
      `| IMAP fetch only (search + FETCH windows, nothing stored) | ${fmt(count / fetchRun.seconds)} | 1 run, ${fetchRun.seconds.toFixed(1)} s | ${fmt(count / fetchRun.cpuSeconds)} |`,
    );
    console.log(`| file import (mbox) | ${fmt(importRate)} | ${runsOf(imports)} | ${fmt(cpuRate(imports))} |`);
    console.log(`| IMAP sync (one pass) | ${fmt(syncRate)} | ${runsOf(syncs)} | ${fmt(cpuRate(syncs))} |`);
    const ratio = syncRate / importRate;
    console.log('');
    console.log(
      `Sync / import: ${(ratio * 100).toFixed(0)}% (target at least ${TARGET * 100}%): ${ratio >= TARGET ? 'met' : 'MISSED'}.`,
    );
  } finally {
    await server?.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
