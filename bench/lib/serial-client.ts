// One request at a time on one keep-alive connection, timed with performance.now() to the last
// byte: latency without queueing, at sub-millisecond resolution, with the status and body kept
// (autocannon reports whole milliseconds and no bodies).
import { Agent, request } from 'node:http';

export interface TimedResponse {
  ms: number;
  status: number;
  body: string;
}

export class SerialClient {
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 1 });

  constructor(private readonly baseUrl: string) {}

  get(path: string, headers: Record<string, string> = {}): Promise<TimedResponse> {
    return new Promise((resolve, reject) => {
      const t = performance.now();
      const req = request(this.baseUrl + path, { agent: this.#agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ ms: performance.now() - t, status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
        );
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
  }

  /** A GET that must answer 200 with JSON: the parsed body and the time. */
  async json<T>(path: string, headers: Record<string, string> = {}): Promise<{ ms: number; body: T }> {
    const res = await this.get(path, headers);
    if (res.status !== 200) throw new Error(`GET ${path}: status ${res.status}: ${res.body.slice(0, 300)}`);
    return { ms: res.ms, body: JSON.parse(res.body) as T };
  }

  close(): void {
    this.#agent.destroy();
  }
}
