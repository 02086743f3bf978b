// Closed-loop clients for stopping a server under load: `connections` loops, each sending its
// next request as soon as the last one is answered, through fetch (undici: keep-alive, honours
// `Connection: close`, as MCP clients in Node do). Every outcome is counted under the phase in
// which its request was sent, so that a connection refused after the server stopped listening
// (the request never reached it) is told apart from a request that reached an open connection
// and got no answer.

export const PHASES = ['before the signal', 'while draining', 'after the exit'] as const;
export type Phase = (typeof PHASES)[number];

export interface Tally {
  sent: number;
  ok: number;
  non2xx: number;
  /** Connection refused: the request never reached the server. */
  refused: number;
  /** Reached an open connection (or was written to one) and got no answer. */
  failed: number;
  failures: Record<string, number>;
}

export function emptyTally(): Tally {
  return { sent: 0, ok: 0, non2xx: 0, refused: 0, failed: 0, failures: {} };
}

export function addTally(into: Tally, from: Tally): void {
  into.sent += from.sent;
  into.ok += from.ok;
  into.non2xx += from.non2xx;
  into.refused += from.refused;
  into.failed += from.failed;
  for (const [code, n] of Object.entries(from.failures)) into.failures[code] = (into.failures[code] ?? 0) + n;
}

/** The code of a fetch failure: undici puts the socket error in `cause`. */
function failureCode(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message ?? String(err);
}

export async function loadUntil(options: {
  url: string;
  init: RequestInit;
  connections: number;
  phase: () => Phase;
  stop: Promise<void>;
}): Promise<Record<Phase, Tally>> {
  const tallies = Object.fromEntries(PHASES.map((p) => [p, emptyTally()])) as Record<Phase, Tally>;
  let stopped = false;
  void options.stop.then(() => (stopped = true));
  const loop = async () => {
    while (!stopped) {
      const tally = tallies[options.phase()];
      tally.sent++;
      try {
        const res = await fetch(options.url, options.init);
        await res.arrayBuffer();
        if (res.ok) tally.ok++;
        else tally.non2xx++;
      } catch (err) {
        const code = failureCode(err);
        if (code === 'ECONNREFUSED') {
          tally.refused++;
          await new Promise((r) => setTimeout(r, 10)); // nothing listens: do not spin
        } else {
          tally.failed++;
          tally.failures[code] = (tally.failures[code] ?? 0) + 1;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: options.connections }, loop));
  return tallies;
}
