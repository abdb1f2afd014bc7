import Stripe from 'stripe';
import { startFakeStripe, stripeClientOptions, type FakeStripe, type FakeStripeOptions } from '../src';

export interface FakeStripeFixture {
  fake: FakeStripe;
  stripe: Stripe;
  /** moves the fake's clock (seconds) */
  advance(seconds: number): void;
  /** a fresh SPT for `pm_card_visa` (or `paymentMethod`), limited to `maxAmount` usd, valid for an hour */
  grantToken(options?: { paymentMethod?: string; maxAmount?: number; currency?: string }): Promise<{ id: string }>;
}

/** Starts one fake on a random port with a movable clock, and a real SDK client pointed at it. Call `stop` after. */
export async function startFixture(options: FakeStripeOptions = {}): Promise<FakeStripeFixture> {
  let offsetMs = 0;
  const fake = await startFakeStripe({ now: () => Date.now() + offsetMs, ...options });
  const stripe = new Stripe('sk_test_123', { ...stripeClientOptions(fake) });
  return {
    fake,
    stripe,
    advance: (seconds) => {
      offsetMs += seconds * 1000;
    },
    grantToken: ({ paymentMethod = 'pm_card_visa', maxAmount = 5000, currency = 'usd' } = {}) =>
      stripe.rawRequest('POST', '/v1/test_helpers/shared_payment/granted_tokens', {
        payment_method: paymentMethod,
        usage_limits: { currency, max_amount: maxAmount, expires_at: Math.floor((Date.now() + offsetMs) / 1000) + 3600 },
        seller_details: { network_id: 'profile_test_seller' },
      }) as unknown as Promise<{ id: string }>,
  };
}

/** stripe-node has no types for the SPT params (`shared_payment_granted_token`, top level or in `payment_method_data`): cast. */
export function untyped<T>(params: Record<string, unknown>): T {
  return params as T;
}
