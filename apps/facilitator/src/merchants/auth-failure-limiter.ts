import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { Redis } from 'ioredis';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';

const WINDOW_SECONDS = 60;

/**
 * Failed API-key attempts per client address, in a one-minute window in Redis shared by every replica. Past
 * AUTH_FAILURES_PER_MINUTE the address gets 429 before its key is even looked at, so keys cannot be guessed at
 * speed. Like the per-key limits it fails open: an unreachable Redis never stops payments.
 */
@Injectable()
export class AuthFailureLimiter implements OnModuleDestroy {
  private readonly logger = new Logger(AuthFailureLimiter.name);
  private readonly redis: Redis | undefined;

  constructor(@Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig) {
    if (config.authFailuresPerMinute === 0) return;
    this.redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2_000, commandTimeout: 250 });
    this.redis.on('error', (error: Error) => this.logger.debug(`redis: ${error.message}`));
  }

  onModuleDestroy(): void {
    this.redis?.disconnect();
  }

  /** Seconds until the address may try again, or 0 when it may try now. */
  async lockedFor(address: string): Promise<number> {
    if (!this.redis) return 0;
    try {
      const [count, ttl] = await this.redis.multi().get(this.key(address)).ttl(this.key(address)).exec().then((r) => r!.map(([, v]) => v) as [string | null, number]);
      return Number(count ?? 0) >= this.config.authFailuresPerMinute ? Math.max(1, ttl) : 0;
    } catch {
      return 0;
    }
  }

  async recordFailure(address: string): Promise<void> {
    if (!this.redis) return;
    await this.redis.multi().incr(this.key(address)).expire(this.key(address), WINDOW_SECONDS, 'NX').exec().catch(() => undefined);
  }

  private key(address: string): string {
    return `${this.config.queuePrefix}:authfail:${address}`;
  }
}
