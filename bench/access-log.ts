// What chaining the access log costs (docs/evidence.md, "An access log nobody can quietly edit"):
// the same entries written the way the engine writes them (writeAccessLog: batches, one
// transaction each, the hash chained) against plain inserts of the same rows in the same
// transactions, measured in one run on one file. A search logs one entry; the varied stream's
// searches cost about 2 ms of CPU each (docs/performance.md), so the difference per entry,
// divided by that, is the share of throughput the chain can take.
//
//   npm run bench:access-log [-- --entries 200000 --batch 50]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openArchive } from '../engine/sqlite/open.js';
import { verifyAccessLog, writeAccessLog } from '../engine/sqlite/access-log.js';
import type { AccessLogEntry } from '../shared/jobs.js';
import { arg } from './lib/args.js';
import { searchEntry } from './lib/access-entries.js';

const SEARCH_CPU_MS = 2;

const entries = arg('--entries', 200_000);
const batch = arg('--batch', 50);
const dir = mkdtempSync(join(tmpdir(), 'mag-bench-log-'));
try {
  const db = openArchive(join(dir, 'a.db'));
  const make = (n: number) => searchEntry(1, n);
  const plain = db.prepare(
    `INSERT INTO access_log (user_id, type, at, key_prefix, client_ip, email_id, account_id, search_params, source)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const unchained = (list: AccessLogEntry[]) =>
    db
      .transaction(() => {
        for (const e of list)
          plain.run(
            e.userId,
            e.type,
            e.at,
            e.keyPrefix,
            e.clientIp,
            null,
            null,
            JSON.stringify(e.searchParams),
            e.source,
          );
      })
      .immediate();
  const time = (write: (list: AccessLogEntry[]) => unknown) => {
    const start = process.cpuUsage();
    for (let i = 0; i < entries; i += batch) write(Array.from({ length: batch }, (_, j) => make(i + j)));
    const used = process.cpuUsage(start);
    return (used.user + used.system) / 1000 / entries; // ms per entry
  };
  // Alternated, twice each, so neither side has the warmer file.
  const plainMs: number[] = [];
  const chainedMs: number[] = [];
  for (let round = 0; round < 2; round++) {
    plainMs.push(time(unchained));
    chainedMs.push(time((list) => writeAccessLog(db, list)));
  }
  db.exec('DELETE FROM access_log WHERE hash IS NULL');
  const v0 = process.cpuUsage();
  const report = verifyAccessLog(db);
  const v = process.cpuUsage(v0);
  db.close();
  const p = Math.min(...plainMs);
  const c = Math.min(...chainedMs);
  console.log(`${entries} entries in batches of ${batch}, CPU per entry:`);
  console.log(`  plain insert (baseline): ${(p * 1000).toFixed(1)} µs`);
  console.log(
    `  chained (writeAccessLog): ${(c * 1000).toFixed(1)} µs: ${(c / p).toFixed(2)}x the baseline, +${((c - p) * 1000).toFixed(1)} µs`,
  );
  console.log(
    `  share of a ${SEARCH_CPU_MS} ms search: ${(((c - p) / SEARCH_CPU_MS) * 100).toFixed(2)} % (target: at most 2 % of throughput)`,
  );
  console.log(
    `verify: ${report.intact ? 'intact' : 'BROKEN'}, ${report.entries} entries in ${((v.user + v.system) / 1000).toFixed(0)} ms of CPU`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
