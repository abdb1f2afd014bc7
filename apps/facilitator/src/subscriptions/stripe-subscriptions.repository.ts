import { Injectable } from '@nestjs/common';
import { fromDbDecimal, isUniqueViolation, PrismaService, toDbDecimal, withTransaction, type Tx } from '@mp/db';
import type { NewPayment } from '../settlement/chain-payments.repository';
import { applyTransition } from '../settlement/payment-transitions';
import { SUBSCRIPTION_SELECT, Subscriptions, toRecord, type NewSubscription, type SubscriptionRecord } from './subscriptions.repository';

/** The Stripe objects a stripe subscription was activated with. */
export interface StripeSubscriptionLink {
  subscriptionId: string;
  customerId: string;
  stripeSubscriptionId: string;
  priceId: string;
  cancelRequestedAt: Date | null;
}

/** A validated paid invoice of one period. */
export interface PaidInvoice {
  invoiceId: string;
  periodIndex: number;
  paymentIntentId: string;
  amount: bigint;
  currency: string;
  paidAt: Date;
  /** the webhook event that brought it, if one did */
  eventId?: string;
}

/** What recording a paid invoice came to. */
export type InvoiceRecording =
  /** it pays its period; `confirmed`: the in-flight charge it confirmed, if one was waiting */
  | { kind: 'counted'; confirmed?: string }
  /** paid after its period closed: kept, never a charge */
  | { kind: 'late' }
  /** this invoice, or another one for its period, was recorded already */
  | { kind: 'duplicate' };

/**
 * The records of the Stripe profile of MPP subscriptions: the Stripe ids of each subscription, and each validated paid
 * invoice once per invoice and once per period (unique keys), written in the same transaction as the payment it
 * confirms. Renewal payments are ordinary payments of rail `stripe` carrying the `subscription` snapshot.
 */
@Injectable()
export class StripeSubscriptions {
  constructor(
    private readonly db: PrismaService,
    private readonly subscriptions: Subscriptions,
  ) {}

  /**
   * Activation in one transaction: the period 0 payment (subscription.activated, payment.verified, then
   * payment.confirmed by the first invoice), the subscription, its Stripe ids and the period 0 invoice. Undefined when
   * the challenge was activated already (the caller answers with that subscription).
   */
  activate(
    subscription: NewSubscription,
    link: Omit<StripeSubscriptionLink, 'subscriptionId' | 'cancelRequestedAt'>,
    invoice: PaidInvoice,
    payment: NewPayment,
  ): Promise<{ paymentId: string } | undefined> {
    return this.subscriptions.activateWith(subscription, payment, async (tx, paymentId) => {
      await tx.stripeSubscription.create({ data: { subscriptionId: subscription.id, ...link } });
      await this.insertInvoice(tx, subscription.id, invoice, 'counted');
      await this.confirm(tx, paymentId, invoice, 'settle');
    });
  }

  async link(subscriptionId: string): Promise<StripeSubscriptionLink | undefined> {
    return (await this.db.stripeSubscription.findUnique({ where: { subscriptionId } })) ?? undefined;
  }

  async linkOfStripe(stripeSubscriptionId: string): Promise<StripeSubscriptionLink | undefined> {
    return (await this.db.stripeSubscription.findUnique({ where: { stripeSubscriptionId } })) ?? undefined;
  }

  /** The subscription and Stripe ids a webhook names, in one read (a webhook's hot path). */
  async ofStripe(stripeSubscriptionId: string): Promise<{ subscription: SubscriptionRecord; link: StripeSubscriptionLink } | undefined> {
    const row = await this.db.stripeSubscription.findUnique({ where: { stripeSubscriptionId }, include: { subscription: { select: SUBSCRIPTION_SELECT } } });
    if (!row) return undefined;
    const { subscription, ...link } = row;
    return { subscription: toRecord(subscription), link };
  }

  /** A renewal payment with its subscription and that subscription's Stripe ids, in one read (a charge's hot path). */
  async chargeWithSubscription(
    paymentId: string,
  ): Promise<{ periodIndex: number; attempt: number; state: string; subscription: SubscriptionRecord; link: StripeSubscriptionLink } | undefined> {
    const row = await this.db.payment.findUnique({
      where: { id: paymentId },
      select: { subscriptionPeriod: true, subscriptionAttempt: true, state: true, subscription: { select: { ...SUBSCRIPTION_SELECT, stripe: true } } },
    });
    if (!row?.subscription?.stripe || row.subscriptionPeriod === null) return undefined;
    const { stripe: link, ...subscription } = row.subscription;
    return { periodIndex: row.subscriptionPeriod, attempt: row.subscriptionAttempt ?? 0, state: row.state, subscription: toRecord(subscription), link };
  }

  /** We are ending it at Stripe (a cancel command): the customer.subscription.deleted that follows is ours, no revocation. */
  async markCancelRequested(subscriptionId: string, at: Date): Promise<void> {
    await this.db.stripeSubscription.updateMany({ where: { subscriptionId, cancelRequestedAt: null }, data: { cancelRequestedAt: at } });
  }

  /** The invoice recorded as paying period N, if any. */
  async countedInvoice(subscriptionId: string, periodIndex: number): Promise<PaidInvoice | undefined> {
    const row = await this.db.stripeSubscriptionInvoice.findUnique({ where: { subscriptionId_periodIndex: { subscriptionId, periodIndex } } });
    if (!row || row.outcome !== 'counted') return undefined;
    return {
      invoiceId: row.invoiceId,
      periodIndex: row.periodIndex,
      paymentIntentId: row.paymentIntentId,
      amount: fromDbDecimal(row.amount),
      currency: row.currency,
      paidAt: row.paidAt,
    };
  }

  /** The renewal payment of period N still waiting for its invoice (verified), the latest attempt's. */
  async inFlight(subscriptionId: string, periodIndex: number): Promise<{ id: string; attempt: number } | undefined> {
    const row = await this.db.payment.findFirst({
      where: { subscriptionId, subscriptionPeriod: periodIndex, rail: 'stripe', state: 'verified' },
      orderBy: { subscriptionAttempt: 'desc' },
      select: { id: true, subscriptionAttempt: true },
    });
    return row ? { id: row.id, attempt: row.subscriptionAttempt ?? 0 } : undefined;
  }

  /**
   * A validated paid invoice, once: `late` (its period closed before it was paid) is kept and confirms nothing;
   * otherwise it counts for its period and confirms that period's in-flight charge, if one is waiting, in the same
   * transaction (a charge command arriving later finds the invoice instead).
   */
  async recordPaid(subscriptionId: string, invoice: PaidInvoice, late: boolean): Promise<InvoiceRecording> {
    try {
      return await withTransaction(this.db, async (tx) => {
        const inserted = await this.insertInvoice(tx, subscriptionId, invoice, late ? 'late' : 'counted');
        if (!inserted) return { kind: 'duplicate' as const };
        if (late) return { kind: 'late' as const };
        const waiting = await tx.payment.findFirst({
          where: { subscriptionId, subscriptionPeriod: invoice.periodIndex, rail: 'stripe', state: 'verified' },
          orderBy: { subscriptionAttempt: 'desc' },
          select: { id: true },
        });
        if (waiting && (await this.confirm(tx, waiting.id, invoice, invoice.eventId ? 'webhook' : 'settle')))
          return { kind: 'counted' as const, confirmed: waiting.id };
        return { kind: 'counted' as const };
      });
    } catch (error) {
      // the same invoice, or another one of its period, recorded by a concurrent delivery
      if (isUniqueViolation(error)) return { kind: 'duplicate' };
      throw error;
    }
  }

  /** A charge whose period's invoice is recorded already: confirmed by it. False when it was no longer in flight. */
  confirmWith(paymentId: string, invoice: PaidInvoice): Promise<boolean> {
    return this.confirm(this.db, paymentId, invoice, 'settle');
  }

  /** Stripe failed to collect the period's invoice on this attempt: the ledger's dunning decides what comes next. */
  async fail(paymentId: string, reason: string, message: string, reference?: string): Promise<boolean> {
    return (await applyTransition(this.db, 'failExternally', paymentId, { reason, message, ...(reference && { reference }) })).moved;
  }

  private async insertInvoice(tx: Tx, subscriptionId: string, invoice: PaidInvoice, outcome: 'counted' | 'late'): Promise<boolean> {
    const { count } = await tx.stripeSubscriptionInvoice.createMany({
      data: {
        invoiceId: invoice.invoiceId,
        subscriptionId,
        periodIndex: invoice.periodIndex,
        paymentIntentId: invoice.paymentIntentId,
        amount: toDbDecimal(invoice.amount),
        currency: invoice.currency,
        outcome,
        eventId: invoice.eventId ?? null,
        paidAt: invoice.paidAt,
      },
      skipDuplicates: true,
    });
    return count === 1;
  }

  /** The payment's reference is the PaymentIntent (what a refund refunds); the receipt's is the invoice. */
  private async confirm(db: Pick<PrismaService, '$queryRawUnsafe'>, paymentId: string, invoice: PaidInvoice, via: 'settle' | 'webhook'): Promise<boolean> {
    const { moved } = await applyTransition(db, 'confirmExternally', paymentId, {
      reference: invoice.paymentIntentId,
      details: { amountReceived: invoice.amount.toString(), currency: invoice.currency, via },
    });
    return moved;
  }
}
