// MCP against REST for the same work: `tools/call get_email` on POST /mcp and
// GET /api/v1/emails/{id}, for the same message, key and server process, one after the other;
// the MCP call once on revision 2025-11-25 (no envelope) and once on 2026-07-28 (the per-request
// _meta envelope and headers, served through the SDK's createMcpHandler; docs/decisions.md ADR 15).
// The difference is what MCP adds: a fresh McpServer and transport per request, JSON-RPC
// framing, argument and output validation, and the result sent twice (text and structuredContent).
//
//   npm run bench:mcp [-- --duration 3 --rounds 3 --connections 8]
import { createFixture } from '../test/helpers/fixture.js';
import { load, ms, ratio, type LoadResult } from './lib/load.js';
import { startServer } from './lib/server.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const v = i === -1 ? fallback : Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${name} must be a positive whole number`);
  return v;
}

const MCP_HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };

/** One request of each kind first: both must answer 200 with the same message, or the numbers mean nothing. */
async function check(
  base: string,
  auth: Record<string, string>,
  restPath: string,
  mcpBody: string,
  mcpHeaders: Record<string, string>,
): Promise<void> {
  const rest = await fetch(base + restPath, { headers: auth });
  const mcp = await fetch(`${base}/mcp`, { method: 'POST', headers: { ...auth, ...mcpHeaders }, body: mcpBody });
  if (rest.status !== 200 || mcp.status !== 200)
    throw new Error(`warm-up failed: REST ${rest.status}, MCP ${mcp.status}`);
  const restEmail = (await rest.json()) as { subject: string };
  const mcpAnswer = (await mcp.json()) as {
    result?: { isError?: boolean; structuredContent?: { email: { subject: string } } };
  };
  if (mcpAnswer.result?.isError || mcpAnswer.result?.structuredContent?.email.subject !== restEmail.subject) {
    throw new Error(`MCP and REST disagree: ${JSON.stringify(mcpAnswer).slice(0, 300)}`);
  }
}

/** The round with the median throughput (rounds are reported whole, not mixed). */
function median(results: LoadResult[]): LoadResult {
  return [...results].sort((a, b) => a.rps - b.rps)[Math.floor(results.length / 2)]!;
}

function row(name: string, r: LoadResult): string {
  return `${name.padEnd(26)} ${String(Math.round(r.rps)).padStart(8)} ${ms(r.p50).padStart(10)} ${ms(r.p99).padStart(10)} ${String(r.non2xx + r.errors).padStart(7)}`;
}

async function main(): Promise<void> {
  const duration = arg('--duration', 3);
  const connections = arg('--connections', 8);
  const rounds = arg('--rounds', 3);
  const fixture = createFixture();
  const server = await startServer({
    Api__Enabled: 'true',
    Mcp__Enabled: 'true',
    Database__Path: fixture.dbPath,
    // Budgets far above what one run can spend: the rate limiter must not shape the result.
    Api__RateLimitPerMinute: '1000000000',
    Mcp__RateLimitPerMinute: '1000000000',
  });
  try {
    const id = fixture.emails.budget!;
    const auth = { Authorization: `Bearer ${fixture.keys.admin}` };
    const restPath = `/api/v1/emails/${id}`;
    const mcpBody = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'get_email', arguments: { id } },
    });
    // Revision 2026-07-28: the same call with the per-request envelope and the headers it requires.
    const modernBody = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'get_email',
        arguments: { id },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    });
    const modernHeaders = {
      ...MCP_HEADERS,
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': 'tools/call',
      'Mcp-Name': 'get_email',
    };
    await check(server.url, auth, restPath, mcpBody, MCP_HEADERS);
    await check(server.url, auth, restPath, modernBody, modernHeaders);

    const restLoad = (seconds: number) =>
      load({ url: server.url, connections, duration: seconds, headers: auth, paths: [restPath] });
    const mcpLoad = (seconds: number, body = mcpBody, headers: Record<string, string> = MCP_HEADERS) =>
      load({
        url: server.url,
        connections,
        duration: seconds,
        headers: { ...auth, ...headers },
        paths: ['/mcp'],
        method: 'POST',
        body,
      });
    const modernLoad = (seconds: number) => mcpLoad(seconds, modernBody, modernHeaders);
    // One unreported second of each first, so that none is measured with a cold JIT.
    await restLoad(1);
    await mcpLoad(1);
    await modernLoad(1);

    // Alternating rounds, and the median round of each kind: a burst of other load on the
    // machine then skews one round, not the whole comparison.
    console.log(
      `Same message (email ${id}), admin key, one server process; ${connections} connections, ${rounds} rounds of ${duration} s each, alternating.`,
    );
    const restRounds: LoadResult[] = [];
    const mcpRounds: LoadResult[] = [];
    const modernRounds: LoadResult[] = [];
    for (let i = 0; i < rounds; i++) {
      restRounds.push(await restLoad(duration));
      mcpRounds.push(await mcpLoad(duration));
      modernRounds.push(await modernLoad(duration));
    }
    const rest = median(restRounds);
    const mcp = median(mcpRounds);
    const modern = median(modernRounds);

    console.log(
      `\n${'request (median round)'.padEnd(26)} ${'req/s'.padStart(8)} ${'p50'.padStart(10)} ${'p99'.padStart(10)} ${'failed'.padStart(7)}`,
    );
    console.log(row(`GET ${restPath}`, rest));
    console.log(row('tools/call get_email', mcp));
    console.log(row('  the same on 2026-07-28', modern));
    console.log(
      `\nMCP / REST: throughput ${ratio(mcp.rps, rest.rps)}, p50 ${ratio(mcp.p50, rest.p50)}, p99 ${ratio(mcp.p99, rest.p99)}`,
    );
    console.log(
      `MCP 2026-07-28 / REST: throughput ${ratio(modern.rps, rest.rps)}, p50 ${ratio(modern.p50, rest.p50)}, p99 ${ratio(modern.p99, rest.p99)}`,
    );
    const perRound = (rs: LoadResult[]) => rs.map((r) => Math.round(r.rps)).join(' / ');
    console.log(
      `Rounds, req/s: REST ${perRound(restRounds)}; MCP ${perRound(mcpRounds)}; MCP 2026-07-28 ${perRound(modernRounds)}`,
    );
    const failed = [...restRounds, ...mcpRounds, ...modernRounds].reduce((n, r) => n + r.non2xx + r.errors, 0);
    if (failed > 0) throw new Error(`${failed} requests failed; the numbers above are not comparable`);
  } finally {
    await server.stop();
    fixture.cleanup();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
