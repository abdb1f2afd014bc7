import { Inject, Injectable, Logger } from '@nestjs/common';
import { ExpiringMap } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { apiKeyPrefix, hashApiKey, sameHash } from './api-key';
import { MerchantRepository } from './merchant.repository';

/** Who is calling: resolved from an API key. */
export interface MerchantPrincipal {
  merchantId: string;
  merchantName: string;
  keyId: string;
}

const TOUCH_EVERY_MS = 60_000;

/**
 * Resolves API keys to merchants. A valid key is remembered for API_KEY_CACHE_MS (so a revocation or a disabled
 * merchant takes effect within that time on every replica); unknown or refused keys are never cached.
 */
@Injectable()
export class MerchantAuth {
  private readonly logger = new Logger(MerchantAuth.name);
  private readonly cache: ExpiringMap<string, MerchantPrincipal>;
  private readonly touched = new Map<string, number>();

  constructor(
    @Inject(FACILITATOR_CONFIG) config: FacilitatorConfig,
    private readonly merchants: MerchantRepository,
  ) {
    this.cache = new ExpiringMap(config.apiKeyCacheMs);
  }

  /** The merchant of a valid key; undefined for a malformed, unknown or revoked key or a disabled merchant. */
  async authenticate(key: string): Promise<MerchantPrincipal | undefined> {
    const prefix = apiKeyPrefix(key);
    if (!prefix) return undefined;
    const hash = hashApiKey(key);
    const now = Date.now();
    const cached = this.cache.get(hash);
    if (cached) {
      this.touch(cached.keyId, now);
      return cached;
    }
    let principal: MerchantPrincipal | undefined;
    // Every candidate is compared, in constant time, whatever the earlier ones gave.
    for (const candidate of await this.merchants.keysByPrefix(prefix)) {
      if (sameHash(candidate.hash, hash) && !candidate.revoked && !candidate.merchantDisabled) {
        principal = { merchantId: candidate.merchantId, merchantName: candidate.merchantName, keyId: candidate.keyId };
      }
    }
    if (!principal) return undefined;
    this.cache.set(hash, principal);
    this.touch(principal.keyId, now);
    return principal;
  }

  /** Records last_used_at at most once a minute per key and process, off the request path. */
  private touch(keyId: string, now: number): void {
    if (now - (this.touched.get(keyId) ?? 0) < TOUCH_EVERY_MS) return;
    this.touched.set(keyId, now);
    this.merchants.touchKey(keyId).catch((error: unknown) => this.logger.debug(`last_used_at of key ${keyId}: ${(error as Error).message}`));
  }
}
