import { Inject, Injectable } from '@nestjs/common';
import { getAddress } from 'viem';
import { EVM_METHOD, evmChargeRequestSchema, evmSubscriptionRequestSchema, type Challenge, type MppError } from '@mp/mpp';
import { ExpiringMap } from '@mp/platform';
import { X402Reason, type PaymentRequest } from '@mp/x402';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { NetworkRegistry } from '../networks/network-registry';
import { MerchantRepository } from './merchant.repository';
import { isEvmAddress } from './receiving-addresses';

/**
 * Where a keyed merchant's settlements may send money: only to the receiving addresses it declared for the network,
 * unless it allows any (allowAnyPayTo). Checked before anything is written, so a refused request leaves no trace.
 * Requests without a key (open mode) are not checked here: they belong to no merchant and are rate-limited instead.
 *
 * An allowed address is remembered for API_KEY_CACHE_MS, as the key that asks is (a read less on every /verify and
 * /settle): an address removed, or allowAnyPayTo turned off, stops being payable within that time on every replica.
 * Refusals are never remembered, so an address declared works at once.
 */
@Injectable()
export class PayToPolicy {
  private readonly allowed: ExpiringMap<string, true>;

  constructor(
    @Inject(FACILITATOR_CONFIG) config: FacilitatorConfig,
    private readonly merchants: MerchantRepository,
    private readonly networks: NetworkRegistry,
  ) {
    this.allowed = new ExpiringMap(config.apiKeyCacheMs);
  }

  /** Why the merchant may not be paid at `payTo` on `network` (CAIP-2); undefined when it may. */
  async refusal(merchantId: string | null, network: string, payTo: string): Promise<string | undefined> {
    // A malformed payTo is refused by the scheme with its own reason.
    if (merchantId === null || !isEvmAddress(payTo)) return undefined;
    if (await this.mayPayTo(merchantId, network, payTo.toLowerCase())) return undefined;
    return (
      `payTo ${getAddress(payTo.toLowerCase())} is not a receiving address this merchant declared for ${network}; ` +
      'declare it (POST /merchants/me/receiving-addresses, or scripts/merchants.mjs receiving-addresses add) or allow any payTo (allowAnyPayTo)'
    );
  }

  private async mayPayTo(merchantId: string, network: string, address: string): Promise<boolean> {
    const key = `${merchantId}|${network}|${address}`;
    if (this.allowed.get(key)) return true;
    if (!(await this.merchants.mayPayTo(merchantId, network, address))) return false;
    this.allowed.set(key, true);
    return true;
  }

  /** An x402 /verify or /settle: the refusal in the protocol's own shape, or undefined. */
  async x402Refusal(request: PaymentRequest, merchantId: string | null): Promise<{ reason: string; message: string } | undefined> {
    // A network we do not serve is answered invalid_network by the scheme.
    const network = this.networks.resolve(request.network, request.x402Version)?.config.network;
    if (network === undefined) return undefined;
    const message = await this.refusal(merchantId, network, request.payTo);
    return message === undefined ? undefined : { reason: X402Reason.payToNotAllowed, message };
  }

  /** An MPP evm charge: its challenge's recipient on its chain. Other methods pay the merchant's own processor account. */
  async mppRefusal(challenge: Challenge, merchantId: string | null): Promise<MppError | undefined> {
    if (challenge.method !== EVM_METHOD) return undefined;
    // a charge pays its recipient once, a subscription every period: both only where the merchant is paid
    const charge = evmChargeRequestSchema.safeParse(challenge.request);
    const subscription = charge.success ? undefined : evmSubscriptionRequestSchema.safeParse(challenge.request);
    const request = charge.success ? charge.data : subscription?.success ? subscription.data : undefined;
    if (!request) return undefined; // the rail refuses it as not an evm request
    const message = await this.refusal(merchantId, `eip155:${request.methodDetails.chainId}`, request.recipient);
    return message === undefined ? undefined : { code: 'verification-failed', detail: `${message} (${X402Reason.payToNotAllowed})` };
  }
}
