import { Inject, Injectable, Logger } from '@nestjs/common';
import { billingAnchor, type Clock, periodAt, termsProblem } from '@mp/billing';
import { refundCommandId, type PaymentEventMessage } from '@mp/clients';
import { PrismaService, withTransaction, type Tx } from '@mp/db';
import { MicroBatcher } from '@mp/platform';
import { BookingRefusedError } from '../ingestion/payment-ingestion.service';
import { BILLING_CLOCK } from './billing.clock';
import { PlanRepository } from './plan.repository';
import { type CancelAt, type CancelBy, type SubscriptionRecord, termsOf } from './subscription';
import {
  advance,
  applyEvent,
  Change,
  recordFailed,
  recordPaid,
  recordRefundOutcome,
  recordReorged,
  requestCancel,
  type CancelOutcome,
} from './subscription-engine';
import { SubscriptionOutbox } from './subscription-outbox';
import { SubscriptionsRepository } from './subscriptions.repository';

/** An event about a subscription the ledger has not recorded yet (its activation is still on its way): BullMQ retries it. */
export class SubscriptionNotYetKnownError extends Error {}

/** The payment events that change a subscription charge's outcome. */
const SUBSCRIPTION_PAYMENT_EVENTS = new Set<PaymentEventMessage['type']>(['payment.confirmed', 'payment.failed', 'payment.expired', 'payment.reorged']);
/** The outcomes of a refund, which concern a subscription when it is the refund of an immediate cancel the ledger asked for. */
const REFUND_OUTCOME_EVENTS = new Set<PaymentEventMessage['type']>(['payment.refunded', 'payment.refund_failed']);

/** The outcomes of a charge the facilitator marked (nearly every renewal's): applied in batches. */
const CHARGE_OUTCOME_EVENTS = new Set<PaymentEventMessage['type']>(['payment.confirmed', 'payment.failed', 'payment.expired']);
/** Two batches at once: one fills while the other commits. */
const CHARGE_OUTCOME_BATCHES = { maxRunning: 2, maxBatch: 100 };

export type LifecycleOutcome = 'applied' | 'duplicate' | 'skipped';

type EventOf<T extends PaymentEventMessage['type']> = Extract<PaymentEventMessage, { type: T }>;
type ChargeOutcomeEvent = EventOf<'payment.confirmed' | 'payment.failed' | 'payment.expired'>;

interface ChargeTarget {
  subscriptionId: string;
  periodIndex: number;
  attempt: number;
}

interface ChargeOutcome {
  merchantId: string;
  event: ChargeOutcomeEvent;
  target: ChargeTarget;
}

/** The ledger asset of a subscription, the way ingestion names a payment's (payment-booking.ts paymentAsset). */
export function subscriptionAsset(method: 'evm' | 'stripe', network: string, asset: string): string {
  return method === 'stripe' ? `stripe/${asset.toLowerCase()}` : `${network}/${asset.toLowerCase()}`;
}

/** EVM payers are addresses, compared in lowercase; a Stripe payer is kept as the rail names it. */
export function normalizePayer(payer: string): string {
  return /^0x[0-9a-fA-F]{40}$/.test(payer) ? payer.toLowerCase() : payer;
}

/**
 * Applies the facilitator's subscription facts (issue 13) to the lifecycle: `subscription.*` events and the payment
 * events of subscription charges. Each event is applied once (its receipt is written in the same transaction as its
 * effect), the subscription row locked while it is; events may come twice or out of order (an outcome that overtakes
 * its subscription's activation is retried by BullMQ until the activation is in). Also the cancels the API asks for.
 */
@Injectable()
export class SubscriptionLifecycle {
  private readonly logger = new Logger('Subscriptions');
  /** the charge outcomes of concurrent ingestion jobs, one subscription once per batch (see applyOutcomes) */
  private readonly chargeOutcomes = new MicroBatcher<ChargeOutcome, LifecycleOutcome>(
    (o) => o.target.subscriptionId,
    (batch) => this.applyOutcomes(batch),
    CHARGE_OUTCOME_BATCHES,
  );

  constructor(
    private readonly db: PrismaService,
    private readonly subscriptions: SubscriptionsRepository,
    private readonly plans: PlanRepository,
    private readonly outbox: SubscriptionOutbox,
    @Inject(BILLING_CLOCK) private readonly clock: Clock,
  ) {}

  async ingest(event: PaymentEventMessage): Promise<LifecycleOutcome> {
    const merchantId = event.merchantId ?? event.payment.merchantId;
    if (!merchantId || !(await this.mayConcernSubscription(event))) return 'skipped';
    const of = event.payment.subscription;
    if (of && CHARGE_OUTCOME_EVENTS.has(event.type))
      return this.chargeOutcomes.submit({
        merchantId,
        event: event as ChargeOutcomeEvent,
        target: { subscriptionId: of.id, periodIndex: of.periodIndex, attempt: of.attempt },
      });
    return this.applyAlone(merchantId, event);
  }

  /**
   * A batch's events (a `batch` job), in order, each as ingest() would take it; the charge outcomes in a row are applied
   * together (applyOutcomes, each subscription once per transaction), any other event alone, after the outcomes before
   * it. Per event its outcome, its BookingRefusedError (refused for good) or its SubscriptionNotYetKnownError (its
   * activation is still on its way, perhaps in another batch: for the caller to retry it alone); any other failure (the
   * database away) is thrown once the events before it are applied, and the batch is retried.
   */
  async ingestMany(events: readonly PaymentEventMessage[]): Promise<(LifecycleOutcome | BookingRefusedError | SubscriptionNotYetKnownError)[]> {
    const outcomes: (LifecycleOutcome | BookingRefusedError | SubscriptionNotYetKnownError)[] = events.map(() => 'skipped');
    let group: { index: number; outcome: ChargeOutcome }[] = [];
    const applyGroup = async () => {
      if (!group.length) return;
      const applying = group;
      group = [];
      const settled = await this.applyOutcomes(applying.map((g) => g.outcome));
      settled.forEach((result, i) => (outcomes[applying[i].index] = result.status === 'fulfilled' ? result.value : eventsOwnOrThrow(result.reason)));
    };
    for (const [index, event] of events.entries()) {
      const merchantId = event.merchantId ?? event.payment.merchantId;
      // asked at the event's turn: an activation before it in the batch may have made its payment a charge
      if (!merchantId || !(await this.mayConcernSubscription(event))) continue;
      const of = event.payment.subscription;
      if (of && CHARGE_OUTCOME_EVENTS.has(event.type)) {
        if (group.length >= CHARGE_OUTCOME_BATCHES.maxBatch || group.some((g) => g.outcome.target.subscriptionId === of.id)) await applyGroup();
        group.push({
          index,
          outcome: { merchantId, event: event as ChargeOutcomeEvent, target: { subscriptionId: of.id, periodIndex: of.periodIndex, attempt: of.attempt } },
        });
        continue;
      }
      await applyGroup();
      try {
        outcomes[index] = await this.applyAlone(merchantId, event);
      } catch (error) {
        outcomes[index] = eventsOwnOrThrow(error);
      }
    }
    await applyGroup();
    return outcomes;
  }

  private async applyAlone(merchantId: string, event: PaymentEventMessage): Promise<LifecycleOutcome> {
    const now = this.clock.now();
    const result = await withTransaction(this.db, (tx) => this.apply(tx, merchantId, event, now));
    if (result === 'skipped' || result === 'duplicate') return result;
    await this.outbox.publish([result], now);
    return 'applied';
  }

  /**
   * Charge outcomes that concurrent jobs brought, in one transaction: their subscriptions locked together, their
   * receipts written together, one save and one publish. A batch that fails is applied event by event, as every
   * other event is, so that one event's problem (its subscription not recorded yet, another merchant's) and its
   * retry stay its own job's.
   */
  private async applyOutcomes(batch: ChargeOutcome[]): Promise<PromiseSettledResult<LifecycleOutcome>[]> {
    if (batch.length > 1) {
      try {
        return (await this.applyTogether(batch)).map((value) => ({ status: 'fulfilled', value }));
      } catch (error) {
        this.logger.debug(`${batch.length} charge outcomes applied one by one: ${(error as Error).message}`);
      }
    }
    return Promise.allSettled(batch.map((o) => this.applyAlone(o.merchantId, o.event)));
  }

  private async applyTogether(batch: ChargeOutcome[]): Promise<LifecycleOutcome[]> {
    const now = this.clock.now();
    const results = await withTransaction(this.db, async (tx) => {
      const locked = await this.subscriptions.lockMany(
        tx,
        batch.map((o) => o.target.subscriptionId),
      );
      for (const { merchantId, event, target } of batch) {
        if (locked.get(target.subscriptionId)?.merchantId !== merchantId)
          throw new Error(`${event.type} ${event.eventId}: subscription ${target.subscriptionId} is not one of its merchant's recorded yet`);
      }
      const applied = await this.subscriptions.markEventsApplied(
        tx,
        batch.map(({ event, target }) => ({ paymentId: event.paymentId, eventId: event.eventId, type: event.type, subscriptionId: target.subscriptionId })),
      );
      const isNew = ({ event }: ChargeOutcome) => applied.has(receiptKey(event.paymentId, event.eventId));
      const charges = await this.subscriptions.chargesOfPeriods(
        tx,
        batch.filter(isNew).map(({ target }) => ({ subscription: locked.get(target.subscriptionId)!, periodIndex: target.periodIndex })),
      );
      const changes = batch.map((o) => {
        if (!isNew(o)) return 'duplicate' as const;
        const subscription = locked.get(o.target.subscriptionId)!;
        const change = new Change(
          subscription,
          charges.filter((c) => c.merchantId === subscription.merchantId && c.subscriptionId === subscription.id && c.periodIndex === o.target.periodIndex),
        );
        this.recordOutcome(change, o.event, o.target, now);
        advance(change, now);
        return change;
      });
      await this.subscriptions.save(
        tx,
        changes.filter((c) => c !== 'duplicate'),
      );
      return changes;
    });
    const changed = results.filter((c) => c !== 'duplicate');
    if (changed.length) await this.outbox.publish(changed, now);
    return results.map((c) => (c === 'duplicate' ? 'duplicate' : 'applied'));
  }

  /** A charge's confirmation, failure or expiry, recorded on the change. */
  private recordOutcome(change: Change, event: ChargeOutcomeEvent, target: ChargeTarget, now: Date): void {
    if (event.type === 'payment.confirmed') {
      const outcome = recordPaid(change, target.periodIndex, target.attempt, event.paymentId, now);
      if (outcome === 'late')
        this.logger.warn(
          `subscription ${change.record.id}: period ${target.periodIndex} attempt ${target.attempt} paid after it was voided; booked, not counted`,
        );
      return;
    }
    const reason = event.type === 'payment.expired' ? 'expired' : event.data.reason;
    recordFailed(change, target.periodIndex, target.attempt, now, { state: 'failed', reason, paymentId: event.paymentId });
  }

  /**
   * Whether the event can be about a subscription, answered without a transaction: one-off payments (nearly every
   * event) pass the consumer with at most one indexed lookup.
   */
  private async mayConcernSubscription(event: PaymentEventMessage): Promise<boolean> {
    if (event.type.startsWith('subscription.')) return true;
    // a merchant's own refund of a subscription charge (POST /refunds) is booked, and is none of the lifecycle's business
    if (REFUND_OUTCOME_EVENTS.has(event.type)) return isSubscriptionRefundKey(event as EventOf<'payment.refunded' | 'payment.refund_failed'>);
    if (!SUBSCRIPTION_PAYMENT_EVENTS.has(event.type)) return false;
    return event.payment.subscription !== undefined || (await this.subscriptions.isChargePayment(event.paymentId));
  }

  private async apply(tx: Tx, merchantId: string, event: PaymentEventMessage, now: Date): Promise<Change | 'skipped' | 'duplicate'> {
    if (event.type === 'subscription.activated') return this.activate(tx, merchantId, event, now);
    const target = await this.targetOf(tx, event);
    if (!target) return 'skipped';
    const subscription = await this.subscriptions.lock(tx, target.subscriptionId);
    if (!subscription)
      throw new SubscriptionNotYetKnownError(`${event.type} ${event.eventId} is about subscription ${target.subscriptionId}, not recorded yet`);
    if (subscription.merchantId !== merchantId)
      throw new BookingRefusedError(`${event.type} ${event.eventId}: subscription ${subscription.id} is another merchant's`);
    const receipt = { paymentId: event.paymentId, eventId: event.eventId, type: event.type, subscriptionId: subscription.id };
    const { applied, charges } = await this.subscriptions.markEventAppliedReadingCharges(tx, receipt, subscription, target.periodIndex);
    if (!applied) return 'duplicate';
    const change = new Change(subscription, charges);
    switch (event.type) {
      case 'payment.confirmed':
      case 'payment.failed':
      case 'payment.expired':
        this.recordOutcome(change, event, target as ChargeTarget, now);
        break;
      case 'payment.reorged':
        recordReorged(change, target.periodIndex!, target.attempt!, await this.subscriptions.lastPaidBefore(tx, subscription, target.periodIndex!), now);
        break;
      case 'subscription.charge_refused':
        this.refused(change, event, now);
        break;
      case 'subscription.revoked':
        requestCancel(change, { at: 'period_end', by: 'rail', reason: event.data.reason, now });
        break;
      case 'subscription.canceled':
        change.record = { ...change.record, cancelConfirmedAt: change.record.cancelConfirmedAt ?? now };
        break;
      case 'payment.refunded':
      case 'payment.refund_failed': {
        const { refundId, amount, reference } = event.data;
        const outcome = event.type === 'payment.refunded' ? 'refunded' : 'refund_failed';
        const cause = {
          reason: event.type === 'payment.refunded' ? 'refunded' : event.data.failureReason,
          periodIndex: target.periodIndex,
          paymentId: event.paymentId,
          refundId,
          amount,
          reference,
        };
        if (!recordRefundOutcome(change, outcome, now, cause))
          this.logger.warn(
            `subscription ${subscription.id}: ${event.type} ${event.eventId} for a refund not asked for (refund ${change.record.refundState}); ignored`,
          );
        break;
      }
      default:
        return change;
    }
    advance(change, now);
    await this.subscriptions.save(tx, [change]);
    return change;
  }

  /** Which subscription (and charge) an event is about, if any. */
  private async targetOf(tx: Tx, event: PaymentEventMessage): Promise<{ subscriptionId: string; periodIndex?: number; attempt?: number } | undefined> {
    switch (event.type) {
      case 'subscription.charge_refused':
        return { subscriptionId: event.data.subscriptionId, periodIndex: event.data.periodIndex, attempt: event.data.attempt };
      case 'subscription.revoked':
      case 'subscription.canceled':
        return { subscriptionId: event.data.subscriptionId };
      case 'payment.confirmed':
      case 'payment.failed':
      case 'payment.expired':
      case 'payment.reorged':
      case 'payment.refunded':
      case 'payment.refund_failed': {
        const of = event.payment.subscription;
        if (of) return { subscriptionId: of.id, periodIndex: of.periodIndex, attempt: of.attempt };
        // the activation's own payment, when the facilitator did not mark it
        const charge = await this.subscriptions.chargeByPayment(tx, event.paymentId);
        return charge && { subscriptionId: charge.subscriptionId, periodIndex: charge.periodIndex, attempt: charge.attempt };
      }
      default:
        return undefined;
    }
  }

  private refused(change: Change, event: EventOf<'subscription.charge_refused'>, now: Date): void {
    const { periodIndex, attempt, reason } = event.data;
    const s = change.record;
    if (reason === 'revoked' || reason === 'expired' || (reason === 'canceled' && s.cancelAt === null)) {
      recordFailed(change, periodIndex, attempt, now, { state: 'refused', reason });
      requestCancel(change, { at: 'period_end', by: 'rail', reason: `charge_refused:${reason}`, now });
      return;
    }
    if (reason === 'already_paid' || reason === 'canceled') {
      // no failure: the period's payment is on its way, or the subscription is being canceled anyway
      const charge = change.charge(periodIndex, attempt);
      if (charge?.state === 'requested') change.saveCharge({ ...charge, state: 'refused', settledAt: now, outcomeReason: reason });
      if (s.inFlightIndex === periodIndex && s.inFlightAttempt === attempt)
        change.record = { ...s, inFlightIndex: null, inFlightAttempt: null, inFlightSince: null };
      return;
    }
    recordFailed(change, periodIndex, attempt, now, { state: 'refused', reason });
  }

  /**
   * A new subscription from the payer's signed terms. A plan is bound only when its product's terms are what the
   * payer signed (amount, asset, period); otherwise the subscription is recorded without a product (plan_mismatch)
   * and can entitle to nothing. With a bound plan's trial and an anchor after the activation, it starts trialing and
   * the scheduler charges period 0 at the anchor; otherwise the activation's own payment is period 0's charge.
   */
  private async activate(tx: Tx, merchantId: string, event: EventOf<'subscription.activated'>, now: Date): Promise<Change | 'duplicate'> {
    const d = event.data;
    const asset = subscriptionAsset(d.method, d.network, d.asset);
    const plan = d.planId === null ? undefined : await this.plans.find(merchantId, d.planId);
    const matches =
      plan !== undefined && plan.amount === BigInt(d.amount) && plan.asset === asset && plan.periodUnit === d.periodUnit && plan.periodCount === d.periodCount;
    const anchor = new Date(d.anchor);
    const trialDays = matches && plan.trialDays > 0 && anchor.getTime() > new Date(event.occurredAt).getTime() ? plan.trialDays : 0;
    const record: SubscriptionRecord = {
      merchantId,
      id: d.subscriptionId,
      planId: d.planId,
      planNote: d.planId === null ? null : plan === undefined ? 'plan_not_found' : matches ? null : 'plan_mismatch',
      product: matches ? plan.product : null,
      method: d.method,
      payer: normalizePayer(d.payer),
      payTo: d.method === 'evm' ? d.payTo.toLowerCase() : d.payTo,
      network: d.network,
      asset,
      amount: BigInt(d.amount),
      periodUnit: d.periodUnit,
      periodCount: d.periodCount,
      trialDays,
      anchor,
      expiresAt: d.expiresAt === null ? null : new Date(d.expiresAt),
      authorizedPeriods: d.authorizedPeriods,
      onDunningExhausted: matches ? plan.onDunningExhausted : 'canceled',
      cancelRefund: matches ? plan.cancelRefund : 'none',
      challengeId: d.challengeId,
      externalId: d.externalId ?? null,
      stripeCustomer: d.stripeCustomer ?? null,
      stripeSubscription: d.stripeSubscription ?? null,
      state: 'incomplete',
      lastPaidIndex: null,
      inFlightIndex: null,
      inFlightAttempt: null,
      inFlightSince: null,
      failedIndex: null,
      failedAt: null,
      nextAttempt: 0,
      cancelAt: null,
      cancelRequestedAt: null,
      cancelBy: null,
      cancelReason: null,
      cancelConfirmedAt: null,
      refundAmount: null,
      refundState: null,
      endedAt: null,
      endedReason: null,
      nextActionAt: null,
      // the plan's usage is billed from period 0 (trial days before it are free)
      usageNextIndex: matches && plan.usage.length > 0 ? 0 : null,
      version: 0,
    };
    const problem = termsProblem(termsOf(record));
    if (problem)
      throw new BookingRefusedError(`subscription.activated ${event.eventId}: subscription ${d.subscriptionId} has terms @mp/billing refuses (${problem})`);
    const receipt = { paymentId: event.paymentId, eventId: event.eventId, type: event.type, subscriptionId: d.subscriptionId };
    if (!(await this.subscriptions.markEventApplied(tx, receipt))) return 'duplicate';
    if (!(await this.subscriptions.insert(tx, record))) return 'duplicate';
    const change = new Change(record);
    if (trialDays > 0) {
      applyEvent(change, 'trial_started', now, { reason: 'trial_started', trialDays, trialEndsAt: anchor.toISOString(), planId: d.planId });
    } else {
      change.saveCharge({
        merchantId,
        subscriptionId: record.id,
        periodIndex: 0,
        attempt: 0,
        commandId: null,
        paymentId: event.paymentId,
        state: 'requested',
        amount: record.amount,
        periodStart: anchor,
        periodEnd: periodEndOf(record, 0),
        requestedAt: now,
        publishedAt: null,
        publishCount: 0,
        settledAt: null,
        outcomeReason: null,
        latePaidAt: null,
      });
      change.record = { ...change.record, inFlightIndex: 0, inFlightAttempt: 0, inFlightSince: now };
    }
    advance(change, now);
    await this.subscriptions.save(tx, [change]);
    return change;
  }

  /**
   * Cancels for the merchant, the payer (proven by the caller) or the rail. The outcome is the first cancel's when one
   * was recorded; `ended` when the subscription ended without one (nothing to cancel).
   */
  async cancel(
    subscription: SubscriptionRecord,
    at: CancelAt,
    by: CancelBy,
    reason: string | null,
  ): Promise<{ outcome: CancelOutcome; record: SubscriptionRecord }> {
    const now = this.clock.now();
    const { outcome, change } = await withTransaction(this.db, async (tx) => {
      const locked = await this.subscriptions.lock(tx, subscription.id);
      if (!locked) throw new Error(`subscription ${subscription.id} vanished`);
      const change = new Change(locked, await this.subscriptions.inFlightCharges(tx, [locked]));
      const outcome = requestCancel(change, { at, by, reason, now });
      if (outcome.kind === 'recorded') {
        advance(change, now);
        await this.subscriptions.save(tx, [change]);
      }
      return { outcome, change };
    });
    if (outcome.kind === 'recorded') await this.outbox.publish([change], now);
    return { outcome, record: change.record };
  }
}

/**
 * Whether a refund's outcome is the one the ledger asked for: the facilitator keys the refund of a `refund` command by
 * its command id, which names the subscription and the period. The refunded payment carries `payment.subscription`
 * (the facilitator marks every charge, the activation's included).
 */
function isSubscriptionRefundKey(event: EventOf<'payment.refunded' | 'payment.refund_failed'>): boolean {
  const of = event.payment.subscription;
  return of !== undefined && event.data.idempotencyKey === refundCommandId(of.id, of.periodIndex);
}

/** A failure that is the event's own (a refusal, its subscription not recorded yet), to be answered; any other thrown on. */
function eventsOwnOrThrow(error: unknown): BookingRefusedError | SubscriptionNotYetKnownError {
  if (error instanceof BookingRefusedError || error instanceof SubscriptionNotYetKnownError) return error;
  throw error;
}

/** A receipt's key, as SubscriptionsRepository.markEventsApplied answers it. */
function receiptKey(paymentId: string, eventId: string): string {
  return `${paymentId.toLowerCase()}/${eventId}`;
}

function periodEndOf(s: SubscriptionRecord, index: number): Date {
  const terms = termsOf(s);
  return periodAt(billingAnchor(terms), terms.period, index).end;
}
