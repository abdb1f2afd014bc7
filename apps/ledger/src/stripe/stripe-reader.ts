import Stripe from 'stripe';
import type { ReconciliationConfig } from '../reconciliation/reconciliation.config';

/** The ledger's Stripe client (STRIPE_SECRET_KEY, STRIPE_API_BASE): reads only, so every request may be retried. */
export function createStripeReader(settings: NonNullable<ReconciliationConfig['stripe']>, purpose: string): Stripe {
  const protocol = settings.apiBase.protocol === 'http:' ? 'http' : 'https';
  return new Stripe(settings.secretKey, {
    host: settings.apiBase.hostname,
    port: settings.apiBase.port ? Number(settings.apiBase.port) : protocol === 'http' ? 80 : 443,
    protocol,
    timeout: settings.timeoutMs,
    maxNetworkRetries: 2,
    appInfo: { name: `machine-payments-ledger-${purpose}` },
  });
}

export interface StripeFee {
  amount: bigint;
  /** the charge's balance transaction (txn_…) */
  balanceTransaction: string;
}

/** Stripe's fee on a PaymentIntent's charge, from its balance transaction; undefined while there is none. */
export async function stripeFeeOf(stripe: Stripe, paymentIntentId: string): Promise<StripeFee | undefined> {
  const intent = await stripe.paymentIntents.retrieve(paymentIntentId, { expand: ['latest_charge.balance_transaction'] });
  const charge = intent.latest_charge;
  const txn = charge && typeof charge === 'object' ? charge.balance_transaction : null;
  if (!txn || typeof txn !== 'object') return undefined;
  return { amount: BigInt(txn.fee), balanceTransaction: txn.id };
}
