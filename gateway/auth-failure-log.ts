// Failed key checks in the log (docs/security.md, item 14): who tried, why it failed, never the
// key. A key's first 11 characters are its public prefix (the web page and `keys list` show
// them); anything else that was presented is described by its length only. A flood of failures
// cannot fill the disk: at most MAX_LINES lines a minute, then one line that counts the rest.
import type { Logger } from 'pino';
import type { AuthFailureReason } from './auth.js';

const WINDOW_MS = 60_000;
export const MAX_LINES_PER_MINUTE = 50;
const MAX_ADDRESSES = 10_000;

export class AuthFailureLog {
  #windowEnds = 0;
  #lines = 0;
  #suppressed = 0;
  #addresses = new Set<string>();
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly logger: Logger) {}

  record(ip: string, reason: AuthFailureReason, token: string | undefined, front: 'api' | 'mcp'): void {
    const now = Date.now();
    if (now >= this.#windowEnds) this.#roll(now);
    if (this.#lines < MAX_LINES_PER_MINUTE) {
      this.#lines++;
      const presented =
        token === undefined
          ? {}
          : /^ma_[A-Za-z0-9_-]{8}/.test(token)
            ? { keyPrefix: token.slice(0, 11) }
            : { tokenLength: token.length };
      this.logger.warn({ ip, reason, front, ...presented }, 'API key refused');
      return;
    }
    this.#suppressed++;
    if (this.#addresses.size < MAX_ADDRESSES) this.#addresses.add(ip);
    // The count is written when the minute ends, even if no other failure comes.
    this.#timer ??= setTimeout(() => this.#roll(Date.now()), this.#windowEnds - now).unref();
  }

  #roll(now: number): void {
    if (this.#suppressed > 0) {
      this.logger.warn(
        { count: this.#suppressed, addresses: this.#addresses.size },
        `API key refused ${this.#suppressed} more times in the last minute (not logged one by one)`,
      );
    }
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#windowEnds = now + WINDOW_MS;
    this.#lines = 0;
    this.#suppressed = 0;
    this.#addresses.clear();
  }
}
