import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type Stripe from 'stripe';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { STRIPE_CLIENT, stripeCallOutcome, stripeFailure } from '../stripe/stripe.client';
import { RefundRepository, type RefundRecord } from './refund.repository';
import type { RefundReason } from './refunds.dto';

/** The extension's reasons Stripe has a word for; the others are sent without one (and kept in our metadata). */
const STRIPE_REASONS: Partial<Record<RefundReason, Stripe.RefundCreateParams.Reason>> = {
  duplicate_payment: 'duplicate',
  customer_request: 'requested_by_customer',
};

/** Most Stripe refunds of one PaymentIntent read when looking ours up (a payment is refunded a handful of times). */
const LIST_CAP = 1_000;

/**
 * Stripe refunds through the SDK: one `POST /v1/refunds` per refund, its idempotency key derived from the refund's id
 * and its metadata naming it (`refund_id`). The Stripe refund's status decides: `succeeded` → executed, `failed` or
 * `canceled` → failed, anything else pending until a webhook (`refund.updated`, `refund.failed`, `charge.refunded`)
 * or the sweep reads it again. An answer that does not tell (no answer, 5xx, `idempotency_key_in_use`) leaves the
 * refund pending; the sweep then lists the PaymentIntent's refunds to find ours, and only when there is none asks
 * again with the same idempotency key, so a lost answer never becomes a second refund.
 */
@Injectable()
export class StripeRefunds {
  private readonly logger = new Logger(StripeRefunds.name);

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    @Optional() @Inject(STRIPE_CLIENT) private readonly stripe: Stripe | undefined,
    private readonly refunds: RefundRepository,
  ) {}

  get configured(): boolean {
    return Boolean(this.stripe && this.config.stripe);
  }

  /** Asks Stripe for the refund and applies its answer; a refusal is confirmed by a lookup before the refund fails. */
  async execute(refund: RefundRecord, paymentIntent: string): Promise<void> {
    let created: Stripe.Refund;
    try {
      created = await this.client().refunds.create(
        {
          payment_intent: paymentIntent,
          amount: Number(refund.amount),
          ...(STRIPE_REASONS[refund.reason as RefundReason] && { reason: STRIPE_REASONS[refund.reason as RefundReason] }),
          metadata: { refund_id: refund.id, payment_id: refund.paymentId, merchant_id: refund.merchantId, reason: refund.reason },
        },
        { idempotencyKey: `refund-${refund.id}`, apiVersion: this.config.stripe!.apiVersion },
      );
    } catch (error) {
      const failure = stripeFailure(error);
      if (!failure) throw error;
      if (stripeCallOutcome(failure) === 'refused') {
        // Stripe refused this request (400/404): it refunded nothing, and no other request of ours has this key. Even so
        // the PaymentIntent's refunds are read before the refund is called failed.
        const found = await this.find(refund, paymentIntent);
        if (found) return void (await this.apply(refund.id, found, 'settle'));
        await this.refunds.failed(refund.id, failure.code ?? 'stripe_refused', failure.message, null);
        return;
      }
      this.logger.warn(`refund ${refund.id}: Stripe's answer is unknown (${failure.type} ${failure.statusCode ?? ''}); the sweep will ask Stripe`);
      return;
    }
    await this.apply(refund.id, created, 'settle');
  }

  /** The sweep: our Stripe refund if Stripe has it (applied), else ask for it again under the same idempotency key. */
  async resume(refund: RefundRecord, paymentIntent: string): Promise<void> {
    const found = refund.reference ? await this.client().refunds.retrieve(refund.reference) : await this.find(refund, paymentIntent);
    if (found) return void (await this.apply(refund.id, found, 'sweep'));
    await this.execute(refund, paymentIntent);
  }

  /** Applies what a Stripe refund object says to the refund it names (metadata.refund_id); unknown refunds are ignored. */
  async apply(refundId: string, stripeRefund: Stripe.Refund, via: 'settle' | 'webhook' | 'sweep'): Promise<void> {
    switch (stripeRefund.status) {
      case 'succeeded':
        if (await this.refunds.executed(refundId, stripeRefund.id)) this.logger.log(`refund ${refundId}: Stripe refund ${stripeRefund.id} succeeded (${via})`);
        return;
      case 'failed':
      case 'canceled':
        if (
          await this.refunds.failed(
            refundId,
            stripeRefund.failure_reason ?? stripeRefund.status,
            `Stripe refund ${stripeRefund.id} ${stripeRefund.status}`,
            stripeRefund.id,
          )
        )
          this.logger.warn(`refund ${refundId}: Stripe refund ${stripeRefund.id} ${stripeRefund.status} (${via})`);
        return;
      default:
        await this.refunds.recordReference(refundId, stripeRefund.id);
    }
  }

  /** A Stripe webhook's refund (refund.created, refund.updated, refund.failed): applied if it is one of ours. */
  async applyEvent(stripeRefund: Stripe.Refund): Promise<void> {
    const refundId = stripeRefund.metadata?.refund_id;
    const refund = refundId ? await this.refunds.byId(refundId) : await this.refunds.byReference(stripeRefund.id);
    if (refund) await this.apply(refund.id, stripeRefund, 'webhook');
  }

  /** `charge.refunded`: the charge's PaymentIntent's refunds, each applied if it is ours. */
  async applyCharge(charge: Stripe.Charge): Promise<void> {
    const paymentIntent = typeof charge.payment_intent === 'string' ? charge.payment_intent : charge.payment_intent?.id;
    if (!paymentIntent) return;
    for (const stripeRefund of await this.list(paymentIntent)) await this.applyEvent(stripeRefund);
  }

  private async find(refund: Pick<RefundRecord, 'id'>, paymentIntent: string): Promise<Stripe.Refund | undefined> {
    return (await this.list(paymentIntent)).find((r) => r.metadata?.refund_id === refund.id);
  }

  /** Lists read what was written (unlike search): an absence here is real. */
  private async list(paymentIntent: string): Promise<Stripe.Refund[]> {
    const found: Stripe.Refund[] = [];
    for await (const stripeRefund of this.client().refunds.list({ payment_intent: paymentIntent, limit: 100 })) {
      found.push(stripeRefund);
      if (found.length >= LIST_CAP) break;
    }
    return found;
  }

  private client(): Stripe {
    if (!this.stripe) throw new Error('Stripe is not configured');
    return this.stripe;
  }
}
