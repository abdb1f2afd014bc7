import { Inject, Injectable } from '@nestjs/common';
import Stripe from 'stripe';
import { CAPTURED_DETAIL, REFUND_OF_DETAIL, stripeAsset, type ExternalEntry, type Period } from '@mp/reconciliation';
import { RECON_CONFIG, type ReconciliationConfig } from '../reconciliation/reconciliation.config';
import { createStripeReader } from './stripe-reader';

export interface StripeScanRequest {
  merchantId: string;
  period: Period;
  /** after each object read */
  onProgress?(objectsRead: number): void;
}

type Expanded<T, K extends keyof T, V> = Omit<T, K> & { [P in K]: V };

/**
 * The Stripe side, read-only: the merchant's succeeded PaymentIntents (named by `metadata.merchant_id`, which the
 * facilitator sets, and also known by their `metadata.challenge_id`), their refunds (also a refund that carries the
 * merchant's id itself, as a subscription invoice's PaymentIntent does not), Stripe's fee on each charge (from its
 * balance transaction), and the paid invoices of the merchant's Stripe subscriptions (named by the subscription's
 * `metadata.merchant_id`: each is one period's charge, booked under the PaymentIntent that paid it, and the fee on it),
 * all created in the period. Objects without the merchant's id are not theirs.
 */
@Injectable()
export class StripeScanner {
  private readonly stripe: Stripe | undefined;

  constructor(@Inject(RECON_CONFIG) private readonly config: ReconciliationConfig) {
    if (config.stripe) this.stripe = createStripeReader(config.stripe, 'reconciliation');
  }

  get enabled(): boolean {
    return this.stripe !== undefined;
  }

  async scan(request: StripeScanRequest): Promise<ExternalEntry[]> {
    if (!this.stripe) return [];
    const created = { gte: Math.floor(request.period.from.getTime() / 1000), lt: Math.ceil(request.period.to.getTime() / 1000) };
    const ours = (metadata: Stripe.Metadata | null | undefined) => metadata?.merchant_id === request.merchantId;
    const entries: ExternalEntry[] = [];
    let read = 0;
    const progress = () => request.onProgress?.(++read);

    await this.stripe.paymentIntents.list({ created, limit: 100 }).autoPagingEach((intent) => {
      progress();
      if (intent.status === 'succeeded' && ours(intent.metadata)) entries.push(paymentEntry(intent));
    });
    await this.stripe.refunds.list({ created, limit: 100, expand: ['data.payment_intent'] }).autoPagingEach((refund) => {
      progress();
      const intent = refund.payment_intent as Stripe.PaymentIntent | null;
      if (refund.status === 'succeeded' && intent && (ours(intent.metadata) || ours(refund.metadata)))
        entries.push(refundEntry(refund as Expanded<Stripe.Refund, 'payment_intent', Stripe.PaymentIntent>));
    });
    // Stripe Billing makes a subscription's PaymentIntents without our metadata: they are the merchant's through their invoice
    const subscriptionIntents = new Set<string>();
    await this.stripe.invoices.list({ created, limit: 100, status: 'paid', expand: ['data.payments'] }).autoPagingEach((invoice) => {
      progress();
      if (!invoice.parent?.subscription_details || !ours(invoice.parent.subscription_details.metadata)) return;
      const intent = paymentIntentOf(invoice);
      if (intent) subscriptionIntents.add(intent);
      entries.push(invoiceEntry(invoice, intent));
    });
    if (this.config.stripeFees) {
      await this.stripe.balanceTransactions.list({ created, limit: 100, type: 'charge', expand: ['data.source'] }).autoPagingEach((txn) => {
        progress();
        const charge = txn.source as Stripe.Charge | null;
        if (txn.fee > 0 && charge && typeof charge === 'object' && (ours(charge.metadata) || subscriptionIntents.has(intentIdOf(charge))))
          entries.push(feeEntry(txn, charge));
      });
    }
    return entries;
  }
}

function paymentEntry(intent: Stripe.PaymentIntent): ExternalEntry {
  const challengeId = intent.metadata.challenge_id;
  return {
    source: 'stripe',
    asset: stripeAsset(intent.currency),
    reference: intent.id,
    ...(challengeId && { aliases: [challengeId] }),
    kind: 'payment',
    amount: BigInt(intent.amount_received),
    occurredAt: new Date(intent.created * 1000),
    details: {
      paymentIntent: intent.id,
      status: intent.status,
      ...(challengeId && { challengeId }),
      ...(typeof intent.latest_charge === 'string' && { charge: intent.latest_charge }),
    },
  };
}

function refundEntry(refund: Expanded<Stripe.Refund, 'payment_intent', Stripe.PaymentIntent>): ExternalEntry {
  return {
    source: 'stripe',
    asset: stripeAsset(refund.currency),
    reference: refund.id,
    container: refund.payment_intent.id,
    kind: 'refund',
    amount: BigInt(refund.amount),
    occurredAt: new Date(refund.created * 1000),
    details: {
      refund: refund.id,
      paymentIntent: refund.payment_intent.id,
      // what over_refund adds the ledger's refunds of this PaymentIntent up against
      [REFUND_OF_DETAIL]: refund.payment_intent.id,
      [CAPTURED_DETAIL]: String(refund.payment_intent.amount_received),
      ...(refund.reason && { reason: refund.reason }),
    },
  };
}

/** The PaymentIntent that paid an invoice (read with `expand[]=payments`), if any. */
function paymentIntentOf(invoice: Stripe.Invoice): string | undefined {
  const paid = invoice.payments?.data.find((p) => p.status === 'paid' && p.payment.type === 'payment_intent');
  const intent = paid?.payment.payment_intent;
  return typeof intent === 'string' ? intent : intent?.id;
}

function intentIdOf(charge: Stripe.Charge): string {
  return (typeof charge.payment_intent === 'string' ? charge.payment_intent : charge.payment_intent?.id) ?? '';
}

/**
 * A paid subscription invoice: one period's charge, at the time it was paid. The facilitator books the charge under
 * the PaymentIntent that paid it (what a refund names); the invoice id pairs too.
 */
function invoiceEntry(invoice: Stripe.Invoice, intent: string | undefined): ExternalEntry {
  const subscription = invoice.parent!.subscription_details!.subscription;
  const line = invoice.lines.data[0];
  return {
    source: 'stripe',
    asset: stripeAsset(invoice.currency),
    reference: intent ?? invoice.id!,
    ...(intent && { aliases: [invoice.id!] }),
    kind: 'payment',
    amount: BigInt(invoice.amount_paid),
    occurredAt: new Date((invoice.status_transitions.paid_at ?? invoice.created) * 1000),
    details: {
      invoice: invoice.id!,
      ...(intent && { paymentIntent: intent }),
      status: invoice.status ?? '',
      subscription: typeof subscription === 'string' ? subscription : subscription.id,
      ...(invoice.billing_reason && { billingReason: invoice.billing_reason }),
      ...(line?.period && { periodStart: new Date(line.period.start * 1000).toISOString(), periodEnd: new Date(line.period.end * 1000).toISOString() }),
    },
  };
}

/** Stripe's fee on a charge: named by its balance transaction, also by the PaymentIntent (one succeeded charge each). */
function feeEntry(txn: Stripe.BalanceTransaction, charge: Stripe.Charge): ExternalEntry {
  const intent = typeof charge.payment_intent === 'string' ? charge.payment_intent : charge.payment_intent?.id;
  return {
    source: 'stripe',
    asset: stripeAsset(txn.currency),
    reference: txn.id,
    ...(intent && { aliases: [intent] }),
    kind: 'fee',
    amount: BigInt(txn.fee),
    occurredAt: new Date(txn.created * 1000),
    details: { balanceTransaction: txn.id, charge: charge.id, ...(intent && { paymentIntent: intent }) },
  };
}
