// Leaves the compiled `mail-archive` command executable. tsc writes new files with mode 0644, so
// after a clean build (npm test cleans dist/ first) `npx mail-archive` failed with "Permission
// denied"; every script that compiles runs this after tsc (test/build-scripts.test.ts).
// Usage: node scripts/cli-executable.mjs [dist directory, default: this checkout's dist/]
import { chmodSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = process.argv[2] ?? fileURLToPath(new URL('../dist', import.meta.url));
const bin = join(dist, 'engine', 'cli', 'main.js');
if (!existsSync(bin)) {
  process.stderr.write(`cli-executable: ${bin} does not exist; did tsc run?\n`);
  process.exit(1);
}
chmodSync(bin, 0o755);
