// Interoperability with a client nobody here wrote: the MCP Inspector's CLI mode
// (`npx @modelcontextprotocol/inspector --cli URL --transport http --header ... --method ...`),
// run from the installed devDependency so it works offline, against the real gateway. Serial:
// each run starts two Node processes, and the machine may be small.
import anyTest, { type TestFn } from 'ava';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { startMcpGateway, TOOL_NAMES_SORTED, type McpHarness } from './helpers/mcp.js';

const test = anyTest as TestFn<{ h: McpHarness }>;
const run = promisify(execFile);

/** The inspector's `mcp-inspector` bin, as npx would resolve it from node_modules. */
function inspectorBin(): string {
  const pkgPath = createRequire(import.meta.url).resolve('@modelcontextprotocol/inspector/package.json');
  const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { bin: Record<string, string> };
  return join(dirname(pkgPath), pkg.bin['mcp-inspector']!);
}

async function inspector(
  h: McpHarness,
  key: string,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  const argv = [
    inspectorBin(),
    '--cli',
    h.url,
    '--transport',
    'http',
    '--header',
    `Authorization: Bearer ${key}`,
    ...args,
  ];
  try {
    const { stdout, stderr } = await run(process.execPath, argv, { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

test.before(async (t) => {
  t.context = { h: await startMcpGateway() };
});

test.after.always(async (t) => {
  await t.context.h?.close();
});

test.serial(
  'the Inspector CLI lists the five tools of SPEC.md, get_thread and aggregate_emails, with their annotations',
  async (t) => {
    const { h } = t.context;
    const out = await inspector(h, h.fixture.keys.admin, '--method', 'tools/list');
    t.is(out.code, 0, out.stderr);
    const { tools } = JSON.parse(out.stdout) as {
      tools: Array<{ name: string; annotations: { readOnlyHint: boolean } }>;
    };
    t.deepEqual(tools.map((x) => x.name).sort(), TOOL_NAMES_SORTED);
    t.true(tools.every((x) => x.annotations.readOnlyHint));
  },
);

test.serial("the Inspector CLI calls search_emails with the key owner's permissions", async (t) => {
  const { h } = t.context;
  const admin = await inspector(
    h,
    h.fixture.keys.admin,
    '--method',
    'tools/call',
    '--tool-name',
    'search_emails',
    '--tool-arg',
    'q=budget',
  );
  const alice = await inspector(
    h,
    h.fixture.keys.alice,
    '--method',
    'tools/call',
    '--tool-name',
    'search_emails',
    '--tool-arg',
    'q=budget',
    '--tool-arg',
    'pageSize=1',
  );
  t.is(admin.code, 0, admin.stderr);
  const adminResult = JSON.parse(admin.stdout) as {
    structuredContent: { totalItems: number };
    content: Array<{ text: string }>;
  };
  t.is(adminResult.structuredContent.totalItems, 3);
  t.deepEqual(JSON.parse(adminResult.content[0]!.text), adminResult.structuredContent);

  // pageSize=1 arrives as an integer: the CLI converts by the advertised input schema.
  t.is(alice.code, 0, alice.stderr);
  t.like(JSON.parse(alice.stdout), { structuredContent: { totalItems: 2, pageSize: 1, totalPages: 2 } });
});

test.serial('the Inspector CLI downloads an attachment', async (t) => {
  const { h } = t.context;
  const out = await inspector(
    h,
    h.fixture.keys.admin,
    '--method',
    'tools/call',
    '--tool-name',
    'get_attachment',
    '--tool-arg',
    `id=${h.fixture.emails.invoice}`,
    '--tool-arg',
    `attachmentId=${h.fixture.attachments['invoice:notes.txt']}`,
  );
  t.is(out.code, 0, out.stderr);
  const { structuredContent, content } = JSON.parse(out.stdout) as {
    structuredContent: { fileName: string; base64Data?: string };
    content: Array<{ type: string; text: string }>;
  };
  t.is(structuredContent.fileName, 'notes.txt');
  // The bytes travel once, in the text block's JSON (SPEC.md's result); not again in structuredContent.
  t.is(structuredContent.base64Data, undefined);
  const { base64Data } = JSON.parse(content[0]!.text) as { base64Data: string };
  t.is(Buffer.from(base64Data, 'base64').toString(), 'line one\nline two\n');
});

test.serial('the Inspector CLI is refused with a revoked key', async (t) => {
  const { h } = t.context;
  const out = await inspector(h, h.fixture.keys.revoked, '--method', 'tools/list');
  t.not(out.code, 0);
  t.regex(out.stdout + out.stderr, /401|revoked/);
});
