import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { TransactionSigner } from '@mp/chain';
import { RedisConnections } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { NetworkRegistry } from '../networks/network-registry';

/** Take the lease if it is free or already ours; refresh its expiry either way. */
const ACQUIRE = `local v = redis.call('GET', KEYS[1])
if (not v) or v == ARGV[1] then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/**
 * A hot wallet sends from one process at a time: each worker holds a Redis lease (with expiry) per wallet and sends
 * only from wallets it holds, so nonces never collide across replicas. A lease that cannot be renewed in time is
 * given up before it can expire; a regained lease re-reads the wallet's pending nonce.
 */
@Injectable()
export class SignerLeases implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(SignerLeases.name);
  private readonly redis: Redis;
  private timer: NodeJS.Timeout | undefined;
  private readonly lastRenewed = new Map<TransactionSigner, number>();

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly networks: NetworkRegistry,
    connections: RedisConnections,
  ) {
    // connected in onModuleInit, once every wallet is disabled; closed by the platform after onModuleDestroy gave the leases back
    this.redis = connections.create('signer leases', { lazyConnect: true });
  }

  async onModuleInit(): Promise<void> {
    for (const { signer } of this.signers()) signer.enabled = false;
    await this.redis.connect().catch(() => undefined);
    await this.renew();
    this.timer = setInterval(() => void this.renew(), Math.floor(this.config.signerLeaseMs / 3));
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await Promise.all(this.signers().map(({ key, signer }) => (signer.enabled ? this.redis.eval(RELEASE, 1, key, this.config.instanceId).catch(() => 0) : 0)));
    for (const { signer } of this.signers()) signer.enabled = false;
  }

  private async renew(): Promise<void> {
    const all = this.signers();
    // Renew what this worker holds; without a cap, try every free wallet too.
    const cap = this.config.signerLeasesPerWorker;
    await Promise.all(all.filter(({ signer }) => signer.enabled || !cap).map((entry) => this.claim(entry)));
    if (!cap) return;
    // With a cap, take free wallets one at a time until this worker holds `cap` on each network, leaving the rest.
    for (const network of new Set(all.map((e) => e.network))) {
      const mine = all.filter((e) => e.network === network);
      for (const entry of mine.filter((e) => !e.signer.enabled)) {
        if (mine.filter((e) => e.signer.enabled).length >= cap) break;
        await this.claim(entry);
      }
    }
  }

  /** Takes or renews one wallet's lease, and enables or disables sending from it accordingly. */
  private async claim({ key, signer, network }: { key: string; signer: TransactionSigner; network: string }): Promise<void> {
    try {
      const held = (await this.redis.eval(ACQUIRE, 1, key, this.config.instanceId, String(this.config.signerLeaseMs))) === 1;
      if (held) this.lastRenewed.set(signer, Date.now());
      if (held && !signer.enabled) {
        signer.resetNonce();
        signer.enabled = true;
        this.logger.log(`holding ${signer.address} on ${network}`);
      } else if (!held && signer.enabled) {
        signer.enabled = false;
        this.logger.warn(`lost the lease on ${signer.address} on ${network}; another worker holds it`);
      }
    } catch (error) {
      // Redis unreachable: stop sending before the lease can lapse and another worker take the wallet.
      const renewed = this.lastRenewed.get(signer) ?? 0;
      if (signer.enabled && Date.now() - renewed > (this.config.signerLeaseMs * 2) / 3) {
        signer.enabled = false;
        this.logger.warn(`cannot renew the lease on ${signer.address} (${(error as Error).message}); not sending from it`);
      }
    }
  }

  private signers() {
    return this.networks.all().flatMap((n) =>
      n.signers.signers.map((signer) => ({
        network: n.config.network,
        signer,
        key: `${this.config.queuePrefix}:signer-lease:${n.config.network}:${signer.address.toLowerCase()}`,
      })),
    );
  }
}
