// autocannon runs and latency summaries shared by the benchmarks.
import autocannon from 'autocannon';

export interface LoadResult {
  requests: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  non2xx: number;
  errors: number;
}

export interface LoadOptions {
  url: string;
  connections: number;
  duration: number;
  headers?: Record<string, string>;
  /** Request paths cycled through by every connection. */
  paths: string[];
  method?: 'GET' | 'POST';
  body?: string;
}

export async function load(options: LoadOptions): Promise<LoadResult> {
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.duration,
    headers: options.headers ?? {},
    requests: options.paths.map((path) => ({
      path,
      method: options.method ?? 'GET',
      ...(options.body !== undefined ? { body: options.body } : {}),
    })),
  });
  return summarise(result);
}

function summarise(result: autocannon.Result): LoadResult {
  return {
    requests: result.requests.total,
    rps: result.requests.average,
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    max: result.latency.max,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

/** One request of a stream: its path and its own headers (its key). */
export interface StreamRequest {
  path: string;
  headers: Record<string, string>;
}

export interface StreamLoadResult extends LoadResult {
  /** Requests taken from the stream (a connection's last one may have been built but not sent). */
  taken: number;
  /** Requests that came round a second time because the stream ran out. */
  repeats: number;
}

/**
 * autocannon over a stream in which every request differs: all connections share one cursor,
 * so request i goes out once, on whichever connection is free. (autocannon's `requests` array
 * alone starts every connection at its first entry: with 8 connections each entry would be
 * sent 8 times.) If the run outlasts the stream, it starts over and counts the repeats.
 */
export async function loadStream(options: {
  url: string;
  connections: number;
  duration: number;
  requests: readonly StreamRequest[];
}): Promise<StreamLoadResult> {
  const list = options.requests;
  let cursor = 0;
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.duration,
    requests: [
      {
        setupRequest: (req) => {
          const next = list[cursor++ % list.length]!;
          return { ...req, method: 'GET', path: next.path, headers: { ...req.headers, ...next.headers } };
        },
      },
    ],
  });
  return { ...summarise(result), taken: cursor, repeats: Math.max(0, cursor - list.length) };
}

/** p-th percentile (0-100) of millisecond samples. */
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export const ms = (n: number) => (Number.isFinite(n) ? `${n.toFixed(n < 10 ? 2 : 1)} ms` : 'n/a');
/** autocannon's figures, which are whole milliseconds. */
export const wholeMs = (n: number) => (Number.isFinite(n) ? `${Math.round(n)} ms` : 'n/a');
export const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}x` : 'n/a');

/**
 * Sequential requests on one keep-alive connection, timed with performance.now(): latency
 * without queueing, at sub-millisecond resolution (autocannon reports whole milliseconds).
 */
export async function sequential(url: string, headers: Record<string, string>, calls: number): Promise<number[]> {
  const { Agent, request } = await import('node:http');
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const t = performance.now();
      const req = request(url, { agent, headers }, (res) => {
        res.on('data', () => {});
        res.on('end', () =>
          res.statusCode === 200 ? resolve(performance.now() - t) : reject(new Error(`${url}: ${res.statusCode}`)),
        );
      });
      req.on('error', reject);
      req.end();
    });
  await once(); // connect and warm up
  const times: number[] = [];
  for (let i = 0; i < calls; i++) times.push(await once());
  agent.destroy();
  return times;
}
