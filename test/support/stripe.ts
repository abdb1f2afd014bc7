import Stripe from 'stripe';
import { stripe as stripeMethod } from 'mppx/client';
import { startFakeStripe, stripeClientOptions, stripeSignatureHeader, type FakeStripe } from '@mp/stripe';

export const TEST_STRIPE_WEBHOOK_SECRET = 'whsec_test_machine_payments';

export interface TestStripe {
  fake: FakeStripe;
  /** an SDK client as a buyer's platform would hold it (mints Shared Payment Tokens) */
  buyer: Stripe;
  /** the facilitator's environment for this fake */
  facilitatorEnv: Record<string, string>;
  /** the official mppx stripe method, minting a token for `paymentMethod` through the fake's test helper */
  mppxMethod(paymentMethod?: string): ReturnType<typeof stripeMethod.charge>;
}

/** The local fake Stripe, with the facilitator's settings and an mppx client method pointed at it. */
export async function startTestStripe(): Promise<TestStripe> {
  const fake = await startFakeStripe({ port: 0, webhookRetryDelaysMs: [50, 100, 200] });
  const buyer = new Stripe('sk_test_buyer_platform', stripeClientOptions(fake));
  return {
    fake,
    buyer,
    facilitatorEnv: { STRIPE_SECRET_KEY: 'sk_test_facilitator', STRIPE_API_BASE: fake.url, STRIPE_WEBHOOK_SECRET: TEST_STRIPE_WEBHOOK_SECRET },
    mppxMethod: (paymentMethod = 'pm_card_visa') =>
      stripeMethod.charge({
        paymentMethod,
        // What a buyer's server does for the mppx client: mint an SPT limited to this challenge's amount and expiry.
        createToken: async ({ amount, currency, expiresAt, networkId, paymentMethod: method }) => {
          const token = (await buyer.rawRequest('POST', '/v1/test_helpers/shared_payment/granted_tokens', {
            payment_method: method,
            usage_limits: { currency, max_amount: Number(amount), expires_at: expiresAt },
            seller_details: { network_id: networkId },
          })) as unknown as { id: string };
          return token.id;
        },
      }),
  };
}

/**
 * POSTs a webhook to the facilitator as Stripe does: `body`, with a Stripe-Signature over `signed` (the body itself
 * unless a test alters it after signing) under TEST_STRIPE_WEBHOOK_SECRET, timestamped now.
 */
export function postStripeWebhook(facilitatorUrl: string, body: string, signed = body): Promise<Response> {
  return fetch(`${facilitatorUrl}/stripe/webhooks`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'stripe-signature': stripeSignatureHeader(TEST_STRIPE_WEBHOOK_SECRET, signed, Math.floor(Date.now() / 1000)),
    },
    body,
  });
}
