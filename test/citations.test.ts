// What comments, tests and docs cite, read from the sources (no build output, no services). A
// reader of the repository has docs/spec.md (the copy of SPEC.md) and docs/decisions.md, not the
// spec's section numbers or the tracker: SPEC.md is cited by a heading of docs/spec.md, in one
// form (SPEC.md, “Authentication”), and decisions by ADR number or a doc's section, never by an
// issue number. CONTRIBUTING.md states both rules.
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const self = 'test/citations.test.ts';

/** Every text file a reader opens: sources, tests, benchmarks, scripts and docs (not fixtures' mail). */
function readable(): { path: string; text: string }[] {
  const files: string[] = ['README.md', 'CONTRIBUTING.md'];
  const walk = (dir: string): void => {
    for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory()) {
        if (path !== 'test/fixtures') walk(path);
      } else if (/\.(?:ts|mjs|md|sh)$/.test(e.name)) files.push(path);
    }
  };
  for (const dir of ['gateway', 'engine', 'shared', 'test', 'bench', 'scripts', 'docs']) walk(dir);
  return files.filter((f) => f !== self).map((path) => ({ path, text: readFileSync(join(root, path), 'utf8') }));
}

const files = readable();
/** Where each match of `pattern` (global; it may span a line break) is, as `path:line: match`. */
const hits = (pattern: RegExp): string[] =>
  files.flatMap(({ path, text }) =>
    [...text.matchAll(pattern)].map((m) => {
      const line = text.slice(0, m.index).split('\n').length;
      return `${path}:${line}: ${m[0].replace(/\s+/g, ' ')}`;
    }),
  );

const headings = new Set(
  readFileSync(join(root, 'docs/spec.md'), 'utf8')
    .split('\n')
    .flatMap((line) => /^#{1,4} (.+)$/.exec(line)?.slice(1) ?? []),
);

test('every citation SPEC.md, “…” names a heading of docs/spec.md', (t) => {
  const cited: string[] = [];
  const unknown: string[] = [];
  for (const { path, text } of files) {
    // A citation is `SPEC.md, ` and one or more quoted headings joined by `, ` or ` and `.
    for (const m of text.matchAll(/SPEC\.md,\s+((?:“[^”]+”(?:,\s+|\s+and\s+)?)+)/g)) {
      for (const [, quoted] of m[1]!.matchAll(/“([^”]+)”/g)) {
        // A heading may be wrapped over two lines of a comment or a doc.
        const heading = quoted!.replace(/\s*\n\s*(?:\/\/|\*|--)?\s*/g, ' ');
        cited.push(heading);
        if (!headings.has(heading)) unknown.push(`${path}: “${heading}”`);
      }
    }
  }
  t.true(cited.length > 50, `found only ${cited.length} citations: the pattern no longer matches the form`);
  t.deepEqual(unknown, []);
});

test('no citation of SPEC.md by section number', (t) => {
  t.deepEqual(hits(/SPEC\.md,?\s+(?:sections?\s+)?\d|§\s?\d|SPEC\.md\s+section/g), []);
});

test('no reference to the tracker by issue number', (t) => {
  t.deepEqual(hits(/\bissues?\s+#?\d+/gi), []);
});
