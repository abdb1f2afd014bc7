import type { MppTerms } from '@mp/clients';
import type { MerchantConfig } from '../merchant.config';

/**
 * The MPP terms of one paid resource: the evm offer (the same token and price as x402) and, when configured, a
 * stripe offer. `resource` goes into `opaque`, which the challenge id binds, so a challenge issued for one
 * resource (route or MCP tool) cannot pay for another.
 */
export function mppTerms(config: MerchantConfig, resource: string, options: { digest?: string } = {}): MppTerms {
  const chainId = Number(config.price.network.split(':')[1]);
  const stripe = config.mpp.stripe;
  return {
    realm: config.mpp.realm,
    offers: [
      {
        method: 'evm',
        intent: 'charge',
        request: { amount: config.price.amount, currency: config.price.asset, recipient: config.price.payTo, methodDetails: { chainId } },
      },
      ...(stripe
        ? [
            {
              method: 'stripe',
              intent: 'charge',
              request: { amount: stripe.amount, currency: stripe.currency, methodDetails: { networkId: stripe.networkId, paymentMethodTypes: ['card'] } },
            },
          ]
        : []),
    ],
    opaque: { resource },
    ...(options.digest && { digest: options.digest }),
  };
}

export const MPP_TOP_UP_ROUTE = '/mpp/balance/top-up';
export const MPP_TOP_UP_RESOURCE = `POST ${MPP_TOP_UP_ROUTE}`;

/** The terms of a prepaid top-up: the evm offer only (the balance is kept in the token), for MERCHANT_PREPAID_TOP_UP_AMOUNT. */
export function mppTopUpTerms(config: MerchantConfig & { prepaid: NonNullable<MerchantConfig['prepaid']> }, options: { digest?: string } = {}): MppTerms {
  const terms = mppTerms(config, MPP_TOP_UP_RESOURCE, options);
  const evm = terms.offers.find((offer) => offer.method === 'evm')!;
  return { ...terms, offers: [{ ...evm, request: { ...evm.request, amount: config.prepaid.topUpAmount } }] };
}
