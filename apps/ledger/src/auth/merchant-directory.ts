import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { z } from 'zod';
import { ExpiringMap, ProblemError } from '@mp/platform';
import { LEDGER_CONFIG, type LedgerConfig } from '../ledger.config';

/** Who is calling: the merchant an API key belongs to. */
export interface Merchant {
  merchantId: string;
  name: string;
}

const meSchema = z.object({ merchantId: z.uuid(), name: z.string() });

/**
 * Resolves merchants' API keys through the facilitator, which owns them (GET /merchants/me): the ledger never
 * reads another app's tables. A valid key is remembered for API_KEY_CACHE_MS, so a revoked key keeps working at
 * most that long; a refused key is never remembered, and concurrent lookups of one key share one call.
 */
@Injectable()
export class MerchantDirectory {
  private readonly known: ExpiringMap<string, Merchant>;
  private readonly asking = new Map<string, Promise<Merchant | undefined>>();

  constructor(@Inject(LEDGER_CONFIG) private readonly config: LedgerConfig) {
    this.known = new ExpiringMap(config.apiKeyCacheMs);
  }

  /**
   * The key's merchant; undefined for a key the facilitator refuses. Throws a problem when it cannot tell.
   * `clientAddress` goes to the facilitator as X-Forwarded-For, so its limit on failed keys counts the client that
   * sent them, not the ledger (which would lock every merchant out of the ledger).
   */
  async resolve(key: string, clientAddress?: string): Promise<Merchant | undefined> {
    // Keys are kept in memory only as hashes.
    const hash = createHash('sha256').update(key).digest('hex');
    const known = this.known.get(hash);
    if (known) return known;
    let asking = this.asking.get(hash);
    if (!asking) {
      asking = this.ask(key, hash, clientAddress).finally(() => this.asking.delete(hash));
      this.asking.set(hash, asking);
    }
    return asking;
  }

  private async ask(key: string, hash: string, clientAddress: string | undefined): Promise<Merchant | undefined> {
    let response: Response;
    try {
      response = await fetch(`${this.config.facilitatorUrl}/merchants/me`, {
        headers: { authorization: `Bearer ${key}`, accept: 'application/json', ...(clientAddress && { 'x-forwarded-for': clientAddress }) },
        signal: AbortSignal.timeout(this.config.facilitatorTimeoutMs),
      });
    } catch (error) {
      throw new ProblemError('upstream_unavailable', `API keys cannot be checked: the facilitator did not answer (${(error as Error).name}); retry shortly`);
    }
    if (response.status === 401) return undefined;
    if (response.status === 429) {
      const retryAfter = Number(response.headers.get('retry-after')) || 60;
      throw new ProblemError('rate_limited', `too many failed API-key attempts; retry in ${retryAfter} s`, { retryAfter });
    }
    const body = response.status === 200 ? meSchema.safeParse(await response.json().catch(() => undefined)) : undefined;
    if (!body?.success)
      throw new ProblemError('upstream_unavailable', `API keys cannot be checked: the facilitator answered ${response.status}; retry shortly`);
    const merchant = { merchantId: body.data.merchantId.toLowerCase(), name: body.data.name };
    this.known.set(hash, merchant);
    return merchant;
  }
}
