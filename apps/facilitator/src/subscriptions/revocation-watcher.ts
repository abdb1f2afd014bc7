import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { AbiEvent, Address } from 'viem';
import { eip3009Abi } from '@mp/chain';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { NetworkRegistry, type Network } from '../networks/network-registry';
import { Clock } from '../x402/clock';
import { AuthorizationVault } from './authorization-vault';
import { Subscriptions } from './subscriptions.repository';

const AUTHORIZATION_CANCELED = eip3009Abi.find((e) => e.type === 'event' && e.name === 'AuthorizationCanceled') as AbiEvent;

/** The cursor of one network's watcher in facilitator.chain_cursors. */
export const revocationCursorName = (network: string) => `authorization-canceled:${network}`;

/**
 * Watches the tokens of live evm subscriptions for `AuthorizationCanceled(authorizer, nonce)` (worker role): a payer
 * who cancels any of its pre-signed authorizations on chain withdraws the grant, and the subscription is revoked once
 * (subscription.revoked, reason authorization_canceled, with the nonce and the transaction; every stored authorization
 * destroyed; later charges refused). Logs are read in ranges of at most REVOCATION_BLOCK_RANGE blocks from a cursor
 * kept in PostgreSQL, so a restart resumes where it stopped; replicas may read the same range, and the revocation's
 * row lock makes the second one a no-op. A charge also checks `authorizationState` before it sends, so a cancel the
 * watcher has not read yet is caught there. Each poll also re-seals a batch of authorizations still under an older
 * sealing key (AuthorizationVault).
 */
@Injectable()
export class RevocationWatcher implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(RevocationWatcher.name);
  private timer?: NodeJS.Timeout;
  private tick?: Promise<void>;
  private stopped = false;

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly networks: NetworkRegistry,
    private readonly subscriptions: Subscriptions,
    private readonly vault: AuthorizationVault,
    private readonly clock: Clock,
  ) {}

  onModuleInit(): void {
    this.schedule(0);
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.tick?.catch(() => undefined);
  }

  /** One pass over every network (also what tests call, instead of waiting for the timer). */
  async pollOnce(): Promise<number> {
    let revoked = 0;
    for (const network of this.networks.all()) revoked += await this.pollNetwork(network);
    await this.vault.resealBatch();
    return revoked;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.tick = this.pollOnce()
        .then(() => undefined)
        .catch((error: Error) => this.logger.warn(`revocation watch (retrying): ${error.message}`))
        .finally(() => this.schedule(this.config.subscriptions?.revocationPollMs ?? 2_000));
    }, ms);
    this.timer.unref();
  }

  /** Reads the next ranges up to the head, revoking what they show; returns how many subscriptions it revoked. */
  private async pollNetwork(network: Network): Promise<number> {
    const name = revocationCursorName(network.config.network);
    const head = await network.client.getBlockNumber();
    const stored = await this.subscriptions.cursor(name);
    const range = BigInt(this.config.subscriptions?.revocationBlockRange ?? 2_000);
    // first run (or a chain younger than the cursor, as after a local chain's restart): from one range back
    let from = stored === undefined || stored > head ? (head >= range ? head - range + 1n : 0n) : stored + 1n;
    let revoked = 0;
    while (!this.stopped && from <= head) {
      const to = from + range - 1n < head ? from + range - 1n : head;
      const assets = await this.subscriptions.liveAssets(network.config.network);
      if (assets.length) revoked += await this.readRange(network, assets as Address[], from, to);
      await this.subscriptions.setCursor(name, to);
      from = to + 1n;
    }
    return revoked;
  }

  private async readRange(network: Network, assets: Address[], fromBlock: bigint, toBlock: bigint): Promise<number> {
    const logs = await network.client.getLogs({ address: assets, event: AUTHORIZATION_CANCELED, fromBlock, toBlock });
    const canceled = logs.flatMap((log) => {
      const args = (log as unknown as { args: { authorizer?: Address; nonce?: `0x${string}` } }).args;
      return args.authorizer && args.nonce ? [{ authorizer: args.authorizer, nonce: args.nonce, log }] : [];
    });
    const matches = await this.subscriptions.matchCanceled(network.config.network, canceled);
    let revoked = 0;
    for (const match of matches) {
      const { log } = canceled.find((c) => c.nonce.toLowerCase() === match.nonce && c.authorizer.toLowerCase() === match.payer)!;
      const block = log.blockNumber === null ? undefined : await network.client.getBlock({ blockNumber: log.blockNumber });
      const at = block ? new Date(Number(block.timestamp) * 1000) : new Date(this.clock.nowMs());
      const done = await this.subscriptions.revoke(
        match.subscriptionId,
        {
          reason: 'authorization_canceled',
          message: `the payer canceled a pre-signed authorization on chain (AuthorizationCanceled in block ${log.blockNumber})`,
          at,
          nonce: match.nonce,
          ...(log.transactionHash && { txHash: log.transactionHash }),
        },
        new Date(this.clock.nowMs()),
      );
      if (done) {
        revoked += 1;
        this.logger.log(`subscription ${match.subscriptionId} revoked: AuthorizationCanceled ${match.nonce} in ${log.transactionHash}`);
      }
    }
    return revoked;
  }
}
