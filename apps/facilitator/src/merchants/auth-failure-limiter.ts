import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { RedisConnections } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';

const WINDOW_SECONDS = 60;

/**
 * Failed API-key attempts per client address, in a one-minute window in Redis shared by every replica. Past
 * AUTH_FAILURES_PER_MINUTE the address gets 429 before its key is even looked at, so keys cannot be guessed at
 * speed. Like the per-key limits it fails open: an unreachable Redis never stops payments.
 */
@Injectable()
export class AuthFailureLimiter {
  private readonly redis: Redis | undefined;

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    connections: RedisConnections,
  ) {
    if (config.authFailuresPerMinute === 0) return;
    this.redis = connections.create('auth failures', { commandTimeout: 250 });
  }

  /** Seconds until the address may try again, or 0 when it may try now. */
  async lockedFor(address: string): Promise<number> {
    if (!this.redis) return 0;
    try {
      const [count, ttl] = await this.redis
        .multi()
        .get(this.key(address))
        .ttl(this.key(address))
        .exec()
        .then((r) => r!.map(([, v]) => v) as [string | null, number]);
      return Number(count ?? 0) >= this.config.authFailuresPerMinute ? Math.max(1, ttl) : 0;
    } catch {
      return 0;
    }
  }

  async recordFailure(address: string): Promise<void> {
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
