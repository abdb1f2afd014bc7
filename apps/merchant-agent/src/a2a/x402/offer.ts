import type { PaymentRequired } from '@x402/core/types';
import type { MerchantConfig } from '../../merchant.config';

/** How long the buyer's signed authorization must stay valid: signing, the A2A round trip and settlement. */
const MAX_TIMEOUT_SECONDS = 300;

/**
 * The x402 v2 PaymentRequired one task asks for (x402.payment.required): scheme exact on the merchant's network and
 * asset, with the token's EIP-712 domain. The resource is the task's own URL, so a payment made for one task is
 * recognisably not a payment for another.
 */
export function paymentOffer(price: MerchantConfig['price'], amount: string, resource: { url: string; description: string }): PaymentRequired {
  return {
    x402Version: 2,
    error: 'Payment required',
    resource: { ...resource, mimeType: 'application/json' },
    accepts: [
      {
        scheme: 'exact',
        network: price.network,
        asset: price.asset,
        amount,
        payTo: price.payTo,
        maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
        extra: { name: price.eip712.name, version: price.eip712.version },
      },
    ],
  };
}
