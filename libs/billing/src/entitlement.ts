import type { SubscriptionFacts } from './renewal';
import { scheduleAt } from './schedule';

/**
 * Whether the subscriber may be served at t. No entitlement without a paid period: only in the trial or in the period
 * recorded as last paid, and never from the state alone (an `active` subscription whose current period is unpaid is
 * not entitled). An immediate cancellation ends it at canceledAt; a cancel at period end lets the paid period run out.
 * It answers for times in or after the last paid period; earlier times are for the ledger's period records.
 */
export function isEntitled(facts: SubscriptionFacts, t: Date): boolean {
  if (facts.canceledAt !== null && !facts.cancelAtPeriodEnd && t.getTime() >= facts.canceledAt.getTime()) return false;
  const position = scheduleAt(facts.terms, t);
  if (position.phase === 'trial') return facts.state !== 'incomplete' && facts.state !== 'incomplete_expired';
  return position.phase === 'period' && facts.lastPaidIndex === position.period.index;
}
