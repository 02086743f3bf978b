// A steady client beside the load: one request at a time on its own keep-alive connection, a
// fixed pace, every latency and status kept. It measures what a well-behaved client sees while
// someone else floods the server.
import { Agent, request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ProbeResult {
  latencies: number[];
  statuses: Map<number | 'error', number>;
}

export interface Probe {
  /** Stops after the request under way and resolves with everything measured. */
  stop(): Promise<ProbeResult>;
}

/** One GET; resolves with the status (or 'error') and the milliseconds to the last byte. */
export function timedGet(
  url: string,
  headers: Record<string, string>,
  agent?: Agent,
): Promise<{ status: number | 'error'; ms: number }> {
  return new Promise((resolve) => {
    const t = performance.now();
    const req = request(url, { headers, ...(agent ? { agent } : {}) }, (res) => {
      res.on('data', () => {});
      res.on('end', () => resolve({ status: res.statusCode ?? 'error', ms: performance.now() - t }));
      res.on('error', () => resolve({ status: 'error', ms: performance.now() - t }));
    });
    req.setTimeout(30_000, () => req.destroy());
    req.on('error', () => resolve({ status: 'error', ms: performance.now() - t }));
    req.end();
  });
}

/** GETs `url` (or the next URL it gives) every `intervalMs`, or as soon as the previous answer arrives, if later. */
export function startProbe(url: string | (() => string), headers: Record<string, string>, intervalMs = 10): Probe {
  const next = typeof url === 'string' ? () => url : url;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const result: ProbeResult = { latencies: [], statuses: new Map() };
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      const { status, ms } = await timedGet(next(), headers, agent);
      result.statuses.set(status, (result.statuses.get(status) ?? 0) + 1);
      if (status === 200) result.latencies.push(ms);
      const rest = intervalMs - (performance.now() - started);
      if (rest > 0) await sleep(rest);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      agent.destroy();
      return result;
    },
  };
}
