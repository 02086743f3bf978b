// Sign-in throttling: fixed one-minute windows per client IP, per username and IP, and per
// username from all addresses together, on the same RateLimiter as the API (so with Redis:Url
// every process of a cluster shares the counts). Every attempt spends a point before the
// password is checked, so a throttled guess costs the server no scrypt work. The IP budget is
// spent first: a throttled IP cannot also lock out the usernames it tries. A username is
// throttled per address (five wrong passwords from one address do not lock the user out
// everywhere), and only a spray from many addresses reaches the per-username cap.
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Settings } from '../../shared/config.js';
import { addressPartition } from '../address.js';
import { Problem } from '../problem.js';
import { RateLimiter } from '../rate-limit.js';

export class LoginThrottle {
  readonly #perUser: RateLimiter;
  readonly #perUserAll: RateLimiter;
  readonly #perIp: RateLimiter;

  constructor(settings: Settings, logger: Logger, redis?: Redis) {
    this.#perUser = new RateLimiter(
      { name: 'LoginUser', pointsPerMinute: settings.Web.LoginAttemptsPerUserPerMinute },
      logger,
      redis,
    );
    this.#perUserAll = new RateLimiter(
      { name: 'LoginUserAll', pointsPerMinute: settings.Web.LoginAttemptsPerUserAllAddressesPerMinute },
      logger,
      redis,
    );
    this.#perIp = new RateLimiter(
      { name: 'LoginIp', pointsPerMinute: settings.Web.LoginAttemptsPerIpPerMinute },
      logger,
      redis,
    );
  }

  /** Both policies, for the rate-limit metrics. */
  get limiters(): RateLimiter[] {
    return [this.#perUser, this.#perUserAll, this.#perIp];
  }

  /** Spends one attempt; resolves to null when allowed, else to the seconds to wait. */
  async attempt(ip: string, username: string): Promise<number | null> {
    // An IPv6 address counts by its /64, as every per-address budget does (gateway/address.ts).
    const address = addressPartition(ip);
    try {
      await this.#perIp.consume(address);
      // Usernames are case-insensitive in the store, so they are here too.
      const user = username.trim().normalize('NFC').toLowerCase().slice(0, 128);
      await this.#perUser.consume(`user:${user} ${address}`);
      await this.#perUserAll.consume(`user:${user}`);
      return null;
    } catch (err) {
      if (err instanceof Problem && err.status === 429) return Number(err.headers['Retry-After'] ?? 60);
      throw err;
    }
  }
}
