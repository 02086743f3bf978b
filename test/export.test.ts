// Exports of a search (docs/export.md): GET /api/v1/emails/export and `mail-archive export` write
// one package (the messages, manifest.csv, export.json) whose every hash verifies; the same ids as
// the search; only what the key may read; the bound, the format, an empty export; a client that
// leaves stops the batches; the mbox variant reads back with our own mbox reader; each message is
// in the access log as a Download. On the SQLite store, where originals are kept.
import anyTest, { type TestFn } from 'ava';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import JSZip from 'jszip';
import { ArchiveWriter } from '../engine/sqlite/writer.js';
import { openArchive } from '../engine/sqlite/open.js';
import { importPaths } from '../engine/import/importer.js';
import { readMbox } from '../engine/import/mbox.js';
import { csvField, exportPackage, MANIFEST_HEADER } from '../engine/export/package.js';
import { ZipWriter } from '../engine/export/zip.js';
import type { Job, JobKind, MessageCopy } from '../shared/jobs.js';
import { bearer, listen, rawBody, startApi, type ApiHarness } from './helpers/api.js';
import { createFixture, email, tempDir, type Fixture } from './helpers/fixture.js';
import { runCli } from './helpers/cli.js';

interface Ctx {
  f: Fixture;
  api: ApiHarness;
  tmp: { dir: string; cleanup: () => void };
  /** The bytes of the messages imported as originals, by subject. */
  originals: Map<string, Buffer>;
}
const test = anyTest as TestFn<Ctx>;

const sha = (b: Buffer | Uint8Array) => createHash('sha256').update(b).digest('hex');

/** Three originals that test the edges: CRLF lines with body lines starting "From ", and no final line break. */
const RAW = {
  crlf:
    'From: Dana <dana@example.org>\r\nTo: alice@work.example\r\nSubject: Export crlf\r\nMessage-ID: <export-crlf@test>\r\n' +
    'Date: Tue, 14 May 2024 08:15:02 +0000\r\n\r\nFrom the top, a line mbox quotes.\r\n>From an already quoted line.\r\nbye\r\n',
  unterminated:
    'From: eve@example.org\nTo: alice@work.example\nSubject: Export unterminated\nMessage-ID: <export-unterminated@test>\n' +
    'Date: Wed, 15 May 2024 09:00:00 +0000\n\nno line break at the end',
  formula:
    'From: "=HYPERLINK(1)" <mallory@example.org>\nTo: alice@work.example\nSubject: =SUM(A1:A2), "quoted"\n' +
    'Message-ID: <export-formula@test>\nDate: Thu, 16 May 2024 10:00:00 +0000\n\nbody\n',
};

test.before(async (t) => {
  const tmp = tempDir('mag-export-');
  const f = createFixture();
  const originals = new Map<string, Buffer>();
  mkdirSync(join(tmp.dir, 'files'));
  for (const [name, text] of Object.entries(RAW)) {
    const bytes = Buffer.from(text, 'latin1');
    writeFileSync(join(tmp.dir, 'files', `${name}.eml`), bytes);
    originals.set(/^Subject: (.*?)\r?$/m.exec(text)![1]!, bytes);
  }
  const db = openArchive(f.dbPath);
  try {
    const summary = await importPaths(db, [join(tmp.dir, 'files')], {
      accountId: f.accounts.work,
      folder: 'Originals',
    });
    t.is(summary.imported, 3);
  } finally {
    db.close();
  }
  const api = await startApi({}, { useFixture: f, store: 'sqlite' });
  t.context = { f, api, tmp, originals };
});

test.after.always(async (t) => {
  await t.context.api?.close();
  t.context.f?.cleanup();
  t.context.tmp?.cleanup();
});

interface ManifestRow {
  id: number;
  account: number;
  folder: string;
  sentDate: string;
  from: string;
  subject: string;
  size: number;
  sha256: string;
  copy: string;
}

/** RFC 4180, as a reader of manifest.csv parses it. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') ((field += '"'), i++);
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') (row.push(field), (field = ''));
    else if (c === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i++;
    } else field += c;
  }
  if (field !== '' || row.length > 0) rows.push([...row, field]);
  return rows;
}

interface Package {
  zip: JSZip;
  names: string[];
  manifestBytes: Buffer;
  manifest: ManifestRow[];
  json: Record<string, any>;
}

async function readPackage(t: { is: (a: unknown, b: unknown, m?: string) => void }, body: Buffer): Promise<Package> {
  const zip = await JSZip.loadAsync(body);
  const names = Object.keys(zip.files);
  const manifestBytes = await zip.file('manifest.csv')!.async('nodebuffer');
  const [header, ...rows] = parseCsv(manifestBytes.toString('utf8'));
  t.is(`${header!.join(',')}\r\n`, MANIFEST_HEADER);
  const manifest = rows.map((r) => ({
    id: Number(r[0]),
    account: Number(r[1]),
    folder: r[2]!,
    sentDate: r[3]!,
    from: r[4]!,
    subject: r[5]!,
    size: Number(r[6]),
    sha256: r[7]!,
    copy: r[8]!,
  }));
  const json = JSON.parse(await zip.file('export.json')!.async('string')) as Record<string, any>;
  return { zip, names, manifestBytes, manifest, json };
}

async function exportOf(api: ApiHarness, key: string, query: string) {
  return api.request.get(`/api/v1/emails/export${query}`).set(bearer(key)).buffer(true).parse(rawBody);
}

/** Every id the search answers, over all its pages. */
async function searchIds(api: ApiHarness, key: string, query: Record<string, string>): Promise<number[]> {
  const ids: number[] = [];
  for (let page = 1; ; page++) {
    const res = await api.request
      .get('/api/v1/emails')
      .query({ ...query, page: String(page), pageSize: '2' })
      .set(bearer(key));
    if (res.status !== 200) throw new Error(`search answered ${res.status}`);
    ids.push(...(res.body.items as Array<{ id: number }>).map((i) => i.id));
    if (page >= res.body.totalPages) return ids;
  }
}

const FILTERS: Array<Record<string, string>> = [
  {},
  { q: 'budget' },
  { accountId: '1', folder: 'INBOX' },
  { from: '2024-03-01', to: '2024-03-31', direction: 'incoming' },
];

test('an export holds exactly what the search matches, oldest first, and every hash verifies', async (t) => {
  const { api, f } = t.context;
  for (const filters of FILTERS) {
    const qs = `?${new URLSearchParams({ ...filters, pageSize: '1', page: '3', sortBy: 'subject' })}`;
    const res = await exportOf(api, f.keys.admin, qs);
    t.is(res.status, 200, JSON.stringify(filters));
    t.is(res.headers['content-type'], 'application/zip');
    t.regex(res.headers['content-disposition']!, /^attachment; filename="export-\d{8}T\d{6}Z\.zip"$/);
    t.is(res.headers['cache-control'], 'no-store');
    t.is(res.headers['x-content-type-options'], 'nosniff');
    const pkg = await readPackage(t, res.body as Buffer);
    const expected = await searchIds(api, f.keys.admin, filters);
    t.true(expected.length > 0, JSON.stringify(filters));
    t.deepEqual(
      pkg.manifest.map((r) => r.id).sort((a, b) => a - b),
      [...expected].sort((a, b) => a - b),
      JSON.stringify(filters),
    );
    // Oldest first; the entries' names sort as the manifest does.
    const dates = pkg.manifest.map((r) => Date.parse(r.sentDate));
    t.deepEqual(
      dates,
      [...dates].sort((a, b) => a - b),
    );
    const messages = pkg.names.filter((n) => n.startsWith('messages/'));
    t.deepEqual(messages, [...messages].sort());
    t.deepEqual(pkg.names.slice(-2), ['manifest.csv', 'export.json']);
    t.is(messages.length, pkg.manifest.length);
    for (const [i, row] of pkg.manifest.entries()) {
      t.regex(messages[i]!, new RegExp(`^messages/\\d{4}-\\d{2}-\\d{2}T\\d{6}Z_0*${row.id}\\.eml$`));
      const bytes = await pkg.zip.file(messages[i]!)!.async('nodebuffer');
      t.is(sha(bytes), row.sha256, `${messages[i]}`);
      t.is(bytes.length, row.size);
      t.true(['original', 'reconstructed'].includes(row.copy));
    }
    t.is(sha(pkg.manifestBytes), pkg.json.manifest.sha256);
    t.is(pkg.json.messages, expected.length);
    t.is(pkg.json.query, filters.q ?? null);
    t.is(pkg.json.format, 'eml-zip');
    t.deepEqual(pkg.json.exportedBy, { username: 'admin', keyPrefix: f.keys.admin.slice(0, 11), via: 'api' });
    t.regex(pkg.json.exportedAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    t.is(
      pkg.json.service.version,
      JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version,
    );
    const { q: _q, ...rest } = filters;
    t.deepEqual(pkg.json.filters, rest, 'paging and order are not part of the export');
  }
});

test('originals are exported byte for byte; text a spreadsheet would run is defused', async (t) => {
  const { api, f, originals } = t.context;
  const pkg = await readPackage(t, (await exportOf(api, f.keys.admin, '?folder=Originals')).body as Buffer);
  t.is(pkg.manifest.length, originals.size);
  for (const row of pkg.manifest) {
    const subject = row.subject.replace(/^'/, '');
    t.is(row.copy, 'original');
    t.is(row.sha256, sha(originals.get(subject)!), subject);
  }
  const formula = pkg.manifest.find((r) => r.subject.includes('SUM'))!;
  t.is(formula.subject, `'=SUM(A1:A2), "quoted"`);
  t.true(pkg.manifestBytes.includes(`"'=SUM(A1:A2), ""quoted"""`), 'quoted per RFC 4180');
  t.is(csvField('-1+2'), `'-1+2`);
  t.is(csvField('@cmd'), `'@cmd`);
  t.is(csvField(-5), '-5', 'numbers are not text');
});

test("a restricted key's export holds only its accounts", async (t) => {
  const { api, f } = t.context;
  const pkg = await readPackage(t, (await exportOf(api, f.keys.bob, '')).body as Buffer);
  t.true(pkg.manifest.length > 0);
  t.deepEqual([...new Set(pkg.manifest.map((r) => r.account))], [f.accounts.personal]);
  t.deepEqual(
    pkg.manifest.map((r) => r.id).sort((a, b) => a - b),
    (await searchIds(api, f.keys.bob, {})).sort((a, b) => a - b),
  );
  // An account bob may not read: nothing of it.
  const other = await readPackage(t, (await exportOf(api, f.keys.bob, `?accountId=${f.accounts.work}`)).body as Buffer);
  t.is(other.manifest.length, 0);
});

test('zero matches: a valid, empty package', async (t) => {
  const { api, f } = t.context;
  for (const format of ['eml-zip', 'mbox']) {
    const res = await exportOf(api, f.keys.admin, `?q=nosuchwordanywhere&format=${format}`);
    t.is(res.status, 200);
    const pkg = await readPackage(t, res.body as Buffer);
    t.is(pkg.manifestBytes.toString(), MANIFEST_HEADER);
    t.is(pkg.json.messages, 0);
    t.is(sha(pkg.manifestBytes), pkg.json.manifest.sha256);
    t.deepEqual(
      pkg.names,
      format === 'mbox' ? ['export.mbox', 'manifest.csv', 'export.json'] : ['manifest.csv', 'export.json'],
    );
  }
});

test('a bad format is a 400 problem; over the bound is a 422 problem with the count', async (t) => {
  const { api, f } = t.context;
  const head = await api.request.head('/api/v1/emails/export').set(bearer(f.keys.admin));
  t.is(head.status, 200);
  t.is(head.headers['content-type'], 'application/zip');
  const bad = await api.request.get('/api/v1/emails/export?format=pdf').set(bearer(f.keys.admin));
  t.is(bad.status, 400);
  t.regex(bad.headers['content-type']!, /^application\/problem\+json/);
  t.regex(bad.body.detail, /format must be one of eml-zip, mbox/);
  const total = (await searchIds(api, f.keys.admin, {})).length;
  const small = await startApi({ Api: { MaxExportMessages: total - 1 } }, { useFixture: f, store: 'sqlite' });
  try {
    const over = await small.request.get('/api/v1/emails/export').set(bearer(f.keys.admin));
    t.is(over.status, 422);
    t.regex(over.headers['content-type']!, /^application\/problem\+json/);
    t.true(over.body.detail.includes(`matches ${total} messages`), over.body.detail);
    t.true(over.body.detail.includes(`at most ${total - 1}`), over.body.detail);
    t.regex(over.body.detail, /date range.*account.*folder.*query/);
    const exact = await small.request.get('/api/v1/emails/export?q=budget').set(bearer(f.keys.admin));
    t.is(exact.status, 200);
  } finally {
    await small.close();
  }
  const off = await startApi({ Api: { AllowAttachmentDownloads: false } }, { useFixture: f, store: 'sqlite' });
  try {
    const refused = await off.request.get('/api/v1/emails/export').set(bearer(f.keys.admin));
    t.is(refused.status, 403);
    t.regex(refused.body.detail, /Attachment downloads are disabled/);
  } finally {
    await off.close();
  }
});

test('the mbox variant reads back, entry for entry, as the eml-zip messages', async (t) => {
  const { api, f, tmp } = t.context;
  const eml = await readPackage(t, (await exportOf(api, f.keys.admin, '')).body as Buffer);
  const res = await exportOf(api, f.keys.admin, '?format=mbox');
  t.is(res.status, 200);
  const mbox = await readPackage(t, res.body as Buffer);
  t.deepEqual(mbox.names, ['export.mbox', 'manifest.csv', 'export.json']);
  const mboxBytes = await mbox.zip.file('export.mbox')!.async('nodebuffer');
  t.is(sha(mboxBytes), mbox.json.mbox.sha256);
  t.is(mboxBytes.length, mbox.json.mbox.bytes);
  t.is(sha(mbox.manifestBytes), mbox.json.manifest.sha256);
  const path = join(tmp.dir, 'read-back.mbox');
  writeFileSync(path, mboxBytes);
  const entries: Buffer[] = [];
  for await (const entry of readMbox(path)) entries.push(entry.raw);
  t.is(entries.length, eml.manifest.length);
  const messages = eml.names.filter((n) => n.startsWith('messages/'));
  for (const [i, row] of mbox.manifest.entries()) {
    t.is(row.id, eml.manifest[i]!.id);
    const exported = await eml.zip.file(messages[i]!)!.async('nodebuffer');
    // An mbox cannot hold a message without a final line break: it is given one (docs/export.md, "mbox").
    const expected = exported[exported.length - 1] === 0x0a ? exported : Buffer.concat([exported, Buffer.from('\n')]);
    t.true(entries[i]!.equals(expected), `entry ${i}, email ${row.id}`);
    t.is(sha(entries[i]!), row.sha256);
  }
  t.true(mboxBytes.includes('\r\n>From the top'), 'a body line starting "From " is quoted, its CRLF kept');
  t.true(mboxBytes.includes('\r\n>>From an already'), 'a quoted one gets one more >');
  t.regex(mboxBytes.toString('latin1'), /^From \S+@\S+ \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\n/);
});

test('the access log holds one Download per exported message and the export as a Search', async (t) => {
  const { api, f } = t.context;
  const db = api.db();
  const before = db.prepare('SELECT max(id) AS m FROM access_log').get() as { m: number | null };
  const res = await exportOf(api, f.keys.alice, `?accountId=${f.accounts.work}&format=mbox`);
  t.is(res.status, 200);
  const pkg = await readPackage(t, res.body as Buffer);
  await api.gateway.accessLog.flush();
  const rows = db
    .prepare(
      'SELECT type, email_id, account_id, search_params, user_id FROM access_log WHERE id > ? AND user_id = ? ORDER BY id',
    )
    .all(before.m ?? 0, f.users.alice) as Array<{
    type: string;
    email_id: number | null;
    account_id: number | null;
    search_params: string | null;
    user_id: number;
  }>;
  const downloads = rows.filter((r) => r.type === 'Download');
  t.deepEqual(
    downloads.map((r) => [r.email_id, r.account_id]).sort((a, b) => a[0]! - b[0]!),
    pkg.manifest.map((r) => [r.id, r.account]).sort((a, b) => a[0]! - b[0]!),
  );
  const searches = rows.filter((r) => r.type === 'Search');
  t.is(searches.length, 1);
  t.like(JSON.parse(searches[0]!.search_params!), { accountId: String(f.accounts.work), format: 'mbox', export: true });
});

// Serial: it points TMPDIR at a directory of its own while it runs, which no other test may share.
test.serial('a client that leaves mid-export stops the batches', async (t) => {
  // Enough incompressible mail that the export spans batches and outruns the socket's buffers.
  const f = createFixture();
  t.teardown(() => f.cleanup());
  const total = 7000;
  const db = openArchive(f.dbPath);
  try {
    const writer = new ArchiveWriter(db);
    let x = 0x2545f491;
    const noise = (n: number) => {
      const b = Buffer.alloc(n);
      for (let i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        b[i] = 33 + ((x >>> 0) % 90);
      }
      return b.toString('latin1');
    };
    writer.batch(() => {
      for (let i = 0; i < total; i++) {
        writer.add(
          email({
            accountId: f.accounts.work,
            subject: `bulk ${i}`,
            sentDate: Date.parse('2020-01-01T00:00:00Z') + i * 60_000,
            textBody: noise(3000),
          }),
        );
      }
    });
  } finally {
    db.close();
  }
  const exportDir = tempDir('mag-export-tmp-');
  t.teardown(exportDir.cleanup);
  const previousTmp = process.env.TMPDIR;
  process.env.TMPDIR = exportDir.dir; // where the export keeps its manifest while it runs
  t.teardown(() => {
    if (previousTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previousTmp;
  });
  const api = await startApi({}, { useFixture: f, store: 'sqlite' });
  t.teardown(() => api.close());
  const server = await listen(api.gateway);
  t.teardown(() => server.close());
  const batches: number[] = [];
  const engine = api.gateway.engine;
  const run = engine.run.bind(engine);
  engine.run = (<K extends JobKind>(job: Job<K>) => {
    if (job.kind === 'messageCopies') batches.push(Date.now());
    return run(job);
  }) as typeof engine.run;
  const running = () => readdirSync(exportDir.dir).filter((n) => n.startsWith('mail-archive-export-')).length;
  const waitFor = async (what: string, condition: () => boolean) => {
    const deadline = Date.now() + 120_000;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(`waited too long for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  let received = 0;
  await new Promise<void>((resolve, reject) => {
    const req = httpRequest(`${server.url}/api/v1/emails/export`, { headers: bearer(f.keys.admin) }, (res) => {
      t.is(res.statusCode, 200);
      res.once('data', (chunk: Buffer) => {
        received += chunk.length;
        // The first bytes arrived: stop reading and go away.
        res.pause();
        req.destroy();
        resolve();
      });
      res.once('error', () => {});
    });
    req.once('error', (err) => (received ? resolve() : reject(err)));
    req.end();
  });
  t.true(received > 0);
  // The export ends (its temporary manifest is removed) without finishing.
  await waitFor('the export to stop', () => running() === 0 && batches.length > 0);
  const asked = batches.length;
  // A batch asked for before the client left may still be running: the pool closes once it ends.
  await waitFor('the last batch to end', () => engine.inFlight('query') === 0);
  const needed = Math.ceil(total / 2000);
  t.true(asked < needed, `asked for ${asked} batches of the ${needed} a whole export takes`);
  await api.gateway.accessLog.flush();
  const downloads = api.db().prepare("SELECT count(*) AS n FROM access_log WHERE type = 'Download'").get() as {
    n: number;
  };
  t.true(downloads.n < total, `${downloads.n} messages logged as downloaded of ${total}`);
  // And the server still answers.
  const after = await api.request.get('/api/v1/accounts').set(bearer(f.keys.admin));
  t.is(after.status, 200);
  t.is(batches.length, asked, 'no batch was asked for after the export stopped');
});

test('mail-archive export writes the same package from the command line', async (t) => {
  const { api, f, tmp } = t.context;
  const viaApi = await readPackage(t, (await exportOf(api, f.keys.admin, '?q=budget')).body as Buffer);
  const out = join(tmp.dir, 'cli-export.zip');
  const run = await runCli(['--db', f.dbPath, 'export', '--q', 'budget', '--out', out, '--json'], { cwd: tmp.dir });
  t.is(run.code, 0, run.stderr);
  const viaCli = await readPackage(t, readFileSync(out));
  t.true(viaCli.manifestBytes.equals(viaApi.manifestBytes), 'the same manifest, byte for byte');
  t.deepEqual(viaCli.names, viaApi.names);
  for (const name of viaCli.names.filter((n) => n.startsWith('messages/'))) {
    t.true(
      (await viaCli.zip.file(name)!.async('nodebuffer')).equals(await viaApi.zip.file(name)!.async('nodebuffer')),
      name,
    );
  }
  t.deepEqual(viaCli.json.exportedBy, { username: 'operator', keyPrefix: null, via: 'cli' });
  t.is(JSON.parse(run.stdout).manifestSha256, sha(viaCli.manifestBytes));
  // mbox, and a bad format, from the command line.
  const mboxOut = join(tmp.dir, 'cli-export-mbox.zip');
  const mbox = await runCli(['--db', f.dbPath, 'export', '--format', 'mbox', '--out', mboxOut], { cwd: tmp.dir });
  t.is(mbox.code, 0, mbox.stderr);
  t.regex(mbox.stdout, /^Exported \d+ messages/);
  const mboxPkg = await readPackage(t, readFileSync(mboxOut));
  t.is(sha(await mboxPkg.zip.file('export.mbox')!.async('nodebuffer')), mboxPkg.json.mbox.sha256);
  const bad = await runCli(['--db', f.dbPath, 'export', '--format', 'pdf', '--out', join(tmp.dir, 'x.zip')], {
    cwd: tmp.dir,
  });
  t.not(bad.code, 0);
  t.regex(bad.stderr, /--format must be one of eml-zip, mbox/);
});

test('the ZIP: ZIP64 records where a large export needs them, readable by a ZIP reader', async (t) => {
  // 70,000 entries: past the 65,535 a plain ZIP counts, so the end of the archive is ZIP64.
  const until = (emitter: NodeJS.EventEmitter, event: string) =>
    new Promise<void>((resolve) => emitter.once(event, () => resolve()));
  const zip = new ZipWriter(until);
  const chunks: Buffer[] = [];
  zip.stream.on('data', (c: Buffer) => chunks.push(c));
  const ended = new Promise((resolve) => zip.stream.once('end', resolve));
  const when = new Date('2024-05-14T08:15:02Z');
  for (let i = 0; i < 70_000; i++)
    await zip.addBuffer(`m/${String(i).padStart(6, '0')}.eml`, Buffer.from(`m${i}\n`), when, 0);
  await zip.addStream('streamed.txt', when, 1, async (write) => {
    for (let i = 0; i < 100; i++) await write(Buffer.from(`line ${i}\n`));
  });
  await zip.finish();
  await ended;
  const bytes = Buffer.concat(chunks);
  const zip64End = bytes.lastIndexOf(Buffer.from([0x50, 0x4b, 0x06, 0x06]));
  t.true(zip64End > 0, 'a ZIP64 end of central directory record');
  t.is(bytes.readBigUInt64LE(zip64End + 32), 70_001n, 'the count in 64 bits');
  t.is(bytes.readUInt16LE(bytes.length - 22 + 10), 0xffff, 'the plain record points to it');
  const read = await JSZip.loadAsync(bytes);
  t.is(Object.keys(read.files).length, 70_001);
  t.is(await read.file('m/069999.eml')!.async('string'), 'm69999\n');
  t.is(await read.file('streamed.txt')!.async('string'), Array.from({ length: 100 }, (_, i) => `line ${i}\n`).join(''));
  // A small export with every ZIP64 field forced (as one past 4 GB writes them) still reads back.
  const forced = exportPackage(
    { ids: [1], batch: async () => ({ copies: [copyOf(1, Buffer.from('Subject: x\r\n\r\nbody\r\n'))], next: 1 }) },
    { format: 'mbox', query: null, filters: {}, who: { username: 'x', keyPrefix: null, via: 'cli' }, createdAt: when },
    { forceZip64: true },
  );
  const parts: Buffer[] = [];
  for await (const c of forced.stream) parts.push(c as Buffer);
  const summary = await forced.done;
  const pkg = await readPackage(t, Buffer.concat(parts));
  t.is(sha(await pkg.zip.file('export.mbox')!.async('nodebuffer')), summary.mbox!.sha256);
  t.is(pkg.manifest.length, 1);
});

function copyOf(id: number, bytes: Buffer): MessageCopy {
  return {
    id,
    accountId: 1,
    folder: 'INBOX',
    sentDate: '2024-05-14T08:15:02.000Z',
    from: 'a@example.org',
    subject: 'x',
    copy: 'original',
    bytes,
    sha256: sha(bytes),
  };
}

test("on Mail Archiver's PostgreSQL: every message a reconstruction, every hash verifies, a key's accounts only, the CLI alike", async (t) => {
  const f = createFixture();
  t.teardown(() => f.cleanup());
  const api = await startApi({}, { useFixture: f, store: 'postgres' });
  t.teardown(() => api.close());
  const res = await exportOf(api, f.keys.admin, '?format=eml-zip');
  t.is(res.status, 200);
  const pkg = await readPackage(t, res.body as Buffer);
  const ids = await searchIds(api, f.keys.admin, {});
  t.deepEqual(
    pkg.manifest.map((r) => r.id).sort((a, b) => a - b),
    [...ids].sort((a, b) => a - b),
  );
  const messages = pkg.names.filter((n) => n.startsWith('messages/'));
  for (const [i, row] of pkg.manifest.entries()) {
    t.is(row.copy, 'reconstructed');
    t.is(sha(await pkg.zip.file(messages[i]!)!.async('nodebuffer')), row.sha256);
  }
  t.is(sha(pkg.manifestBytes), pkg.json.manifest.sha256);
  const bob = await readPackage(t, (await exportOf(api, f.keys.bob, '?format=mbox')).body as Buffer);
  t.true(bob.manifest.length > 0);
  t.deepEqual([...new Set(bob.manifest.map((r) => r.account))], [f.accounts.personal]);
  // The CLI on the same database writes the same messages (reconstructions are deterministic).
  const { dir, cleanup } = tempDir('mag-export-pg-');
  t.teardown(cleanup);
  const out = join(dir, 'pg.zip');
  const run = await runCli(['--db', api.settings.Database.Path, 'export', '--out', out], { cwd: dir });
  t.is(run.code, 0, run.stderr);
  const viaCli = await readPackage(t, readFileSync(out));
  t.true(viaCli.manifestBytes.equals(pkg.manifestBytes), 'the same manifest, byte for byte');
});
