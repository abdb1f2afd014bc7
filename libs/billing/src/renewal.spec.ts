import { isEntitled } from './entitlement';
import { decideCharge, dueLifecycleEvent, paidAccessEnd, type SubscriptionFacts } from './renewal';
import type { SubscriptionTerms } from './schedule';

const at = (iso: string) => new Date(iso);
const monthlyTerms: SubscriptionTerms = { startedAt: at('2027-01-31T10:00:00.000Z'), period: { unit: 'month', count: 1 } };
const fresh = (terms: SubscriptionTerms = monthlyTerms): SubscriptionFacts => ({
  terms,
  state: 'incomplete',
  lastPaidIndex: null,
  inFlightIndex: null,
  failedIndex: null,
  canceledAt: null,
  cancelAtPeriodEnd: false,
});
const active = (lastPaidIndex: number, terms?: SubscriptionTerms): SubscriptionFacts => ({ ...fresh(terms), state: 'active', lastPaidIndex });

describe('charge decisions', () => {
  it('charges period 0 at activation, then nothing until the next period starts', () => {
    expect(decideCharge(fresh(), at('2027-01-31T10:00:00.000Z'))).toEqual({
      due: true,
      period: { index: 0, start: at('2027-01-31T10:00:00.000Z'), end: at('2027-02-28T10:00:00.000Z') },
      missedPeriods: 0,
    });
    expect(decideCharge(active(0), at('2027-02-28T09:59:59.999Z'))).toEqual({ due: false, reason: 'already_paid', nextDueAt: at('2027-02-28T10:00:00.000Z') });
    expect(decideCharge(active(0), at('2027-02-28T10:00:00.000Z'))).toMatchObject({ due: true, period: { index: 1 }, missedPeriods: 0 });
  });

  it('after a skipped period charges exactly once, for the current period only', () => {
    const now = at('2027-04-15T00:00:00.000Z');
    expect(decideCharge(active(0), now)).toEqual({
      due: true,
      period: { index: 2, start: at('2027-03-31T10:00:00.000Z'), end: at('2027-04-30T10:00:00.000Z') },
      missedPeriods: 1,
    });
    expect(decideCharge({ ...active(0), inFlightIndex: 2 }, now)).toEqual({ due: false, reason: 'in_flight' });
    expect(decideCharge(active(2), now)).toMatchObject({ due: false, reason: 'already_paid' });
    expect(decideCharge(active(2), at('2027-04-30T10:00:00.000Z'))).toMatchObject({ due: true, period: { index: 3 }, missedPeriods: 0 });
  });

  it('charges nothing in the trial, then period 0 from the trial end', () => {
    const terms = { ...monthlyTerms, startedAt: at('2027-01-17T10:00:00.000Z'), trialDays: 14 };
    const trialing: SubscriptionFacts = { ...fresh(terms), state: 'trialing' };
    expect(decideCharge(trialing, at('2027-01-20T00:00:00.000Z'))).toEqual({ due: false, reason: 'before_anchor', nextDueAt: at('2027-01-31T10:00:00.000Z') });
    expect(isEntitled(trialing, at('2027-01-20T00:00:00.000Z'))).toBe(true);
    expect(decideCharge(trialing, at('2027-01-31T10:00:00.000Z'))).toEqual({
      due: true,
      period: { index: 0, start: at('2027-01-31T10:00:00.000Z'), end: at('2027-02-28T10:00:00.000Z') },
      missedPeriods: 0,
    });
    expect(isEntitled(trialing, at('2027-01-31T10:00:00.000Z'))).toBe(false);
    expect(isEntitled({ ...trialing, state: 'active', lastPaidIndex: 0 }, at('2027-01-31T10:00:00.000Z'))).toBe(true);
  });

  it('renews a weekly plan with count 2 every fourteen days', () => {
    const terms: SubscriptionTerms = { startedAt: at('2027-03-10T09:30:00.000Z'), period: { unit: 'week', count: 2 } };
    expect(decideCharge(active(0, terms), at('2027-03-24T09:29:59.999Z'))).toMatchObject({ due: false, nextDueAt: at('2027-03-24T09:30:00.000Z') });
    expect(decideCharge(active(0, terms), at('2027-03-24T09:30:00.000Z'))).toEqual({
      due: true,
      period: { index: 1, start: at('2027-03-24T09:30:00.000Z'), end: at('2027-04-07T09:30:00.000Z') },
      missedPeriods: 0,
    });
  });

  it('after the clock went back, waits for the period after the last paid one', () => {
    expect(decideCharge(active(3), at('2027-03-01T00:00:00.000Z'))).toEqual({ due: false, reason: 'already_paid', nextDueAt: at('2027-05-31T10:00:00.000Z') });
  });

  it('tells the caller to void an attempt still in flight for an earlier period', () => {
    expect(decideCharge({ ...active(0), inFlightIndex: 1 }, at('2027-04-01T00:00:00.000Z'))).toEqual({ due: false, reason: 'stale_in_flight', staleIndex: 1 });
  });

  it('charges nothing once a cancellation was requested, or in a state that is not charged', () => {
    const now = at('2027-03-01T00:00:00.000Z');
    expect(decideCharge({ ...active(0), canceledAt: at('2027-02-27T00:00:00.000Z'), cancelAtPeriodEnd: true }, now)).toEqual({
      due: false,
      reason: 'cancel_requested',
    });
    for (const state of ['canceled', 'unpaid', 'incomplete_expired'] as const) {
      expect(decideCharge({ ...active(0), state }, now)).toEqual({ due: false, reason: 'state_not_chargeable' });
    }
  });

  it("charges no period that starts at or after the plan's end", () => {
    const terms = { ...monthlyTerms, endsAt: at('2027-03-31T10:00:00.000Z') };
    expect(decideCharge(active(0, terms), at('2027-03-01T00:00:00.000Z'))).toMatchObject({ due: true, period: { index: 1 } });
    expect(decideCharge(active(1, terms), at('2027-03-01T00:00:00.000Z'))).toEqual({ due: false, reason: 'already_paid' });
    expect(decideCharge(active(1, terms), at('2027-03-31T10:00:00.000Z'))).toEqual({ due: false, reason: 'plan_ended' });
  });

  it('while past_due retries only the period that failed', () => {
    const pastDue: SubscriptionFacts = { ...active(0), state: 'past_due', failedIndex: 1 };
    expect(decideCharge(pastDue, at('2027-03-10T00:00:00.000Z'))).toMatchObject({ due: true, period: { index: 1 } });
    expect(decideCharge(pastDue, at('2027-03-31T10:00:00.000Z'))).toEqual({ due: false, reason: 'dunning_exhausted' });
  });
});

describe('lifecycle events that time makes due', () => {
  it('exhausts dunning at the boundary of the failed period', () => {
    const pastDue: SubscriptionFacts = { ...active(0), state: 'past_due', failedIndex: 1 };
    expect(dueLifecycleEvent(pastDue, at('2027-03-31T09:59:59.999Z'))).toBeUndefined();
    expect(dueLifecycleEvent(pastDue, at('2027-03-31T10:00:00.000Z'))).toBe('dunning_exhausted');
  });

  it('ends access after a cancel at period end exactly when the paid period runs out', () => {
    const canceling: SubscriptionFacts = { ...active(1), canceledAt: at('2027-03-05T00:00:00.000Z'), cancelAtPeriodEnd: true };
    expect(paidAccessEnd(canceling)).toEqual(at('2027-03-31T10:00:00.000Z'));
    expect(dueLifecycleEvent(canceling, at('2027-03-31T09:59:59.999Z'))).toBeUndefined();
    expect(isEntitled(canceling, at('2027-03-31T09:59:59.999Z'))).toBe(true);
    expect(dueLifecycleEvent(canceling, at('2027-03-31T10:00:00.000Z'))).toBe('period_ended_after_cancel');
    expect(isEntitled(canceling, at('2027-03-31T10:00:00.000Z'))).toBe(false);
  });

  it('ends a trial canceled at period end when the trial ends', () => {
    const terms = { ...monthlyTerms, trialDays: 7 };
    const canceling: SubscriptionFacts = { ...fresh(terms), state: 'trialing', canceledAt: at('2027-02-01T00:00:00.000Z'), cancelAtPeriodEnd: true };
    expect(paidAccessEnd(canceling)).toEqual(at('2027-02-07T10:00:00.000Z'));
    expect(dueLifecycleEvent(canceling, at('2027-02-07T10:00:00.000Z'))).toBe('period_ended_after_cancel');
  });

  it('ends the plan after its last period, before anything else', () => {
    const terms = { ...monthlyTerms, endsAt: at('2027-03-15T00:00:00.000Z') };
    // Period 1, the last, failed and a cancel at period end came in during its dunning.
    const pastDue: SubscriptionFacts = {
      ...active(0, terms),
      state: 'past_due',
      failedIndex: 1,
      canceledAt: at('2027-03-01T00:00:00.000Z'),
      cancelAtPeriodEnd: true,
    };
    expect(dueLifecycleEvent(pastDue, at('2027-03-10T00:00:00.000Z'))).toBe('period_ended_after_cancel');
    expect(dueLifecycleEvent({ ...pastDue, canceledAt: null }, at('2027-03-31T09:59:59.999Z'))).toBeUndefined();
    expect(dueLifecycleEvent(pastDue, at('2027-03-31T10:00:00.000Z'))).toBe('plan_ended');
    expect(dueLifecycleEvent({ ...pastDue, state: 'canceled' }, at('2027-03-31T10:00:00.000Z'))).toBeUndefined();
  });
});
