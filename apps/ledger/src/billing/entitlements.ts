import { isEntitled, scheduleAt } from '@mp/billing';
import { factsOf, paidThrough, type SubscriptionRecord } from './subscription';

export type EntitlementReason = 'paid_period' | 'trial' | 'no_subscription' | 'not_paid' | 'canceled' | 'ended';

/**
 * Whether a payer may be served a product at `at`, from its subscriptions to it (newest first): @mp/billing's
 * isEntitled, which only a paid period or the trial satisfies, never the state alone. The answer names the
 * subscription that entitles, or the newest one and why it does not.
 */
export function entitlementAt(subscriptions: readonly SubscriptionRecord[], at: Date) {
  for (const s of subscriptions) {
    const facts = factsOf(s);
    if (isEntitled(facts, at)) {
      const reason: EntitlementReason = scheduleAt(facts.terms, at).phase === 'trial' ? 'trial' : 'paid_period';
      return { entitled: true, subscriptionId: s.id, state: s.state, paidThrough: paidThrough(s)?.toISOString() ?? null, reason };
    }
  }
  const newest = subscriptions[0];
  if (!newest) return { entitled: false, subscriptionId: null, state: null, paidThrough: null, reason: 'no_subscription' as EntitlementReason };
  const canceledNow = newest.cancelAt === 'immediately' && newest.cancelRequestedAt !== null && at >= newest.cancelRequestedAt;
  const reason: EntitlementReason = canceledNow ? 'canceled' : newest.endedAt !== null && at >= newest.endedAt ? 'ended' : 'not_paid';
  return { entitled: false, subscriptionId: newest.id, state: newest.state, paidThrough: paidThrough(newest)?.toISOString() ?? null, reason };
}
