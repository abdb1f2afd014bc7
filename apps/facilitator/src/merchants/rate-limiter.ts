import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { RedisConnections, waitForRedis } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';

/**
 * A token bucket per key in one Lua script (atomic, so replicas share one budget): it holds at most `burst` tokens
 * and refills at `rate` tokens per millisecond by Redis's own clock. A request takes one token or is refused with
 * the milliseconds until a token is back. Returns {allowed, tokens left (floored), wait ms}.
 */
const TOKEN_BUCKET = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1]) or burst
local ts = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate)
local allowed = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  wait = math.ceil((1 - tokens) / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate) + 1000)
return { allowed, math.floor(tokens), wait }
`;

export type RateLimitVerdict = { allowed: true; remaining?: number } | { allowed: false; retryAfterSeconds: number };

type WithBucket = Redis & { tokenBucket(key: string, rate: string, burst: string): Promise<[number, number, number]> };

/** A bucket's refill rate (tokens per millisecond) and size, as the script takes them. */
interface BucketShape {
  rate: string;
  burst: string;
}

function bucketShape({ perMinute, burst }: { perMinute: number; burst: number }): BucketShape | undefined {
  return perMinute === 0 ? undefined : { rate: String(perMinute / 60_000), burst: String(burst) };
}

/**
 * Per-API-key rate limits (RATE_LIMIT_PER_MINUTE, RATE_LIMIT_BURST) and, in open mode, per-client-address limits
 * for requests without a key (OPEN_MODE_RATE_LIMIT_PER_MINUTE, OPEN_MODE_RATE_LIMIT_BURST), kept in Redis. If Redis
 * cannot answer within 250 ms the request is let through and the outage is logged (at most once a minute): an
 * unavailable limiter must not stop payments.
 */
@Injectable()
export class RateLimiter implements OnModuleInit {
  private readonly logger = new Logger(RateLimiter.name);
  private readonly redis: WithBucket | undefined;
  private readonly perKey: BucketShape | undefined;
  private readonly perOpenClient: BucketShape | undefined;
  private lastWarning = 0;

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    connections: RedisConnections,
  ) {
    this.perKey = bucketShape(config.rateLimit);
    this.perOpenClient = config.openMode ? bucketShape(config.openModeRateLimit) : undefined;
    if (!this.perKey && !this.perOpenClient) return;
    const redis = connections.create('rate limits', { commandTimeout: 250 });
    redis.defineCommand('tokenBucket', { numberOfKeys: 1, lua: TOKEN_BUCKET });
    this.redis = redis as WithBucket;
  }

  async onModuleInit(): Promise<void> {
    if (this.redis) await waitForRedis(this.redis);
  }

  consume(keyId: string): Promise<RateLimitVerdict> {
    return this.take(`${this.config.queuePrefix}:ratelimit:${keyId}`, this.perKey);
  }

  /** A request without an API key in open mode, counted against its client address. */
  consumeOpen(clientAddress: string): Promise<RateLimitVerdict> {
    return this.take(`${this.config.queuePrefix}:ratelimit-open:${clientAddress}`, this.perOpenClient);
  }

  private async take(bucket: string, shape: BucketShape | undefined): Promise<RateLimitVerdict> {
    if (!this.redis || !shape) return { allowed: true };
    try {
      const [allowed, remaining, waitMs] = await this.redis.tokenBucket(bucket, shape.rate, shape.burst);
      return allowed === 1 ? { allowed: true, remaining } : { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
    } catch (error) {
      const now = Date.now();
      if (now - this.lastWarning > 60_000) {
        this.lastWarning = now;
        this.logger.warn(`rate limits are not enforced while Redis is unavailable (${(error as Error).message})`);
      }
      return { allowed: true };
    }
  }
}
