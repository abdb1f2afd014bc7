import {
  billingAnchor,
  DEFAULT_DUNNING_POLICY,
  type DunningPolicy,
  paidAccessEnd,
  periodBoundary,
  type PeriodUnit,
  type SubscriptionEvent,
  type SubscriptionFacts,
  type SubscriptionState,
  type SubscriptionTerms,
} from '@mp/billing';
import type { MerchantNoticeType } from '@mp/clients';
import type { CancelRefund, DunningOutcome } from './plan';

const DAY_MS = 86_400_000;

export const CANCEL_AT = ['period_end', 'immediately'] as const;
export type CancelAt = (typeof CANCEL_AT)[number];
export type CancelBy = 'merchant' | 'payer' | 'rail';
export type ChargeState = 'requested' | 'paid' | 'failed' | 'refused' | 'voided';
export type PlanNote = 'plan_mismatch' | 'plan_not_found';
/** An immediate cancel's refund: recorded, asked of the facilitator, then executed or failed on its rail. */
export type RefundState = 'refund_due' | 'refund_requested' | 'refunded' | 'refund_failed';
/** What a refund's outcome records; not a state change, so not in @mp/billing's table. */
export type RefundEvent = 'refunded' | 'refund_failed';

/** A row of `ledger.subscriptions`, amounts as bigint. */
export interface SubscriptionRecord {
  merchantId: string;
  id: string;
  seq?: bigint;
  planId: string | null;
  planNote: PlanNote | null;
  product: string | null;
  method: 'evm' | 'stripe';
  payer: string;
  payTo: string;
  network: string;
  asset: string;
  amount: bigint;
  periodUnit: PeriodUnit;
  periodCount: number;
  trialDays: number;
  anchor: Date;
  expiresAt: Date | null;
  authorizedPeriods: number | null;
  onDunningExhausted: DunningOutcome;
  cancelRefund: CancelRefund;
  challengeId: string;
  externalId: string | null;
  stripeCustomer: string | null;
  stripeSubscription: string | null;
  state: SubscriptionState;
  lastPaidIndex: number | null;
  inFlightIndex: number | null;
  inFlightAttempt: number | null;
  inFlightSince: Date | null;
  failedIndex: number | null;
  failedAt: Date | null;
  nextAttempt: number;
  cancelAt: CancelAt | null;
  cancelRequestedAt: Date | null;
  cancelBy: CancelBy | null;
  cancelReason: string | null;
  cancelConfirmedAt: Date | null;
  refundAmount: bigint | null;
  refundState: RefundState | null;
  endedAt: Date | null;
  endedReason: string | null;
  nextActionAt: Date | null;
  /** the next period whose usage charges are to be recorded; null: no usage components, or all recorded */
  usageNextIndex: number | null;
  version: number;
  createdAt?: Date;
  updatedAt?: Date;
}

/** A row of `ledger.subscription_charges`. */
export interface ChargeRecord {
  merchantId: string;
  subscriptionId: string;
  periodIndex: number;
  attempt: number;
  commandId: string | null;
  paymentId: string | null;
  state: ChargeState;
  amount: bigint;
  periodStart: Date;
  periodEnd: Date;
  requestedAt: Date;
  publishedAt: Date | null;
  publishCount: number;
  settledAt: Date | null;
  outcomeReason: string | null;
  latePaidAt: Date | null;
}

/** A period whose usage closed: its usage charges are recorded over [start, end) for every component of the plan. */
export interface UsagePeriodClose {
  merchantId: string;
  subscriptionId: string;
  planId: string;
  periodIndex: number;
  start: Date;
  end: Date;
}

/** A transition to append (version is the subscription's version after it). */
export interface TransitionDraft {
  version: number;
  event: SubscriptionEvent | RefundEvent;
  fromState: SubscriptionState;
  toState: SubscriptionState;
  at: Date;
  cause: Record<string, unknown>;
  noticeType: MerchantNoticeType | null;
}

/**
 * The terms @mp/billing computes periods from. A trial ends at the signed anchor, so it starts trialDays before it;
 * the plan's end is the earlier of what the payer signed (expiresAt) and, on evm, the end of the last period the payer
 * pre-authorized (no authorization is left for a later one).
 */
export function termsOf(
  s: Pick<SubscriptionRecord, 'anchor' | 'trialDays' | 'periodUnit' | 'periodCount' | 'expiresAt' | 'authorizedPeriods'>,
): SubscriptionTerms {
  const period = { unit: s.periodUnit, count: s.periodCount };
  const authorizedEnd = s.authorizedPeriods === null ? undefined : periodBoundary(s.anchor, period, s.authorizedPeriods);
  const ends = [s.expiresAt ?? undefined, authorizedEnd].filter((d): d is Date => d !== undefined);
  const endsAt = ends.length ? new Date(Math.min(...ends.map((d) => d.getTime()))) : undefined;
  return {
    startedAt: new Date(s.anchor.getTime() - s.trialDays * DAY_MS),
    period,
    ...(s.trialDays > 0 && { trialDays: s.trialDays }),
    ...(endsAt && { endsAt }),
  };
}

export function factsOf(s: SubscriptionRecord): SubscriptionFacts {
  return {
    terms: termsOf(s),
    state: s.state,
    lastPaidIndex: s.lastPaidIndex,
    inFlightIndex: s.inFlightIndex,
    failedIndex: s.failedIndex,
    canceledAt: s.cancelRequestedAt,
    cancelAtPeriodEnd: s.cancelAt === 'period_end',
  };
}

/** The plan's dunning: @mp/billing's default retries, the plan's outcome when they run out. */
export function dunningPolicyOf(s: Pick<SubscriptionRecord, 'onDunningExhausted'>): DunningPolicy {
  return { ...DEFAULT_DUNNING_POLICY, whenExhausted: s.onDunningExhausted };
}

/** Where the access paid for runs out: the end of the last paid period (or of the trial); an immediate cancel ends it then. */
export function paidThrough(s: SubscriptionRecord): Date | null {
  const facts = factsOf(s);
  if (s.lastPaidIndex === null && billingAnchor(facts.terms).getTime() === facts.terms.startedAt.getTime()) return null;
  const end = paidAccessEnd(facts);
  if (s.cancelAt === 'immediately' && s.cancelRequestedAt && s.cancelRequestedAt < end) return s.cancelRequestedAt;
  return end;
}

export function subscriptionView(s: SubscriptionRecord) {
  return {
    id: s.id,
    planId: s.planId,
    planNote: s.planNote,
    product: s.product,
    method: s.method,
    payer: s.payer,
    payTo: s.payTo,
    network: s.network,
    asset: s.asset,
    amount: s.amount.toString(),
    periodUnit: s.periodUnit,
    periodCount: s.periodCount,
    trialDays: s.trialDays,
    anchor: s.anchor.toISOString(),
    expiresAt: s.expiresAt?.toISOString() ?? null,
    authorizedPeriods: s.authorizedPeriods,
    state: s.state,
    lastPaidIndex: s.lastPaidIndex,
    paidThrough: paidThrough(s)?.toISOString() ?? null,
    inFlight: s.inFlightIndex === null ? null : { periodIndex: s.inFlightIndex, attempt: s.inFlightAttempt, since: s.inFlightSince?.toISOString() },
    dunning: s.failedIndex === null ? null : { periodIndex: s.failedIndex, failedAt: s.failedAt?.toISOString() ?? null, nextAttempt: s.nextAttempt },
    cancel:
      s.cancelAt === null
        ? null
        : {
            at: s.cancelAt,
            requestedAt: s.cancelRequestedAt?.toISOString() ?? null,
            by: s.cancelBy,
            reason: s.cancelReason,
            confirmedAt: s.cancelConfirmedAt?.toISOString() ?? null,
            refund: s.refundAmount === null ? null : { amount: s.refundAmount.toString(), state: s.refundState },
          },
    endedAt: s.endedAt?.toISOString() ?? null,
    endedReason: s.endedReason,
    nextActionAt: s.nextActionAt?.toISOString() ?? null,
    createdAt: s.createdAt?.toISOString() ?? null,
  };
}

export type SubscriptionView = ReturnType<typeof subscriptionView>;

export function chargeView(c: ChargeRecord) {
  return {
    periodIndex: c.periodIndex,
    attempt: c.attempt,
    state: c.state,
    amount: c.amount.toString(),
    periodStart: c.periodStart.toISOString(),
    periodEnd: c.periodEnd.toISOString(),
    commandId: c.commandId,
    paymentId: c.paymentId,
    requestedAt: c.requestedAt.toISOString(),
    settledAt: c.settledAt?.toISOString() ?? null,
    outcomeReason: c.outcomeReason,
    latePaidAt: c.latePaidAt?.toISOString() ?? null,
  };
}
