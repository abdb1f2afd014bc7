import { type BillingPeriod, periodAt, periodIndexAt } from './periods';
import { billingAnchor, lastPeriodIndex, scheduledEnd, type SubscriptionTerms } from './schedule';
import type { SubscriptionEvent, SubscriptionState } from './subscription-state';

/** What the ledger keeps about one subscription: the MPP intent's minimum state (recurring-and-streaming.md §1.2). */
export interface SubscriptionFacts {
  readonly terms: SubscriptionTerms;
  readonly state: SubscriptionState;
  /** The last period recorded as paid; null before the first payment. */
  readonly lastPaidIndex: number | null;
  /** The period whose charge is durably marked in flight (submitted, outcome not yet known); null when none. */
  readonly inFlightIndex: number | null;
  /** While past_due: the period whose renewal failed and is being retried. */
  readonly failedIndex: number | null;
  /** When a cancellation was requested, of either kind; null when none was. */
  readonly canceledAt: Date | null;
  /** true: access runs to the end of the last paid period (or of the trial); false: it stops at canceledAt. */
  readonly cancelAtPeriodEnd: boolean;
}

export type NoChargeReason =
  'state_not_chargeable' | 'cancel_requested' | 'before_anchor' | 'plan_ended' | 'in_flight' | 'stale_in_flight' | 'already_paid' | 'dunning_exhausted';

export type ChargeDecision =
  | { readonly due: true; readonly period: BillingPeriod; readonly missedPeriods: number }
  | { readonly due: false; readonly reason: NoChargeReason; readonly nextDueAt?: Date; readonly staleIndex?: number };

const CHARGEABLE_STATES: readonly SubscriptionState[] = ['incomplete', 'trialing', 'active', 'past_due'];
const LIVE_STATES: readonly SubscriptionState[] = ['trialing', 'active', 'past_due'];

/**
 * Which period, if any, may be charged now. The rules (recurring-and-streaming.md §1.2):
 * - only the current period, the one containing now, is ever charged: it is chargeable from its start, and periods
 *   missed in a gap are never charged afterwards (`missedPeriods` counts them for the books);
 * - at most one charge per period: not when it is paid, nor while an attempt for it is in flight;
 * - an attempt still in flight for an earlier period is stale: the caller voids it (the period's window is closed)
 *   before anything else is charged;
 * - nothing after a cancellation was requested, of either kind: an attempt already in flight when the cancel arrives
 *   completes and counts, which is the one outcome of a cancel racing a renewal. So no period starting at or after the
 *   cancellation is ever charged;
 * - nothing from the plan's end on, and while past_due only the period that failed (a new period means dunning is over).
 */
export function decideCharge(facts: SubscriptionFacts, now: Date): ChargeDecision {
  if (!CHARGEABLE_STATES.includes(facts.state)) return { due: false, reason: 'state_not_chargeable' };
  if (facts.canceledAt !== null) return { due: false, reason: 'cancel_requested' };
  const { period } = facts.terms;
  const anchor = billingAnchor(facts.terms);
  const last = lastPeriodIndex(facts.terms);
  const current = periodIndexAt(anchor, period, now);
  if (current < 0) return { due: false, reason: 'before_anchor', nextDueAt: anchor };
  if (last !== undefined && current > last) return { due: false, reason: 'plan_ended' };
  if (facts.inFlightIndex !== null && facts.inFlightIndex < current) return { due: false, reason: 'stale_in_flight', staleIndex: facts.inFlightIndex };
  if (facts.inFlightIndex !== null) return { due: false, reason: 'in_flight' };
  if (facts.lastPaidIndex !== null && facts.lastPaidIndex >= current) {
    const hasNext = last === undefined || facts.lastPaidIndex < last;
    return { due: false, reason: 'already_paid', ...(hasNext && { nextDueAt: periodAt(anchor, period, facts.lastPaidIndex).end }) };
  }
  if (facts.state === 'past_due' && facts.failedIndex !== null && facts.failedIndex < current) return { due: false, reason: 'dunning_exhausted' };
  return { due: true, period: periodAt(anchor, period, current), missedPeriods: current - (facts.lastPaidIndex ?? -1) - 1 };
}

/**
 * The lifecycle event that time alone has made due, if any; the caller applies it (subscription-state.ts) and asks
 * again until none is left, before deciding a charge. In this order: the plan's end; a failed period that is over
 * unpaid (dunning_exhausted, at its boundary); the end of access after a cancel at period end.
 */
export function dueLifecycleEvent(facts: SubscriptionFacts, now: Date): SubscriptionEvent | undefined {
  if (!LIVE_STATES.includes(facts.state)) return undefined;
  const end = scheduledEnd(facts.terms);
  if (end !== undefined && now.getTime() >= end.getTime()) return 'plan_ended';
  const current = periodIndexAt(billingAnchor(facts.terms), facts.terms.period, now);
  if (facts.state === 'past_due' && facts.failedIndex !== null && current > facts.failedIndex) return 'dunning_exhausted';
  if (facts.canceledAt !== null && facts.cancelAtPeriodEnd && now.getTime() >= paidAccessEnd(facts).getTime()) return 'period_ended_after_cancel';
  return undefined;
}

/** Where access paid so far runs out: the end of the last paid period, or of the trial (the anchor) before any payment. */
export function paidAccessEnd(facts: SubscriptionFacts): Date {
  const anchor = billingAnchor(facts.terms);
  return facts.lastPaidIndex === null ? anchor : periodAt(anchor, facts.terms.period, facts.lastPaidIndex).end;
}
