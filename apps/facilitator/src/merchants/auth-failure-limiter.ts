import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { ExpiringMap, RedisConnections } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';

const WINDOW_SECONDS = 60;
/** How long an address Redis found unlocked is taken as unlocked without asking again, unless it fails here. */
const CLEAR_FOR_MS = 1_000;

/**
 * Failed API-key attempts per client address, in a one-minute window in Redis shared by every replica. Past
 * AUTH_FAILURES_PER_MINUTE the address gets 429 before its key is even looked at, so keys cannot be guessed at
 * speed. Like the per-key limits it fails open: an unreachable Redis never stops payments.
 *
 * An address Redis has just found unlocked is taken as unlocked for CLEAR_FOR_MS without asking again, until it
 * presents a bad key here: a merchant's every call does not pay a Redis round trip (0.3-1 ms on the paid request's
 * path, twice). Guessing gains nothing by it: every failure is counted in Redis as before and makes the next attempt
 * here ask Redis again, so past the limit an address gets at most the guesses it already had in flight (as without
 * the shortcut, where concurrent attempts all read the count before any failure is added), and on another replica at
 * most one more a second.
 */
@Injectable()
export class AuthFailureLimiter {
  private readonly redis: Redis | undefined;
  private readonly clear = new ExpiringMap<string, true>(CLEAR_FOR_MS);

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    connections: RedisConnections,
  ) {
    if (config.authFailuresPerMinute === 0) return;
    this.redis = connections.create('auth failures', { commandTimeout: 250 });
  }

  /** Seconds until the address may try again, or 0 when it may try now. */
  async lockedFor(address: string): Promise<number> {
    if (!this.redis || this.clear.get(address)) return 0;
    try {
      const [count, ttl] = await this.redis
        .multi()
        .get(this.key(address))
        .ttl(this.key(address))
        .exec()
        .then((r) => r!.map(([, v]) => v) as [string | null, number]);
      if (Number(count ?? 0) >= this.config.authFailuresPerMinute) return Math.max(1, ttl);
      this.clear.set(address, true);
      return 0;
    } catch {
      return 0;
    }
  }

  async recordFailure(address: string): Promise<void> {
    this.clear.delete(address);
    if (!this.redis) return;
    await this.redis
      .multi()
      .incr(this.key(address))
      .expire(this.key(address), WINDOW_SECONDS, 'NX')
      .exec()
      .catch(() => undefined);
  }

  private key(address: string): string {
    return `${this.config.queuePrefix}:authfail:${address}`;
  }
}
