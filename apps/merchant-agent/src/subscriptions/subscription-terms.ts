import { periodBoundary } from '@mp/billing';
import type { MppTerms } from '@mp/clients';
import { parseCredential } from '@mp/mpp';
import type { MerchantConfig, SubscriptionConfig } from '../merchant.config';

/** RFC 3339 in whole seconds, as the evm profile writes `subscriptionExpires`. */
const rfc3339 = (at: Date) => at.toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * The MPP terms of the subscription, for one resource (a route, or the A2A skill): one `subscription` offer per
 * method this agent takes (evm: the merchant's token, its wallet, a grant of `termPeriods` periods ending at
 * `subscriptionExpires`). `opaque.plan` binds the challenge to the ledger plan (the facilitator reports it with the
 * activation, and the ledger takes the product from it); `opaque.resource` to where it was issued; `binding` to
 * anything narrower (an A2A task).
 */
export function subscriptionTerms(
  config: MerchantConfig,
  subscription: SubscriptionConfig,
  resource: string,
  subscriptionExpires: string,
  binding: Record<string, string> = {},
): MppTerms {
  const chainId = Number(config.price.network.split(':')[1]);
  const { period } = subscription;
  return {
    realm: config.mpp.realm,
    offers: [
      {
        method: 'evm',
        intent: 'subscription',
        request: {
          amount: subscription.amount,
          currency: config.price.asset,
          periodUnit: period.unit,
          periodCount: String(period.count),
          recipient: config.price.payTo,
          subscriptionExpires,
          methodDetails: { chainId },
        },
      },
    ],
    opaque: { ...binding, plan: subscription.planId, resource },
  };
}

/** The end of a grant issued now: `termPeriods` periods from now (months counted in UTC, clamped to the month's end). */
export function grantExpiresAt(subscription: SubscriptionConfig, now: Date): string {
  return rfc3339(periodBoundary(now, subscription.period, subscription.termPeriods));
}

/**
 * The terms a credential is checked against. A challenge's `subscriptionExpires` depends on when it was issued, so
 * it is taken from the credential's own challenge: the facilitator accepts a challenge only with our HMAC over its
 * whole request and only while it has not expired, so an echoed value is one we issued, recently. Every other field
 * must still equal ours. A credential we cannot read gets the terms of now (the facilitator then words the refusal).
 */
export function termsForCredential(
  config: MerchantConfig,
  subscription: SubscriptionConfig,
  resource: string,
  credential: string,
  now: Date,
  binding: Record<string, string> = {},
): MppTerms {
  const parsed = parseCredential(credential);
  const echoed = parsed.ok ? parsed.value.challenge.request.subscriptionExpires : undefined;
  return subscriptionTerms(config, subscription, resource, typeof echoed === 'string' ? echoed : grantExpiresAt(subscription, now), binding);
}
