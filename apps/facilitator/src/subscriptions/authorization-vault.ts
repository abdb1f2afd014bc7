import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Hex } from 'viem';
import { PrismaService } from '@mp/db';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { Sealer } from './sealing';

/** The associated data a sealed signature is bound to: its table, subscription, period and nonce. */
const boundTo = (subscriptionId: string, periodIndex: number, nonce: string) =>
  `facilitator.subscription_authorizations|${subscriptionId}|${periodIndex}|${nonce.toLowerCase()}`;

/** Most rows re-sealed per call of resealBatch. */
const RESEAL_BATCH = 500;

/**
 * Pre-signed authorizations at rest: their signatures sealed with AES-256-GCM under SUBSCRIPTION_SEALING_KEYS (the
 * first key seals, all open; each row keeps its key id). Rotation: put the new key first and keep the old one after
 * it; the worker role re-seals every row still under another key (resealBatch, every revocation poll); once
 * `underOldKeys` is 0, drop the old key. Without keys the subscription intent is not offered at all.
 */
@Injectable()
export class AuthorizationVault {
  private readonly logger = new Logger(AuthorizationVault.name);
  private readonly sealer: Sealer | undefined;

  constructor(
    @Inject(FACILITATOR_CONFIG) config: FacilitatorConfig,
    private readonly db: PrismaService,
  ) {
    this.sealer = config.subscriptions ? new Sealer(config.subscriptions.sealingKeys) : undefined;
  }

  get available(): boolean {
    return this.sealer !== undefined;
  }

  seal(subscriptionId: string, periodIndex: number, nonce: string, signature: Hex): { sealed: Buffer; keyId: string } {
    return this.required().seal(Buffer.from(signature.slice(2), 'hex'), boundTo(subscriptionId, periodIndex, nonce));
  }

  open(subscriptionId: string, periodIndex: number, nonce: string, sealed: Buffer, keyId: string): Hex {
    return `0x${this.required()
      .open(sealed, keyId, boundTo(subscriptionId, periodIndex, nonce))
      .toString('hex')}`;
  }

  /** How many live sealed rows are under a key other than the current one (0: the old keys may be dropped). */
  underOldKeys(): Promise<number> {
    const sealer = this.required();
    return this.db.subscriptionAuthorization.count({ where: { sealed: { not: null }, keyId: { not: sealer.currentKeyId } } });
  }

  /**
   * Re-seals up to RESEAL_BATCH rows still under an older key with the current one; each row is compare-and-set on
   * its key id, so two workers never double-process or lose a row. Returns how many it re-sealed.
   */
  async resealBatch(): Promise<number> {
    if (!this.sealer) return 0;
    const current = this.sealer.currentKeyId;
    const rows = await this.db.subscriptionAuthorization.findMany({
      where: { sealed: { not: null }, keyId: { not: current } },
      take: RESEAL_BATCH,
      select: { subscriptionId: true, periodIndex: true, nonce: true, sealed: true, keyId: true },
    });
    let resealed = 0;
    for (const row of rows) {
      const signature = this.open(row.subscriptionId, row.periodIndex, row.nonce, Buffer.from(row.sealed!), row.keyId!);
      const next = this.seal(row.subscriptionId, row.periodIndex, row.nonce, signature);
      const moved = await this.db.subscriptionAuthorization.updateMany({
        where: { subscriptionId: row.subscriptionId, periodIndex: row.periodIndex, keyId: row.keyId },
        data: { sealed: new Uint8Array(next.sealed), keyId: next.keyId },
      });
      resealed += moved.count;
    }
    if (resealed) this.logger.log(`re-sealed ${resealed} subscription authorizations under key "${current}"`);
    return resealed;
  }

  private required(): Sealer {
    if (!this.sealer) throw new Error('SUBSCRIPTION_SEALING_KEYS is not set: subscriptions are not available');
    return this.sealer;
  }
}
