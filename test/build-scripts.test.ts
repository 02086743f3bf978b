// The package's scripts: whatever builds dist/ leaves the `mail-archive` command executable, so
// `npx mail-archive` works after `npm run build`, `npm run build:app`, `npm run demo` and
// `npm test` (which cleans dist/ first) alike. No service; nothing here writes the real dist/.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from './helpers/fixture.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  bin: Record<string, string>;
  scripts: Record<string, string>;
};
const STEP = 'node scripts/cli-executable.mjs';

test('every script that compiles with tsc makes the command executable after it; the others build through them', (t) => {
  t.is(pkg.bin['mail-archive'], 'dist/engine/cli/main.js');
  for (const name of ['build', 'build:app']) {
    const steps = pkg.scripts[name]!.split('&&').map((s) => s.trim());
    t.regex(steps[0]!, /^tsc\b/, name);
    t.is(steps.at(-1), STEP, `${name} ends by making the command executable`);
  }
  for (const [name, script] of Object.entries(pkg.scripts)) {
    const steps = script.split('&&').map((s) => s.trim());
    steps.forEach((step, i) => {
      if (/^(?:npx )?tsc\b/.test(step)) t.is(steps[i + 1], STEP, `${name}: tsc is followed by ${STEP}`);
    });
  }
  // npm test, the demo and the unit tests build through those scripts.
  t.regex(pkg.scripts.test!, /npm run clean && npm run build\b/);
  t.regex(pkg.scripts.demo!, /^npm run -s build:app &&/);
  t.regex(pkg.scripts['test:unit']!, /^npm run -s build &&/);
});

test('the step makes a compiled main.js executable, and says so when there is none', (t) => {
  const { dir, cleanup } = tempDir();
  t.teardown(cleanup);
  const bin = join(dir, 'engine', 'cli', 'main.js');
  mkdirSync(join(dir, 'engine', 'cli'), { recursive: true });
  writeFileSync(bin, '#!/usr/bin/env node\n');
  chmodSync(bin, 0o644); // as tsc writes a new file
  const run = spawnSync(process.execPath, [join(ROOT, 'scripts', 'cli-executable.mjs'), dir], { encoding: 'utf8' });
  t.is(run.status, 0, run.stderr);
  t.is(statSync(bin).mode & 0o777, 0o755);
  const none = spawnSync(process.execPath, [join(ROOT, 'scripts', 'cli-executable.mjs'), join(dir, 'nothing')], {
    encoding: 'utf8',
  });
  t.is(none.status, 1);
  t.regex(none.stderr, /main\.js does not exist/);
});
