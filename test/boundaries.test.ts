// The boundaries between the project's parts, read from the TypeScript sources (no build output, no
// services): which folder may import which, and no import circles. docs/architecture.md,
// "Boundaries", says why each rule exists; a rule that bends fails here, not in review.
import test from 'ava';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Every relative import of each .ts file under gateway/, engine/ and shared/ (type-only ones too). */
function importGraph(): Map<string, string[]> {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(path);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) files.push(path);
    }
  };
  for (const dir of ['gateway', 'engine', 'shared']) walk(dir);
  const known = new Set(files);
  // `import … from`, `export … from`, `import 'x'` and `import('x')` (dynamic, or in a type).
  const specifier =
    /(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g;
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = new Set<string>();
    for (const m of readFileSync(join(root, file), 'utf8').matchAll(specifier)) {
      const target = normalize(join(dirname(file), m[1] ?? m[2]!))
        .replaceAll('\\', '/')
        .replace(/\.js$/, '.ts');
      const resolved = known.has(target) ? target : known.has(`${target}/index.ts`) ? `${target}/index.ts` : null;
      if (!resolved) throw new Error(`${file} imports ${m[1] ?? m[2]}, which is not a source file`);
      targets.add(resolved);
    }
    graph.set(file, [...targets].sort());
  }
  return graph;
}

const graph = importGraph();
const under = (folder: string) => (file: string) => file.startsWith(`${folder}/`);
/** Every `from -> to` arrow where `from` passes `source` and `to` passes `target`. */
const arrows = (source: (f: string) => boolean, target: (f: string) => boolean): string[] =>
  [...graph].flatMap(([from, tos]) => (source(from) ? tos.filter(target).map((to) => `${from} -> ${to}`) : []));

/** Strongly connected components of more than one file (Tarjan). */
function circles(): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)!) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

test('the reader sees every source file and its imports', (t) => {
  // A parser that saw nothing would pass every rule below.
  t.true(graph.size > 100);
  t.true(graph.get('engine/sqlite/admin.ts')!.includes('engine/store-contract.ts'));
  t.true(graph.get('engine/archive.ts')!.includes('engine/postgres/admin.ts'), 'the dynamic import is seen');
  t.true(graph.get('gateway/app.ts')!.includes('engine/index.ts'));
});

test('no import circles in gateway/, engine/ or shared/', (t) => {
  t.deepEqual(circles(), []);
});

test('the gateway reaches the engine only through engine/index.ts', (t) => {
  t.deepEqual(
    arrows(under('gateway'), (to) => under('engine')(to) && to !== 'engine/index.ts'),
    [],
  );
  t.true(existsSync(join(root, 'engine/index.ts')));
});

test('nothing imports upward: shared/ imports neither engine/ nor gateway/, the engine not the gateway', (t) => {
  t.deepEqual(
    arrows(under('shared'), (to) => under('engine')(to) || under('gateway')(to)),
    [],
  );
  t.deepEqual(arrows(under('engine'), under('gateway')), []);
});

test('only the CLI imports the CLI and the demo builder', (t) => {
  const cli = under('engine/cli');
  const demo = under('engine/demo');
  t.deepEqual(
    arrows((f) => !cli(f), cli),
    [],
  );
  t.deepEqual(
    arrows((f) => !cli(f) && !demo(f), demo),
    [],
  );
});

const sqlite = under('engine/sqlite');
const postgres = under('engine/postgres');
const eitherStore = (f: string) => sqlite(f) || postgres(f);

test('the two stores import nothing from each other', (t) => {
  t.deepEqual(arrows(sqlite, postgres), []);
  t.deepEqual(arrows(postgres, sqlite), []);
});

test('the store contract, the rules both stores keep and search import neither store', (t) => {
  const neutral = (f: string) =>
    f === 'engine/store-contract.ts' || under('engine/rules')(f) || under('engine/search')(f);
  t.deepEqual(arrows(neutral, eitherStore), []);
});

test('the rules both stores keep, search and thread settings are leaves: they import only shared/ and their own folder', (t) => {
  for (const folder of ['engine/rules', 'engine/search', 'engine/threads'])
    t.deepEqual(
      arrows(under(folder), (to) => !under(folder)(to) && !under('shared')(to)),
      [],
      folder,
    );
});

/**
 * Importing, syncing and attachment text write through the writer contract (ArchiveAdmin's
 * openWriter, engine/store-contract.ts), never a store's writer. The one arrow into a store is
 * the importer's convenience for an open SQLite handle (tests and benchmarks pass one), wrapped
 * by engine/sqlite/admin.ts asAdmin.
 */
test('the importer, sync and attachment text reach no store but through the contract', (t) => {
  const writers = (f: string) => under('engine/import')(f) || under('engine/sync')(f) || under('engine/attachments')(f);
  t.deepEqual(arrows(writers, eitherStore), [
    'engine/import/importer.ts -> engine/sqlite/admin.ts',
    'engine/import/importer.ts -> engine/sqlite/open.ts',
  ]);
});

/**
 * The floors of engine/, top to bottom (docs/architecture.md, "Boundaries", rule 8). A folder is
 * one unit; the three files at the root are each their own, since they stand on different floors:
 * the door (index.ts) hands out the pool, the pool's workers open a store through the factory
 * (archive.ts), and the contract (store-contract.ts) is what the stores implement. Units on one
 * floor may import each other one way.
 */
const FLOORS: readonly (readonly string[])[] = [
  ['engine/cli'],
  ['engine/demo'],
  ['engine/index.ts'],
  ['engine/pool'],
  ['engine/archive.ts'],
  ['engine/export', 'engine/sync'],
  ['engine/import'],
  ['engine/attachments'],
  ['engine/sqlite', 'engine/postgres'],
  ['engine/store-contract.ts'],
  ['engine/rules', 'engine/search', 'engine/threads'],
];

/** The arrows that may run back up, at most two, each with its reason. */
const UPWARD: Record<string, string> = {
  // The importer reads attachment text as it writes (import -> attachments); the text of an
  // attached message (message/rfc822) is read with the importer's own MIME parser, which
  // attachments/extract.ts loads only when such an attachment comes.
  'engine/attachments -> engine/import': 'the MIME parser (import/parse.ts) reads an attached message',
};

const unitOf = (file: string): string => {
  const parts = file.split('/');
  return parts.length === 2 ? file : `${parts[0]}/${parts[1]}`;
};

test('engine/ stands on its floors: at most two arrows run back up, each named', (t) => {
  const floorOf = new Map(FLOORS.flatMap((units, floor) => units.map((u) => [u, floor] as const)));
  const engineFiles = [...graph.keys()].filter(under('engine'));
  t.deepEqual(
    [...new Set(engineFiles.map(unitOf))].filter((u) => !floorOf.has(u)),
    [],
    'every folder and root file of engine/ has a floor',
  );
  const pairs = new Set(
    arrows(under('engine'), under('engine'))
      .map((a) => a.split(' -> ').map(unitOf))
      .filter(([from, to]) => from !== to)
      .map(([from, to]) => `${from} -> ${to}`),
  );
  const upward = [...pairs]
    .filter((pair) => {
      const [from, to] = pair.split(' -> ') as [string, string];
      const [a, b] = [floorOf.get(from)!, floorOf.get(to)!];
      // Higher up, or both ways on one floor (counted once, from the first in order).
      return b < a || (a === b && pairs.has(`${to} -> ${from}`) && from < to);
    })
    .sort();
  t.true(Object.keys(UPWARD).length <= 2);
  t.deepEqual(upward, Object.keys(UPWARD).sort());
});
